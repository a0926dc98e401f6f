"""A recurring event's "When:" line rewritten to the occurrence its fields hold (search/item_fields.when_now),
for the kinds of time an event has: zoned, UTC, floating, all-day; on fixed clocks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from fake_nextcloud.seed import event_ics
from semantic_mcp.indexing.records import chunk_metadata
from semantic_mcp.search.item_fields import at_search_time, at_time, when_now
from semantic_mcp.sources.calendar import document_from_ics

SEPTEMBER = datetime(2026, 9, 14, 9, 0, tzinfo=UTC)  # a Monday
LATE_NOVEMBER = int(datetime(2026, 11, 27, 12, 0, tzinfo=UTC).timestamp())  # a Friday


def indexed(ics: str) -> tuple[str, dict[str, Any]]:
    doc = document_from_ics("alice", "personal/e.ics", ics, '"1"', "Personal", 0, SEPTEMBER)
    return doc.text, chunk_metadata(doc)  # type: ignore[union-attr,arg-type]


def when(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("When: "))


def test_a_zoned_weekly_event_reads_next_monday_at_its_local_hour() -> None:
    start = datetime(2026, 9, 14, 9, 0, tzinfo=ZoneInfo("Europe/Berlin"))
    text, meta = indexed(event_ics("z@x", "Standup", start, 15, extra=("RRULE:FREQ=WEEKLY;BYDAY=MO",)))
    assert when(text) == "When: Mon 14 Sep 2026 09:00–09:15 (Europe/Berlin)"
    moved = when_now(text, at_time(meta, LATE_NOVEMBER), LATE_NOVEMBER)
    assert when(moved) == "When: Mon 30 Nov 2026 09:00–09:15 (Europe/Berlin) — the next occurrence"
    assert moved.replace(when(moved), "") == text.replace(when(text), "")  # nothing else changes


def test_an_occurrence_under_way_says_so() -> None:
    text, meta = indexed(event_ics("u@x", "Sync", SEPTEMBER, 60, extra=("RRULE:FREQ=WEEKLY;BYDAY=MO",)))
    during = int(datetime(2026, 11, 30, 9, 30, tzinfo=UTC).timestamp())
    assert when(when_now(text, at_time(meta, during), during)) == \
        "When: Mon 30 Nov 2026 09:00–10:00 (UTC) — under way now"


def test_a_floating_event_keeps_its_wall_clock_hour() -> None:
    ics = event_ics("f@x", "Yoga", SEPTEMBER, 60, extra=("RRULE:FREQ=WEEKLY;BYDAY=MO",))
    ics = ics.replace("DTSTART:20260914T090000Z", "DTSTART:20260914T090000").replace(
        "DTEND:20260914T100000Z", "DTEND:20260914T100000")
    text, meta = indexed(ics)
    assert when(text) == "When: Mon 14 Sep 2026 09:00–10:00", text  # floating: no zone named
    assert when(when_now(text, at_time(meta, LATE_NOVEMBER), LATE_NOVEMBER)) == \
        "When: Mon 30 Nov 2026 09:00–10:00 — the next occurrence"


def test_an_all_day_yearly_event_reads_its_next_day() -> None:
    ics = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:b@x\r\nDTSTAMP:20260101T000000Z\r\n"
           "SUMMARY:Anna's birthday\r\nDTSTART;VALUE=DATE:20260301\r\nDTEND;VALUE=DATE:20260302\r\n"
           "RRULE:FREQ=YEARLY\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
    text, meta = indexed(ics)
    assert when(text) == "When: Sun 1 Mar 2026 (all day)"
    assert when(when_now(text, at_time(meta, LATE_NOVEMBER), LATE_NOVEMBER)) == \
        "When: Mon 1 Mar 2027 (all day) — the next occurrence"


def test_other_items_and_single_events_keep_their_text() -> None:
    text, meta = indexed(event_ics("s@x", "Dentist", SEPTEMBER, 30))
    assert when_now(text, at_time(meta, LATE_NOVEMBER), LATE_NOVEMBER) == text
    assert when_now("When: we are ready", {"doc_type": "note"}, LATE_NOVEMBER) == "When: we are ready"


@dataclass
class Found:
    text: str
    metadata: dict[str, Any]


def test_a_search_moves_the_text_with_the_fields() -> None:
    text, meta = indexed(event_ics("w@x", "Team meeting", SEPTEMBER, 60, extra=("RRULE:FREQ=WEEKLY;BYDAY=MO",)))
    (moved,) = at_search_time([Found(text, meta)], LATE_NOVEMBER)
    assert "When: Mon 30 Nov 2026 09:00–10:00 (UTC) — the next occurrence" in moved.text
    assert "14 Sep" not in moved.text
