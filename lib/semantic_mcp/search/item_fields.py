"""What an item's own fields say at the time of a search: a recurring event's occurrence under way or next,
a card overdue or due soon, a contact's ways to reach them.

The index holds what the item said when it was indexed; "next" is decided now. A recurring event is
indexed once, with its first occurrence in ``event_start`` and its rule (``rrule``, ``tzid``); a search
moves it to the occurrence under way or next at the search's clock (:func:`at_time`), so "when is the next
team meeting" reports next Monday, not the Monday in September the series began, on every path that
shows the item (search, answer, fetch): in its fields, and in its text, whose "When:" line, written at
indexing, is rewritten to say the same (:func:`when_now`). A Deck card's due date is its ``event_start`` and ``done`` its state.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from icalendar.prop import vRecur

from ..core.filters import SearchFilters
from ..sources.calendar import format_when, next_occurrence

Due = Literal["overdue", "soon"]
DUE_SOON = timedelta(days=7)  # "due soon": within the coming week
FOLLOWING = 3  # occurrences after the next one, listed when the question looks ahead

# "which of my tasks are overdue", "past their due date", "überfällige Aufgaben", "tâches en retard", "vencidas".
_OVERDUE = re.compile(
    r"\b(overdue|past (?:their |its |the )?due|late tasks?|missed deadlines?|deadline passed|"
    r"überfällig\w*|ueberfaellig\w*|verspätet\w*|en retard|échu\w*|expiré\w*|"
    r"vencid[oa]s?|atrasad[oa]s?|retrasad[oa]s?)\b")
_DUE_SOON = re.compile(
    r"\b(due (?:soon|this week|next week|tomorrow|today)|coming due|deadlines?|"
    r"bald fällig|demnächst fällig|fällig\w*|frist\w*|à échéance|échéances?|"
    r"por vencer|vence\w*|plazos?)\b")

# The contact fields a question asks for, by the words that ask.
_REACH_WORDS: dict[str, tuple[str, ...]] = {
    "email": ("email", "e-mail", "mail", "courriel", "correo", "adresse e-mail"),
    "phone": ("phone", "telephone", "number", "call", "mobile", "cell", "telefon", "telefonnummer", "handy",
              "nummer", "anrufen", "téléphone", "numéro", "appeler", "teléfono", "telefono", "número", "llamar"),
    "address": ("address", "where", "live", "lives", "adresse", "anschrift", "wohnt", "wo", "où", "habite",
                "dirección", "direccion", "dónde", "donde", "vive"),
    "company": ("company", "work", "works", "employer", "organisation", "organization", "firma", "arbeitet",
                "unternehmen", "entreprise", "société", "travaille", "empresa", "trabaja"),
}
_REACH_LABELS = {"email": "Email", "phone": "Phone", "address": "Address", "company": "Organization"}
_WORD = re.compile(r"[\w'’-]+", re.UNICODE)
_WHEN_LINE = re.compile(r"^When: (.+)$", re.MULTILINE)  # as sources/calendar.py writes it


def read_due(text: str) -> tuple[Due | None, str | None]:
    """Whether ``text`` (lower case) asks for overdue items or items due soon, and the words that said so."""
    if match := _OVERDUE.search(text):
        return "overdue", match.group(0)
    if match := _DUE_SOON.search(text):
        return "soon", match.group(0)
    return None, None


def reach_fields(query: str) -> tuple[str, ...]:
    """The contact fields ``query`` asks for; e-mail and phone when it asks for none by name ("how do I reach
    the plumber", "Dave Miller")."""
    words = set(_WORD.findall(query.lower()))
    asked = tuple(field for field, vocabulary in _REACH_WORDS.items() if words.intersection(vocabulary))
    return asked or ("email", "phone")


def reach_line(metadata: dict[str, Any], query: str, shown: str = "") -> str:
    """``Email: ...; Phone: ...``: the fields of a contact ``query`` asks for that it has and ``shown`` (the
    excerpt) does not already hold; empty for other items."""
    if metadata.get("doc_type") != "contact":
        return ""
    return "; ".join(f"{_REACH_LABELS[field]}: {metadata[field]}" for field in reach_fields(query)
                     if metadata.get(field) and str(metadata[field]) not in shown)


def _zone(metadata: dict[str, Any]) -> Any:
    try:
        return ZoneInfo(str(metadata["tzid"])) if metadata.get("tzid") not in (None, "", "UTC") else UTC
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def occurrences(metadata: dict[str, Any], now: int, count: int) -> list[int]:
    """The starts (unix seconds) of up to ``count`` occurrences of a recurring event from the one under way
    at ``now`` on; empty for an item without a rule, or when the series has ended."""
    rule, first = metadata.get("rrule"), metadata.get("event_start")
    if not rule or first is None:
        return []
    try:
        parsed = vRecur.from_ical(str(rule))
    except (ValueError, TypeError):
        return []
    zone = _zone(metadata)
    start = datetime.fromtimestamp(int(first), zone)
    length = timedelta(seconds=max(0, int(metadata.get("event_end") or first) - int(first)))
    moment = datetime.fromtimestamp(now, UTC) - length - timedelta(seconds=1)  # one under way still counts
    starts: list[int] = []
    while len(starts) < count and (found := next_occurrence(parsed, start, moment.astimezone(zone))) is not None:
        starts.append(int(found.timestamp()))
        moment = found
    return starts


def at_time(metadata: dict[str, Any], now: int, following: int = 0) -> dict[str, Any]:
    """``metadata`` of a recurring event moved to its occurrence under way or next at ``now`` (``event_start``
    and ``event_end``; the series' first start kept as ``first_start``), with the starts of ``following``
    occurrences after it (``following``); any other item's metadata as it is."""
    starts = occurrences(metadata, now, 1 + following)
    if not starts:
        return metadata
    first = int(metadata["event_start"])
    length = int(metadata.get("event_end") or first) - first
    moved = {**metadata, "first_start": first, "event_start": starts[0], "event_end": starts[0] + length}
    if following and starts[1:]:
        moved["following"] = starts[1:]
    return moved


def when_now(text: str, metadata: dict[str, Any], now: int) -> str:
    """``text`` of a recurring event moved by :func:`at_time` with its "When:" line (the series' first
    occurrence, written at indexing) giving the occurrence ``metadata`` holds, under way or next at ``now``,
    so a model reading the text reports the date the fields give; any other text as it is."""
    match = _WHEN_LINE.search(text) if "first_start" in metadata else None
    if match is None:
        return text
    start, zone = int(metadata["event_start"]), _zone(metadata)
    end = int(metadata.get("event_end") or start)
    if match.group(1).rstrip().endswith("(all day)"):  # its dates are UTC midnights (sources/calendar.py)
        span = format_when(datetime.fromtimestamp(start, UTC).date(), datetime.fromtimestamp(end, UTC).date(), None)
    else:
        span = format_when(datetime.fromtimestamp(start, zone), datetime.fromtimestamp(end, zone),
                           str(metadata["tzid"]) if metadata.get("tzid") else None)
    which = "under way now" if start <= now else "the next occurrence"
    return f"{text[:match.start(1)]}{span} — {which}{text[match.end(1):]}"


def is_due(metadata: dict[str, Any], due: Due, now: int) -> bool:
    """An item with a due date (a Deck card) not done, past it (``overdue``) or within :data:`DUE_SOON`."""
    if metadata.get("doc_type") != "deck_card" or metadata.get("event_start") is None or metadata.get("done"):
        return False
    moment = int(metadata["event_start"])
    return moment < now if due == "overdue" else now <= moment < now + int(DUE_SOON.total_seconds())


def at_search_time(candidates: Sequence[Any], now: int, following: int = 0) -> list[Any]:
    """``candidates`` (dataclasses with ``metadata`` and ``text``) with each recurring event moved to its
    occurrence under way or next at ``now`` (:func:`at_time`), in its fields and its text (:func:`when_now`)."""
    return [c if (moved := at_time(c.metadata, now, following)) is c.metadata
            else replace(c, metadata=moved, text=when_now(c.text, moved, now)) for c in candidates]


def due_first(candidates: Sequence[Any], due: Due | None, now: int) -> list[Any]:
    """``candidates`` with the cards ``due`` asks for (:func:`is_due`) first, by due date, earliest first; the
    others after them in their order."""
    if due is None:
        return list(candidates)
    chosen = sorted((c for c in candidates if is_due(c.metadata, due, now)), key=lambda c: int(c.metadata["event_start"]))
    return chosen + [c for c in candidates if not is_due(c.metadata, due, now)]


def due_filters(filters: SearchFilters, due: Due, now: int) -> SearchFilters | None:
    """The filters that find the cards ``due`` asks for by their fields, whatever their similarity to the
    question; None when the caller's filters leave cards out."""
    if filters.doc_types and "deck_card" not in filters.doc_types:
        return None
    if due == "overdue":
        return replace(filters, doc_types=("deck_card",), event_before=now)
    return replace(filters, doc_types=("deck_card",), event_after=now, event_before=now + int(DUE_SOON.total_seconds()))
