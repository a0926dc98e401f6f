"""Query understanding without a model: time and item-type words, with a fixed "now"."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import pytest

from semantic_mcp.search.intent import apply_intent, read_intent

# A Monday.
NOW = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)


def day(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


def span(intent: Any) -> tuple[str, str]:
    """The window as first and last day, ISO."""
    first = datetime.fromtimestamp(intent.window.start, UTC).date()
    last = datetime.fromtimestamp(intent.window.end - 1, UTC).date()
    return first.isoformat(), last.isoformat()


@pytest.mark.parametrize(
    "query",
    [
        "When is my next dentist appointment?",
        "upcoming meetings",
        "Wann ist mein nächster Zahnarzttermin?",
        "Quand est mon prochain rendez-vous chez le dentiste ?",
        "¿Cuándo es mi próxima cita con el dentista?",
    ],
)
def test_next_means_upcoming_events(query: str) -> None:
    intent = read_intent(query, NOW)
    assert intent.direction == "upcoming"
    assert intent.doc_types == ("calendar_event",)
    assert intent.window is None


@pytest.mark.parametrize(
    "query",
    [
        "When was my last dentist appointment?",
        "Wann war mein letzter Termin beim Zahnarzt?",
        "Quand était mon dernier rendez-vous ?",
        "¿Cuándo fue mi última cita?",
    ],
)
def test_last_means_past_events(query: str) -> None:
    intent = read_intent(query, NOW)
    assert intent.direction == "past"
    assert intent.doc_types == ("calendar_event",)


@pytest.mark.parametrize(
    ("query", "first", "last"),
    [
        ("what did I write yesterday", "2026-11-22", "2026-11-22"),
        ("notes from today", "2026-11-23", "2026-11-23"),
        ("meetings tomorrow", "2026-11-24", "2026-11-24"),
        ("notes I wrote last week", "2026-11-16", "2026-11-22"),
        ("meetings next week", "2026-11-30", "2026-12-06"),
        ("Termine diese Woche", "2026-11-23", "2026-11-29"),
        ("réunions la semaine prochaine", "2026-11-30", "2026-12-06"),
        ("citas la semana que viene", "2026-11-30", "2026-12-06"),
        ("documentos del mes pasado", "2026-10-01", "2026-10-31"),
        ("Notizen vom letzten Monat", "2026-10-01", "2026-10-31"),
        ("budget in March", "2026-03-01", "2026-03-31"),
        ("Urlaub im März 2027", "2027-03-01", "2027-03-31"),
        ("next meeting in January", "2027-01-01", "2027-01-31"),
        ("what happened in mayo", "2026-05-01", "2026-05-31"),
        ("invoices 2026-05", "2026-05-01", "2026-05-31"),
        ("call on 2026-12-03", "2026-12-03", "2026-12-03"),
        ("Termin am 14.05.2026", "2026-05-14", "2026-05-14"),
        ("what is on Friday", "2026-11-27", "2026-11-27"),
        ("what did we decide last Friday", "2026-11-20", "2026-11-20"),
        ("rendez-vous vendredi", "2026-11-27", "2026-11-27"),
        ("report from last year", "2025-01-01", "2025-12-31"),
        ("trips in 2024", "2024-01-01", "2024-12-31"),
    ],
)
def test_windows(query: str, first: str, last: str) -> None:
    assert span(read_intent(query, NOW)) == (first, last)


MONTH_END, YEAR_END, LEAP_DAY = (datetime(2027, 1, 31, 23, 30, tzinfo=UTC), datetime(2027, 12, 31, 23, 59, tzinfo=UTC),
                                 datetime(2028, 2, 29, 12, 0, tzinfo=UTC))  # three of conftest's shifted clocks


@pytest.mark.parametrize(
    ("now", "query", "first", "last"),
    [
        (MONTH_END, "meetings tomorrow", "2027-02-01", "2027-02-01"),
        (MONTH_END, "next month", "2027-02-01", "2027-02-28"),
        (MONTH_END, "Notizen vom letzten Monat", "2026-12-01", "2026-12-31"),
        (YEAR_END, "meetings tomorrow", "2028-01-01", "2028-01-01"),
        (YEAR_END, "meetings next week", "2028-01-03", "2028-01-09"),
        (YEAR_END, "next meeting in January", "2028-01-01", "2028-01-31"),
        (YEAR_END, "report from last year", "2026-01-01", "2026-12-31"),
        (LEAP_DAY, "what did I write yesterday", "2028-02-28", "2028-02-28"),
        (LEAP_DAY, "meetings tomorrow", "2028-03-01", "2028-03-01"),
        (LEAP_DAY, "this month", "2028-02-01", "2028-02-29"),
        (LEAP_DAY, "documentos del mes pasado", "2028-01-01", "2028-01-31"),
    ],
)
def test_windows_across_a_month_end_a_year_end_and_a_leap_day(now: datetime, query: str, first: str, last: str) -> None:
    assert span(read_intent(query, now)) == (first, last)


@pytest.mark.parametrize(
    ("query", "types"),
    [
        ("open tasks for the launch", ("deck_card",)),
        ("Carol's phone number", ("contact",)),
        ("Dave's e-mail", ("contact",)),
        ("my note about pancakes", ("note",)),
        ("the PDF about semantic search", ("file",)),
        ("Aufgaben für den Launch", ("deck_card",)),
        ("la tâche de la semaine", ("deck_card",)),
        ("el documento del presupuesto", ("file",)),
        ("meeting notes", ("calendar_event", "note")),
    ],
)
def test_item_types(query: str, types: tuple[str, ...]) -> None:
    assert read_intent(query, NOW).doc_types == types


@pytest.mark.parametrize(
    "query",
    [
        "infrastructure budget increase proposal",
        "+15555550101",
        "an upcoming-free question about pancakes",  # a hyphenated word is not "upcoming"
        "ticket 1234-05 status",  # not a year-month
        "mes recettes de crêpes",  # French "mes" is not a month
        "Rechnungsnummer 4711",  # a German compound that is not a contact
    ],
)
def test_ordinary_queries_read_nothing_about_time(query: str) -> None:
    intent = read_intent(query, NOW)
    assert intent.window is None and intent.direction is None, intent


def test_notes_say_what_was_understood() -> None:
    (note,) = read_intent("When is my next dentist appointment?", NOW).notes()
    assert "'next'" in note and "'appointment'" in note
    assert "upcoming items first, soonest first" in note and "calendar events favoured" in note
    assert read_intent("pancake recipe", NOW).notes() == []


@dataclass
class Item:
    name: str
    score: float
    metadata: dict[str, Any]


def event(name: str, score: float, start: str, doc_type: str = "calendar_event") -> Item:
    return Item(name, score, {"doc_type": doc_type, "event_start": day(start), "event_end": day(start) + 3600,
                              "modified": day("2026-01-01")})


def names(items: list[Item]) -> list[str]:
    return [item.name for item in items]


DENTIST = [
    event("dentist last year", 0.95, "2025-11-23T14:00:00"),
    event("dentist next week", 0.90, "2026-11-30T09:00:00"),
    event("dentist in two months", 0.90, "2027-01-20T09:00:00"),
    event("dentist last month", 0.88, "2026-10-20T09:00:00"),
    Item("dentist bill note", 0.80, {"doc_type": "note", "modified": day("2026-10-21T00:00:00")}),
    event("team meeting tomorrow", 0.30, "2026-11-24T08:00:00"),
]


def test_next_puts_upcoming_first_soonest_first() -> None:
    ranked = apply_intent(DENTIST, read_intent("When is my next dentist appointment?", NOW))
    assert names(ranked)[:2] == ["dentist next week", "dentist in two months"]
    # An unrelated upcoming event does not jump over relevant items.
    assert names(ranked)[-1] == "team meeting tomorrow"


def test_last_puts_past_first_most_recent_first() -> None:
    ranked = apply_intent(DENTIST, read_intent("When was my last dentist appointment?", NOW))
    assert names(ranked)[:2] == ["dentist last month", "dentist last year"]


def test_window_favours_items_dated_inside_it() -> None:
    ranked = apply_intent(DENTIST, read_intent("dentist in October", NOW))
    assert names(ranked)[0] == "dentist last month"
    assert names(ranked).index("dentist bill note") < names(ranked).index("dentist next week")


def test_no_cue_keeps_the_fused_order_and_scores() -> None:
    ranked = apply_intent(DENTIST, read_intent("dentist", NOW))
    assert ranked == DENTIST
    assert [item.score for item in apply_intent(DENTIST, read_intent("next dentist", NOW))] != \
        [item.score for item in DENTIST]  # re-ordered...
    assert sorted(item.score for item in DENTIST) == sorted(
        item.score for item in apply_intent(DENTIST, read_intent("next dentist", NOW)))  # ...scores untouched


def test_a_clear_match_stays_above_a_cue_match() -> None:
    items = [Item("pancake note", 1.0, {"doc_type": "note", "modified": day("2026-01-01")}),
             event("some meeting tomorrow", 0.5, "2026-11-24T08:00:00")]
    assert names(apply_intent(items, read_intent("pancakes for the next meeting", NOW)))[0] == "pancake note"


def test_time_order_only_swaps_dated_items_among_their_own_places() -> None:
    items = [Item("project plan note", 1.0, {"doc_type": "note", "modified": day("2026-01-01")}),
             event("card due in a month", 0.8, "2026-12-23T12:00:00", "deck_card"),
             event("card due tomorrow", 0.75, "2026-11-24T12:00:00", "deck_card")]
    ranked = names(apply_intent(items, read_intent("next steps for the project plan", NOW)))
    assert ranked == ["project plan note", "card due tomorrow", "card due in a month"]


def test_the_models_analysis_replaces_types_and_window_but_keeps_the_direction() -> None:
    intent = read_intent("next dentist appointment in December", NOW)
    assert intent.doc_types and intent.window is not None
    refined = intent.refined(doc_types=["calendar_event"], dated=True)
    assert refined.doc_types == () and refined.window is None and refined.direction == "upcoming"
    assert intent.refined(doc_types=None, dated=False) == intent


def test_the_window_is_a_utc_day_grid() -> None:
    late = datetime(2026, 11, 23, 23, 30, tzinfo=UTC)
    assert span(read_intent("tomorrow", late)) == ("2026-11-24", "2026-11-24")
    assert date.fromisoformat(span(read_intent("on Monday", NOW))[0]) == NOW.date()  # today is a Monday
