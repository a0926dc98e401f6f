"""A real Nextcloud's bad minutes: maintenance mode and brute-force protection.

Maintenance mode (``occ maintenance:mode --on``, as during an upgrade) answers every request with
503 except ``status.php``, which says ``"maintenance": true``; the webhook worker does not run,
and the deliveries queued meanwhile go out after it. The answers copy Nextcloud's: pages and app
routes carry ``X-Nextcloud-Maintenance-Mode: 1`` and ``Retry-After: 120`` (lib/base.php), OCS
carries the maintenance header (ocs/v1.php), DAV answers Sabre's ``ServiceUnavailable``
(remote.php).

A locked database: Nextcloud on SQLite (nc-kit's, small instances) answers a request 500 when a
concurrent write holds the database ("SQLSTATE[HY000]: General error: 5 database is locked" in
nextcloud.log), e.g. an ExApp registering webhooks while its own indexing and the webhook worker
run. :class:`LockedDatabase` answers the next requests under a path that way.

Brute-force protection (lib/private/Security/Bruteforce/Throttler.php, as AppAPI uses it): a
request signed for an ExApp that is not registered, or with a wrong secret, is one failed attempt
for the caller's address; once more than 10 attempts were made within 30 minutes, every
AppAPI-signed request from that address gets 429 "Reached maximum delay". A disabled app or an
unknown user is refused (401) without an attempt. ``occ security:bruteforce:attempts IP`` and
``…:reset IP`` are :meth:`Throttler.attempts` and :meth:`Throttler.reset`.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from starlette.responses import HTMLResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from .davxml import DavError
from .responses import json_response

MAX_ATTEMPTS = 10


class MaxDelayReached(Exception):
    """Too many failed attempts from this address in the last 30 minutes."""


class Throttler:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attempts: dict[str, list[float]] = defaultdict(list)
        self.log: list[tuple[str, str]] = []  # (address, what was refused), for test failure messages

    def register_attempt(self, ip: str, what: str = "") -> None:
        with self._lock:
            self._attempts[ip].append(time.time())
            self.log.append((ip, what))

    def attempts(self, ip: str, max_age_hours: float = 12) -> int:
        since = time.time() - 3600 * max_age_hours
        with self._lock:
            return sum(1 for at in self._attempts.get(ip, []) if at >= since)

    def reset(self, ip: str) -> None:
        with self._lock:
            self._attempts.pop(ip, None)

    def check(self, ip: str) -> None:
        """``sleepDelayOrThrowOnMax``: raise when the address made too many attempts lately."""
        if self.attempts(ip) > MAX_ATTEMPTS and self.attempts(ip, 0.5) > MAX_ATTEMPTS:
            raise MaxDelayReached("Reached maximum delay")


def max_delay_response() -> Response:
    return json_response({"message": "Reached maximum delay"}, status=429)


@dataclass
class Maintenance:
    on: bool = False
    refused: Counter = field(default_factory=Counter)  # paths answered 503, for tests counting retries


MAINTENANCE_PAGE = (
    "<!DOCTYPE html>\n<html><head><title>Nextcloud</title></head><body>"
    "<h2>Maintenance mode</h2><p>This Nextcloud instance is currently in maintenance mode.</p></body></html>\n"
)


class LockedDatabase:
    """Requests to answer 500 as a locked SQLite database does: ``fail(prefix, times)``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[list] = []  # [path prefix, times left]
        self.failed: list[str] = []  # paths answered 500, for tests

    def fail(self, prefix: str, times: int = 1) -> None:
        with self._lock:
            self._pending.append([prefix, times])

    def take(self, path: str) -> bool:
        with self._lock:
            for pending in self._pending:
                if path.startswith(pending[0]) and pending[1] > 0:
                    pending[1] -= 1
                    self.failed.append(path)
                    return True
        return False


class MaintenanceMode:
    """ASGI middleware answering 503 everywhere but ``status.php`` while ``state.maintenance.on``,
    and 500 where :class:`LockedDatabase` says so."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope.get("app").state.nc if scope.get("app") is not None else None
        if scope["type"] != "http" or state is None or scope["path"] == "/status.php":
            await self.app(scope, receive, send)
        elif state.maintenance.on:
            state.maintenance.refused[scope["path"]] += 1
            await maintenance_response(scope["path"])(scope, receive, send)
        elif state.locked_database.take(scope["path"]):
            await locked_database_response(scope["path"])(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def locked_database_response(path: str) -> Response:
    """What an uncaught ``DbalException`` ends in: Sabre's error document, an OCS failure, or the
    HTML error page."""
    message = "An exception occurred while executing a query: SQLSTATE[HY000]: General error: 5 database is locked"
    if path.startswith("/remote.php/"):
        return DavError(500, "OC\\DB\\Exceptions\\DbalException", message).response()
    if path.startswith("/ocs/"):
        return json_response(
            {"ocs": {"meta": {"status": "failure", "statuscode": 500, "message": "Internal Server Error"}, "data": []}},
            status=500,
        )
    return HTMLResponse("<!DOCTYPE html>\n<html><body><h2>Internal Server Error</h2></body></html>\n", status_code=500)


def maintenance_response(path: str) -> Response:
    if path.startswith("/remote.php/"):
        return DavError(503, "Sabre\\DAV\\Exception\\ServiceUnavailable", "Service unavailable").response()
    if path.startswith("/ocs/"):
        return json_response(
            {"ocs": {"meta": {"status": "failure", "statuscode": 503, "message": "Service unavailable"}, "data": []}},
            status=503, headers={"X-Nextcloud-Maintenance-Mode": "1"},
        )
    return HTMLResponse(
        MAINTENANCE_PAGE, status_code=503, headers={"X-Nextcloud-Maintenance-Mode": "1", "Retry-After": "120"}
    )
