"""The MCP server: small typed tools with structured output, guarded by scopes.

:func:`build_server` puts it together: the search tools (:mod:`.search_tools`), the reading tools
(:mod:`.reading_tools`) and the per-user sync tools below, behind two guards: the caller's scopes
(:class:`ScopeGuard`) and replayed input-required state (:class:`ReplayGuard`).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

from ..core.config import READ_SCOPE, WRITE_SCOPE
from ..operating.audit import AuditTrail
from ..core.principal import Principal, PrincipalOf
from .reading_tools import READING_TOOLS, ConnectorPairForItsClients, register_reading_tools
from .search_tools import SEARCH_TOOLS, register_search_tools
from .compact_output import CompactResultText, LeanToolList
from .tool_errors import PlainToolErrors
from .sync_status import sync_status

if TYPE_CHECKING:
    from ..engine import Engine

log = logging.getLogger(__name__)


TOOL_SCOPES = {
    **{name: READ_SCOPE for name in SEARCH_TOOLS},
    **{name: READ_SCOPE for name in READING_TOOLS},
    "nc_get_vector_sync_status": READ_SCOPE,
    "nc_enable_vector_sync": WRITE_SCOPE,
    "nc_disable_vector_sync": WRITE_SCOPE,
}


class SyncChange(BaseModel):
    user: str
    enabled: bool
    message: str


def build_server(
    engine: Engine, principal_of: PrincipalOf, *, state_key: bytes,
    connected_clients: Callable[[str], list[dict[str, Any]]] | None = None,
    audit_queries: Callable[[], bool] = lambda: False,
) -> MCPServer:
    """Build the MCP server for ``engine``; ``state_key`` seals input-required state (use the app secret);
    ``connected_clients`` lists a user's OAuth clients for the status tool; ``audit_queries`` says whether
    the audit record of each call carries its query text (the admin's switch)."""

    def principal(ctx: Context) -> Principal:
        found = principal_of(ctx.request_context.request)
        if found is None:
            raise PermissionError("no Nextcloud user on this request")
        return found

    def bind_principal(request_ctx: Any) -> str | None:
        found = principal_of(request_ctx.request)
        return found.user if found else None

    mcp = MCPServer(
        name="semantic_mcp",
        title="Semantic search for Nextcloud",
        instructions=(
            "Search the user's own Nextcloud by meaning: notes, files, Deck cards, calendar events and contacts. "
            "Use nc_semantic_search to find items (each result has a link that opens it in Nextcloud) and "
            "nc_semantic_search_answer for a cited answer; nc_get_document reads a result whole by its id. "
            "Dates are ISO 8601."
        ),
        request_state_security=RequestStateSecurity(keys=[state_key], bind_principal=bind_principal),
        middleware=[ScopeGuard(principal_of)],
    )
    mcp.middleware.append(PlainToolErrors(mcp))  # after the scope check: a refused tool's arguments don't matter
    mcp.middleware.append(CompactResultText())
    mcp.middleware.append(LeanToolList())
    mcp.middleware.append(ConnectorPairForItsClients())
    # Outermost, so it sees the sealed token exactly as the client sent it.
    mcp.middleware.insert(0, ReplayGuard())
    # Outermost of all, so every call is recorded with how it ended, refusals included.
    mcp.middleware.insert(0, AuditTrail(principal_of, lambda name: TOOL_SCOPES.get(name, READ_SCOPE), audit_queries))
    register_search_tools(mcp, engine, principal)
    register_reading_tools(mcp, engine, principal)
    register_sync_tools(mcp, engine, principal, connected_clients)
    return mcp


def register_sync_tools(
    mcp: MCPServer, engine: Engine, principal: Callable[[Context], Principal],
    connected_clients: Callable[[str], list[dict[str, Any]]] | None,
) -> None:
    """The calling user's indexing: status (with their connected OAuth clients), on and off."""
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @mcp.tool(
        name="nc_get_vector_sync_status",
        title="Indexing status",
        description="What is indexed for the user: counts per source, pending and failed items with reasons, "
        "last sync times, sampling metrics.",
        annotations=read_only,
    )
    async def nc_get_vector_sync_status(ctx: Context) -> dict[str, Any]:
        user = principal(ctx).user
        status = sync_status(engine, user)
        if connected_clients is not None:
            status["connected_clients"] = connected_clients(user)
        return status

    @mcp.tool(
        name="nc_enable_vector_sync",
        title="Turn on indexing for me",
        description="Index the user's Nextcloud content so it becomes searchable (in the background).",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
    )
    async def nc_enable_vector_sync(ctx: Context) -> SyncChange:
        user = principal(ctx).user
        queued = await engine.enable_user(user)
        return SyncChange(user=user, enabled=True, message=f"Indexing enabled; {queued} item(s) queued for indexing.")

    @mcp.tool(
        name="nc_disable_vector_sync",
        title="Turn off indexing for me",
        description="Stop indexing the user's content and delete everything indexed for them.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True),
    )
    async def nc_disable_vector_sync(ctx: Context) -> SyncChange:
        user = principal(ctx).user
        await engine.disable_user(user)
        return SyncChange(user=user, enabled=False, message="Indexing disabled and your indexed data deleted.")


class ReplayGuard:
    """Refuses an input-required ``requestState`` that was already used.

    The SDK seals the state (AES-GCM), binds it to the user, tool and arguments and expires it
    after its TTL; a sealed token is minted fresh every round, so a second use of the same token
    can only be a replay (a captured request sent again). Remembered for the token's TTL.
    """

    def __init__(self, ttl: float = 600.0, size: int = 100_000) -> None:
        self.ttl = ttl
        self.size = size
        self._used: dict[str, float] = {}

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        token = (ctx.params or {}).get("requestState") if ctx.method == "tools/call" else None
        if not isinstance(token, str):
            return await call_next(ctx)
        now = time.monotonic()
        digest = hashlib.sha256(token.encode()).hexdigest()
        if self._used.get(digest, 0.0) > now:
            log.warning("Refused a replayed requestState for %s", (ctx.params or {}).get("name"))
            raise MCPError(code=INVALID_PARAMS, message="Invalid or expired requestState",
                           data={"reason": "invalid_request_state"})
        if len(self._used) >= self.size:
            self._used = {key: until for key, until in self._used.items() if until > now}
        self._used[digest] = now + self.ttl
        return await call_next(ctx)


class ScopeGuard:
    """Phase 1 of authorization (ADR-009): tools outside the caller's scopes are hidden and refused."""

    def __init__(self, principal_of: PrincipalOf) -> None:
        self._principal_of = principal_of

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method not in ("tools/list", "tools/call"):
            return await call_next(ctx)
        found = self._principal_of(ctx.request)
        scopes = found.scopes if found else frozenset()
        if ctx.method == "tools/call":
            name = (ctx.params or {}).get("name")
            needed = TOOL_SCOPES.get(str(name), READ_SCOPE)  # a tool nobody classified needs a scope too
            if needed not in scopes:
                log.debug("Refused %s for %s: missing scope %s", name, found.user if found else "?", needed)  # audited
                return CallToolResult(
                    content=[TextContent(type="text", text=(
                        f"This connection may not use {name}: it needs the {needed} scope; "
                        f"reconnect the client and allow {needed}."))],
                    is_error=True,
                )
            return await call_next(ctx)
        result = await call_next(ctx)
        allowed = lambda tool_name: TOOL_SCOPES.get(tool_name, READ_SCOPE) in scopes  # noqa: E731
        if isinstance(result, dict):
            return {**result, "tools": [t for t in result.get("tools", []) if allowed(t.get("name"))]}
        result.tools = [t for t in result.tools if allowed(t.name)]
        return result
