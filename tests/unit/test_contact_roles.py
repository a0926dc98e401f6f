"""The role a question names for the contact it wants, in any language the app reads (ADR 0722): "Klempner",
"plombier" and "fontanero" point to the contact of Miller Plumbing, which the kind then vouches for (before
a contact that merely reads closer to the question's language) and which clears the noise floor on that word."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

from semantic_mcp.search.calibration import CALIBRATIONS, default_cut
from semantic_mcp.search.cut_notes import cut_off_notes
from semantic_mcp.search.intent import apply_intent, read_intent
from semantic_mcp.search.roles import holds_role, read_roles

E5 = CALIBRATIONS["multilingual-e5-small-q4"]
NOW = datetime(2026, 11, 28, tzinfo=UTC)


def contact(name: str, company: str, score: float, rise: float, text: str = "") -> SimpleNamespace:
    return SimpleNamespace(name=name, score=score, above_noise=rise, coverage=0.0, other_language=True,
                           text=text or f"Contact: {name}", metadata={"doc_type": "contact", "company": company})


def test_roles_are_read_in_each_language_and_at_the_end_of_a_german_compound() -> None:
    for words in (["plumber"], ["klempner"], ["plombier"], ["fontanero"], ["sanitärinstallateur"]):
        assert read_roles(words)[0] == ("plumber",), words
    assert read_roles(["maler"])[0] == ("painter",) and read_roles(["normaler"])[0] == ()  # short: whole words only
    assert holds_role(["plumber"], "Contact: Dave Miller", {"company": "Miller Plumbing"})
    assert not holds_role(["plumber"], "Contact: Erin Schmidt", {"company": "Nextcloud GmbH"})


def test_a_role_is_read_only_when_the_question_asks_for_a_contact() -> None:
    assert read_intent("Wie erreiche ich den Klempner?", NOW).roles == ("plumber",)
    assert read_intent("invoice from the plumber", NOW).roles == ()  # names no contact: the words decide as before


def test_the_contact_holding_the_role_is_vouched_for_and_first_over_one_closer_in_meaning() -> None:
    intent = read_intent("Wie erreiche ich den Klempner?", NOW)
    erin = contact("Erin Schmidt", "Nextcloud GmbH", 0.35, 0.004)  # the demo's figures before ADR 0722
    dave = contact("Dave Miller", "Miller Plumbing", 0.2995, -0.00003)
    role = intent.names_role_of
    assert [c.name for c in default_cut(E5, [erin, dave], {"contact"})] == ["Erin Schmidt"]  # no role: as before
    assert [c.name for c in default_cut(E5, [erin, dave], {"contact"}, preferred=role)] == ["Dave Miller"]
    assert [c.name for c in apply_intent([erin, dave], intent)] == ["Dave Miller", "Erin Schmidt"]


def test_the_role_waives_the_floor_not_the_cut_off_and_the_note_quotes_the_rule_applied() -> None:
    intent = read_intent("Comment joindre le plombier ?", NOW)
    role = intent.names_role_of
    carol = contact("Carol Jones", "Smile Dental", 0.46, 0.011)
    dave = contact("Dave Miller", "Miller Plumbing", 0.36, -0.00003)  # the demo's figures: just under the floor
    assert default_cut(E5, [carol, dave], {"contact"}, preferred=role) == [dave]
    faint = contact("Dave Miller", "Miller Plumbing", E5.cut_off * 0.4, 0.02)  # under half the cut-off: not kept
    assert default_cut(E5, [carol, faint], {"contact"}, preferred=role) == []
    # Carol is not the contact the kind vouched for, so she needed the full margin, and the note says so.
    [note] = cut_off_notes([carol, faint], [], E5.cut_off, 10, calibration=E5, named_kinds={"contact"}, preferred=role)
    assert f"less than the {E5.noise_margin:.3f} required" in note
