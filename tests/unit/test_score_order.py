"""The reported scores read in the list's order, and none shown reads below the cut-off (ADR 0700)."""

from __future__ import annotations

from dataclasses import dataclass

from semantic_mcp.search.score_order import in_score_order


@dataclass
class Hit:
    name: str
    score: float


def test_a_hit_moved_ahead_is_reported_at_the_score_of_the_best_it_passed() -> None:
    ordered = in_score_order([Hit("overdue card", 0.36), Hit("a", 0.62), Hit("b", 0.49), Hit("c", 0.51)])
    assert [(h.name, h.score) for h in ordered] == [("overdue card", 0.62), ("a", 0.62), ("b", 0.51), ("c", 0.51)]


def test_no_score_is_lowered_and_a_kept_hit_reads_at_least_the_cut_off() -> None:
    hits = [Hit("exact code", 0.12), Hit("named kind", 0.2), Hit("x", 0.9)]
    ordered = in_score_order(hits, cut_off=0.3)
    assert [h.score for h in ordered] == [0.9, 0.9, 0.9]
    assert [h.score for h in in_score_order([Hit("x", 0.9), Hit("y", 0.1)], cut_off=0.3)] == [0.9, 0.3]
    assert [h.score for h in hits] == [0.12, 0.2, 0.9]  # the candidates themselves are left as they were


def test_a_list_already_in_order_is_returned_as_it_is() -> None:
    hits = [Hit("a", 0.9), Hit("b", 0.5), Hit("c", 0.5)]
    assert all(a is b for a, b in zip(in_score_order(hits), hits, strict=True))
    assert in_score_order([]) == []
