"""A list whose scores read in its order (issue 35, item 2; ADR 0700).

The search orders its hits by more than their estimated relevance: the question's cues (a kind of item
named, a date window, "next", overdue cards first: search/intent.py, item_fields.py) and a re-ranking (the
cross-encoder, search/rerank.py, or the client's model) move some ahead. Left as they were, the scores
then read out of order (0.86 above 0.89) and a client's model trusts neither. The rule, applied last on
every path: a hit moved ahead of others is reported at the relevance of the best hit it passed (the cue
or the re-ranking is evidence its score did not count); and a hit the relevance rule kept below the
cut-off (an exact match, the kind the question names, another language within the spread, an overdue
card found by its due date) is reported at the cut-off, since that rule judged it an answer. No score is
lowered, nothing is added or dropped, the order stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any


def in_score_order(candidates: Sequence[Any], cut_off: float = 0.0) -> list[Any]:
    """``candidates`` (dataclasses with ``score``) in their order, each reported at no less than ``cut_off``
    and than every candidate after it: the reported scores never rise down the list."""
    reported: list[Any] = []
    floor = cut_off
    for candidate in reversed(candidates):
        score = max(float(candidate.score), floor)
        reported.append(candidate if score == float(candidate.score) else replace(candidate, score=score))
        floor = score
    return reported[::-1]
