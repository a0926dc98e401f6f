"""Hybrid retrieval: dense (Chroma) and keyword (BM25) legs, fused in raw cosine units, with calibrated scores.

Each leg proposes chunks; over the union both kinds of evidence are known for every candidate: a
chunk only BM25 found gets its cosine from its stored vector, and every candidate's keyword
evidence is its *coverage*, the share of the query's term weight (IDF) it contains. A chunk ranks
by ``cosine + keyword_weight x coverage (+ exact_bonus when coverage >= EXACT_MATCH_COVERAGE)``
and scores the calibrated probability that it answers the query (:class:`Calibration`, one per
embedding model); a document scores as its best chunk, so one long document cannot fill the
result list.

Coverage rather than raw BM25: a chunk that holds every rare term of the query (a phone
number, an invoice id) scores 1 whatever its length, so it can reach the top even when the
vectors rank it low; one that matches only common words ("how", "do", "make", which most
chunks contain and which weigh little) scores near 0, and a query's words no chunk has
(a paraphrase) lower every chunk's coverage. No stop-word list, any language.

Scores fitted on MS MARCO (English) and ARCD (Arabic) by ``bench/calibration.py``, the keyword weight
chosen over eleven sets by ``bench/retrieval_quality.py``: docs/adr/0250, 0270 and 0273.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Container, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

import numpy as np

from ..core.documents import chunk_doc_key
from ..embedding.backends import Embedder
from ..stores.keyword import KeywordIndex
from ..core.language import detect_language
from ..stores.vectors import ChunkRecord, VectorStore
from ..core.filters import SearchFilters
from .candidates import Candidate, Leg
from .calibration import RELATIVE_KEYWORD_WEIGHT, UNCALIBRATED, Calibration, calibration_for
from .filtered_dense import FilteredDense
from .noise import NoiseFloor

Mode = Literal["hybrid", "dense", "keyword"]


class Spaces(Protocol):
    """Who may be served what of the shared spaces (ADR 0352; the index state's rows)."""

    def user_spaces(self, user: str) -> dict[str, tuple[int, int]]:
        """space -> (documents ``user`` has a row for there, documents it holds)."""

    def readable_in(self, user: str, space: str, doc_keys: Collection[str]) -> set[str]:
        """Those of ``doc_keys`` ``user`` has a row for in ``space``."""


MAX_SPACE_OVERFETCH = 8  # a member an ACL leaves a small part of a space: candidates asked per result, at most


@dataclass(frozen=True)
class Fusion:
    """How the legs are fused (``bench/calibration.py`` and ``bench/retrieval_quality.py``, bench/RESULTS.md).

    ``method`` "calibrated" (the default): candidates rank by the evidence their calibrated score grows
    with (:class:`Calibration`), a linear mix of raw cosine and keyword coverage fitted per model.

    ``method`` "rrf": reciprocal rank fusion, ``dense_weight / (rrf_k + dense rank) +
    keyword_weight / (rrf_k + BM25 rank)`` per chunk. Kept as the measured alternative: it falls
    below the dense leg alone on MS MARCO, because it gives BM25's top ranks a fixed share
    whatever their scores. Scores are the calibrated ones whatever the method.

    ``depth`` chunks per leg are fetched per result asked (several chunks may share a document).
    """

    depth: int = 4
    method: Literal["calibrated", "rrf"] = "calibrated"
    rrf_k: int = 10
    keyword_weight: float = 0.75 / 1.75  # rrf only

    @property
    def dense_weight(self) -> float:
        return 1.0 - self.keyword_weight

    @classmethod
    def rrf(cls) -> "Fusion":
        """Reciprocal rank fusion as measured: ``rrf_k`` 10, dense 1.0 : keyword 0.75."""
        return cls(method="rrf", keyword_weight=0.75 / 1.75, rrf_k=10)


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


@dataclass
class _Gathered:
    """What the two legs found for one query (HybridRetriever._gather)."""

    vector: np.ndarray | None = None
    doc_of: dict[str, str] = field(default_factory=dict)  # chunk_id -> doc_key
    records: dict[str, ChunkRecord] = field(default_factory=dict)
    dense_ids: list[str] = field(default_factory=list)
    dense_best: dict[str, float] = field(default_factory=dict)  # doc_key -> cosine of its best dense chunk
    dense_cos: dict[str, float] = field(default_factory=dict)  # chunk_id -> cosine with the query
    keyword_hits: list[tuple[str, float]] = field(default_factory=list)  # (chunk_id, BM25), best first


def _best_documents(rank_key: dict[str, float], doc_of: dict[str, str], k: int) -> tuple[list[str], dict[str, str]]:
    """The ``k`` best documents by the ranking key of their best chunk, and that chunk of each."""
    doc_keys: dict[str, float] = {}  # doc_key -> ranking key of its best chunk
    best_chunk: dict[str, str] = {}
    for chunk_id in sorted(rank_key, key=lambda c: -rank_key[c]):
        doc_key = doc_of[chunk_id]
        if doc_key not in best_chunk:
            best_chunk[doc_key], doc_keys[doc_key] = chunk_id, rank_key[chunk_id]
    return sorted(doc_keys, key=lambda d: (-doc_keys[d], d))[:k], best_chunk


class HybridRetriever:
    def __init__(
        self,
        store: VectorStore,
        keyword: KeywordIndex,
        embedder: Embedder,
        fusion: Fusion | None = None,
        filtered: FilteredDense | None = None,
        spaces: Spaces | None = None,
    ) -> None:
        self.store = store
        self.spaces = spaces
        self.keyword = keyword
        self.embedder = embedder
        self.fusion = fusion or Fusion()
        self.filtered = filtered or FilteredDense()
        self.noise = NoiseFloor(embedder)
        # With a Chroma server the keyword leg runs while the dense leg waits on it (ADR 0563); beside
        # embedded Chroma, whose query runs in this process, it measured slower once (not settled).
        self._keyword_leg = ThreadPoolExecutor(max_workers=2, thread_name_prefix="keyword-leg")

    def calibration(self) -> Calibration:
        """The score calibration of the current embedding model (an admin may switch models at run time)."""
        return calibration_for(self.embedder.model_id)

    def _mix(
        self, vector: np.ndarray | None, dense_cos: dict[str, float], bm25: dict[str, float],
        coverage: dict[str, float], mode: Mode, calibration: Calibration, across: frozenset[str] = frozenset(),
    ) -> tuple[dict[str, float], dict[str, float]]:
        """Each candidate chunk's (ranking key, score).

        Hybrid: both kinds of evidence are known for every candidate (a chunk only BM25 found has
        its cosine from its stored vector in ``dense_cos`` already; ``coverage`` is computed for the
        chunks the vectors found too), and the score is their calibrated probability of answering
        (:class:`Calibration`); they rank by the fused evidence the probability grows with (or, with
        ``Fusion.rrf()``, by reciprocal rank fusion), under the query's own ``calibration``. Dense mode
        ranks by cosine, scored as hybrid; keyword mode ranks by BM25 and, having no vector, scores
        BM25 over the best BM25.
        Chunks in ``across`` are in another language than the query (:meth:`_across_languages`).
        """
        if mode == "keyword" or vector is None:
            scaled = _scaled(bm25, top_only=True)
            return scaled, scaled
        dense_ids = list(dense_cos)
        if calibration is UNCALIBRATED:
            fused = scores = self._relative_mix(dense_cos, coverage)
        else:
            fused = {c: calibration.ranked(cos, coverage.get(c, 0.0), c in across) for c, cos in dense_cos.items()}
            scores = {c: calibration.probability(cos, coverage.get(c, 0.0), c in across) for c, cos in dense_cos.items()}
        if mode == "dense":
            return dict(dense_cos), scores
        if self.fusion.method == "rrf":
            return self._reciprocal_rank(dense_ids, list(bm25)), scores
        # Ranked by the fused evidence itself: the probabilities of strong matches all round to 1.
        return fused, scores

    @staticmethod
    def _relative_mix(dense_cos: dict[str, float], coverage: dict[str, float]) -> dict[str, float]:
        """The score for a model without a calibration: ``RELATIVE_KEYWORD_WEIGHT`` x coverage + the rest x
        cosine min-max scaled over the candidates. Meaningful within one search only."""
        dense, w = _scaled(dense_cos), RELATIVE_KEYWORD_WEIGHT
        return {c: (1.0 - w) * d + w * coverage.get(c, 0.0) for c, d in dense.items()}

    def _reciprocal_rank(self, dense_ids: list[str], keyword_ids: list[str]) -> dict[str, float]:
        """Each chunk's reciprocal-rank-fusion score over both legs' rankings, in [0, 1]."""
        fusion = self.fusion
        scores: dict[str, float] = {}
        for weight, ranked in ((fusion.dense_weight, dense_ids), (fusion.keyword_weight, keyword_ids)):
            for rank, chunk_id in enumerate(ranked, start=1):
                scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (fusion.rrf_k + rank)
        best = 1.0 / (fusion.rrf_k + 1)  # first in both legs (the weights add up to 1)
        return {chunk_id: score / best for chunk_id, score in scores.items()}

    def _across_languages(self, user: str, query: str, chunk_ids: Sequence[str],
                          records: dict[str, ChunkRecord]) -> frozenset[str]:
        """The candidate chunks written in another measured language than ``query`` (ADR 0280), empty
        when the calibration has no ``other_language_bonus`` or the query's language is not clear.
        A chunk's language is stored at index time (``lang``, indexing/records.py); chunks indexed
        before it was have none and get no offset. The languages come from the keyword index (ADR 0568),
        for chunks written before it recorded them from ``records``' metadata, read for them if not yet."""
        if not self.calibration().other_language_bonus:
            return frozenset()
        language = detect_language(query)
        if language is None:
            return frozenset()
        languages = self.keyword.languages(user, chunk_ids)
        unrecorded = [c for c in chunk_ids if c not in languages and c in records]
        unread = [c for c in unrecorded if not records[c].metadata]
        records.update((r.chunk_id, r) for r in self.store.get_chunks(user, unread, read_texts=False))
        languages.update((c, str(records[c].metadata.get("lang", ""))) for c in unrecorded)
        return frozenset(c for c in chunk_ids if c in records and languages.get(c, "") not in ("", language))

    def _keyword_leg_with_vectors(
        self, user: str, query: str, depth: int, filters: SearchFilters, known: Container[str] = (),
    ) -> tuple[list[tuple[str, float]], dict[str, np.ndarray]]:
        """The keyword leg's hits (chunk id, BM25) and the stored vectors of those not ``known`` to the
        dense leg: their cosine is computed when the query's vector is there. Beside a Chroma server this
        runs while the server answers the dense leg, so neither read waits for the other (ADR 0567);
        hits gone from the vector store are left out."""
        hits = self.keyword.search(user, query, depth, filters)
        return hits, self.store.embeddings(user, [c for c, _ in hits if c not in known])

    def _with_texts(self, user: str, chosen: Sequence[ChunkRecord]) -> dict[str, ChunkRecord]:
        """The chosen records with their texts, read once for the results rather than for each leg's
        candidates (ADR 0567); a chunk with none (not written yet) keeps None and is not served."""
        texts = self.store.texts_of(user, [r.chunk_id for r in chosen], [r.text for r in chosen])
        return {r.chunk_id: replace(r, text=text) for r, text in zip(chosen, texts, strict=True)}

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

    def _gather(self, user: str, query: str, terms: str, depth: int, filters: SearchFilters,
                mode: Mode, vector: np.ndarray | None = None) -> _Gathered:
        """What the legs find for the query (``terms``: what the keyword leg matches): the dense leg's
        chunks with their cosines, the keyword leg's BM25 hits, and a cosine for each chunk only BM25
        found (from its stored vector). The keyword leg runs beside the dense one when Chroma is a server."""
        found = _Gathered()
        keyword_leg: Future[tuple[list[tuple[str, float]], dict[str, np.ndarray]]] | None = None
        if mode == "hybrid" and not self.store.in_process:
            keyword_leg = self._keyword_leg.submit(self._keyword_leg_with_vectors, user, terms, depth, filters)
        if mode in ("hybrid", "dense"):
            found.vector = vector if vector is not None else self.embedder.embed_query(query)
            for hit in self.filtered.hits(self.store, self.keyword, user, found.vector, depth, filters):
                if filters.matches(hit.metadata):
                    found.dense_ids.append(hit.chunk_id)
                    found.dense_cos[hit.chunk_id] = hit.score
                    found.dense_best.setdefault(hit.doc_key, hit.score)
                    found.doc_of[hit.chunk_id] = hit.doc_key
                    found.records[hit.chunk_id] = ChunkRecord(hit.chunk_id, hit.doc_key, hit.text, hit.metadata)
        if mode == "keyword":
            found.keyword_hits = self.keyword.search(user, terms, depth, filters)
        elif mode == "hybrid":
            found.keyword_hits, stored = (keyword_leg.result() if keyword_leg is not None else
                                          self._keyword_leg_with_vectors(user, terms, depth, filters, found.dense_cos))
            unit = np.asarray(found.vector, dtype=np.float32)
            unit = unit / (np.linalg.norm(unit) or 1.0)
            for chunk_id, stored_vector in stored.items():  # a chunk only BM25 found: its cosine from its vector
                if chunk_id not in found.dense_cos:
                    found.dense_cos[chunk_id] = float(stored_vector @ unit / (np.linalg.norm(stored_vector) or 1.0))
                    found.records[chunk_id] = ChunkRecord(chunk_id, chunk_doc_key(chunk_id), None, {})  # type: ignore[arg-type]
        for chunk_id, _ in found.keyword_hits:
            found.doc_of.setdefault(chunk_id, chunk_doc_key(chunk_id))
        return found

    def search_sync(
        self, user: str, query: str, k: int, filters: SearchFilters | None = None, mode: Mode = "hybrid",
        *, keyword_query: str | None = None,
    ) -> list[Candidate]:
        """:meth:`search`, for callers already in a worker thread (and the benchmarks).

        Besides the user's own collection, each shared space they have rows in (their team folders,
        ADR 0352) is asked; a space's candidates count only for documents the user has a row for, and
        all are merged by calibrated score. The rows are a pre-filter: every hit is re-checked as the
        caller after this, as any other."""
        filters = filters or SearchFilters()
        if not query.strip() or k <= 0:
            return []
        found, vector = self._search_collection(user, query, k, filters, mode, keyword_query)
        # The rows are read after the user's own collection was: a document moving into its space is in the
        # space before its row says so, and leaves the user's collection only after (indexing/writing.py).
        spaces = self.spaces.user_spaces(user) if self.spaces is not None else {}
        if not spaces:
            return found
        for space, (mine, size) in spaces.items():
            # Over-fetched by the share of the space the user may not be served (an ACL's denied subfolder).
            ask = k * min(MAX_SPACE_OVERFETCH, -(-max(size, 1) // max(mine, 1)))
            candidates, _ = self._search_collection(space, query, ask, filters, mode, keyword_query, vector)
            readable = self.spaces.readable_in(user, space, {c.doc_key for c in candidates})
            found += [c for c in candidates if c.doc_key in readable]
        merged: dict[str, Candidate] = {}  # a document moving into its space is briefly in both: its best once
        for candidate in sorted(found, key=lambda c: (-c.score, -(c.dense_score or 0.0), c.doc_key)):
            merged.setdefault(candidate.doc_key, candidate)
        return list(merged.values())[:k]

    def _search_collection(
        self, user: str, query: str, k: int, filters: SearchFilters, mode: Mode, keyword_query: str | None,
        vector: np.ndarray | None = None,
    ) -> tuple[list[Candidate], np.ndarray | None]:
        """The ``k`` best documents of one collection (a user's own or a shared space), best first, and the
        query's vector (embedded once for every collection a search asks)."""
        found = self._gather(user, query, keyword_query or query, k * self.fusion.depth, filters, mode, vector)
        vector, doc_of, records = found.vector, found.doc_of, found.records
        dense_ids, dense_best, dense_cos, keyword_hits = (found.dense_ids, found.dense_best, found.dense_cos,
                                                          found.keyword_hits)
        legs: dict[Leg, list[str]] = {"dense": dense_ids, "keyword": [c for c, _ in keyword_hits]}
        doc_ranks = {leg: _doc_ranks(ids, doc_of) for leg, ids in legs.items()}
        # Keyword coverage of every candidate with a vector (keyword hits whose vector is gone are left out).
        coverage = ({} if mode == "keyword" or vector is None else
                    self.keyword.coverage(user, keyword_query or query, list(dense_cos)))
        base = self.calibration()
        floor = self.noise.of(vector) if vector is not None and base.noise_margin is not None else None
        calibration = base.for_query(keyword_query or query,  # what the keyword leg matches
                                     max(dense_cos.values()) - floor if floor is not None and dense_cos else None,
                                     max(coverage.values(), default=0.0),
                                     None if base.rare_term_chunks is None and base.plain_order_chunks is None
                                     else self.keyword.rarest(user, keyword_query or query))
        across = (self._across_languages(user, query, list(dict.fromkeys([*dense_ids, *legs["keyword"]])), records)
                  if vector is not None else frozenset())
        rank_key, chunk_scores = self._mix(vector, dense_cos, dict(keyword_hits), coverage, mode, calibration, across)
        top, best_chunk = _best_documents(rank_key, doc_of, k)

        # The results' metadata where the legs read ids alone (ADR 0568), and their texts (ADR 0567).
        unread = [best_chunk[d] for d in top if best_chunk[d] not in records or not records[best_chunk[d]].metadata]
        records.update((r.chunk_id, r) for r in self.store.get_chunks(user, unread, read_texts=False))
        records.update(self._with_texts(user, [records[best_chunk[d]] for d in top if best_chunk[d] in records]))
        candidates = []
        for doc_key in top:
            record = records.get(best_chunk[doc_key])
            if record is None or record.text is None or not record.metadata:  # not (yet, or any more) in both indexes
                continue
            candidates.append(
                Candidate(
                    doc_key=doc_key,
                    chunk_id=record.chunk_id,
                    text=record.text,
                    metadata=dict(record.metadata),
                    score=chunk_scores.get(record.chunk_id, 0.0),
                    dense_score=dense_best.get(doc_key, dense_cos.get(record.chunk_id)),
                    dense_rank=doc_ranks["dense"].get(doc_key),
                    keyword_rank=doc_ranks["keyword"].get(doc_key),
                    coverage=coverage.get(record.chunk_id),
                    above_noise=None if floor is None or record.chunk_id not in dense_cos else
                    calibration.fused(dense_cos[record.chunk_id], coverage.get(record.chunk_id, 0.0),
                                      record.chunk_id in across) - floor,
                    other_language=record.chunk_id in across,
                    legs=tuple(leg for leg in legs if doc_key in doc_ranks[leg]),
                )
            )
        return candidates, vector
