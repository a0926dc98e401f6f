"""Notes that say which relevance rule left results out, with the numbers that rule used (issue 35, item 2).

A note must name the rule the search applied: the default cut-off keeps a candidate by its estimated
relevance *and* its rise above the query's noise floor (calibration.Calibration.keeps), so "0.56, below
the cut-off 0.30" was false whenever the noise floor, not the score, dropped the closest item.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .calibration import (EXACT_MATCH_COVERAGE, NAMED_KIND_CUT_OFF_SHARE, NOISE_FLOOR_WAIVED_COVERAGE, Calibration,
                          vouched_for)

_SEE_ANYWAY = "Rephrase, or pass score_threshold=0 to see the closest items anyway."


def why_left_out(best: Any, calibration: Calibration | None, cut_off: float, named_kinds: set[str],
                 vouched: bool = True) -> str:
    """Why ``best`` (the closest candidate) did not pass; ``calibration`` None means the caller's score_threshold.
    ``vouched``: whether it is the candidate the kind it is of vouches for, when the question names that kind."""
    score = float(best.score)
    if calibration is None:
        return f"the closest item's estimated relevance is {score:.2f}, below your score_threshold {cut_off:.2f}"
    named = best.metadata.get("doc_type") in named_kinds
    needed = cut_off * (NAMED_KIND_CUT_OFF_SHARE if named else 1.0)
    if score < needed:
        kind = " for the kind of item you named" if named else ""
        return f"the closest item's estimated relevance is {score:.2f}, below the cut-off {needed:.2f}{kind}"
    rise, margin = best.above_noise, calibration.margin_for(named and vouched, score)
    waived = (best.coverage or 0.0) >= NOISE_FLOOR_WAIVED_COVERAGE
    if margin is not None and rise is not None and rise < margin and not waived:
        return (f"the closest item (estimated relevance {score:.2f}) stands only {rise:.3f} above what unrelated "
                f"text scores for this query, less than the {margin:.3f} required, and holds few of its words")
    return f"the closest item's estimated relevance is {score:.2f}"  # not reached while keeps() is the rule


def cut_off_notes(candidates: list[Any], passing: list[Any], cut_off: float, limit: int, *,
                  calibration: Calibration | None, named_kinds: set[str],
                  preferred: Callable[[Any], bool] = lambda _: False) -> list[str]:
    """What the relevance rule left out, when it matters to the caller: everything, or results they asked for.
    ``calibration`` is the default rule's (None when the caller's score_threshold was the rule); ``preferred`` as
    :func:`default_cut`'s."""
    if not candidates or len(passing) >= min(limit, len(candidates)):
        return []
    if not passing:
        best = max(candidates, key=lambda c: float(c.score))
        vouched = any(best is c for c in vouched_for(candidates, named_kinds, preferred))
        why = why_left_out(best, calibration, cut_off, named_kinds, vouched)
        return [f"Nothing in your Nextcloud answers this closely enough: {why}. {_SEE_ANYWAY}"]
    if calibration is None:
        return [f"Only {len(passing)} result(s) reach the relevance cut-off {cut_off:.2f} (your score_threshold); "
                "pass a lower score_threshold to see weaker matches."]
    return [f"Only {len(passing)} result(s) reach the relevance cut-off {cut_off:.2f} and stand clear of unrelated "
            f"text (or hold nearly all of the query's words, {EXACT_MATCH_COVERAGE:.0%}); pass score_threshold=0 "
            "to see weaker matches."]
