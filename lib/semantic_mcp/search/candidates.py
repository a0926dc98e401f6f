"""What retrieval hands on: a document found, with the chunk that represents it and the evidence for it.

Its own module so that calibration (which cuts a list of candidates) and retrieval (which makes them) both
stand on it, rather than on each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Leg = Literal["dense", "keyword"]


@dataclass
class Candidate:
    """One document found, with the chunk that represents it."""

    doc_key: str
    chunk_id: str
    text: str
    metadata: dict[str, Any]
    score: float  # calibrated P(answers the query) in [0, 1], comparable across queries (see Calibration)
    dense_score: float | None = None  # cosine similarity of the document's best dense chunk (or, found by
    # keyword only, of its best keyword chunk; None only when that chunk has no vector)
    dense_rank: int | None = None  # 1-based rank of the document in the dense leg
    keyword_rank: int | None = None  # 1-based rank of the document in the keyword leg
    coverage: float | None = None  # keyword coverage of the representing chunk (KeywordIndex.coverage)
    above_noise: float | None = None  # its fused evidence minus the query's noise floor (search/noise.py)
    other_language: bool = False  # its chunk is in another measured language than the query (ADR 0280)
    legs: tuple[Leg, ...] = field(default_factory=tuple)
