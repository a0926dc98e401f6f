"""Sabre/DAV as Nextcloud speaks it: multistatus answers, error documents, request parsing.

Prefixes matter to clients that read the XML with prefix-aware tools (nc_py_api uses xmltodict
and looks up ``d:getetag``), so answers use exactly Sabre's prefixes and namespace declarations.
A property is named by ``(namespace, local name)``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from email.utils import formatdate
from urllib.parse import quote, unquote, urlsplit

from starlette.requests import Request
from starlette.responses import Response

DAV_ROOT = "/remote.php/dav"

NS = {
    "d": "DAV:",
    "s": "http://sabredav.org/ns",
    "cal": "urn:ietf:params:xml:ns:caldav",
    "cs": "http://calendarserver.org/ns/",
    "card": "urn:ietf:params:xml:ns:carddav",
    "oc": "http://owncloud.org/ns",
    "nc": "http://nextcloud.org/ns",
}
PREFIX = {uri: prefix for prefix, uri in NS.items()}
FILES = ("d", "s", "oc", "nc")
CALDAV = ("d", "s", "cal", "cs", "oc", "nc")
CARDDAV = ("d", "s", "card", "oc", "nc")
ALL = ("d", "s", "cal", "cs", "card", "oc", "nc")
XML_TYPE = "application/xml; charset=utf-8"

Prop = tuple[str, str]


def P(qname: str) -> Prop:
    """``"d:getetag"`` -> ``("DAV:", "getetag")``."""
    prefix, _, local = qname.partition(":")
    return NS[prefix], local


class Raw(str):
    """Already-serialized XML placed as a property's children (e.g. ``<d:collection/>``)."""


PropValue = str | int | Raw | None


def escape_text(text: str) -> str:
    """Escape like libxml's writer: quotes become ``&quot;`` and CR is kept as ``&#13;``."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("\r", "&#13;")
    )


def _qualified(name: Prop, declared: Sequence[str]) -> tuple[str, str]:
    """Prefixed name, or ``x1:`` with its own declaration (Sabre's way) for undeclared namespaces."""
    ns, local = name
    prefix = PREFIX.get(ns)
    if prefix in declared:
        return f"{prefix}:{local}", ""
    return f"x1:{local}", f' xmlns:x1="{escape_text(ns)}"'


def element(name: Prop, value: PropValue = None, declared: Sequence[str] = ALL) -> str:
    """One property element; ``None`` or ``""`` gives an empty element, :class:`Raw` is inserted as is."""
    qname, decl = _qualified(name, declared)
    if value is None or value == "":
        return f"<{qname}{decl}/>"
    body = value if isinstance(value, Raw) else escape_text(str(value))
    return f"<{qname}{decl}>{body}</{qname}>"


def declarations(prefixes: Sequence[str]) -> str:
    return " ".join(f'xmlns:{p}="{NS[p]}"' for p in prefixes)


@dataclass
class DavResponse:
    """One ``<d:response>``: props that answered (200) and props that are missing (404).

    ``status`` set instead gives a bare response (sync-collection's deleted members).
    """

    href: str
    found: list[tuple[Prop, PropValue]] = field(default_factory=list)
    missing: list[Prop] = field(default_factory=list)
    status: str | None = None


def _propstat(props: Iterable[str], status: str, pretty: bool) -> str:
    if pretty:
        inner = "".join(f"\n    {p}" for p in props)
        return f"\n  <d:propstat>\n   <d:prop>{inner}\n   </d:prop>\n   <d:status>{status}</d:status>\n  </d:propstat>"
    return f"<d:propstat><d:prop>{''.join(props)}</d:prop><d:status>{status}</d:status></d:propstat>"


def multistatus(
    responses: Iterable[DavResponse],
    prefixes: Sequence[str] = FILES,
    sync_token: str | None = None,
    pretty: bool = False,
) -> Response:
    """A 207 answer. ``pretty`` reproduces the indented layout Sabre uses for sync-collection."""
    nl, ind = ("\n", " ") if pretty else ("", "")
    parts = [f'<?xml version="1.0"?>\n<d:multistatus {declarations(prefixes)}>']
    for r in responses:
        body = f"{nl}{ind}<d:response>{nl}{ind * 2}<d:href>{escape_text(r.href)}</d:href>"
        if r.status:
            body += f"{nl}{ind * 2}<d:status>{r.status}</d:status>"
        if r.found:
            body += _propstat((element(n, v, prefixes) for n, v in r.found), "HTTP/1.1 200 OK", pretty)
        if r.missing:
            body += _propstat((element(n, None, prefixes) for n in r.missing), "HTTP/1.1 404 Not Found", pretty)
        parts.append(f"{body}{nl}{ind}</d:response>")
    if sync_token is not None:
        parts.append(f"{nl}{ind}<d:sync-token>{escape_text(sync_token)}</d:sync-token>")
    parts.append(f"{nl}</d:multistatus>\n")
    return Response("".join(parts).encode(), status_code=207, media_type=XML_TYPE)


class DavError(Exception):
    """A Sabre exception, answered as Sabre's ``<d:error>`` document."""

    def __init__(self, status: int, exception: str, message: str, extra: str = "", headers: dict | None = None):
        super().__init__(status, message)
        self.status = status
        self.exception = exception
        self.message = message
        self.extra = extra
        self.headers = headers or {}

    def response(self) -> Response:
        body = (
            '<?xml version="1.0" encoding="utf-8"?>\n'
            '<d:error xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns">\n'
            f"  <s:exception>{escape_text(self.exception)}</s:exception>\n"
            f"  <s:message>{escape_text(self.message)}</s:message>\n"
            f"{self.extra}"
            "</d:error>\n"
        )
        return Response(body.encode(), status_code=self.status, headers=self.headers, media_type=XML_TYPE)


def not_found(message: str) -> DavError:
    return DavError(404, "Sabre\\DAV\\Exception\\NotFound", message)


def forbidden(message: str) -> DavError:
    return DavError(403, "Sabre\\DAV\\Exception\\Forbidden", message)


def parse_body(body: bytes) -> ET.Element | None:
    if not body.strip():
        return None
    try:
        return ET.fromstring(body)
    except ET.ParseError as exc:
        raise DavError(400, "Sabre\\DAV\\Exception\\BadRequest", f"The request body had an invalid XML body. ({exc})")


def name_of(el: ET.Element) -> Prop:
    ns, _, local = el.tag[1:].partition("}")
    return ns, local


def requested_props(root: ET.Element | None) -> list[Prop] | None:
    """The ``<d:prop>`` children asked for, or ``None`` for allprop / an empty body."""
    if root is None:
        return None
    prop = root.find("d:prop", NS)
    if prop is None:
        return None
    return [name_of(child) for child in prop]


def split_props(
    wanted: Sequence[Prop] | None, available: dict[Prop, PropValue], default: Sequence[Prop]
) -> tuple[list[tuple[Prop, PropValue]], list[Prop]]:
    """Order the answer like the request; unknown props go to the 404 propstat."""
    names = default if wanted is None else wanted
    found = [(n, available[n]) for n in names if n in available]
    missing = [n for n in names if n not in available] if wanted is not None else []
    return found, missing


def http_date(timestamp: float) -> str:
    return formatdate(timestamp, usegmt=True)


def href(*segments: str, collection: bool = False) -> str:
    """``/remote.php/dav/...`` with each segment encoded like Sabre's ``encodePath``."""
    path = "/".join(quote(s.strip("/"), safe="/:@()") for s in segments if s.strip("/"))
    return f"{DAV_ROOT}/{path}" + ("/" if collection else "")


def depth_of(request: Request, default: int = 1) -> int:
    """The Depth header as 0, 1 or -1 (infinity)."""
    value = request.headers.get("depth", "").strip().lower()
    if value == "infinity":
        return -1
    return int(value) if value in ("0", "1") else default


def destination_of(request: Request) -> str:
    """The Destination header as a path below ``/remote.php/dav/``."""
    path = unquote(urlsplit(request.headers.get("destination", "")).path)
    if not path.startswith(DAV_ROOT + "/"):
        raise DavError(502, "Sabre\\DAV\\Exception\\BadGateway", "The destination node is not on this server")
    return path[len(DAV_ROOT) + 1 :]


def check_preconditions(request: Request, etag: str | None, headers: dict | None = None) -> None:
    """If-Match / If-None-Match against the target's current ETag (None: it does not exist);
    ``headers`` go with a 412 (a GET's names the current ETag, recorded on 34: webdav_get_if_match_stale)."""
    if_none_match = request.headers.get("if-none-match", "").strip()
    if_match = request.headers.get("if-match", "").strip()
    if if_none_match == "*" and etag is not None:
        raise DavError(
            412,
            "Sabre\\DAV\\Exception\\PreconditionFailed",
            "An If-None-Match header was specified, but the ETag matched (or * was specified).",
        )
    if if_match and (etag is None or (if_match != "*" and if_match.strip('"') != etag)):
        raise DavError(
            412,
            "Sabre\\DAV\\Exception\\PreconditionFailed",
            "An If-Match header was specified, but none of the specified ETags matched.",
            "  <s:header>If-Match</s:header>\n",
            headers,
        )
