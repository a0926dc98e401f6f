"""What keeping each chunk's text in Chroma costs: insert CPU and disk, with and without documents.

Issue 16's build of a million chunks misses the hour (bench/RESULTS-scale.md). Chroma's embedded store
keeps a document three times: as a metadata string with an index on its value, in a trigram FTS5
table, and in that table's content copy. The app never asks Chroma for full-text search (its own FTS5
keyword index does that, ADR 0563), so this measures what the copy costs: ``--chunks`` chunks of
MS MARCO prose at the app's chunk size (~1,100 characters, the windows of bench/indexing.py), random
384-dimension vectors, the app's metadata shape, upserted 500 at a time into a fresh collection, once
with their texts and once without. Reported: CPU seconds (process time, so a busy machine moves it
less than wall time), chunks per CPU second, the store's size on disk and its largest tables.
A collection schema that deletes the FTS index of ``#document`` was tried too: embedded Chroma 1.5.9
ignores it (its FTS table still gets every row).

    PYTHONPATH=lib:. python bench/chroma_text_cost.py --chunks 10000 --runs 2
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time

import chromadb
import numpy as np

from indexing import passages


def insert(texts: list[str], vectors: np.ndarray, with_text: bool) -> tuple[float, int, list[tuple[str, int]]]:
    """CPU seconds to upsert them, bytes on disk, the four largest tables of Chroma's SQLite file."""
    with tempfile.TemporaryDirectory() as directory:
        collection = chromadb.PersistentClient(directory).create_collection("cost", metadata={"hnsw:space": "cosine"})
        started = time.process_time()
        for i in range(0, len(texts), 500):
            ids = range(i, min(len(texts), i + 500))
            collection.upsert(ids=[f"c{j}" for j in ids], embeddings=vectors[i:i + 500],
                              documents=texts[i:i + 500] if with_text else None,
                              metadatas=[{"doc_key": f"note:{j // 4}", "chunk_index": j % 4, "doc_type": "note"}
                                         for j in ids])
        cpu = time.process_time() - started
        size = sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(directory) for name in names)
        with sqlite3.connect(os.path.join(directory, "chroma.sqlite3")) as db:
            tables = db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 4").fetchall()
        return cpu, size, tables


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=2, help="alternated runs of each kind")
    args = parser.parse_args()
    texts = passages(args.chunks, 183)  # ~1,100 characters, as bench/org_search.py
    vectors = np.random.default_rng(0).standard_normal((args.chunks, 384)).astype(np.float32)
    print(f"{args.chunks} chunks, {sum(map(len, texts)) / len(texts):.0f} characters on average; load {os.getloadavg()[0]:.1f}")
    for run in range(args.runs):
        for with_text in (True, False):
            cpu, size, tables = insert(texts, vectors, with_text)
            print(f"run {run + 1}, {'with texts   ' if with_text else 'without texts'}: {cpu:6.1f} CPU s, "
                  f"{args.chunks / cpu:4.0f} chunks per CPU s, {size / 1e6:6.1f} MB on disk "
                  f"({size / args.chunks / 1e3:.1f} KB a chunk); largest tables: "
                  + ", ".join(f"{name} {pages / 1e6:.1f} MB" for name, pages in tables))


if __name__ == "__main__":
    main()
