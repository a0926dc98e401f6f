"""CalDAV and CardDAV: homes, collections, objects, and the three REPORTs clients poll with.

Both protocols share one implementation; they differ in names (``cal:calendar-data`` vs
``card:address-data``), in validation, and in that only calendars emit events and keep a trash
bin. Deck's board calendars appear in the calendar home, read-only and without sync support.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from icalendar import Calendar
from starlette.requests import Request
from starlette.responses import Response

from .davxml import (
    CALDAV,
    CARDDAV,
    NS,
    DavError,
    DavResponse,
    P,
    Prop,
    Raw,
    check_preconditions,
    depth_of,
    forbidden,
    href,
    http_date,
    multistatus,
    name_of,
    not_found,
    parse_body,
    requested_props,
    split_props,
)
from .groupware import Collection, DavObject

if TYPE_CHECKING:
    from .state import State


@dataclass(frozen=True)
class Flavor:
    """What distinguishes CalDAV from CardDAV here."""

    root: tuple[str, ...]
    prefixes: tuple[str, ...]
    data_prop: Prop
    resourcetype: str
    content_type: str
    extension: str


CALENDARS = Flavor(
    ("calendars",),
    CALDAV,
    P("cal:calendar-data"),
    "<d:collection/><cal:calendar/>",
    "text/calendar; charset=utf-8",
    ".ics",
)
ADDRESSBOOKS = Flavor(
    ("addressbooks", "users"),
    CARDDAV,
    P("card:address-data"),
    "<d:collection/><card:addressbook/>",
    "text/vcard; charset=utf-8",
    ".vcf",
)
COLLECTION_DEFAULTS = [P("d:resourcetype"), P("d:displayname"), P("cs:getctag"), P("d:sync-token")]
OBJECT_DEFAULTS = [
    P("d:getetag"),
    P("d:getcontenttype"),
    P("d:getcontentlength"),
    P("d:getlastmodified"),
    P("d:resourcetype"),
]
# Fixed members of a calendar home that are not calendars.
_CALENDAR_SPECIALS = (
    ("inbox", "<d:collection/><cal:schedule-inbox/>"),
    ("outbox", "<d:collection/><cal:schedule-outbox/>"),
    ("trashbin", '<d:collection/><x1:trash-bin xmlns:x1="http://nextcloud.com/ns"/>'),
)


def _collections(nc: State, flavor: Flavor, uid: str) -> list[Collection]:
    if flavor is ADDRESSBOOKS:
        return nc.groupware.user_addressbooks(uid)
    deck = [nc.deck.calendar(uid, b) for b in nc.deck.visible_boards(uid) if not b.deleted_at]
    return nc.groupware.user_calendars(uid) + deck


def _collection_props(flavor: Flavor, coll: Collection) -> dict[Prop, Any]:
    props: dict[Prop, Any] = {
        P("d:displayname"): coll.displayname,
        P("d:resourcetype"): Raw(flavor.resourcetype),
        P("oc:owner-principal"): f"principals/users/{coll.owner}",
        P("d:owner"): Raw(f"<d:href>/remote.php/dav/principals/users/{coll.owner}/</d:href>"),
    }
    if coll.sync_token is not None:
        props[P("cs:getctag")] = coll.token_url
        props[P("d:sync-token")] = coll.token_url
    if flavor is CALENDARS:
        props[P("cal:supported-calendar-component-set")] = Raw(
            "".join(f'<cal:comp name="{c}"/>' for c in coll.components)
        )
    return props


def _object_props(flavor: Flavor, obj: DavObject) -> dict[Prop, Any]:
    content_type = flavor.content_type + (f"; component={obj.component}" if flavor is CALENDARS else "")
    return {
        P("d:getetag"): f'"{obj.etag}"',
        P("d:getcontenttype"): content_type,
        P("d:getcontentlength"): len(obj.data.encode()),
        P("d:getlastmodified"): http_date(obj.lastmodified),
        P("d:resourcetype"): "",
        flavor.data_prop: obj.data,
    }


def _object_response(flavor: Flavor, coll: Collection, obj: DavObject, wanted: list[Prop] | None) -> DavResponse:
    props = _object_props(flavor, obj)
    return DavResponse(href(*flavor.root, coll.owner, coll.uri, obj.uri), *split_props(wanted, props, OBJECT_DEFAULTS))


def _missing(name: str) -> DavError:
    return not_found(f"Node with name '{name}' could not be found")


async def calendars_dav(request: Request, rest: str) -> Response:
    return await _groupware(request, CALENDARS, rest)


async def addressbooks_dav(request: Request, rest: str) -> Response:
    kind, _, rest = rest.partition("/")
    if kind != "users":
        raise _missing(kind)
    return await _groupware(request, ADDRESSBOOKS, rest)


async def _groupware(request: Request, flavor: Flavor, rest: str) -> Response:
    nc: State = request.app.state.nc
    uid: str = request.state.user
    segments = [s for s in rest.split("/") if s]
    if not segments or segments[0] != uid:
        raise _missing(segments[-1] if segments else "")
    body = await request.body()
    with nc.lock:
        if len(segments) == 1:
            return _home(request, nc, flavor, uid, body)
        coll = next((c for c in _collections(nc, flavor, uid) if c.uri == segments[1]), None)
        if coll is None or len(segments) > 3:
            raise _missing(segments[-1])
        if len(segments) == 2:
            return _collection(request, nc, flavor, coll, body)
        return _object(request, nc, flavor, coll, segments[2], body)


def _home(request: Request, nc: State, flavor: Flavor, uid: str, body: bytes) -> Response:
    """The home lists its collections in Nextcloud's order: own calendars, the scheduling inbox,
    outbox and trash bin, then Deck's board calendars."""
    if request.method != "PROPFIND":
        raise DavError(405, "Sabre\\DAV\\Exception\\MethodNotAllowed", f"{request.method} is not allowed on a home")
    wanted = requested_props(parse_body(body))
    members: list[tuple[str, dict[Prop, Any]]] = [("", {P("d:resourcetype"): Raw("<d:collection/>")})]
    if depth_of(request) != 0:
        collections = _collections(nc, flavor, uid)
        members += [(c.uri, _collection_props(flavor, c)) for c in collections if c.kind != "deck"]
        if flavor is CALENDARS:
            members += [(name, {P("d:resourcetype"): Raw(kind)}) for name, kind in _CALENDAR_SPECIALS]
        members += [(c.uri, _collection_props(flavor, c)) for c in collections if c.kind == "deck"]
    responses = [
        DavResponse(href(*flavor.root, uid, name, collection=True), *split_props(wanted, props, COLLECTION_DEFAULTS))
        for name, props in members
    ]
    return _with_vary(multistatus(responses, flavor.prefixes))


def _with_vary(response: Response) -> Response:
    response.headers["Vary"] = "Brief,Prefer"
    return response


def _collection(request: Request, nc: State, flavor: Flavor, coll: Collection, body: bytes) -> Response:
    root = parse_body(body)
    if request.method == "PROPFIND":
        wanted = requested_props(root)
        own = DavResponse(
            href(*flavor.root, coll.owner, coll.uri, collection=True),
            *split_props(wanted, _collection_props(flavor, coll), COLLECTION_DEFAULTS),
        )
        members = (
            [_object_response(flavor, coll, o, wanted) for o in coll.objects.values()] if depth_of(request) else []
        )
        return _with_vary(multistatus([own, *members], flavor.prefixes))
    if request.method == "REPORT" and root is not None:
        report = name_of(root)
        wanted = requested_props(root)
        if report == P("d:sync-collection"):
            return _sync(flavor, coll, root, wanted)
        if report in (P("cal:calendar-multiget"), P("card:addressbook-multiget")):
            return _multiget(flavor, coll, root, wanted)
        if report in (P("cal:calendar-query"), P("card:addressbook-query")):
            matching = [o for o in coll.objects.values() if _matches(flavor, o, root)]
            return _with_vary(
                multistatus([_object_response(flavor, coll, o, wanted) for o in matching], flavor.prefixes)
            )
        raise DavError(
            415,
            "Sabre\\DAV\\Exception\\ReportNotSupported",
            f"The {{{report[0]}}}{report[1]} REPORT is not supported on this url.",
        )
    raise DavError(
        405, "Sabre\\DAV\\Exception\\MethodNotAllowed", f"{request.method} is not allowed on this collection"
    )


def _sync(flavor: Flavor, coll: Collection, root: ET.Element, wanted: list[Prop] | None) -> Response:
    if coll.sync_token is None:
        raise DavError(
            415,
            "Sabre\\DAV\\Exception\\ReportNotSupported",
            "The {DAV:}sync-collection REPORT is not supported on this url.",
        )
    changed = coll.changed_since(root.findtext("d:sync-token", "", NS) or "")
    if changed is None:
        raise DavError(
            403, "Sabre\\DAV\\Exception\\InvalidSyncToken", "Invalid or unknown sync token", "  <d:valid-sync-token/>\n"
        )
    responses = []
    for uri in changed:
        obj = coll.objects.get(uri)
        if obj is None:
            responses.append(
                DavResponse(href(*flavor.root, coll.owner, coll.uri, uri), status="HTTP/1.1 404 Not Found")
            )
        else:
            responses.append(_object_response(flavor, coll, obj, wanted))
    return multistatus(responses, flavor.prefixes, sync_token=coll.token_url, pretty=True)


def _multiget(flavor: Flavor, coll: Collection, root: ET.Element, wanted: list[Prop] | None) -> Response:
    responses = []
    for h in root.findall("d:href", NS):
        uri = (h.text or "").rstrip("/").rsplit("/", 1)[-1]
        obj = coll.objects.get(uri)
        if obj is not None:  # a real Nextcloud 32 leaves missing objects out of the answer (no 404 entry)
            responses.append(_object_response(flavor, coll, obj, wanted))
    return _with_vary(multistatus(responses, flavor.prefixes))


def _ical_time(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.strptime(value.strip(), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)


def _text_match(values: list[str], match: ET.Element | None) -> bool:
    if match is None:
        return bool(values)
    needle = (match.text or "").lower()
    kind = match.get("match-type", "contains")
    test = {
        "equals": lambda v: v == needle,
        "starts-with": lambda v: v.startswith(needle),
        "ends-with": lambda v: v.endswith(needle),
    }.get(kind, lambda v: needle in v)
    found = any(test(v.lower()) for v in values)
    return not found if match.get("negate-condition") == "yes" else found


def _matches(flavor: Flavor, obj: DavObject, root: ET.Element) -> bool:
    """The subset of calendar-query / addressbook-query filters clients use."""
    if flavor is ADDRESSBOOKS:
        filt = root.find("card:filter", NS)
        prop_filters = filt.findall("card:prop-filter", NS) if filt is not None else []
        if not prop_filters:
            return True
        results = [_text_match(obj.values(pf.get("name", "")), pf.find("card:text-match", NS)) for pf in prop_filters]
        return all(results) if (filt.get("test") or "anyof") == "allof" else any(results)
    outer = root.find("cal:filter/cal:comp-filter", NS)
    inner = outer.find("cal:comp-filter", NS) if outer is not None else None
    if inner is None:
        return True
    component = inner.get("name", "VEVENT")
    if obj.component != component.lower():
        return False
    time_range = inner.find("cal:time-range", NS)
    if time_range is not None and not obj.overlaps(
        component, _ical_time(time_range.get("start")), _ical_time(time_range.get("end"))
    ):
        return False
    for pf in inner.findall("cal:prop-filter", NS):
        if not _text_match(obj.values(pf.get("name", "")), pf.find("cal:text-match", NS)):
            return False
    return True


def validate(flavor: Flavor, data: str) -> None:
    """Reject what Sabre rejects: unparsable data and calendar objects without a UID."""
    if flavor is ADDRESSBOOKS:
        if not re.search(r"^BEGIN:VCARD", data, re.MULTILINE) or not re.search(r"^END:VCARD", data, re.MULTILINE):
            raise DavError(
                415, "Sabre\\DAV\\Exception\\UnsupportedMediaType", "This resource only supports valid vCard data."
            )
        return
    try:
        Calendar.from_ical(data)
    except (ValueError, KeyError, IndexError) as exc:
        raise DavError(
            415,
            "Sabre\\DAV\\Exception\\UnsupportedMediaType",
            f"This resource only supports valid iCalendar 2.0 data. Parse error: {exc}",
        ) from None
    if not DavObject(0, "", data).uid:
        raise DavError(400, "Sabre\\DAV\\Exception\\BadRequest", "Every object must have a UID")


def _object(request: Request, nc: State, flavor: Flavor, coll: Collection, uri: str, body: bytes) -> Response:
    obj = coll.objects.get(uri)
    uid: str = request.state.user
    if request.method == "PUT":
        if coll.read_only:
            raise forbidden("Permission denied")
        check_preconditions(request, obj.etag if obj else None)
        data = body.decode("utf-8", errors="replace")
        validate(flavor, data)
        written, created = nc.groupware.put(coll, uri, data, uid)
        return Response(status_code=201 if created else 204, headers={"ETag": f'"{written.etag}"'})
    if obj is None:
        raise _missing(uri)
    if request.method == "HEAD" and flavor is ADDRESSBOOKS:
        # Recorded (carddav_head_500): Sabre's vCard converter fails on the body-less request
        # ("EofException: End of document reached prematurely"). GET and PROPFIND work.
        return Response(status_code=500, media_type="application/xml; charset=utf-8")
    if request.method in ("GET", "HEAD"):
        props = _object_props(flavor, obj)
        headers = {"ETag": props[P("d:getetag")], "Last-Modified": props[P("d:getlastmodified")]}
        content = b"" if request.method == "HEAD" else obj.data.encode()
        return Response(content, headers=headers, media_type=props[P("d:getcontenttype")])
    if request.method == "DELETE":
        if coll.read_only:
            raise forbidden("Permission denied")
        check_preconditions(request, obj.etag)
        nc.groupware.delete(coll, uri, uid)
        return Response(status_code=204)
    if request.method == "PROPFIND":
        return multistatus([_object_response(flavor, coll, obj, requested_props(parse_body(body)))], flavor.prefixes)
    raise DavError(405, "Sabre\\DAV\\Exception\\MethodNotAllowed", f"{request.method} is not allowed on this object")
