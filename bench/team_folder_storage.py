"""A team folder's cost: one copy per member (before ADR 0352) against the folder stored once (the app's path).

A team folder of ``--files`` files (``--chunks-per-file`` chunks each) shared by ``--members`` members,
each of whom also has ``--own`` chunks of their own. Two layouts, each built in a process of its own:

- ``per-member`` (the app before ADR 0352, and still for an ordinary share): every member's collection
  and keyword tables hold the folder's chunks, so they are stored ``members`` times;
- ``once``: written by the app's own code path (indexing/writing.py): for each member and file, the
  pipeline's ``_join_space`` (the space holds this version already: one row) or else its ``_write``
  (the first member: the chunks go to the space ``team-folder:1``), on a real index state; a member's
  search is the app's ``HybridRetriever`` with the state's rows (their collection, then the space,
  filtered to their rows, merged by calibrated score). Access is still re-checked per hit as the
  caller; the bench leaves that out of both layouts alike (it is the same requests either way).

Printed per layout: disk (Chroma directory + keyword database), the resident memory the process gains
by opening every member's collections (what a server holds once all members have searched), and a
member's hybrid search p50/p95 over 200 queries (random members). SYNTHETIC DATA, as in
bench/store_scale.py: random unit vectors (384-d) and Zipf-distributed made-up words, a fixed query
vector, so the figures reflect the index structures, not retrieval quality.

    PYTHONPATH=lib python bench/team_folder_storage.py [--files 3000] [--chunks-per-file 2] [--members 100] [--own 200]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(ROOT / "bench"))

from store_scale import DIM, FixedEmbedder, synthetic  # noqa: E402

from semantic_mcp.core.documents import DocRef, SourceDocument  # noqa: E402
from semantic_mcp.indexing.pipeline import Pipeline  # noqa: E402
from semantic_mcp.indexing.queue import Task  # noqa: E402
from semantic_mcp.indexing.state import IndexState  # noqa: E402
from semantic_mcp.indexing.writing import Written  # noqa: E402
from semantic_mcp.stores.keyword import KeywordIndex  # noqa: E402
from semantic_mcp.search.retrieval import HybridRetriever  # noqa: E402
from semantic_mcp.stores.vectors import ChunkRecord, VectorStore  # noqa: E402

FOLDER = "team-folder:1"
BATCH = 1000
WRITE_BATCH = 64  # documents per index write, as the pipeline's largest batch


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def _disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def _members(n: int) -> list[str]:
    return [f"member-{i:03d}" for i in range(n)]


def _write(
    store: VectorStore, keyword: KeywordIndex, user: str, records: list[ChunkRecord], vectors: np.ndarray
) -> None:
    for i in range(0, len(records), BATCH):
        store.upsert(user, records[i : i + BATCH], vectors[i : i + BATCH])
        keyword.upsert(user, records[i : i + BATCH])


def _renamed(records: list[ChunkRecord], prefix: str) -> list[ChunkRecord]:
    """A member's own chunks: ids of their own, so they are not the folder's."""
    out = []
    for record in records:
        doc_key = f"{record.doc_key}{prefix}"
        out.append(ChunkRecord(f"{doc_key}#{record.chunk_id.rsplit('#', 1)[1]}", doc_key, record.text,
                               {**record.metadata, "source_id": f"{record.metadata['source_id']}{prefix}"}))
    return out


def _team_files(records: list[ChunkRecord], vectors: np.ndarray, per_file: int) -> list[tuple[SourceDocument, list[ChunkRecord], np.ndarray]]:
    """The folder's chunks as its files: documents of the team folder ``1``, ``per_file`` chunks each."""
    files = []
    for start in range(0, len(records), per_file):
        source_id = str(start // per_file)
        doc = SourceDocument("file", source_id, f"Document {source_id}", "", 1_600_000_000, "v1", f"/f/{source_id}",
                             f"/Team/{source_id}.md", extra={"team_folder": "1"})
        recs = [ChunkRecord(f"file:{source_id}#{i}", f"file:{source_id}", record.text,
                            {**record.metadata, "doc_type": "file", "source_id": source_id, "team_folder": "1"})
                for i, record in enumerate(records[start : start + per_file])]
        files.append((doc, recs, vectors[start : start + per_file]))
    return files


def _app_writes(pipeline: Pipeline, member: str, files: list[tuple[SourceDocument, list[ChunkRecord], np.ndarray]]) -> None:
    """What the app does with each file a member's task fetched: a row if the space holds it, else a write."""
    pending = []
    for doc, recs, vectors in files:
        ref = DocRef(member, "file", doc.source_id)
        if not pipeline._join_space(doc, ref, pipeline.state.indexed(ref)):
            pending.append(Written(Task(ref, "upsert", None, 0, 1), doc, recs, vectors))
    for i in range(0, len(pending), WRITE_BATCH):
        pipeline._write(member, pending[i : i + WRITE_BATCH])


def build(layout: str, args: argparse.Namespace, where: Path) -> dict[str, float]:
    """Write the layout into ``where`` (a process of its own, so the next one opens it cold)."""
    rng = np.random.default_rng(7)
    shared, shared_vectors, _ = synthetic(args.files * args.chunks_per_file, rng)
    own, own_vectors, _ = synthetic(args.own, rng)
    store = VectorStore.embedded(where / "chroma", FixedEmbedder.model_id, DIM)
    keyword = KeywordIndex(where / "keyword.db")
    state = IndexState(where / "state.db")
    pipeline = Pipeline(state, dict, None, store, keyword, lambda: None, lambda user: True)  # type: ignore[arg-type]
    files = _team_files(shared, shared_vectors, args.chunks_per_file)
    started = time.perf_counter()
    for member in _members(args.members):
        _write(store, keyword, member, _renamed(own, "-own"), own_vectors)
        if layout == "per-member":
            _write(store, keyword, member, shared, shared_vectors)
        else:
            _app_writes(pipeline, member, files)
    chunks = store.count(FOLDER) + sum(store.count(member) for member in _members(args.members))
    rows = state._rows("SELECT COUNT(*) FROM documents")[0][0]
    return {"chunks": chunks, "rows": rows, "build_s": time.perf_counter() - started}


def measure(layout: str, args: argparse.Namespace, where: Path) -> dict[str, float]:
    """Open what :func:`build` wrote in a fresh process: the memory every member's first search adds
    (Chroma caches clients per path, so a second client in the building process would not load it
    again), then a member's hybrid search p50/p95."""
    rng = np.random.default_rng(7)
    shared_vectors = synthetic(args.files * args.chunks_per_file, rng)[1]
    queries = synthetic(200, np.random.default_rng(8))[2]
    members = _members(args.members)
    query_vector = shared_vectors[0] + 0.1 * rng.standard_normal(DIM).astype(np.float32)
    store = VectorStore.embedded(where / "chroma", FixedEmbedder.model_id, DIM)
    keyword = KeywordIndex(where / "keyword.db")
    state = IndexState(where / "state.db")
    retriever = HybridRetriever(store, keyword, FixedEmbedder(query_vector), spaces=state)
    retriever.search_sync("nobody", queries[0], 10)  # Chroma's own start-up is not the layout's
    before = _rss_mb()
    for member in members:  # each member's search opens their collection (and, stored once, the space)
        retriever.search_sync(member, queries[0], 10)
    opened = _rss_mb() - before
    if layout == "once":  # the query is near the folder's first chunk: a member's search must come from the space
        assert retriever.search_sync(members[-1], queries[0], 10, mode="dense")[0].doc_key == "file:0"

    def search(member: str, query: str) -> list:
        return retriever.search_sync(member, query, 10)

    who = rng.integers(0, len(members), size=len(queries))
    times = []
    for query, i in zip(queries, who, strict=True):
        started = time.perf_counter()
        search(members[i], query)
        times.append(1000 * (time.perf_counter() - started))
    p50, p95 = np.percentile(times, [50, 95])
    return {"disk_mb": _disk_mb(where), "memory_mb": opened, "p50_ms": p50, "p95_ms": p95}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--chunks-per-file", type=int, default=2)
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--own", type=int, default=200)
    parser.add_argument("--layouts", default="once,per-member", help="which layouts to run, comma-separated")
    parser.add_argument("--layout", choices=("per-member", "once"), help=argparse.SUPPRESS)  # one step, in a child
    parser.add_argument("--step", choices=("build", "measure"), help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        print(json.dumps((build if args.step == "build" else measure)(args.layout, args, args.dir)))
        return
    load_at_start = os.getloadavg()[0]
    rows = {}
    for layout in args.layouts.split(","):
        rows[layout] = {}
        with tempfile.TemporaryDirectory() as tmp:
            for step in ("build", "measure"):
                command = [sys.executable, __file__, "--layout", layout, "--step", step, "--dir", tmp,
                           "--files", str(args.files), "--chunks-per-file", str(args.chunks_per_file),
                           "--members", str(args.members), "--own", str(args.own)]
                out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
                rows[layout].update(json.loads(out.strip().splitlines()[-1]))
    print(f"A team folder of {args.files:,} files ({args.files * args.chunks_per_file:,} chunks) shared by "
          f"{args.members} members, each with {args.own} chunks of their own; SYNTHETIC vectors and words\n")
    print("| Layout | chunks stored | rows in the index state | disk MB | memory MB (all members' collections open) | "
          "member search p50 ms | p95 ms | build s |\n|---|---|---|---|---|---|---|---|")
    for layout, name in (("per-member", "one copy per member (before ADR 0352)"), ("once", "stored once (ADR 0352)")):
        if layout not in rows:
            continue
        r = rows[layout]
        print(f"| {name} | {r['chunks']:,} | {r['rows']:,} | {r['disk_mb']:,.0f} | {r['memory_mb']:,.0f} | {r['p50_ms']:.1f} | "
              f"{r['p95_ms']:.1f} | {r['build_s']:.0f} |")
    print(f"\nLoad average at start {load_at_start:.1f}, at end {os.getloadavg()[0]:.1f}, on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
