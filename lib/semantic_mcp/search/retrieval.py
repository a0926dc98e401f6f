"""Hybrid retrieval: dense (Chroma) and keyword (BM25) legs fused by Reciprocal Rank Fusion.

Each leg returns chunks; chunks are grouped by document within each leg (a document's rank
in a leg is the rank of its best chunk there), so one long document cannot fill the result
list, and the documents' ranks are fused: ``score = sum(weight / (rrf_k + rank))`` over the
legs that found it. Ranks, not scores, are fused because cosine similarities and BM25 are
on unrelated scales. Each candidate carries the chunk that scored best when the legs are
fused at chunk level, so the excerpt shown is the one both legs agree on when they do.

Tuned on MS MARCO (English) and ARCD (Arabic) by ``bench/retrieval_quality.py``; see
:class:`Fusion` for the chosen values.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..embedding import Embedder
from ..keyword import KeywordIndex
from ..store import ChunkRecord, VectorStore
from .filters import SearchFilters

Mode = Literal["hybrid", "dense", "keyword"]
Leg = Literal["dense", "keyword"]


@dataclass(frozen=True)
class Fusion:
    """RRF parameters, tuned by ``bench/retrieval_quality.py --tune`` (see bench/RESULTS.md).

    With the default e5 model the dense leg beats BM25 on both sets, and no rank fusion beat
    dense alone on MS MARCO; a lighter keyword leg costs least there (nDCG@10 0.794 against
    0.808 dense) and gains on ARCD (0.871 against 0.868). ``rrf_k`` 10 rather than the usual
    60 makes the top ranks count, so a document only BM25 ranks first (an exact code or name
    the vectors miss) still lands around fifth instead of below every dense hit.
    ``depth`` chunks per leg are fetched per result asked (several chunks may share a
    document); ``post_filter_depth`` replaces it when a filter Chroma cannot express (path
    prefix) thins the dense leg afterwards.
    """

    rrf_k: int = 10
    depth: int = 4
    post_filter_depth: int = 20
    dense_weight: float = 1.0
    keyword_weight: float = 0.75


@dataclass
class Candidate:
    """One document found, with the chunk that represents it."""

    doc_key: str
    chunk_id: str
    text: str
    metadata: dict[str, Any]
    score: float  # fused RRF score; higher is better, comparable within one search only
    dense_score: float | None = None  # cosine similarity of the document's best dense chunk
    dense_rank: int | None = None  # 1-based rank of the document in the dense leg
    keyword_rank: int | None = None  # 1-based rank of the document in the keyword leg
    legs: tuple[Leg, ...] = field(default_factory=tuple)


def _doc_ranks(chunk_ids: Sequence[str], doc_of: dict[str, str]) -> dict[str, int]:
    """Each document's 1-based rank in a leg: the position of its best chunk among documents."""
    ranks: dict[str, int] = {}
    for chunk_id in chunk_ids:
        ranks.setdefault(doc_of[chunk_id], len(ranks) + 1)
    return ranks


class HybridRetriever:
    def __init__(
        self, store: VectorStore, keyword: KeywordIndex, embedder: Embedder, fusion: Fusion | None = None
    ) -> None:
        self.store = store
        self.keyword = keyword
        self.embedder = embedder
        self.fusion = fusion or Fusion()

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
        keyword_ids: list[str] = []

        if mode in ("hybrid", "dense"):
            fetch = k * fusion.post_filter_depth if filters.needs_post_filter else depth
            vector = self.embedder.embed_query(query)
            for hit in self.store.query(user, vector, fetch, filters.to_chroma_where()):
                if filters.matches(hit.metadata):
                    dense_ids.append(hit.chunk_id)
                    dense_best.setdefault(hit.doc_key, hit.score)
                    doc_of[hit.chunk_id] = hit.doc_key
                    records[hit.chunk_id] = ChunkRecord(hit.chunk_id, hit.doc_key, hit.text, hit.metadata)
        if mode in ("hybrid", "keyword"):
            keyword_ids = [
                chunk_id for chunk_id, _ in self.keyword.search(user, keyword_query or query, depth, filters)
            ]
            for chunk_id in keyword_ids:
                doc_of.setdefault(chunk_id, chunk_id.rsplit("#", 1)[0])

        legs: dict[Leg, tuple[float, list[str]]] = {
            "dense": (fusion.dense_weight, dense_ids),
            "keyword": (fusion.keyword_weight, keyword_ids),
        }
        doc_ranks = {leg: _doc_ranks(ids, doc_of) for leg, (_, ids) in legs.items()}
        doc_scores: dict[str, float] = {}
        chunk_scores: dict[str, float] = {}
        for leg, (weight, ids) in legs.items():
            for doc_key, rank in doc_ranks[leg].items():
                doc_scores[doc_key] = doc_scores.get(doc_key, 0.0) + weight / (fusion.rrf_k + rank)
            for rank, chunk_id in enumerate(ids, start=1):
                chunk_scores[chunk_id] = chunk_scores.get(chunk_id, 0.0) + weight / (fusion.rrf_k + rank)

        best_chunk: dict[str, str] = {}
        for chunk_id in sorted(chunk_scores, key=lambda c: -chunk_scores[c]):
            best_chunk.setdefault(doc_of[chunk_id], chunk_id)
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
                    dense_score=dense_best.get(doc_key),
                    dense_rank=doc_ranks["dense"].get(doc_key),
                    keyword_rank=doc_ranks["keyword"].get(doc_key),
                    legs=tuple(leg for leg in legs if doc_key in doc_ranks[leg]),
                )
            )
        return candidates
