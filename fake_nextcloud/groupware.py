"""Calendars and address books: objects, Sabre sync tokens, calendar trash bin and calendar events.

Sync follows Sabre's backend: each change is logged with the collection's token *before* it is
incremented, and a client holding token N gets every change logged at N or later. ETags are
the MD5 of the object text, as on a real server. Contacts emit no events (none exist on 32).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from dateutil.rrule import rrulestr
from icalendar import Calendar

from .clock import Clock

CALENDAR_EVENT = "OCP\\Calendar\\Events\\"
Emit = Callable[[str, str, dict], None]


def text_value(value: str) -> str:
    """``value`` as an iCalendar or vCard TEXT value (RFC 5545 3.3.11, RFC 6350 3.4): backslash, newline,
    comma and semicolon escaped."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace(",", "\\,").replace(";", "\\;")


def _unfolded(data: str) -> str:
    return re.sub(r"\r?\n[ \t]", "", data)


@dataclass
class DavObject:
    id: int
    uri: str
    data: str
    lastmodified: int = 0

    @property
    def etag(self) -> str:
        return hashlib.md5(self.data.encode()).hexdigest()

    @property
    def uid(self) -> str:
        match = re.search(r"^UID:(.*?)\r?$", _unfolded(self.data), re.MULTILINE)
        return match.group(1).strip() if match else ""

    @property
    def component(self) -> str:
        match = re.search(r"^BEGIN:(VEVENT|VTODO|VJOURNAL)\r?$", self.data, re.MULTILINE)
        return match.group(1).lower() if match else "vevent"

    def values(self, name: str) -> list[str]:
        """Values of a property (``EMAIL``, ``SUMMARY``...), parameters ignored."""
        pattern = rf"^{re.escape(name)}(?:;[^:\r\n]*)?:(.*?)\r?$"
        return re.findall(pattern, _unfolded(self.data), re.MULTILINE | re.IGNORECASE)

    def overlaps(self, component: str, start: datetime | None, end: datetime | None) -> bool:
        """CalDAV time-range test for ``component`` (VEVENT, VTODO), recurrences included.

        Text that does not parse never matches a time range (a real server would not have
        stored it; tests put such objects in with ``put_raw_calendar_object``).
        """
        try:
            components = [c for c in Calendar.from_ical(self.data).walk() if c.name == component]
        except (ValueError, KeyError, IndexError):
            return False
        for comp in components:
            try:
                if _component_overlaps(comp, start, end):
                    return True
            except (ValueError, TypeError):  # a recurrence dateutil cannot expand: keep it
                return True
        return False

    @property
    def classification(self) -> int:
        match = re.search(r"^CLASS:(\w+)", self.data, re.MULTILINE)
        return {"PRIVATE": 1, "CONFIDENTIAL": 2}.get(match.group(1).upper() if match else "", 0)


def _utc(value: date | datetime) -> datetime:
    if not isinstance(value, datetime):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _component_overlaps(comp, start: datetime | None, end: datetime | None) -> bool:
    begin = comp.get("dtstart") or comp.get("due")
    if begin is None:
        return True
    first = begin.dt
    if comp.get("dtend") is not None:
        length = _utc(comp["dtend"].dt) - _utc(first)
    elif comp.get("duration") is not None:
        length = comp["duration"].dt
    else:
        length = timedelta(days=1) if not isinstance(first, datetime) else timedelta(0)
    low = start or datetime.min.replace(tzinfo=UTC)
    high = end or datetime.max.replace(tzinfo=UTC)
    if comp.get("rrule") is None:
        occurrences = [_utc(first)]
    else:
        naive = isinstance(first, datetime) and first.tzinfo is None
        rule = rrulestr(comp["rrule"].to_ical().decode(), dtstart=first if isinstance(first, datetime) else _utc(first))
        window = (low - length, high)
        if naive:
            window = tuple(w.replace(tzinfo=None) for w in window)
        occurrences = [_utc(o) for o in rule.between(*window, inc=True)]
    return any(o < high and (o + length > low or (length == timedelta(0) and o >= low)) for o in occurrences)


@dataclass
class Collection:
    """A calendar or an address book. ``sync_token`` None means no sync support (Deck's calendars)."""

    id: int
    owner: str
    uri: str
    displayname: str
    kind: str
    components: tuple[str, ...] = ("VEVENT", "VTODO")
    sync_token: int | None = 1
    read_only: bool = False
    objects: dict[str, DavObject] = field(default_factory=dict)
    changes: list[tuple[int, str]] = field(default_factory=list)
    trash: dict[str, DavObject] = field(default_factory=dict)

    @property
    def token_url(self) -> str:
        return f"http://sabre.io/ns/sync/{self.sync_token}"

    def log_change(self, uri: str) -> None:
        assert self.sync_token is not None
        self.changes.append((self.sync_token, uri))
        self.sync_token += 1

    def changed_since(self, token: str) -> list[str] | None:
        """URIs changed since ``token`` (all current objects for an empty token); None if invalid."""
        if not token:
            return list(self.objects)
        match = re.fullmatch(r"http://sabre\.io/ns/sync/(\d+)", token.strip())
        if match is None or self.sync_token is None or int(match.group(1)) > self.sync_token:
            return None
        since = int(match.group(1))
        return list(dict.fromkeys(uri for tok, uri in self.changes if tok >= since))


class Groupware:
    """Calendars and address books of all users. Callers hold the state lock."""

    def __init__(self, emit: Emit, display_name: Callable[[str], str], clock: Clock) -> None:
        self.clock = clock
        self._emit = emit
        self._display_name = display_name
        self._ids = itertools.count(1)
        self._object_ids = itertools.count(1)
        self.calendars: dict[tuple[str, str], Collection] = {}
        self.addressbooks: dict[tuple[str, str], Collection] = {}

    def drop_user(self, uid: str) -> None:
        for books in (self.calendars, self.addressbooks):
            for key in [key for key in books if key[0] == uid]:
                del books[key]

    def create_calendar(
        self, owner: str, uri: str, displayname: str, components: tuple[str, ...] = ("VEVENT", "VTODO")
    ) -> Collection:
        cal = Collection(next(self._ids), owner, uri, displayname, "calendar", components)
        self.calendars[(owner, uri)] = cal
        return cal

    def create_addressbook(self, owner: str, uri: str, displayname: str) -> Collection:
        book = Collection(next(self._ids), owner, uri, displayname, "addressbook", ())
        self.addressbooks[(owner, uri)] = book
        return book

    def user_calendars(self, owner: str) -> list[Collection]:
        return [c for (o, _), c in self.calendars.items() if o == owner]

    def user_addressbooks(self, owner: str) -> list[Collection]:
        return [c for (o, _), c in self.addressbooks.items() if o == owner]

    def put(self, coll: Collection, uri: str, data: str, actor: str) -> tuple[DavObject, bool]:
        existing = coll.objects.get(uri)
        if existing is not None:
            existing.data = data
            existing.lastmodified = int(self.clock.time())
            obj, created = existing, False
        else:
            obj, created = DavObject(next(self._object_ids), uri, data, int(self.clock.time())), True
            coll.objects[uri] = obj
        coll.log_change(uri)
        if coll.kind == "calendar":
            self._calendar_event(
                "CalendarObjectCreatedEvent" if created else "CalendarObjectUpdatedEvent", actor, coll, obj
            )
        return obj, created

    def delete(self, coll: Collection, uri: str, actor: str) -> None:
        """Calendar objects go to the calendar trash bin; contacts are deleted."""
        obj = coll.objects.pop(uri)
        coll.log_change(uri)
        if coll.kind == "calendar":
            coll.trash[uri] = obj
            self._calendar_event("CalendarObjectMovedToTrashEvent", actor, coll, obj)

    def restore(self, coll: Collection, uri: str, actor: str) -> DavObject:
        obj = coll.trash.pop(uri)
        coll.objects[uri] = obj
        coll.log_change(uri)
        self._calendar_event("CalendarObjectRestoredEvent", actor, coll, obj)
        return obj

    def purge(self, coll: Collection, uri: str, actor: str) -> None:
        obj = coll.trash.pop(uri)
        self._calendar_event("CalendarObjectDeletedEvent", actor, coll, obj)

    def _calendar_event(self, name: str, actor: str, cal: Collection, obj: DavObject) -> None:
        calendar_data = {
            "id": cal.id,
            "uri": cal.uri,
            "principaluri": f"principals/users/{cal.owner}",
            "{http://calendarserver.org/ns/}getctag": cal.token_url,
            "{http://sabredav.org/ns}sync-token": cal.sync_token,
            "{urn:ietf:params:xml:ns:caldav}supported-calendar-component-set": [],
            "{urn:ietf:params:xml:ns:caldav}schedule-calendar-transp": [],
            "{DAV:}displayname": cal.displayname,
            "{urn:ietf:params:xml:ns:caldav}calendar-description": None,
            "{urn:ietf:params:xml:ns:caldav}calendar-timezone": None,
            "{http://apple.com/ns/ical/}calendar-order": 0,
            "{http://apple.com/ns/ical/}calendar-color": None,
            "{http://nextcloud.com/ns}deleted-at": None,
            "{http://nextcloud.com/ns}owner-displayname": self._display_name(cal.owner),
        }
        object_data = {
            "id": obj.id,
            "uri": obj.uri,
            "uid": obj.uid,
            "lastmodified": obj.lastmodified,
            "etag": f'"{obj.etag}"',
            "calendarid": cal.id,
            "size": len(obj.data.encode()),
            "calendardata": obj.data,
            "component": obj.component,
            "classification": obj.classification,
            "{http://nextcloud.com/ns}deleted-at": None,
        }
        body = {"calendarId": cal.id, "calendarData": calendar_data, "shares": [], "objectData": object_data}
        self._emit(CALENDAR_EVENT + name, actor, body)
