"""Hybrid retrieval: dense (Chroma) and keyword (BM25) legs fused by a convex mix of scores.

Each leg proposes chunks; over the union both scores are known for every candidate: a chunk
only BM25 found gets its cosine from its stored vector, and every candidate's keyword score
is its *coverage*, the share of the query's term weight (IDF) it contains. Fused chunk score
= ``dense_weight`` x min-max scaled cosine + ``keyword_weight`` x coverage, in [0, 1]; a
document scores as its best chunk, so one long document cannot fill the result list.

Coverage rather than raw BM25: a chunk that holds every rare term of the query (a phone
number, an invoice id) scores 1 whatever its length, so it can reach the top even when the
vectors rank it low; one that matches only common words ("how", "do", "make", which most
chunks contain and which weigh little) scores near 0, and a query's words no chunk has
(a paraphrase) lower every chunk's coverage. No stop-word list, any language.

Tuned on MS MARCO (English) and ARCD (Arabic) by ``bench/retrieval_quality.py``; see
:class:`Fusion` for the chosen values.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..embedding import Embedder
from ..keyword import KeywordIndex
from ..store import ChunkRecord, VectorStore
from .filters import SearchFilters

Mode = Literal["hybrid", "dense", "keyword"]
Leg = Literal["dense", "keyword"]


@dataclass(frozen=True)
class Fusion:
    """How the legs are fused, tuned by ``bench/retrieval_quality.py --tune`` (see bench/RESULTS.md).

    ``method`` "convex" (the default): ``keyword_weight`` is the share of keyword coverage in
    the mix, ``dense_weight`` (the rest) that of the scaled cosine, so fused scores lie in
    [0, 1]. 0.3 was best on both sets (nDCG@10 0.811 / 0.886 against dense 0.808 / 0.868);
    0.25-0.35 are within noise.

    ``method`` "rrf": reciprocal rank fusion, ``dense_weight / (rrf_k + dense rank) +
    keyword_weight / (rrf_k + BM25 rank)`` per chunk, divided by its maximum so it lies in
    [0, 1]. Kept as the measured alternative: its best setting (``Fusion.rrf()``) falls below
    the dense leg alone on MS MARCO (0.793 against 0.808), because it gives BM25's top ranks a
    fixed share whatever their scores.

    ``depth`` chunks per leg are fetched per result asked (several chunks may share a
    document).
    """

    keyword_weight: float = 0.3
    depth: int = 4
    method: Literal["convex", "rrf"] = "convex"
    rrf_k: int = 10

    @property
    def dense_weight(self) -> float:
        return 1.0 - self.keyword_weight

    @classmethod
    def rrf(cls) -> "Fusion":
        """Reciprocal rank fusion as measured: ``rrf_k`` 10, dense 1.0 : keyword 0.75."""
        return cls(method="rrf", keyword_weight=0.75 / 1.75, rrf_k=10)


@dataclass
class Candidate:
    """One document found, with the chunk that represents it."""

    doc_key: str
    chunk_id: str
    text: str
    metadata: dict[str, Any]
    score: float  # fused score in [0, 1]; higher is better, comparable within one search only
    dense_score: float | None = None  # cosine similarity of the document's best dense chunk (or, found by
    # keyword only, of its best keyword chunk; None only when that chunk has no vector)
    dense_rank: int | None = None  # 1-based rank of the document in the dense leg
    keyword_rank: int | None = None  # 1-based rank of the document in the keyword leg
    legs: tuple[Leg, ...] = field(default_factory=tuple)


def _scaled(scores: dict[str, float], top_only: bool = False) -> dict[str, float]:
    """Scores mapped to [0, 1]: min-max over the candidates, or divided by the best (``top_only``,
    for BM25, whose zero is meaningful: no query term matched)."""
    if not scores:
        return {}
    high = max(scores.values())
    low = 0.0 if top_only else min(scores.values())
    span = high - low
    if span <= 0:
        return {c: 1.0 for c in scores}
    return {c: (v - low) / span for c, v in scores.items()}


def _doc_ranks(chunk_ids: Sequence[str], doc_of: dict[str, str]) -> dict[str, int]:
    """Each document's 1-based rank in a leg: the position of its best chunk among documents."""
    ranks: dict[str, int] = {}
    for chunk_id in chunk_ids:
        ranks.setdefault(doc_of[chunk_id], len(ranks) + 1)
    return ranks


@dataclass(frozen=True)
class FilteredDense:
    """How the dense leg searches under filters, by how many chunks pass them (measured at 100k
    chunks, bench/RESULTS-search.md). The keyword index selects the passing chunk ids with SQL;
    then

    * up to ``exact_max`` chunks: exact cosine over their stored vectors (``rank_among``);
    * up to ``restrict_share`` of the user's chunks: HNSW restricted to those ids (35-55 ms);
    * more: an unrestricted HNSW search deep enough to keep ``depth`` chunks after the filter is
      applied to its hits (``fetch x total / passing x 1.5``, at most ``max_fetch``).

    A Chroma metadata ``where`` is never used: 100-700 ms at 100k chunks, however selective.
    """

    exact_max: int = 500
    restrict_share: float = 0.3
    max_fetch: int = 1000


class HybridRetriever:
    def __init__(
        self,
        store: VectorStore,
        keyword: KeywordIndex,
        embedder: Embedder,
        fusion: Fusion | None = None,
        filtered: FilteredDense | None = None,
    ) -> None:
        self.store = store
        self.keyword = keyword
        self.embedder = embedder
        self.fusion = fusion or Fusion()
        self.filtered = filtered or FilteredDense()

    def _mix(
        self,
        user: str,
        vector: np.ndarray | None,
        dense_cos: dict[str, float],
        bm25: dict[str, float],
        keyword_query: str,
        mode: Mode,
    ) -> dict[str, float]:
        """Each candidate chunk's fused score in [0, 1]: ``dense_weight`` x its cosine min-max
        scaled over the candidates + ``keyword_weight`` x its keyword coverage
        (:meth:`KeywordIndex.coverage`). Single-leg modes score by that leg alone (cosine
        scaled, BM25 over the best BM25), which keeps each leg's own order.

        Both scores are known for every candidate: a chunk only BM25 found gets its cosine
        from its stored vector (added to ``dense_cos``); coverage is computed for the chunks
        the vectors found too, whether or not they were among the keyword hits.
        """
        if mode == "keyword" or vector is None:
            return _scaled(bm25, top_only=True)
        if mode == "dense":
            return _scaled(dense_cos)
        if self.fusion.method == "rrf":
            return self._reciprocal_rank(list(dense_cos), list(bm25))
        missing = [c for c in bm25 if c not in dense_cos]
        if missing:
            query = np.asarray(vector, dtype=np.float32)
            query = query / (np.linalg.norm(query) or 1.0)
            for chunk_id, stored in self.store.embeddings(user, missing).items():
                dense_cos[chunk_id] = float(stored @ query / (np.linalg.norm(stored) or 1.0))
        dense = _scaled(dense_cos)
        keyword = self.keyword.coverage(user, keyword_query, list(dense)) if bm25 else {}
        w = self.fusion.keyword_weight
        # Keyword hits whose vector is gone (not or no longer in the store) are left out.
        return {c: (1.0 - w) * d + w * keyword.get(c, 0.0) for c, d in dense.items()}

    def _reciprocal_rank(self, dense_ids: list[str], keyword_ids: list[str]) -> dict[str, float]:
        """Each chunk's reciprocal-rank-fusion score over both legs' rankings, in [0, 1]."""
        fusion = self.fusion
        scores: dict[str, float] = {}
        for weight, ranked in ((fusion.dense_weight, dense_ids), (fusion.keyword_weight, keyword_ids)):
            for rank, chunk_id in enumerate(ranked, start=1):
                scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (fusion.rrf_k + rank)
        best = 1.0 / (fusion.rrf_k + 1)  # first in both legs (the weights add up to 1)
        return {chunk_id: score / best for chunk_id, score in scores.items()}

    def _dense(self, user: str, vector: np.ndarray, depth: int, filters: SearchFilters) -> list[Any]:
        """The dense leg's hits, best first: ``depth`` of them, filtered as :class:`FilteredDense` says
        (the caller still applies ``filters.matches`` to every hit)."""
        if filters.is_empty:
            return self.store.query(user, vector, depth)
        plan = self.filtered
        total = self.keyword.count(user)
        passing, ids = self.keyword.matching_chunks(user, filters, max(plan.exact_max, int(plan.restrict_share * total)))
        if passing == 0:
            return []
        if ids is not None and len(ids) <= plan.exact_max:
            return self.store.rank_among(user, vector, ids, depth)
        if ids is not None:
            return self.store.query(user, vector, depth, among=ids)
        return self.store.query(user, vector, min(plan.max_fetch, math.ceil(depth * total / passing * 1.5)))

    async def search(
        self,
        user: str,
        query: str,
        k: int,
        filters: SearchFilters | None = None,
        mode: Mode = "hybrid",
        *,
        keyword_query: str | None = None,
    ) -> list[Candidate]:
        """The ``k`` best documents of ``user`` for ``query``, best first.

        ``keyword_query`` replaces ``query`` for the keyword leg (e.g. terms a query analysis
        extracted). The blocking work runs in a worker thread.
        """
        return await asyncio.to_thread(self.search_sync, user, query, k, filters, mode, keyword_query=keyword_query)

    def search_sync(
        self,
        user: str,
        query: str,
        k: int,
        filters: SearchFilters | None = None,
        mode: Mode = "hybrid",
        *,
        keyword_query: str | None = None,
    ) -> list[Candidate]:
        """:meth:`search`, for callers already in a worker thread (and the benchmarks)."""
        filters = filters or SearchFilters()
        fusion = self.fusion
        if not query.strip() or k <= 0:
            return []
        depth = k * fusion.depth
        doc_of: dict[str, str] = {}
        records: dict[str, ChunkRecord] = {}
        dense_ids: list[str] = []
        dense_best: dict[str, float] = {}  # doc_key -> cosine of its best dense chunk
        dense_cos: dict[str, float] = {}  # chunk_id -> cosine with the query
        keyword_hits: list[tuple[str, float]] = []  # (chunk_id, BM25), best first
        vector = None

        if mode in ("hybrid", "dense"):
            vector = self.embedder.embed_query(query)
            for hit in self._dense(user, vector, depth, filters):
                if filters.matches(hit.metadata):
                    dense_ids.append(hit.chunk_id)
                    dense_cos[hit.chunk_id] = hit.score
                    dense_best.setdefault(hit.doc_key, hit.score)
                    doc_of[hit.chunk_id] = hit.doc_key
                    records[hit.chunk_id] = ChunkRecord(hit.chunk_id, hit.doc_key, hit.text, hit.metadata)
        if mode in ("hybrid", "keyword"):
            keyword_hits = self.keyword.search(user, keyword_query or query, depth, filters)
            for chunk_id, _ in keyword_hits:
                doc_of.setdefault(chunk_id, chunk_id.rsplit("#", 1)[0])

        legs: dict[Leg, list[str]] = {"dense": dense_ids, "keyword": [c for c, _ in keyword_hits]}
        doc_ranks = {leg: _doc_ranks(ids, doc_of) for leg, ids in legs.items()}
        chunk_scores = self._mix(user, vector, dense_cos, dict(keyword_hits), keyword_query or query, mode)
        doc_scores: dict[str, float] = {}
        best_chunk: dict[str, str] = {}
        for chunk_id in sorted(chunk_scores, key=lambda c: -chunk_scores[c]):
            doc_key = doc_of[chunk_id]
            if doc_key not in best_chunk:
                best_chunk[doc_key], doc_scores[doc_key] = chunk_id, chunk_scores[chunk_id]
        top = sorted(doc_scores, key=lambda d: (-doc_scores[d], d))[:k]

        missing = [best_chunk[d] for d in top if best_chunk[d] not in records]
        records.update((r.chunk_id, r) for r in self.store.get_chunks(user, missing))
        candidates = []
        for doc_key in top:
            record = records.get(best_chunk[doc_key])
            if record is None:  # in the keyword index but not (yet, or any more) in the vector store
                continue
            candidates.append(
                Candidate(
                    doc_key=doc_key,
                    chunk_id=record.chunk_id,
                    text=record.text,
                    metadata=dict(record.metadata),
                    score=doc_scores[doc_key],
                    dense_score=dense_best.get(doc_key, dense_cos.get(record.chunk_id)),
                    dense_rank=doc_ranks["dense"].get(doc_key),
                    keyword_rank=doc_ranks["keyword"].get(doc_key),
                    legs=tuple(leg for leg in legs if doc_key in doc_ranks[leg]),
                )
            )
        return candidates
