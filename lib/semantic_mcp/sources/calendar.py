"""Calendar events (CalDAV): one document per calendar object, recurring events summarised in words.

Listing and fetching are the shared sync-collection machinery (:mod:`.dav_sync`); this module says
which calendars count and turns iCalendar into text. :func:`document_from_ics` is pure, because
calendar webhooks carry the whole iCalendar text and need no request to be indexed.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from icalendar import Calendar, Event

from ..core.documents import SourceDocument, Skipped
from ..nextcloud.client import DavEntry, NotFound, strip_etag
from .base import compose_gist, compose_text, owner_extra
from .dav_sync import DavSyncSource, collection_owner
from .examples import EXAMPLE_EVENT_REASON, is_calendar_example_event

CALENDAR_HOME = "/remote.php/dav/calendars/{user}/"


def is_indexed_calendar(uri: str) -> bool:
    """False for generated calendars whose content another source already indexes.

    Deck publishes ``app-generated--deck--board-N`` calendars of card due dates (the deck source
    indexes the cards) and ``contact_birthdays`` repeats the contacts' birthdays (the contacts
    source indexes them). Indexing them again would return every hit twice.
    """
    return not uri.startswith("app-generated--deck--board-") and uri != "contact_birthdays"


class CalendarSource(DavSyncSource):
    """Calendars of the user (own and shared). Inbox, outbox, trash bin and subscriptions are not
    ``calendar`` collections, so the resourcetype check leaves them out."""

    doc_type = "calendar_event"
    home_template = CALENDAR_HOME
    collection_type = "calendar"
    collection_props = (*DavSyncSource.collection_props, "cal:supported-calendar-component-set")
    multiget_report = "cal:calendar-multiget"
    data_prop = "cal:calendar-data"

    def keeps(self, uri: str, entry: DavEntry) -> bool:
        components = entry.prop_list("cal:supported-calendar-component-set")
        return is_indexed_calendar(uri) and (not components or "VEVENT" in components)

    parser = f"{__name__}:document_from_ics"

    def parser_args(self) -> tuple:
        # "next occurrence" is after the app's now (the injected clock)
        return (self.options.clock.now(), self.options.index_examples)

    async def document_from_payload(
        self, source_id: str, payload: Mapping[str, Any], user: str | None = None
    ) -> SourceDocument | Skipped | None:
        """Index a calendar webhook's object without a request (the event carries the iCalendar).

        ``payload`` is the hint :mod:`semantic_mcp.indexing.events` stores (``ics``, ``etag``,
        ``calendar``, ``modified``). The deep link needs the user (``user=``, or ``"user"`` in the
        hint); without it this returns None and the pipeline fetches instead. Objects of calendars
        that are not indexed count as not found, as in :meth:`fetch`.
        """
        calendar_uri = source_id.partition("/")[0]
        if not is_indexed_calendar(calendar_uri):
            raise NotFound(f"calendar {calendar_uri!r} is not indexed", 404)
        user = user or payload.get("user")
        ics = payload.get("ics")
        if not user or not isinstance(ics, str):
            return None
        calendar_name = str(payload.get("calendar") or calendar_uri)
        modified = int(payload.get("modified") or 0)
        document = await self.parse(user, source_id, ics, str(payload.get("etag") or ""), calendar_name, modified)
        if isinstance(document, SourceDocument):
            document.extra.update(owner_extra(collection_owner(user, calendar_uri, None)))
        return document


def calendar_link(user: str, source_id: str) -> str:
    """The Calendar app's deep link: ``/apps/calendar/edit/`` + base64 of the object's DAV path.

    The path is the user's own view of the object (a shared calendar appears under the
    recipient's home), unencoded, as Nextcloud builds it for its own event links.
    """
    dav_path = CALENDAR_HOME.format(user=user) + source_id
    return "/apps/calendar/edit/" + base64.b64encode(dav_path.encode()).decode()


def document_from_ics(
    user: str,
    source_id: str,
    ics_text: str,
    etag: str,
    calendar_name: str,
    modified: int,
    now: datetime,
    index_examples: bool = False,
) -> SourceDocument | Skipped:
    """Turn one calendar object into a document; broken iCalendar gives Skipped, never an exception.

    Times are shown in the event's own time zone (its TZID), and also given as unix seconds in
    ``event_start``/``event_end``; floating times and all-day dates count as UTC there. A
    recurring event is one document: its first occurrence, the rule in words and, in ``extra``,
    the next occurrence after ``now``. Nextcloud's example event is Skipped unless ``index_examples``.
    """
    version = strip_etag(etag)
    try:
        event = _main_event(Calendar.from_ical(ics_text))
        if event is None:
            return Skipped("calendar_event", source_id, "no event in this calendar object", version=version)
        if not index_examples and is_calendar_example_event(str(event.get("DESCRIPTION") or "")):
            return Skipped("calendar_event", source_id, EXAMPLE_EVENT_REASON, version=version)
        return _event_document(event, user, source_id, version, calendar_name, modified, now)
    except (ValueError, TypeError) as exc:  # icalendar's errors are ValueErrors; odd values fail as either
        return Skipped("calendar_event", source_id, f"invalid iCalendar: {exc}"[:300], version=version)


def _event_document(
    event: Event, user: str, source_id: str, version: str, calendar_name: str, modified: int, now: datetime
) -> SourceDocument:
    start, end = (event.start, event.end) if "DTSTART" in event else (None, None)
    rule = event.get("RRULE")
    summary = str(event.get("SUMMARY") or "").strip() or "(untitled event)"
    heading, place = f"Calendar event: {summary}", str(event.get("LOCATION") or "").strip()
    description = str(event.get("DESCRIPTION") or "")
    text = compose_text(
        heading,
        [
            ("When", format_when(start, end, _zone_name(event, start)) if start else None),
            ("Repeats", summarize_rrule(rule) if rule else None),
            ("Where", place),
            ("Calendar", calendar_name),
            ("Organizer", _people(event.get("ORGANIZER"))),
            ("Attendees", _people(event.get("ATTENDEE"))),
            ("Status", "cancelled" if str(event.get("STATUS") or "").upper() == "CANCELLED" else None),
        ],
        description,
    )
    extra = {"uid": str(event.get("UID") or "")}
    categories = event.get("CATEGORIES")
    if rule and start and (next_time := next_occurrence(rule, start, now)):
        extra["next_occurrence"] = next_time.isoformat()
    if rule and start:  # a search computes the occurrence under way or next at its own time (search/occurrences.py)
        extra["rrule"] = rule.to_ical().decode()
        if zone := _zone_name(event, start):
            extra["tzid"] = zone
    return SourceDocument(
        doc_type="calendar_event",
        source_id=source_id,
        title=summary,
        text=text,
        gist=compose_gist(heading, place, description),
        modified=modified,
        version=version,
        link=calendar_link(user, source_id),
        location=calendar_name,
        event_start=_unix(start) if start else None,
        event_end=_unix(end) if end else None,
        extra=extra,
        tags=tuple(str(c) for item in (categories if isinstance(categories, list) else [categories])
                   if item is not None for c in item.cats),
    )


def _main_event(calendar: Calendar) -> Event | None:
    """The series master: the event without RECURRENCE-ID (overrides of single occurrences follow it)."""
    events = [event for event in calendar.walk("VEVENT") if isinstance(event, Event)]
    return next((event for event in events if "RECURRENCE-ID" not in event), events[0] if events else None)


def _zone_name(event: Event, start: date | None) -> str | None:
    """The TZID as written in the event ("Europe/Berlin"), "UTC" for UTC times, None for floating/all-day."""
    if not isinstance(start, datetime):
        return None
    tzid = event["DTSTART"].params.get("TZID")
    if tzid:
        return str(tzid)
    return "UTC" if start.tzinfo is not None and start.utcoffset() == timedelta(0) else None


def format_when(start: date, end: date | None, zone: str | None) -> str:
    """``Tue 1 Dec 2026 10:00–11:00 (Europe/Berlin)``, ``Tue 1 Dec 2026 – Thu 3 Dec 2026 (all day)``."""
    if not isinstance(start, datetime):  # all-day: DTEND is the day after the last day
        last = end - timedelta(days=1) if end and end > start else start
        span = _day(start) if last == start else f"{_day(start)} – {_day(last)}"
        return f"{span} (all day)"
    if isinstance(end, datetime) and end.tzinfo is not None and start.tzinfo is not None:
        end = end.astimezone(start.tzinfo)
    if not isinstance(end, datetime) or end == start:
        span = f"{_day(start)} {start:%H:%M}"
    elif end.date() == start.date():
        span = f"{_day(start)} {start:%H:%M}–{end:%H:%M}"
    else:
        span = f"{_day(start)} {start:%H:%M} – {_day(end)} {end:%H:%M}"
    return f"{span} ({zone})" if zone else span


def _day(value: date) -> str:
    return f"{value:%a} {value.day} {value:%b %Y}"


def _unix(value: date) -> int:
    if not isinstance(value, datetime):
        value = datetime.combine(value, time(), UTC)
    elif value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return int(value.timestamp())


_FREQUENCIES = {
    "SECONDLY": ("every second", "seconds"),
    "MINUTELY": ("every minute", "minutes"),
    "HOURLY": ("hourly", "hours"),
    "DAILY": ("daily", "days"),
    "WEEKLY": ("weekly", "weeks"),
    "MONTHLY": ("monthly", "months"),
    "YEARLY": ("yearly", "years"),
}
_WEEKDAYS = {"MO": "Monday", "TU": "Tuesday", "WE": "Wednesday", "TH": "Thursday", "FR": "Friday",
             "SA": "Saturday", "SU": "Sunday"}
_ORDINALS = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", -1: "last", -2: "second to last"}
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")


def summarize_rrule(rule: Mapping[str, Any]) -> str:
    """A recurrence rule in plain English: ``weekly on Monday until 2027-03-01``.

    Covers FREQ, INTERVAL, BYDAY (with positions: "the last Friday"), BYMONTHDAY, BYMONTH,
    COUNT and UNTIL, which is what calendar apps write; rarer parts are left out of the words.
    """
    freq = str(_first(rule, "FREQ") or "").upper()
    interval = int(_first(rule, "INTERVAL") or 1)
    adverb, unit = _FREQUENCIES.get(freq, (freq.lower() or "repeating", "times"))
    words = [adverb if interval == 1 else f"every {interval} {unit}"]
    if days := [_weekday(str(day)) for day in rule.get("BYDAY") or []]:
        words.append("on " + _join(days))
    if month_days := [str(day) for day in rule.get("BYMONTHDAY") or []]:
        words.append("on day " + _join(month_days))
    if months := [_MONTHS[int(month) - 1] for month in rule.get("BYMONTH") or [] if 1 <= int(month) <= 12]:
        words.append("in " + _join(months))
    summary = " ".join(words)
    if count := _first(rule, "COUNT"):
        summary += f", {count} times"
    if until := _first(rule, "UNTIL"):
        summary += f" until {until:%Y-%m-%d}" if isinstance(until, date) else f" until {until}"
    return summary


def _first(rule: Mapping[str, Any], key: str) -> Any:
    values = rule.get(key)
    return values[0] if isinstance(values, list) and values else values


def _weekday(value: str) -> str:
    match = re.fullmatch(r"([+-]?\d+)?([A-Z]{2})", value.upper())
    if not match:
        return value
    name = _WEEKDAYS.get(match.group(2), match.group(2))
    if match.group(1) is None:
        return name
    position = int(match.group(1))
    return f"the {_ORDINALS.get(position, f'{position}.')} {name}"


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


# Expanding a rule is bounded in instances and in time, whatever the rule says: a daily rule with
# every hour, minute and second since 1900 has billions of instances before today (issue 21).
MAX_INSTANCES = 20_000
HORIZON = timedelta(days=366 * 5)  # no "next occurrence" hint further ahead (a 29 February is within it)


def next_occurrence(rule: Any, start: date, now: datetime) -> datetime | None:
    """The first occurrence after ``now`` within :data:`HORIZON`, if it is among the first
    :data:`MAX_INSTANCES` of the rule; None otherwise (and for sub-daily rules).

    EXDATEs are not applied: this is a hint for "what's coming up", not a schedule.
    """
    from dateutil.rrule import rrulestr  # icalendar's own dependency

    if str(_first(rule, "FREQ") or "").upper() in ("SECONDLY", "MINUTELY", "HOURLY"):
        return None
    first = start if isinstance(start, datetime) else datetime.combine(start, time())
    reference = now if first.tzinfo is not None else now.astimezone(UTC).replace(tzinfo=None)
    days = {"DAILY": 1, "WEEKLY": 7}.get(str(_first(rule, "FREQ") or "").upper())
    try:
        if days and not _first(rule, "COUNT"):
            # Without COUNT, starting whole periods later gives the same instances from there on: skip
            # the years before now instead of walking them (those rules step a day or a week at a time).
            period = days * max(1, int(_first(rule, "INTERVAL") or 1))
            first += timedelta(days=period * max(0, (reference - first).days // period))
        recurrence = rrulestr(rule.to_ical().decode(), dtstart=first)
        if not _first(rule, "COUNT"):  # an UNTIL ends the walk even where no instance matches
            until, horizon = _first(rule, "UNTIL"), reference + HORIZON
            if isinstance(until, date) and not isinstance(until, datetime):
                until = datetime.combine(until, time.max)
            if until is None or until.replace(tzinfo=None) > horizon.replace(tzinfo=None):
                recurrence = recurrence.replace(until=horizon)
        for number, occurrence in enumerate(recurrence):
            if occurrence > reference:
                return occurrence if occurrence <= reference + HORIZON else None
            if number >= MAX_INSTANCES:
                return None
    except (ValueError, TypeError):  # e.g. a floating DTSTART with a UTC UNTIL, which dateutil refuses
        return None
    return None


def _people(value: Any) -> str:
    """Names of ORGANIZER/ATTENDEE values: the CN when given, else the address without ``mailto:``."""
    addresses = value if isinstance(value, list) else [value] if value else []
    names = [str(a.params.get("CN") or re.sub(r"(?i)^mailto:", "", str(a))) for a in addresses]
    return ", ".join(name for name in names if name)
