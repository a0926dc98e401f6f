"""Part e of ``bench/org_scale.py``: the whole organisation's index, searched (issue 16).

The index the app would have after backfilling ``--users`` accounts and ``--chunks`` chunks is
written in bulk through the app's own layers (``VectorStore.upsert`` and ``KeywordIndex.upsert``:
the same classes, collection per user and keyword tables per user), not through the indexing
pipeline, whose ceiling (~40-80 chunks/s, RESULTS-scale.md) would make a million chunks take hours.
Items per user are Zipf-skewed as ``item_counts`` makes them, three chunks of ~1,100 characters an
item (MS MARCO windows, reused round-robin, each chunk headed by its item's own title, as
``chunk_document`` heads them), a quarter notes and the rest files; every chunk carries the
metadata ``chunk_metadata`` gives it (owner and ``lang`` included). Vectors are the embedding
stub's (a hash of the text seeds a unit vector), so no model is needed: the dense leg's cost is
real, its neighbours are arbitrary.

Then a fresh process (``probe``) opens that storage as the app does (``Engine`` with the
OpenAI-compatible backend against the instant stub) and times, per query, ``SearchService.retrieve``
-- what ``nc_semantic_search`` calls (the MCP proxy excluded; the Nextcloud re-check of hits and the
account check before it stubbed: they are requests to Nextcloud, measured in search_latency.py).
Start-up to serving is from the probe's launch (interpreter, imports, engine, first search
answered). Once with embedded Chroma, once with a Chroma server (``chroma run``) on the same files.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "lib", ROOT, ROOT / "tests" / "support", Path(__file__).parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from common import pct, proc_status  # noqa: E402

MODEL_ID = "openai-stub"  # OpenAIEmbedder's model_id for the stub's model name "stub"
DIM = 384
CHUNKS_PER_ITEM = 3
WORDS_PER_CHUNK = 183  # ~1,100 characters of MS MARCO prose


def _users(n: int) -> list[str]:
    return [f"user{i:04d}" for i in range(n)]


def _vectors(n: int, seed: str) -> np.ndarray:
    """``n`` deterministic unit vectors, as the stub's (a hash seeds a normal draw), one draw for a
    batch: a generator per text (the stub's way) cost 235 us a chunk, 4 CPU minutes a million."""
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "little"))
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


# --- building the index ---------------------------------------------------------------------------


class Corpus:
    """Base texts (MS MARCO windows) and, per user, the records the pipeline would have written."""

    def __init__(self, seed: int = 16, texts: int = 3000) -> None:
        from indexing import passages

        self.windows = passages(texts * CHUNKS_PER_ITEM, WORDS_PER_CHUNK)  # ``texts`` items' worth, reused
        self.rng = random.Random(seed)
        self._lang: dict[int, str | None] = {}
        self.now = 1_780_000_000  # fixed: the index is the same whatever the day

    def records(self, user: str, items: int, first_id: int) -> list:
        from semantic_mcp.core.documents import SourceDocument
        from semantic_mcp.indexing.records import chunk_metadata
        from semantic_mcp.core.language import document_language
        from semantic_mcp.stores.vectors import ChunkRecord

        out = []
        for i in range(items):
            source_id = str(first_id + i)
            base = self.rng.randrange(len(self.windows) // CHUNKS_PER_ITEM) * CHUNKS_PER_ITEM
            bodies = self.windows[base : base + CHUNKS_PER_ITEM]
            topic = " ".join(bodies[0].split()[:4]).strip(".,;:()\"'")
            if i % 4 == 3:
                title, kind, location, link = f"Note {i} {topic}", "note", f"Topic {i % 7}", f"/apps/notes/note/{source_id}"
            else:
                title, kind = f"Report {i} {topic}.txt", "file"
                location, link = f"/Documents/Folder {i % 20}/{title}", f"/f/{source_id}"
            doc = SourceDocument(kind, source_id, title, "", self.now - self.rng.randrange(3 * 365 * 86400),  # type: ignore[arg-type]
                                 f"etag-{source_id}", link, location=location, extra={"owner": user})
            meta = chunk_metadata(doc)  # language detection off: done once per base text below (0.5 ms a call)
            if base not in self._lang:
                self._lang[base] = document_language(f"{title}\n{' '.join(bodies)}")
            if self._lang[base]:
                meta["lang"] = self._lang[base]
            key = f"{kind}:{source_id}"
            out.extend(ChunkRecord(f"{key}#{n}", key, f"{title}\n\n{body}", {**meta, "chunk_index": n})
                       for n, body in enumerate(bodies))
        return out


def build(storage: Path, users: int, chunks: int, batch: int, corpus: Corpus | None = None) -> dict[str, float]:
    """Write the organisation's index; Chroma and FTS5 each in a thread of their own, records made in
    the main thread meanwhile (SQLite releases the GIL in its native code; embedded Chroma holds it
    for a whole write, ADR 0569, so its thread overlaps only with FTS5's)."""
    import semantic_mcp.indexing.records as records

    detect, records.document_language = records.document_language, lambda text: None  # see Corpus.records
    try:
        return _build(storage, users, chunks, batch, corpus or Corpus())
    finally:
        records.document_language = detect


def _build(storage: Path, users: int, chunks: int, batch: int, corpus: Corpus) -> dict[str, float]:
    from org_processes import item_counts
    from semantic_mcp.stores.keyword import KeywordIndex
    from semantic_mcp.stores.vectors import VectorStore

    counts = item_counts(users, max(users * 5, chunks // CHUNKS_PER_ITEM))
    storage.mkdir(parents=True, exist_ok=True)
    keyword = KeywordIndex(storage / "keyword.db")
    store = VectorStore.embedded(storage / "chroma", MODEL_ID, DIM, texts=keyword.texts)  # as the app (ADR 0566)
    busy = {"chroma": 0.0, "fts5": 0.0, "records": 0.0, "vectors": 0.0}

    def timed(name: str, fn, *args) -> None:  # noqa: ANN001
        started = time.perf_counter()
        fn(*args)
        busy[name] += time.perf_counter() - started

    started, cpu, written, next_id = time.perf_counter(), time.process_time(), 0, 1
    done = reported = 0
    with ThreadPoolExecutor(1) as dense, ThreadPoolExecutor(1) as sparse:
        pending: list = []
        for user, items in zip(_users(users), counts, strict=True):
            for first in range(0, items, batch // CHUNKS_PER_ITEM):
                t0 = time.perf_counter()
                records = corpus.records(user, min(batch // CHUNKS_PER_ITEM, items - first), next_id + first)
                t1 = time.perf_counter()
                vectors = _vectors(len(records), records[0].chunk_id)
                busy["records"] += t1 - t0
                busy["vectors"] += time.perf_counter() - t1
                for future in pending:  # at most one batch in flight per index: bounded memory
                    future.result()
                pending = [dense.submit(timed, "chroma", store.upsert, user, records, vectors),
                           sparse.submit(timed, "fts5", keyword.upsert, user, records)]
                written += len(records)
            next_id += items
            done += 1
            if written >= reported + 50_000 or done == users:
                reported = written
                elapsed = time.perf_counter() - started
                progress = {"users_done": done, "chunks": written, "wall": elapsed, "rate": written / elapsed,
                            "cpu": time.process_time() - cpu, "load": os.getloadavg()[0], **busy}
                (storage / "progress.json").write_text(json.dumps(progress))
                print(f"e. building: {done} users, {written:,} chunks in {elapsed:.0f} s ({written / elapsed:.0f} chunks/s, "
                      f"load {progress['load']:.1f})", file=sys.stderr, flush=True)
        for future in pending:
            future.result()
    wall = time.perf_counter() - started
    keyword.close()
    return {"users": users, "users_done": users, "items": sum(counts), "chunks": written, "largest": max(counts) * CHUNKS_PER_ITEM,
            "median": sorted(counts)[len(counts) // 2] * CHUNKS_PER_ITEM, "wall": wall,
            "cpu": time.process_time() - cpu, "rate": written / wall, **busy}


def disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


# --- the probe: a fresh app process that opens the index and searches -----------------------------


def plan(users: int, chunks: int, n: int, done: int, seed: int = 5) -> list[tuple[str, str]]:
    """``n`` (user, query) pairs: a third to the ten biggest users, the rest to users drawn uniformly
    (most of them small); MS MARCO queries, whose passages are the texts."""
    import latency_storage as sl
    from org_processes import item_counts

    counts = item_counts(users, max(users * 5, chunks // CHUNKS_PER_ITEM))[:done]  # the users written
    names = _users(users)[:done]
    biggest = [names[i] for i in np.argsort(counts)[::-1][:10]]
    rng = random.Random(seed)
    queries = sl.msmarco_queries()
    return [(rng.choice(biggest) if i % 3 == 0 else rng.choice(names), queries[i % len(queries)]) for i in range(n)]


def _rss_mb(pid: int | str = "self") -> tuple[float, float]:
    """(current, peak) resident set of a process, MB."""
    status = proc_status(pid)
    return status["VmRSS"] / 1024, status["VmHWM"] / 1024


async def open_engine(storage: Path, stub_url: str, host: str | None = None, port: int | None = None,
                      chroma_memory_mb: int | None = None):  # noqa: ANN201
    """The app's ``Engine`` on ``storage`` as a search opens it: the OpenAI-compatible backend against the
    stub, a Chroma server at ``host:port`` if given; the Nextcloud re-check of hits and the account check
    stubbed (requests to Nextcloud, measured in search_latency.py)."""
    from semantic_mcp.core.config import AdminSettings, Deployment
    from semantic_mcp.engine import Engine
    from semantic_mcp.nextcloud.client import NextcloudClient
    from semantic_mcp.search.verify import Verification

    settings = AdminSettings(embedding_backend="openai", embedding_url=stub_url, embedding_model="stub")
    deployment = Deployment(storage=storage, chroma_host=host, chroma_port=port or 8000,
                            **({"chroma_memory_mb": chroma_memory_mb} if chroma_memory_mb is not None else {}))

    async def no_users() -> list[str]:
        return []

    async def progress(percent: int, message: str) -> None:
        return None

    engine = Engine(deployment, NextcloudClient("http://127.0.0.1:9", lambda user: {}), lambda: settings, no_users)

    async def keep_all(user: str, hits: Sequence) -> Verification:  # the re-check: requests to Nextcloud
        return Verification(list(hits), [], 0)

    engine.verifier.verify = keep_all  # type: ignore[method-assign]
    engine.search.before_retrieval = None  # the account check: a request to Nextcloud, cached per user
    await engine.prepare(progress)
    return engine


async def _probe(args: dict) -> dict:
    from semantic_mcp.core.filters import SearchFilters

    engine = await open_engine(Path(args["storage"]), args["stub"], args.get("host"), args.get("port"),
                               args.get("chroma_memory_mb"))
    embedder, embedding = engine.embedder(), [0.0]  # the query's embedding: a request to the stub, timed apart
    embed_query = embedder.embed_query

    def timed_embed(text: str):  # noqa: ANN202
        started = time.perf_counter()
        try:
            return embed_query(text)
        finally:
            embedding[0] += time.perf_counter() - started

    embedder.embed_query = timed_embed  # type: ignore[method-assign]
    pairs = [tuple(p) for p in args["plan"]]
    first = await engine.search.retrieve(pairs[0][0], pairs[0][1], 10, SearchFilters())
    serving = time.time() - args["launched"]
    rss_open = _rss_mb()[0]
    seen, times = set(), []
    for user, query in pairs:
        started, embedding[0] = time.perf_counter(), 0.0
        await engine.search.retrieve(user, query, 10, SearchFilters())
        times.append((1000 * (time.perf_counter() - started), user in seen, user, 1000 * embedding[0]))
        seen.add(user)
    rss, peak = _rss_mb()
    reopened = getattr(engine.store(), "reopened", 0)
    return {"reopened": reopened, "serving": serving, "first_results": len(first.candidates), "times": times, "rss_open": rss_open,
            "rss": rss, "peak": peak, "maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def probe(storage: Path, stub_url: str, pairs: list, host: str | None = None, port: int | None = None,
          chroma_memory_mb: int | None = None) -> dict:
    """Run :func:`_probe` in a fresh interpreter, niced as the bench is; its launch time is t = 0.
    ``chroma_memory_mb``: the deployment's ``CHROMA_MEMORY_MB`` (None: its default)."""
    args = {"storage": str(storage), "stub": stub_url, "plan": pairs, "host": host, "port": port, "launched": time.time(),
            **({"chroma_memory_mb": chroma_memory_mb} if chroma_memory_mb is not None else {})}
    out = subprocess.run([sys.executable, __file__, "probe"], input=json.dumps(args), capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": f"{ROOT / 'lib'}:{ROOT}"}, check=False)
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


class ChromaServer:
    """``chroma run`` on the index's Chroma directory, as an instance that outgrew one box runs it."""

    def __init__(self, path: Path, port: int) -> None:
        from chroma_server import start_chroma  # tests/support/chroma_server.py: how the store's tests start one

        self.port = port
        started = time.perf_counter()
        self.proc = start_chroma(path, port, timeout=300)  # a big index takes minutes to open
        self.ready = time.perf_counter() - started

    def rss_mb(self) -> tuple[float, float]:
        return _rss_mb(self.proc.pid)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


# --- the report ---------------------------------------------------------------------------------


def _summary(label: str, result: dict, server: tuple[float, float] | None = None) -> str:
    times = [t for t, _, _, _ in result["times"]]
    warm = [t for t, again, _, _ in result["times"] if again]
    cold = [t for t, again, _, _ in result["times"] if not again]
    embedding = [e for _, _, _, e in result["times"]]
    p50, p95 = pct(times, 50), pct(times, 95)
    line = (f"e. {label}: {len(times)} searches over {len({u for _, _, u, _ in result['times']})} users: "
            f"p50 {p50:.1f} ms, **p95 {p95:.1f} ms** (goal <= 100), of which embedding the query (a request to "
            f"the stub) p50 {pct(embedding, 50):.1f} / p95 {pct(embedding, 95):.1f} ms; "
            f"without it p95 {pct([t - e for t, _, _, e in result['times']], 95):.1f} ms; a user's first search "
            f"p50 {pct(cold, 50):.1f} / p95 {pct(cold, 95):.1f} ms ({len(cold)}), "
            f"later ones p50 {pct(warm, 50):.1f} / p95 {pct(warm, 95):.1f} ms; "
            f"**start-up to serving {result['serving']:.1f} s** (goal <= 10); the app's RSS "
            f"{result['rss_open']:.0f} MB serving, **{result['rss']:.0f} MB after the searches, peak {result['peak']:.0f} MB** "
            f"(goal <= 1,500)")
    if server:
        line += f"; the Chroma server's RSS {server[0]:.0f} MB, peak {server[1]:.0f} MB"
    return line


def run_e(users: int, chunks: int, workdir: Path, queries: int = 300, batch: int = 20_000, keep: bool = False,
          chroma_memory_mb: list[int] | None = None, seed: int = 5) -> list[str]:
    """``chroma_memory_mb``: one embedded run per value of ``CHROMA_MEMORY_MB`` (default: the app's)."""
    from org_processes import EmbeddingStub

    storage = workdir / "storage-e"
    lines = []
    if not (storage / "built.json").is_file():
        shutil.rmtree(storage, ignore_errors=True)
        built = build(storage, users, chunks, batch)
        (storage / "built.json").write_text(json.dumps(built))
    built = json.loads((storage / "built.json").read_text())
    chroma, fts = disk_mb(storage / "chroma"), disk_mb(storage) - disk_mb(storage / "chroma")
    lines.append(
        f"e. the organisation's index: {built['users']} users, {built['items']:,} items, **{built['chunks']:,} chunks** "
        f"(largest user {built['largest']:,}, median {built['median']:,}) written through VectorStore and KeywordIndex "
        f"in {built['wall']:.0f} s: **{built['rate']:.0f} chunks/s** ({built['cpu']:.0f} CPU s; busy: Chroma "
        f"{built['chroma']:.0f} s, FTS5 {built['fts5']:.0f} s, records {built['records']:.0f} s, stub vectors "
        f"{built['vectors']:.0f} s); on disk Chroma **{chroma:,.0f} MB**, FTS5 **{fts:,.0f} MB** "
        f"({1000 * (chroma + fts) / built['chunks']:.1f} KB a chunk)")
    pairs = plan(users, chunks, queries, built.get("users_done", users), seed)
    stub = EmbeddingStub(0.0)
    try:
        for memory in chroma_memory_mb or [None]:
            result = probe(storage, stub.url, pairs, chroma_memory_mb=memory)
            label = "embedded Chroma" + (f" (CHROMA_MEMORY_MB={memory}: reopened {result['reopened']} times)"
                                         if memory is not None else "")
            lines.append(_summary(label, result))
        server = ChromaServer(storage / "chroma", 18000 + os.getpid() % 1000)
        try:
            result = probe(storage, stub.url, pairs, host="127.0.0.1", port=server.port)
            lines.append(_summary(f"Chroma server (`chroma run`, ready in {server.ready:.1f} s)", result, server.rss_mb()))
        finally:
            server.stop()
    finally:
        stub.stop()
        if not keep:
            shutil.rmtree(storage, ignore_errors=True)
    return lines


if __name__ == "__main__":
    if sys.argv[1:] == ["probe"]:
        print(json.dumps(asyncio.run(_probe(json.loads(sys.stdin.read())))))
