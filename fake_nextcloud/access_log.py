"""Which requests the fake answered, and for whom: what Nextcloud's web server access log tells an
admin counting what an app costs them (issue 16: what reconciling an unchanged user costs)."""

from __future__ import annotations

import base64
import binascii
import threading
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send


@dataclass(frozen=True)
class Access:
    method: str
    path: str
    user: str  # as whom: AppAPI's user, a Basic-auth login, or "" (the app itself, or anonymous)


class AccessLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[Access] = []

    def add(self, entry: Access) -> None:
        with self._lock:
            self._entries.append(entry)

    def mark(self) -> int:
        """A position to count from."""
        with self._lock:
            return len(self._entries)

    def since(self, mark: int = 0, user: str | None = None) -> list[Access]:
        with self._lock:
            return [entry for entry in self._entries[mark:] if user is None or entry.user == user]


class AccessLogging:
    """ASGI middleware recording every HTTP request in ``state.access_log``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope.get("app").state.nc if scope.get("app") is not None else None
        if scope["type"] == "http" and state is not None:
            state.access_log.add(Access(scope["method"], scope["path"], _user(dict(scope["headers"]))))
        await self.app(scope, receive, send)


def _user(headers: dict[bytes, bytes]) -> str:
    """The user part of AppAPI's ``user:secret`` or of a Basic login; decoded here, not by ``auth``
    (a model module imports no route module, ADR 0012)."""
    value = headers.get(b"authorization-app-api") or b""
    if not value and (basic := headers.get(b"authorization", b"")).lower().startswith(b"basic "):
        value = basic[6:]
    try:
        return base64.b64decode(value.strip()).decode().partition(":")[0] if value else ""
    except (binascii.Error, UnicodeDecodeError):
        return ""
