"""Time, tasks and people from an item's own fields at the search's clock (search/item_fields.py), on fixed clocks."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from fake_nextcloud.seed import event_ics, vcard
from semantic_mcp.indexing.records import chunk_metadata
from semantic_mcp.search.intent import read_intent
from semantic_mcp.search.item_fields import (
    at_search_time, at_time, due_first, is_due, occurrences, reach_fields, reach_line, read_due,
)
from semantic_mcp.search.prompts import document_block
from semantic_mcp.sources.calendar import document_from_ics
from semantic_mcp.sources.contacts import document_from_vcard
from semantic_mcp.sources.deck import _Placed, document_from_card

SEPTEMBER = datetime(2026, 9, 14, 9, 0, tzinfo=UTC)  # a Monday
LATE_NOVEMBER = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)  # a Friday


def weekly_meeting(now: datetime = SEPTEMBER) -> dict[str, Any]:
    ics = event_ics("team@example.test", "Team meeting", SEPTEMBER, 60, "Weekly sync", "Room 4",
                    extra=("RRULE:FREQ=WEEKLY;BYDAY=MO",))
    doc = document_from_ics("alice", "personal/team.ics", ics, '"1"', "Personal", 0, now)
    return chunk_metadata(doc)  # type: ignore[arg-type]


def stamp(moment: datetime) -> int:
    return int(moment.timestamp())


def test_a_weekly_event_begun_in_september_reports_next_monday_in_late_november() -> None:
    meta = weekly_meeting()
    assert meta["rrule"] == "FREQ=WEEKLY;BYDAY=MO" and meta["event_start"] == stamp(SEPTEMBER)  # indexed once
    moved = at_time(meta, stamp(LATE_NOVEMBER), following=2)
    assert moved["event_start"] == stamp(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    assert moved["event_end"] == moved["event_start"] + 3600
    assert moved["first_start"] == stamp(SEPTEMBER)
    assert moved["following"] == [stamp(datetime(2026, 12, day, 9, 0, tzinfo=UTC)) for day in (7, 14)]


def test_an_occurrence_under_way_is_still_the_next_one() -> None:
    during = stamp(datetime(2026, 11, 30, 9, 30, tzinfo=UTC))
    assert occurrences(weekly_meeting(), during, 1) == [stamp(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))]


def test_a_zoned_weekly_event_keeps_its_local_hour_across_daylight_saving() -> None:
    start = datetime(2026, 9, 14, 9, 0, tzinfo=ZoneInfo("Europe/Berlin"))
    ics = event_ics("z@example.test", "Standup", start, 15, extra=("RRULE:FREQ=WEEKLY;BYDAY=MO",))
    meta = chunk_metadata(document_from_ics("alice", "p/z.ics", ics, '"1"', "Personal", 0, SEPTEMBER))  # type: ignore[arg-type]
    assert meta["tzid"] == "Europe/Berlin"
    (next_start,) = occurrences(meta, stamp(LATE_NOVEMBER), 1)
    assert datetime.fromtimestamp(next_start, ZoneInfo("Europe/Berlin")).hour == 9  # 08:00 UTC in winter


def test_an_ended_series_and_a_plain_event_keep_what_they_said() -> None:
    ics = event_ics("c@example.test", "Course", SEPTEMBER, 60, extra=("RRULE:FREQ=WEEKLY;COUNT=3",))
    ended = chunk_metadata(document_from_ics("alice", "p/c.ics", ics, '"1"', "Personal", 0, SEPTEMBER))  # type: ignore[arg-type]
    assert at_time(ended, stamp(LATE_NOVEMBER)) is ended
    plain = {"doc_type": "calendar_event", "event_start": stamp(SEPTEMBER)}
    assert at_time(plain, stamp(LATE_NOVEMBER)) is plain


def card(key: str, due: str | None, done: bool = False) -> dict[str, Any]:
    board = {"id": 1, "title": "Ops", "owner": {"uid": "alice"}}
    raw = {"id": key, "title": f"Card {key}", "duedate": due, "done": done, "labels": []}
    return chunk_metadata(document_from_card(key, _Placed(board, {"id": 1, "title": "To do"}, raw)))


@dataclass
class Hit:
    doc_key: str
    metadata: dict[str, Any]
    score: float = 0.5
    extra: dict[str, Any] = field(default_factory=dict)
    text: str = ""  # a search rewrites a moved event's text too (item_fields.when_now)


def test_overdue_cards_not_done_come_first_by_due_date() -> None:
    now = stamp(LATE_NOVEMBER)
    handbook = Hit("file:handbook", {"doc_type": "file"}, 0.9)
    future = Hit("deck_card:f", card("f", "2026-12-20T00:00:00+00:00"), 0.8)
    late = Hit("deck_card:l", card("l", "2026-11-20T00:00:00+00:00"), 0.3)
    later = Hit("deck_card:x", card("x", "2026-11-01T00:00:00+00:00"), 0.2)
    done = Hit("deck_card:d", card("d", "2026-11-10T00:00:00+00:00", done=True), 0.7)
    assert done.metadata["done"] == "1" and not is_due(done.metadata, "overdue", now)
    ordered = due_first([handbook, future, late, later, done], "overdue", now)
    assert [h.doc_key for h in ordered] == ["deck_card:x", "deck_card:l", "file:handbook", "deck_card:f", "deck_card:d"]
    soon = due_first([handbook, future, Hit("deck_card:s", card("s", "2026-11-30T00:00:00+00:00"))], "soon", now)
    assert soon[0].doc_key == "deck_card:s"


@pytest.mark.parametrize("question", [
    "which of my tasks are overdue?", "which cards are past their due date", "Welche Aufgaben sind überfällig?",
    "quelles tâches sont en retard ?", "¿qué tareas están vencidas?",
])
def test_overdue_questions_are_read_in_every_language(question: str) -> None:
    intent = read_intent(question, LATE_NOVEMBER)
    assert intent.due == "overdue" and intent.direction is None
    assert any("past their due date" in note for note in intent.notes())


def test_due_soon_and_plain_questions() -> None:
    assert read_due("what is due this week")[0] == "soon"
    assert read_due("when is the next team meeting") == (None, None)


def contact() -> dict[str, Any]:
    text = vcard("d1", "Dave Miller", "dave@example.test", "Miller Plumbing", "Fixed the kitchen sink.", "+15550001")
    return chunk_metadata(document_from_vcard("contacts/d1.vcf", text, '"1"', "Contacts", 0))  # type: ignore[arg-type]


def test_a_contact_hit_carries_the_fields_the_question_asks_for() -> None:
    meta = contact()
    assert reach_line(meta, "how do I reach the plumber") == "Email: dave@example.test; Phone: +15550001 (cell)"
    assert reach_line(meta, "which company does Dave work for") == "Organization: Miller Plumbing"
    assert reach_fields("Telefonnummer vom Klempner") == ("phone",)
    assert reach_fields("¿cuál es el correo de Dave?") == ("email",)
    assert reach_line(meta, "phone of the plumber", shown="… Phone: +15550001 (cell) …") == ""  # the excerpt shows it already
    assert reach_line({"doc_type": "note", "email": "x@y"}, "email") == ""


def test_the_answer_prompt_shows_the_next_occurrence_and_the_contact_fields() -> None:
    moved = at_search_time([Hit("calendar_event:t", weekly_meeting())], stamp(LATE_NOVEMBER), following=1)[0]
    block = document_block(1, "calendar_event", "Team meeting", moved.metadata, "Team meeting weekly")
    assert 'starts="2026-11-30 09:00 UTC"' in block and 'then="2026-12-07 09:00 UTC"' in block
    block = document_block(2, "contact", "Dave Miller", contact(), "Contact: Dave Miller")
    assert 'email="dave@example.test"' in block and "phone=" in block


def test_a_card_not_done_and_a_plain_event_carry_no_item_fields() -> None:
    plain = event_ics("p@example.test", "Dentist", SEPTEMBER)
    event = chunk_metadata(document_from_ics("alice", "p/p.ics", plain, '"1"', "Personal", 0, SEPTEMBER))  # type: ignore[arg-type]
    assert not {"rrule", "tzid", "done", "email"} & (set(card("c", None)) | set(event))
