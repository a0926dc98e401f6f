"""The kind of item a question names vouches for its best candidate: that one need only clear the query's noise
floor, not by the full margin; the next of the same kind and every other kind still need the margin (ADR 0701)."""

from __future__ import annotations

from types import SimpleNamespace

from semantic_mcp.search.calibration import CALIBRATIONS, NAMED_KIND_NOISE_MARGIN, default_cut
from semantic_mcp.search.cut_notes import cut_off_notes

E5 = CALIBRATIONS["multilingual-e5-small-q4"]
JUST_OVER_THE_FLOOR = NAMED_KIND_NOISE_MARGIN + 0.007  # the plumber on the demo


def candidate(name: str, kind: str, rise: float, score: float = 0.40) -> SimpleNamespace:
    return SimpleNamespace(name=name, score=score, above_noise=rise, coverage=0.0, other_language=False,
                           metadata={"doc_type": kind})


def test_the_best_contact_just_over_the_floor_is_kept_for_a_question_naming_contacts() -> None:
    plumber = candidate("Dave Miller", "contact", JUST_OVER_THE_FLOOR)
    other = candidate("Liam O'Brien", "contact", JUST_OVER_THE_FLOOR, score=0.26)
    note = candidate("Minutes", "note", JUST_OVER_THE_FLOOR, score=0.41)
    kept = default_cut(E5, [note, plumber, other], {"contact"})
    assert [c.name for c in kept] == ["Dave Miller"]
    assert default_cut(E5, [note, plumber, other], set()) == []  # no kind named: the full margin for all


def test_below_the_floor_the_named_kind_is_not_kept_and_the_note_quotes_what_it_needed() -> None:
    gibberish_phone = candidate("Erin", "contact", -0.1, score=0.35)
    assert default_cut(E5, [gibberish_phone], {"contact"}) == []
    [note] = cut_off_notes([gibberish_phone], [], E5.cut_off, 10, calibration=E5, named_kinds={"contact"})
    assert f"less than the {NAMED_KIND_NOISE_MARGIN:.3f} required" in note


def test_the_kind_vouches_only_for_a_candidate_at_the_full_cut_off() -> None:
    weak = candidate("Kim Novak", "contact", JUST_OVER_THE_FLOOR, score=E5.cut_off * 0.8)
    assert default_cut(E5, [weak], {"contact"}) == []
    [note] = cut_off_notes([weak], [], E5.cut_off, 10, calibration=E5, named_kinds={"contact"})
    assert f"less than the {E5.noise_margin:.3f} required" in note
