"""Tool errors reach the client as one plain sentence (issue 35, item 5), checked in-process.

Argument errors are answered before a tool runs, so the real server is built on an engine stand-in that
no call reaches (a MagicMock: any use would show as a non-error result and fail the test).
"""

from __future__ import annotations

from typing import Any
from unittest.mock import MagicMock

import pytest
from mcp import Client

from semantic_mcp.core.config import READ_SCOPE
from semantic_mcp.core.principal import Principal
from semantic_mcp.mcp.tools import build_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def server(scopes: frozenset[str] = frozenset({READ_SCOPE})) -> Any:
    return build_server(MagicMock(), lambda request: Principal("alice", scopes), state_key=b"k" * 32)


async def error_text(tool: str, args: dict[str, Any], scopes: frozenset[str] = frozenset({READ_SCOPE})) -> str:
    async with Client(server(scopes)) as client:
        result = await client.call_tool(tool, args)
    assert result.is_error
    text = result.content[0].text
    assert "pydantic" not in text and "Error executing tool" not in text and text.count("\n") == 0, text
    return text


async def test_empty_query_is_one_sentence() -> None:
    assert await error_text("nc_semantic_search", {"query": ""}) == \
        "query is empty; give at least 1 character(s)."


async def test_blank_query_is_refused_plainly() -> None:
    assert await error_text("nc_semantic_search", {"query": "   "}) == "query is blank; say what to look for."


async def test_too_long_query_states_the_limit() -> None:
    assert await error_text("nc_semantic_search_answer", {"query": "x" * 2001}) == \
        "query is too long: the limit is 2,000 characters."


async def test_out_of_range_number_states_the_range() -> None:
    assert await error_text("nc_semantic_search", {"query": "budget", "limit": 500}) == "limit must be at most 50."


async def test_missing_id_is_named() -> None:
    assert await error_text("nc_get_document", {}) == "id is required."


async def test_wrong_scope_says_what_to_do() -> None:
    text = await error_text("nc_enable_vector_sync", {}, scopes=frozenset({READ_SCOPE}))
    assert "semantic:write" in text and "reconnect" in text


def test_limits_are_stated_in_the_descriptions() -> None:
    async def listed() -> list[Any]:
        async with Client(server()) as client:
            return (await client.list_tools()).tools
    import anyio
    for tool in anyio.run(listed):
        if "query" in tool.input_schema.get("properties", {}):
            assert "2,000 characters" in tool.input_schema["properties"]["query"]["description"], tool.name


async def test_bad_date_names_the_format() -> None:
    assert await error_text("nc_semantic_search", {"query": "budget", "modified_after": "last tuesday"}) == \
        "'last tuesday' is not an ISO 8601 date (YYYY-MM-DD) or date-time"


async def test_an_unknown_item_kind_lists_the_kinds() -> None:
    text = await error_text("nc_semantic_search", {"query": "budget", "doc_types": ["emails"]})
    assert text.startswith("doc_types must be one of ") and "'note'" in text and "'calendar_event'" in text
