"""Per-user quotas on the MCP endpoint: open sessions and requests per minute.

Every MCP session holds a server task and memory until its client ends it or it idles out (30
minutes), and every request may embed a query and call Nextcloud back: one user (or one stolen
token) opening sessions or sending requests in a loop would starve everyone else. So each user
gets at most ``sessions`` open sessions and ``per_minute`` requests in any minute; beyond that
the request is refused with 429 and a JSON-RPC error that says which limit and when to retry.
Other users are not affected.
"""

from __future__ import annotations

import json
import math
import time
from collections import deque
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

SESSION_IDLE_SECONDS = 1800.0  # the MCP SDK's default, passed to it too, so both forget a session together


class McpQuota:
    """ASGI middleware for ``/mcp``; runs where ``scope["username"]`` is known (inside the auth guards)."""

    def __init__(
        self, app: ASGIApp, *, sessions: int = 20, per_minute: int = 600,
        idle_seconds: float = SESSION_IDLE_SECONDS, clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.sessions, self.per_minute, self.idle_seconds, self.clock = sessions, per_minute, idle_seconds, clock
        self._open: dict[str, dict[str, float]] = {}  # user -> {session id: last request}
        self._recent: dict[str, deque[float]] = {}  # user -> times of the requests of the last minute

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("username") if scope["type"] == "http" and scope["path"] == "/mcp" else None
        if not user:
            await self.app(scope, receive, send)
            return
        now = self.clock()
        recent = self._recent.setdefault(user, deque())
        while recent and recent[0] <= now - 60.0:
            recent.popleft()
        if len(recent) >= self.per_minute:
            retry = math.ceil(recent[0] + 60.0 - now)
            await _refuse(send, f"Too many requests: at most {self.per_minute} a minute for each user; "
                                f"try again in {retry} s", retry)
            return
        recent.append(now)
        sessions = self._open.setdefault(user, {})
        for session_id, seen in list(sessions.items()):
            if seen <= now - self.idle_seconds:
                del sessions[session_id]
        session_id = _header(scope, b"mcp-session-id")
        if session_id is None and scope["method"] == "POST" and len(sessions) >= self.sessions:
            await _refuse(send, f"Too many open MCP sessions: at most {self.sessions} for each user. End one "
                                "(DELETE /mcp with its Mcp-Session-Id) or reuse it; an idle one ends after "
                                f"{self.idle_seconds / 60:.0f} minutes", 60)
            return
        if session_id in sessions:
            sessions[session_id] = now

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                status = message["status"]
                opened = _header(message, b"mcp-session-id")
                if session_id is None and opened and status < 300:
                    sessions[opened] = self.clock()
                elif session_id is not None and (status == 404 or (scope["method"] == "DELETE" and status < 300)):
                    sessions.pop(session_id, None)  # ended, expired or never this user's
            await send(message)

        await self.app(scope, receive, watch)


def _header(holder: Scope | Message, name: bytes) -> str | None:
    for key, value in holder.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def _refuse(send: Send, message: str, retry_after: int) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}).encode()
    await send({"type": "http.response.start", "status": 429, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(max(retry_after, 1)).encode()),
    ]})
    await send({"type": "http.response.body", "body": body})
