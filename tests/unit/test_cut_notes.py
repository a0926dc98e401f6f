"""The relevance notes name the rule the search applied, with that rule's numbers (issue 35, item 2)."""

from __future__ import annotations

from types import SimpleNamespace

from semantic_mcp.search.calibration import CALIBRATIONS, default_cut
from semantic_mcp.search.cut_notes import cut_off_notes

E5 = CALIBRATIONS["multilingual-e5-small-q4"]


def candidate(score: float, above_noise: float | None, coverage: float = 0.0, kind: str = "note") -> SimpleNamespace:
    return SimpleNamespace(score=score, above_noise=above_noise, coverage=coverage, other_language=False,
                           metadata={"doc_type": kind})


def notes(candidates: list[SimpleNamespace], named: set[str] = set()) -> list[str]:  # noqa: B006 - never mutated
    passing = default_cut(E5, candidates, named)
    return cut_off_notes(candidates, passing, E5.cut_off, 10, calibration=E5, named_kinds=named)


def test_a_closest_item_over_the_cut_off_but_in_the_noise_is_not_said_to_be_below_the_cut_off() -> None:
    above_cut_in_noise = candidate(E5.cut_off + 0.26, above_noise=E5.noise_margin / 4)
    [note] = notes([above_cut_in_noise])
    assert "below the cut-off" not in note
    assert f"{above_cut_in_noise.score:.2f}" in note and f"{E5.noise_margin:.3f} required" in note


def test_a_closest_item_under_the_cut_off_gets_the_cut_off_and_its_score() -> None:
    [note] = notes([candidate(E5.cut_off - 0.1, above_noise=1.0)])
    assert f"{E5.cut_off - 0.1:.2f}, below the cut-off {E5.cut_off:.2f}" in note


def test_the_named_kind_cut_off_is_the_one_quoted() -> None:
    score = E5.cut_off * 0.4
    [note] = notes([candidate(score, above_noise=1.0, kind="deck_card")], named={"deck_card"})
    assert f"below the cut-off {E5.cut_off * 0.5:.2f} for the kind of item you named" in note


def test_a_caller_threshold_is_named_as_theirs() -> None:
    low = candidate(0.4, above_noise=1.0)
    [note] = cut_off_notes([low], [], 0.7, 10, calibration=None, named_kinds=set())
    assert "0.40, below your score_threshold 0.70" in note
