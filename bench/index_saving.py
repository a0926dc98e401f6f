"""How often Chroma saves a collection's vector index (ADR 0562): writing, and the next process's
first search per user, with Chroma's default (every 1,000 writes) and the app's (every 100).

The app writes a user's chunks a batch of items at a time (8 chunks here, as the pipeline's batch),
through its own ``VectorStore``; a fresh process then opens the store and searches each user twice
in a random order (the first search replays what was not saved, then loads the index; the second
is the query alone). Vectors are random 384-d (the default model's size): timings reflect Chroma,
not retrieval quality. Users are Zipf-skewed as in ``bench/org_scale.py``.

    PYTHONPATH=lib:. python bench/index_saving.py [--users 150] [--chunks 60000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(ROOT.parent / "lib")]

DIM, BATCH, MODEL = 384, 8, "bench-random"


def _records(user: str, n: int) -> list:
    from semantic_mcp.stores.vectors import ChunkRecord

    meta = {"doc_type": "file", "title": "t", "location": "/x", "modified": 1, "link": "/x", "version": "v1",
            "chunk_index": 0}
    return [ChunkRecord(f"file:{i}#0", f"file:{i}", f"{user} chunk {i}", {**meta, "source_id": str(i)})
            for i in range(n)]


def _open(path: Path, threshold: int):  # noqa: ANN202
    import semantic_mcp.stores.chroma_local as chroma_local
    from semantic_mcp.stores.vectors import VectorStore

    chroma_local.SAVE_INDEX = {"sync_threshold": threshold, "batch_size": min(100, threshold)}
    return VectorStore.embedded(path, MODEL, DIM)


def build(path: Path, threshold: int, counts: list[int]) -> dict[str, float]:
    store, rng = _open(path, threshold), np.random.default_rng(7)
    started, cpu = time.perf_counter(), time.process_time()
    for n, count in enumerate(counts):
        records, vectors = _records(f"user{n}", count), rng.standard_normal((count, DIM)).astype(np.float32)
        for first in range(0, count, BATCH):
            store.upsert(f"user{n}", records[first:first + BATCH], vectors[first:first + BATCH])
    wall = time.perf_counter() - started
    return {"wall": wall, "cpu": time.process_time() - cpu, "rate": sum(counts) / wall}


def search(path: Path, threshold: int, users: int) -> dict[str, list[float]]:
    """In a fresh process, as after a restart: each user's first and second search, in ms."""
    store, rng = _open(path, threshold), np.random.default_rng(11)
    order = list(range(users))
    random.Random(3).shuffle(order)
    first, second = [], []
    for n in order:
        query = rng.standard_normal(DIM).astype(np.float32)
        for times in (first, second):
            started = time.perf_counter()
            store.query(f"user{n}", query, 10)
            times.append(1000 * (time.perf_counter() - started))
    return {"first": first, "second": second}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=150)
    parser.add_argument("--chunks", type=int, default=60_000)
    parser.add_argument("--thresholds", default="1000,100", help="Chroma sync_threshold values, one run each")
    args = parser.parse_args()
    from org_processes import item_counts
    from common import pct

    counts = item_counts(args.users, args.chunks)
    print(f"{args.users} users, {sum(counts):,} chunks (largest {max(counts):,}, median {sorted(counts)[len(counts) // 2]}), "
          f"written {BATCH} at a time; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    for threshold in (int(t) for t in args.thresholds.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "chroma"
            built = build(path, threshold, counts)
            out = subprocess.run([sys.executable, __file__, "--search", str(path), str(threshold), str(args.users)],
                                 capture_output=True, text=True, check=True).stdout
            timed = json.loads(out)
            disk = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6
        first, second = timed["first"], timed["second"]
        print(f"saved every {threshold:>4} writes: written at {built['rate']:.0f} chunks/s ({built['wall']:.0f} s, "
              f"{built['cpu']:.0f} CPU s); first search p50 {pct(first, 50):.1f} / p95 {pct(first, 95):.1f} / "
              f"max {max(first):.1f} ms; second p50 {pct(second, 50):.1f} / p95 {pct(second, 95):.1f} ms; "
              f"disk {disk:.0f} MB; load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--search"]:
        print(json.dumps(search(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))))
    else:
        main()
