"""MCP tools that open what a search found: ``nc_get_document``, and the ``search``/``fetch`` pair
in the shapes ChatGPT connectors and deep-research clients look for.

All three read as the caller (see :mod:`semantic_mcp.mcp.reading`) and need the same scope as search.
``search`` is the same retrieval as ``nc_semantic_search`` (hybrid, re-checked as the caller, the
query's time and type cues applied) without the sampling steps, which those clients never offer.
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

READING_TOOLS = ("nc_get_document", "search", "fetch")
CONNECTOR_SEARCH_LIMIT = 10


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
            "Read the whole text of a note, file, Deck card, calendar event or contact, by the id of a search "
            "result, with its title, link and metadata. Read as you, so it only opens what you may open now. "
            "Long texts come in pages: pass next_offset as offset to read on. For a PDF, presentation or "
            "spreadsheet, pass a search hit's section ('Page 3', 'Slide 2', 'Sheet Prices') to read only that part."
        ),
        annotations=read_only,
    )
    async def nc_get_document(
        id: Annotated[str, Field(min_length=3, max_length=1000, description="A search result's id, e.g. 'note:42'")],
        ctx: Context,
        offset: Annotated[int, Field(ge=0, description="Start of the page, in characters")] = 0,
        max_chars: Annotated[int, Field(ge=1000, le=MAX_PAGE_CHARS)] = DEFAULT_PAGE_CHARS,
        section: Annotated[str | None, Field(max_length=200, description=(
            "Read only this page, slide or sheet: a hit's section, e.g. 'Page 3', 'Slide 2', 'Sheet Prices'"))] = None,
    ) -> DocumentPage:
        return await read(ctx, id, offset, max_chars, section)

    @mcp.tool(
        name="search",
        title="Search Nextcloud (connector shape)",
        description=(
            "Search the user's Nextcloud notes, files, Deck cards, calendar events and contacts by meaning and "
            "exact words. Returns ids to pass to fetch, titles and links."
        ),
        annotations=read_only,
    )
    async def search(
        query: Annotated[str, Field(
            min_length=1, max_length=2000, description="What to look for, in any language; at most 2,000 characters")],
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
        description="The full text of a search result by its id, with its title, link and metadata.",
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
