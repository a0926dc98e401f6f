"""Where part e's search time goes, stage by stage, on an index ``org_scale.py --keep-index DIR`` kept.

``PYTHONPATH=lib:. python bench/org_search_stages.py DIR/storage-e [--server] [--queries 600]`` opens the
index as ``org_search.probe`` does (the same plan of users and queries), times every call to the store's
and the keyword index's reads during ``SearchService.retrieve``, and prints each one's count, mean, p50
and p95, with the app process's CPU time a search; then, per collection size, Chroma's dense query
with and without its metadata (bench/RESULTS-scale.md, ADR 0567). Without ``--chroma-memory-mb`` the
deployment's default bound applies, as in the app.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "lib", ROOT, ROOT / "tests" / "support", Path(__file__).parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import org_search  # noqa: E402

STAGES = {"VectorStore": ("query", "rank_among", "get_chunks", "embeddings", "texts_of"),
          "KeywordIndex": ("search", "coverage", "texts", "languages")}


def _timed(cls: type, name: str, stages: dict[str, list[float]]) -> None:
    method = getattr(cls, name)

    @functools.wraps(method)
    def timed(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        started = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            stages[f"{cls.__name__}.{name}"].append(1000 * (time.perf_counter() - started))

    setattr(cls, name, timed)


def _summary(label: str, values: list[float]) -> str:
    return (f"{label:30s} {len(values):5d} calls, mean {np.mean(values):6.1f}, p50 {np.percentile(values, 50):6.1f}, "
            f"p95 {np.percentile(values, 95):6.1f} ms")


async def stages(storage: Path, server: org_search.ChromaServer | None, queries: int, memory: int | None) -> None:
    from org_processes import EmbeddingStub
    from semantic_mcp.core.filters import SearchFilters
    from semantic_mcp.stores.keyword import KeywordIndex
    from semantic_mcp.stores.vectors import VectorStore

    timings: dict[str, list[float]] = defaultdict(list)
    for cls in (VectorStore, KeywordIndex):
        for name in STAGES[cls.__name__]:
            if hasattr(cls, name):
                _timed(cls, name, timings)
    stub = EmbeddingStub(0.0)
    try:
        engine = await org_search.open_engine(storage, stub.url, "127.0.0.1" if server else None,
                                              server.port if server else None, memory)
        built = json.loads((storage / "built.json").read_text())
        pairs = org_search.plan(built["users"], built["chunks"], queries, built.get("users_done", built["users"]))
        await engine.search.retrieve(pairs[0][0], pairs[0][1], 10, SearchFilters())
        timings.clear()
        total, cpu = [], time.process_time()
        for user, query in pairs:
            started = time.perf_counter()
            await engine.search.retrieve(user, query, 10, SearchFilters())
            total.append(1000 * (time.perf_counter() - started))
        print(_summary("retrieve (whole search)", total)
              + f"; the app's CPU {1000 * (time.process_time() - cpu) / len(pairs):.1f} ms a search")
        for name, values in sorted(timings.items()):
            print(_summary(name, values))
        by_size(engine.store(), built)
    finally:
        stub.stop()


def by_size(store, built: dict) -> None:  # noqa: ANN001
    """Chroma's query (40 nearest) with and without the hits' metadata, for users of five sizes."""
    from org_processes import item_counts

    counts = item_counts(built["users"], max(built["users"] * 5, built["chunks"] // org_search.CHUNKS_PER_ITEM))
    order = np.argsort(counts)[::-1]
    names = org_search._users(built["users"])
    rng = np.random.default_rng(1)
    for rank in (0, 1, 5, 50, len(order) // 2):
        collection = store._collection(names[order[rank]], create=False)
        if collection is None:
            continue
        line = f"dense query, a collection of {collection.count():7,d} chunks:"
        for include in (["metadatas", "distances"], ["distances"]):
            times = []
            for _ in range(30):
                vector = rng.standard_normal(org_search.DIM).astype(np.float32)
                started = time.perf_counter()
                collection.query(query_embeddings=[vector / np.linalg.norm(vector)], n_results=40, include=include)
                times.append(1000 * (time.perf_counter() - started))
            line += f" {'+'.join(include)} p50 {np.percentile(times, 50):.1f} / p95 {np.percentile(times, 95):.1f} ms;"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("storage", type=Path, help="the kept index's storage-e directory")
    parser.add_argument("--server", action="store_true", help="through `chroma run` on the same files")
    parser.add_argument("--queries", type=int, default=600)
    parser.add_argument("--chroma-memory-mb", type=int, default=None, help="embedded: CHROMA_MEMORY_MB (0: no bound)")
    args = parser.parse_args()
    server = org_search.ChromaServer(args.storage / "chroma", 18500) if args.server else None
    try:
        asyncio.run(stages(args.storage, server, args.queries, args.chroma_memory_mb))
    finally:
        if server:
            server.stop()


if __name__ == "__main__":
    main()
