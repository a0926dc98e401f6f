"""Errors in one plain sentence a person can act on (issue 35, item 5): no pydantic text, no link to its
docs, no "Error executing tool" prefix; the limits are in the tool descriptions."""

from __future__ import annotations

import httpx
import pytest
from stack import Stack

from semantic_mcp.tool_errors import MAX_QUERY_CHARS


def _one_sentence(text: str) -> None:
    assert "pydantic" not in text and "http" not in text and "validation error" not in text, text
    assert not text.startswith("Error executing tool"), text
    assert "\n" not in text and text.endswith("."), text


@pytest.mark.parametrize("args, says", [
    ({"query": ""}, "The query is empty"),
    ({"query": "   \n "}, "The query is empty"),
    ({"query": "x" * (MAX_QUERY_CHARS + 1)}, f"at most {MAX_QUERY_CHARS} characters"),
    ({"query": "budget", "modified_after": "yesterday"}, "'yesterday' is not an ISO 8601 date"),
    ({"query": "budget", "limit": 500}, "limit is too large: at most 50"),
    ({"query": "budget", "doc_types": ["email"]}, "'email' is not a valid doc_types"),
])
async def test_a_bad_search_argument_is_one_plain_sentence(stack: Stack, args: dict, says: str) -> None:
    result = await stack.call("alice", "nc_semantic_search", args)
    assert result.is_error
    text = result.content[0].text
    assert says in text, text
    _one_sentence(text)


@pytest.mark.parametrize("item, says", [
    ("zz", "use the id of a search result"),
    ("note:abc", "is not an item id"),
    ("note:999999", "does not exist or you cannot open it"),
])
async def test_a_bad_id_is_one_plain_sentence(stack: Stack, item: str, says: str) -> None:
    result = await stack.call("alice", "nc_get_document", {"id": item})
    assert result.is_error and says in result.content[0].text, result.content[0].text
    _one_sentence(result.content[0].text)


async def test_the_limits_are_in_the_tool_descriptions(stack: Stack) -> None:
    async with stack.client("alice") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for name, tool in tools.items():
        if "query" in tool.input_schema.get("properties", {}):
            query = tool.input_schema["properties"]["query"]
            assert f"at most {MAX_QUERY_CHARS} characters" in query["description"], name
            assert query["maxLength"] == MAX_QUERY_CHARS


async def test_a_wrong_app_password_says_where_to_make_one(stack: Stack) -> None:
    # As a bearer token (how most MCP clients send one) Nextcloud passes it on and the app answers; a wrong
    # Basic password Nextcloud refuses itself, before the app (its own 401, as the recordings show).
    async with httpx.AsyncClient() as http:
        response = await http.post(stack.mcp_url, headers={"Authorization": "Bearer not-a-real-password"},
                                   json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 401, response.text
    description = response.json()["error_description"]
    assert description.startswith("The app password or access token was not accepted")
    assert "Personal settings → Security → Devices & sessions" in description
