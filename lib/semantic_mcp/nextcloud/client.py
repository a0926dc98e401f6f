"""Talks to Nextcloud as a given user over HTTP: OCS, app APIs (Notes, Deck) and WebDAV/CalDAV/CardDAV.

The core does not know how a request is authenticated: the ExApp shell passes ``auth_headers``,
a function from user id to headers (AppAPI's signed headers in production). Errors are mapped to
outcomes every caller needs to tell apart: the object is gone or forbidden for this user
(:class:`NotFound`), the call was malformed (:class:`NextcloudError`), or Nextcloud cannot say now
(:class:`Transient`), which must never be mistaken for "gone". ``Transient`` has two kinds that
pause all traffic through the shared :class:`~semantic_mcp.nextcloud.health.NextcloudHealth`: the server is
unavailable (:class:`Unavailable`) or refuses the app's own credentials (:class:`CredentialsRefused`);
a user AppAPI will not act as is :class:`UserRefused`.
"""

from __future__ import annotations

import logging
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote, unquote

import httpx

from .health import NextcloudHealth, Paused

log = logging.getLogger(__name__)

AuthHeaders = Callable[[str], Mapping[str, str]]

NS = {
    "d": "DAV:",
    "oc": "http://owncloud.org/ns",
    "nc": "http://nextcloud.org/ns",
    "cal": "urn:ietf:params:xml:ns:caldav",
    "card": "urn:ietf:params:xml:ns:carddav",
    "cs": "http://calendarserver.org/ns/",
}


class NextcloudError(Exception):
    """A request Nextcloud answered with an unexpected status."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class NotFound(NextcloudError):
    """The object does not exist for this user, or the user may not see it (404, 403)."""


class Transient(NextcloudError):
    """Nextcloud cannot say right now: try again later; says nothing about access."""


class Unavailable(Transient):
    """Nextcloud is unavailable as a whole: 503 (maintenance mode, an upgrade), 429, another 5xx,
    or no answer. Nothing is wrong with the request; everyone pauses (see :mod:`.health`)."""

    def __init__(self, message: str, status: int | None = None, *, retry_after: float | None = None,
                 maintenance: bool = False, item_suspect: bool = False) -> None:
        super().__init__(message, status)
        self.retry_after = retry_after
        self.maintenance = maintenance
        # A plain 500 may be the server or this one object (a broken file makes PHP fail): the
        # queue pauses, and the item also spends one attempt so a poison item still dead-letters.
        self.item_suspect = item_suspect


class CredentialsRefused(Transient):
    """Nextcloud refuses the app's own AppAPI credentials (401 on a signed request, or the app is
    disabled or not registered yet). No user is at fault: nothing may be dropped for it."""


class UserRefused(NextcloudError):
    """AppAPI refuses to act as this user while the app's own credentials work: the account is
    gone or disabled (401)."""


@dataclass
class DavEntry:
    """One ``<d:response>`` of a multistatus: its decoded href and the props that answered 200."""

    href: str
    props: dict[str, str | None]
    status: int = 200
    lists: dict[str, list[str]] = field(default_factory=dict)  # props whose value is a list of elements

    def prop(self, name: str) -> str | None:
        return self.props.get(name)

    def prop_list(self, name: str) -> list[str]:
        """The values of a list-valued prop (``d:resourcetype``, ``nc:system-tags``, a component set)."""
        return self.lists.get(name, [])

    @property
    def is_collection(self) -> bool:
        return self.href.endswith("/")


def parse_multistatus(body: bytes | str) -> tuple[list[DavEntry], str | None]:
    """Parse a WebDAV multistatus into entries and the sync token (for sync-collection answers).

    Property names are returned as ``prefix:local`` using :data:`NS` prefixes (``oc:fileid``,
    ``d:getetag``, ``cal:calendar-data``). Only props in a 200 propstat are kept, so a missing
    property reads as absent rather than as an empty value. A prop made of child elements is
    also kept as a list (:meth:`DavEntry.prop_list`), see :func:`_element_value`.
    """
    root = ET.fromstring(body)
    reverse = {uri: prefix for prefix, uri in NS.items()}
    entries: list[DavEntry] = []
    for response in root.findall("d:response", NS):
        href = unquote(response.findtext("d:href", default="", namespaces=NS))
        props: dict[str, str | None] = {}
        lists: dict[str, list[str]] = {}
        for propstat in response.findall("d:propstat", NS):
            if " 200 " not in (propstat.findtext("d:status", default="", namespaces=NS) + " "):
                continue
            for prop in propstat.find("d:prop", NS) or []:
                uri, _, local = prop.tag[1:].partition("}")
                name = f"{reverse.get(uri, uri)}:{local}"
                if len(prop):  # e.g. d:resourcetype with children
                    lists[name] = [_element_value(child) for child in prop]
                    props[name] = " ".join(lists[name])
                else:
                    props[name] = prop.text
        status_text = response.findtext("d:status", default="", namespaces=NS)
        status = int(status_text.split()[1]) if status_text.count(" ") >= 2 else 200
        entries.append(DavEntry(href=href, props=props, status=status, lists=lists))
    return entries, root.findtext("d:sync-token", default=None, namespaces=NS)


def _element_value(element: ET.Element) -> str:
    """What a list element stands for: its text (a tag name in ``nc:system-tags``), else its
    ``name`` attribute (``<cal:comp name="VEVENT"/>``), else its local tag (``<d:collection/>``)."""
    text = (element.text or "").strip()
    return text or element.get("name") or element.tag.partition("}")[2]


def dav_body(root: str, inner: str) -> str:
    """A DAV request body: ``root`` (``d:propfind``, ``d:searchrequest``...) declaring every :data:`NS` prefix."""
    xmlns = " ".join(f'xmlns:{prefix}="{uri}"' for prefix, uri in NS.items())
    return f'<?xml version="1.0" encoding="utf-8"?>\n<{root} {xmlns}>{inner}</{root}>'


def prop_xml(names: Iterable[str]) -> str:
    """``<d:prop>`` listing ``prefix:local`` property names, as PROPFIND, REPORT and SEARCH select them."""
    return "<d:prop>" + "".join(f"<{name}/>" for name in names) + "</d:prop>"


def http_date_to_ts(value: str | None) -> int:
    if not value:
        return 0
    try:
        return int(parsedate_to_datetime(value).timestamp())
    except (TypeError, ValueError):
        return 0


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds (it may be a number of seconds or an HTTP date)."""
    if not value:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    ts = http_date_to_ts(value)
    return max(0.0, ts - time.time()) if ts else None


def strip_etag(value: str | None) -> str:
    return (value or "").strip().strip('"')


KEEPALIVE_SECONDS = 4.0  # below the 5 s idle timeout of Apache's default and of uvicorn
_SAFE_TO_REPEAT = frozenset({"GET", "HEAD", "OPTIONS", "PROPFIND", "SEARCH", "REPORT"})  # reads (RFC 9110, 4918, 5323)


class NextcloudClient:
    """Async HTTP client for one Nextcloud instance, acting as whichever user each call names."""

    def __init__(
        self,
        base_url: str,
        auth_headers: AuthHeaders,
        *,
        timeout: float = 30.0,
        max_connections: int = 16,
        transport: httpx.AsyncBaseTransport | None = None,
        health: NextcloudHealth | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._auth_headers = auth_headers
        # Without a shared one (tests of single sources), credentials count as confirmed.
        self.health = health or NextcloudHealth()
        if health is None:
            self.health.confirmed_by_appapi()
        self.health.set_probes(self.probe_status, self.probe_credentials)
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=timeout,
            # Apache closes a connection idle for 5 s (KeepAliveTimeout), as uvicorn does: one
            # kept as long would be reused just as the server closes it.
            limits=httpx.Limits(max_connections=max_connections, keepalive_expiry=KEEPALIVE_SECONDS),
            transport=transport,
            follow_redirects=False,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def request(
        self,
        user: str,
        method: str,
        path: str,
        *,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, Any] | None = None,
        content: bytes | str | None = None,
        json: Any = None,
        ok: tuple[int, ...] = (200, 201, 204, 207),
    ) -> httpx.Response:
        """Send one request as ``user``; raise :class:`NotFound`, :class:`Unavailable`,
        :class:`CredentialsRefused`, :class:`UserRefused` or :class:`NextcloudError`.

        While the shared health says Nextcloud is unavailable or refuses the app, nothing is sent:
        the matching error is raised at once.
        """
        try:
            await self.health.admit()
        except Paused as paused:
            raise (CredentialsRefused if paused.credentials else Unavailable)(f"{method} {path}: {paused}") from None
        all_headers = {**self._auth_headers(user), **(headers or {})}
        try:
            with self.health.sending():
                for attempt in (1, 2):
                    try:
                        response = await self._http.request(
                            method, path, headers=all_headers, params=params, content=content, json=json
                        )
                        break
                    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
                        # A kept-alive connection the server closed as it was reused ("disconnected
                        # without sending a response"): Nextcloud never saw the request, so a read is
                        # sent again, once, on a new connection, before anyone pauses for it.
                        if attempt == 2 or method not in _SAFE_TO_REPEAT:
                            raise
        except (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout) as exc:
            # Connected, but this one request is slow (a big download): the item's problem, no pause.
            raise Transient(f"{method} {path}: {type(exc).__name__}") from exc
        except httpx.TransportError as exc:
            reason = f"{method} {path}: no answer ({type(exc).__name__})"
            self.health.unavailable(reason)
            raise Unavailable(reason) from exc
        status = response.status_code
        if status in ok:
            self.health.succeeded()
            return response
        message = f"{method} {path} as {user!r}: HTTP {status}"
        if status in (403, 404, 410):
            raise NotFound(message, status)
        if status == 401:
            if not user or await self.health.check_user_refusal():
                if not user:
                    self.health.credentials_refused(message)
                raise CredentialsRefused(message, status)
            raise UserRefused(message, status)
        if status >= 500 or status in (408, 425, 429):
            maintenance = response.headers.get("X-Nextcloud-Maintenance-Mode") == "1"
            retry_after = _retry_after(response.headers.get("Retry-After"))
            self.health.unavailable(message, retry_after=retry_after, maintenance=maintenance)
            raise Unavailable(message, status, retry_after=retry_after, maintenance=maintenance,
                              item_suspect=status == 500 and not maintenance)
        raise NextcloudError(message, status)

    async def probe_status(self) -> tuple[str, float | None]:
        """Nextcloud's anonymous ``status.php``: "up", "maintenance" or "down" (and any Retry-After).
        No credentials, so probing cannot count as a failed login; answered in maintenance mode too."""
        try:
            response = await self._http.get("/status.php", timeout=10.0)
        except httpx.TransportError:
            return "down", None
        retry_after = _retry_after(response.headers.get("Retry-After"))
        if response.status_code != 200:
            return "down", retry_after
        try:
            body = response.json()
        except ValueError:
            return "down", retry_after
        if body.get("maintenance") or body.get("needsDbUpgrade"):
            return "maintenance", retry_after
        return ("up" if body.get("installed", True) else "down"), retry_after

    async def probe_credentials(self) -> str:
        """One app-level request (AppAPI's own state endpoint, allowed even while the app is
        disabled): "ok", "disabled" (AppAPI knows the secret, the app is not enabled), "refused"
        (401), or "unavailable"."""
        try:
            response = await self._http.get(
                "/ocs/v2.php/apps/app_api/ex-app/state",
                headers={**self._auth_headers(""), "OCS-APIRequest": "true", "Accept": "application/json"},
                params={"format": "json"},
                timeout=10.0,
            )
        except httpx.TransportError as exc:
            self.health.unavailable(f"GET ex-app/state: no answer ({type(exc).__name__})")
            return "unavailable"
        if response.status_code == 401:
            return "refused"
        if response.status_code == 200:
            self.health.succeeded()
            try:
                enabled = bool(int(response.json()["ocs"]["data"]))
            except (ValueError, KeyError, TypeError):
                enabled = True
            return "ok" if enabled else "disabled"
        if response.status_code >= 500 or response.status_code == 429:
            self.health.unavailable(
                f"GET ex-app/state: HTTP {response.status_code}",
                retry_after=_retry_after(response.headers.get("Retry-After")),
                maintenance=response.headers.get("X-Nextcloud-Maintenance-Mode") == "1",
            )
        return "unavailable"

    async def ocs(
        self, user: str, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None
    ) -> Any:
        """Call an OCS endpoint and return its ``ocs.data``."""
        response = await self.request(
            user,
            method,
            path,
            headers={"OCS-APIRequest": "true", "Accept": "application/json"},
            params={"format": "json", **(params or {})},
            json=json,
        )
        return response.json()["ocs"]["data"]

    async def dav(
        self, user: str, method: str, path: str, body: str, *, depth: str | None = "1"
    ) -> tuple[list[DavEntry], str | None]:
        """Send a PROPFIND/REPORT/SEARCH and parse its multistatus."""
        headers = {"Content-Type": "application/xml; charset=utf-8"}
        if depth is not None:
            headers["Depth"] = depth
        response = await self.request(user, method, path, headers=headers, content=body.encode())
        return parse_multistatus(response.content)

    def files_root(self, user: str) -> str:
        return f"/remote.php/dav/files/{quote(user)}"
