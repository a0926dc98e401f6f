"""MCP tools that open what a search found: ``nc_get_document``, and the ``search``/``fetch`` pair
in the shapes ChatGPT connectors and deep-research clients require (ADR 0710).

All three read as the caller (see :mod:`semantic_mcp.mcp.reading`) and need the same scope as search.
``search`` is the same retrieval as ``nc_semantic_search`` (hybrid, re-checked as the caller, the
query's time and type cues applied) without the sampling steps, which those clients never offer.
The pair duplicates the other tools, so tools/list offers it only to OpenAI's clients
(:class:`ConnectorPairForItsClients`); any client may still call it by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from ..core.principal import Principal
from .reading import (
    DEFAULT_PAGE_CHARS,
    MAX_PAGE_CHARS,
    DocumentPage,
    DocumentUnavailable,
    document_metadata,
    read_document,
)
from ..core.filters import SearchFilters
from ..search.intent import read_intent

if TYPE_CHECKING:
    from ..engine import Engine

CONNECTOR_TOOLS = ("search", "fetch")
READING_TOOLS = ("nc_get_document", *CONNECTOR_TOOLS)
CONNECTOR_SEARCH_LIMIT = 10


def wants_connector_tools(client_name: str | None) -> bool:
    """ChatGPT's connectors and deep research, and OpenAI's API, identify as 'openai-mcp' and accept a
    server only if it has tools named search and fetch of their shape."""
    name = (client_name or "").lower()
    return name.startswith("openai") or "chatgpt" in name


class ConnectorPairForItsClients:
    """Middleware: tools/list leaves out the search/fetch pair unless the client (its initialize's
    clientInfo, or the 2026 request envelope's) is one that requires it; every other client has
    nc_semantic_search and nc_get_document, which do the same and more, and saves ~500 characters."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method != "tools/list" or wants_connector_tools(_client_name(ctx)):
            return result
        if isinstance(result, dict):
            return {**result, "tools": [t for t in result.get("tools", []) if t.get("name") not in CONNECTOR_TOOLS]}
        result.tools = [t for t in result.tools if t.name not in CONNECTOR_TOOLS]
        return result


def _client_name(ctx: Any) -> str | None:
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    return getattr(info, "name", None)


class ConnectorHit(BaseModel):
    id: str = Field(description="Pass to fetch")
    title: str
    url: str


class ConnectorResults(BaseModel):
    results: list[ConnectorHit]


class ConnectorDocument(BaseModel):
    id: str
    title: str
    text: str
    url: str
    metadata: dict[str, Any] = Field(default_factory=dict)


def register_reading_tools(mcp: MCPServer, engine: Engine, principal: Callable[[Context], Principal]) -> None:
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    async def read(ctx: Context, doc_id: str, offset: int = 0, max_chars: int = DEFAULT_PAGE_CHARS,
                   section: str | None = None) -> DocumentPage:
        try:
            return await read_document(engine, principal(ctx).user, doc_id, offset, max_chars, section)
        except DocumentUnavailable as exc:
            raise ToolError(str(exc)) from exc

    @mcp.tool(
        name="nc_get_document",
        title="Open a Nextcloud item",
        description=(
            "Read a search result whole by its id, with its title, link and metadata, as the user (only what "
            "they may open now). Long texts come in pages: pass next_offset as offset to read on; section reads "
            "one page, slide or sheet of a PDF, presentation or spreadsheet."
        ),
        annotations=read_only,
    )
    async def nc_get_document(
        id: Annotated[str, Field(min_length=3, max_length=1000, description="A search result's id, e.g. 'note:42'")],
        ctx: Context,
        offset: Annotated[int, Field(ge=0)] = 0,
        max_chars: Annotated[int, Field(ge=1000, le=MAX_PAGE_CHARS)] = DEFAULT_PAGE_CHARS,
        section: Annotated[str | None, Field(max_length=200, description="A hit's section, e.g. 'Page 3'")] = None,
    ) -> DocumentPage:
        return await read(ctx, id, offset, max_chars, section)

    @mcp.tool(
        name="search",
        title="Search Nextcloud (connector shape)",
        description="Search the user's Nextcloud notes, files, cards, events and contacts. Returns ids for fetch.",
        annotations=read_only,
    )
    async def search(
        query: Annotated[str, Field(min_length=1, max_length=2000, description="At most 2,000 characters")],
        ctx: Context,
    ) -> ConnectorResults:
        retrieved = await engine.search.retrieve(
            principal(ctx).user, query, CONNECTOR_SEARCH_LIMIT, SearchFilters(),
            intent=read_intent(query, engine.clock.now()),
        )
        hits = [engine.search.hit(c, query, principal(ctx).user) for c in retrieved.candidates]
        return ConnectorResults(results=[ConnectorHit(id=h.id, title=h.title, url=h.link) for h in hits])

    @mcp.tool(
        name="fetch",
        title="Fetch a Nextcloud item (connector shape)",
        description="A search result's full text by its id, with title, link and metadata.",
        annotations=read_only,
    )
    async def fetch(
        id: Annotated[str, Field(min_length=3, max_length=1000, description="An id from search")],
        ctx: Context,
    ) -> ConnectorDocument:
        page = await read(ctx, id, 0, MAX_PAGE_CHARS)
        metadata = document_metadata(page)
        if page.next_offset is not None:
            metadata["truncated_at"] = page.next_offset  # nc_get_document reads on
        return ConnectorDocument(id=page.id, title=page.title, text=page.text, url=page.link, metadata=metadata)
