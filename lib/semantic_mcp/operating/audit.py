"""A record of every MCP tool call in Nextcloud's own log (ADR 0360).

One line per call, in logfmt (``key=value``, values with spaces quoted), so an admin can grep it
and a log shipper can parse it::

    tool_call user=alice client="Claude" client_id=3f2a… tool=nc_semantic_search outcome=ok results=5 ms=184

Who, through which client (an OAuth client's name and id, or ``app-password``), which tool, how
many results, how long, and refusals (``outcome=refused reason=scope|quota|account``) — never a
document's content; the query text only when the admin turns ``audit_queries`` on.

Every record goes to the logger ``semantic_mcp.audit``; :class:`NextcloudLogHandler` forwards that
logger's records to AppAPI's log endpoint (Nextcloud writes them with the app id as ``app``). A call
never waits for the log: records queue (bounded) and one background task sends them; while
Nextcloud is down they wait, and past the bound the oldest are dropped and counted. The app's own
log keeps every line either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from ..core.logsafe import printable

AUDIT = logging.getLogger("semantic_mcp.audit")
LOG_ENDPOINT = "/ocs/v1.php/apps/app_api/api/v1/log"
APP_PASSWORD = "app-password"  # the client of a request AppAPI's proxy vouched for with an app password
MAX_QUERY_CHARS = 200
# Nextcloud's levels: 0 debug, 1 info, 2 warning, 3 error, 4 fatal.
NEXTCLOUD_LEVEL = {logging.DEBUG: 0, logging.INFO: 1, logging.WARNING: 2, logging.ERROR: 3, logging.CRITICAL: 4}

_BARE = re.compile(r"^[A-Za-z0-9_.:@/+-]+$")


def logfmt(event: str, fields: dict[str, Any]) -> str:
    """``event key=value …``; None values left out, others quoted when they are not one plain word."""
    parts = [event]
    for key, value in fields.items():
        if value is None:
            continue
        text = printable(str(value), MAX_QUERY_CHARS * 2)
        parts.append(f"{key}={text}" if _BARE.match(text) else f'{key}="' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return " ".join(parts)


def tool_call_line(*, user: str, client: str, client_id: str | None, tool: str, outcome: str,
                   reason: str | None = None, results: int | None = None, ms: int | None = None,
                   query: str | None = None) -> str:
    return logfmt("tool_call", {
        "user": user or "-", "client": client or "-", "client_id": client_id, "tool": tool or "-",
        "outcome": outcome, "reason": reason, "results": results, "ms": ms,
        "query": query[:MAX_QUERY_CHARS] if query else None,
    })


def record(line: str, *, refused: bool = False) -> None:
    """One record: a refusal at WARNING (Nextcloud's default level keeps it), a served call at INFO."""
    AUDIT.log(logging.WARNING if refused else logging.INFO, line)


def result_count(result: Any) -> int | None:
    """How many items a tool's answer holds (search hits, an answer's sources, documents), None if not a list."""
    structured = getattr(result, "structured_content", None)
    if structured is None and isinstance(result, dict):
        structured = result.get("structuredContent") or result.get("structured_content")
    if not isinstance(structured, dict):
        return None
    for key in ("results", "sources", "documents"):
        if isinstance(structured.get(key), list):
            return len(structured[key])
    return 1 if structured.get("id") else None


def is_error(result: Any) -> bool:
    if isinstance(result, dict):
        return bool(result.get("isError") or result.get("is_error"))
    return bool(getattr(result, "is_error", False))


class AuditTrail:
    """MCP server middleware, outermost: one record per ``tools/call``, after it is answered.

    ``principal_of`` gives the caller (user, client, scopes); ``needed_scope`` the tool's scope, so a
    call the scope guard refuses is recorded as such; ``include_queries`` reads the admin's switch.
    """

    def __init__(self, principal_of: Callable[[Any], Any], needed_scope: Callable[[str], str],
                 include_queries: Callable[[], bool] = lambda: False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._principal_of = principal_of
        self._needed_scope = needed_scope
        self._include_queries = include_queries
        self._clock = clock

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        params = ctx.params or {}
        tool = str(params.get("name") or "")
        arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
        found = self._principal_of(ctx.request)
        who = {"user": getattr(found, "user", ""), "client": getattr(found, "client", ""),
               "client_id": getattr(found, "client_id", None) or None, "tool": tool}
        query = arguments.get("query") if self._include_queries() and isinstance(arguments.get("query"), str) else None
        started = self._clock()
        needed = self._needed_scope(tool)
        if found is None or needed not in found.scopes:
            result = await call_next(ctx)
            record(tool_call_line(**who, outcome="refused", reason="scope", query=query), refused=True)
            return result
        try:
            result = await call_next(ctx)
        except BaseException as exc:
            ms = round((self._clock() - started) * 1000)
            record(tool_call_line(**who, outcome="error", reason=type(exc).__name__, ms=ms, query=query))
            raise
        ms = round((self._clock() - started) * 1000)
        if is_error(result):
            record(tool_call_line(**who, outcome="error", ms=ms, query=query))
        elif isinstance(result, dict) and "inputRequired" in str(result.get("resultType", "")):
            record(tool_call_line(**who, outcome="input_required", ms=ms, query=query))
        else:
            record(tool_call_line(**who, outcome="ok", results=result_count(result), ms=ms, query=query))
        return result


class NextcloudLogHandler(logging.Handler):
    """Forwards ``semantic_mcp.audit`` records to Nextcloud's log through AppAPI, in the background.

    ``send(level, message)`` posts one record (raising when Nextcloud did not take it);
    ``wait_usable()`` returns once Nextcloud answers again. At most ``bound`` records wait; past
    that the oldest go (counted, and said once in the app's own log).
    """

    def __init__(self, send: Callable[[int, str], Awaitable[Any]], wait_usable: Callable[[], Awaitable[Any]],
                 *, bound: int = 2000, retry_seconds: float = 5.0) -> None:
        super().__init__(level=logging.DEBUG)
        self._send = send
        self._wait_usable = wait_usable
        self._queue: deque[tuple[int, str]] = deque()
        self._bound = bound
        self._retry_seconds = retry_seconds
        self.dropped = 0
        self.sent = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    def emit(self, record: logging.LogRecord) -> None:
        level = NEXTCLOUD_LEVEL.get(record.levelno, 1)
        item = (level, printable(record.getMessage()))
        if len(self._queue) >= self._bound:
            self._queue.popleft()
            self.dropped += 1
            if self.dropped == 1:
                logging.getLogger(__name__).warning(
                    "Nextcloud's log is not taking the app's records: the oldest are dropped beyond %d waiting "
                    "(the app's own log keeps them)", self._bound)
        self._queue.append(item)
        if self._loop is not None and self._wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: the app is stopping
                self._loop.call_soon_threadsafe(self._wake.set)

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="nextcloud-log")
        if self._queue:
            self._wake.set()

    async def stop(self, flush_seconds: float = 2.0) -> None:
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.flushed(), flush_seconds)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def flushed(self) -> None:
        while self._queue:
            await asyncio.sleep(0.05)

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                level, message = self._queue[0]
                try:
                    await self._wait_usable()
                    await self._send(level, message)
                except asyncio.CancelledError:
                    raise
                except Exception:  # noqa: BLE001 - Nextcloud unavailable or refusing: keep it, try later
                    await asyncio.sleep(self._retry_seconds)
                    continue
                if self._queue and self._queue[0] == (level, message):
                    self._queue.popleft()
                self.sent += 1


def install(handler: NextcloudLogHandler) -> None:
    """Send the audit logger's records to Nextcloud too (the app's own log keeps them as well)."""
    AUDIT.setLevel(logging.INFO)
    AUDIT.addHandler(handler)


class QuotaRefusals:
    """ASGI middleware just outside the per-user quota (ex_app/quotas.py): its 429 on ``/mcp`` becomes a
    refusal record (``reason=quota``, ``tool=-``: the request never reached a tool, its body unread)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/mcp" or not scope.get("username"):
            await self.app(scope, receive, send)
            return

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] == 429:
                client, client_id = scope.get("oauth_client", (APP_PASSWORD, ""))
                record(tool_call_line(user=scope["username"], client=client, client_id=client_id or None, tool="",
                                      outcome="refused", reason="quota"), refused=True)
            await send(message)

        await self.app(scope, receive, watch)
