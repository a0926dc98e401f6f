"""A tool result's text is compact JSON without nulls; its structured content stays whole (issue 35, item 4)."""

from __future__ import annotations

import anyio
from mcp import Client
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from semantic_mcp.mcp.compact_output import CompactResultText


class Hit(BaseModel):
    title: str
    similarity: float = 0.83
    excerpt: str = "Budget 2026 – Übersicht\nTravel rises 4 %."
    shared_by: str | None = None


class Found(BaseModel):
    results: list[Hit]
    model_used: str | None = None


def test_the_text_is_compact_json_without_nulls_and_the_structured_content_is_kept() -> None:
    server = MCPServer(name="t")
    server.middleware.append(CompactResultText())

    @server.tool()
    def find() -> Found:
        return Found(results=[Hit(title="Budget 2026 – Übersicht")])

    async def call() -> object:
        async with Client(server) as client:
            return await client.call_tool("find", {})

    result = anyio.run(call)
    assert result.content[0].text == '{"results":[{"title":"Budget 2026 – Übersicht","excerpt":"Travel rises 4 %."}]}'
    assert result.structured_content == {"results": [{"title": "Budget 2026 – Übersicht", "similarity": 0.83,
                                                      "excerpt": "Budget 2026 – Übersicht\nTravel rises 4 %.",
                                                      "shared_by": None}],
                                         "model_used": None}


def test_lean_schemas_drop_generated_titles_and_nulls_of_arguments_only() -> None:
    from semantic_mcp.mcp.compact_output import lean_schema

    schema = {"title": "findArguments", "type": "object", "properties": {
        "title": {"title": "Title", "type": "string"},
        "after": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "After"}}}
    assert lean_schema(schema) == {"type": "object", "properties": {
        "title": {"type": "string"}, "after": {"type": "string"}}}
    assert lean_schema(schema, optional_as_absent=False)["properties"]["after"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
