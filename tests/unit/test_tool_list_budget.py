"""What tools/list costs a client's model stays within its budget (issue 35, item 4; docs/token-cost.md).

The server is built on an engine stand-in (a MagicMock): listing tools runs none of them.
"""

from __future__ import annotations

import json
from typing import Any
from unittest.mock import MagicMock

import anyio
from mcp import Client
from mcp_types import Implementation

from semantic_mcp.core.config import READ_SCOPE, WRITE_SCOPE
from semantic_mcp.core.principal import Principal
from semantic_mcp.mcp.reading_tools import wants_connector_tools
from semantic_mcp.mcp.tools import TOOL_SCOPES, build_server

# Names, descriptions and input schemas of every tool together, as a client's model reads them. Raise it
# only for something a model needs (and say so in docs/token-cost.md): it was 7,113 before issue 35.
BUDGET = 5_000


def listed(client_name: str | None = None) -> list[Any]:
    server = build_server(MagicMock(), lambda request: Principal("alice", frozenset({READ_SCOPE, WRITE_SCOPE})),
                          state_key=b"k" * 32)
    info = Implementation(name=client_name, version="1.0.0") if client_name else None

    async def tools() -> list[Any]:
        async with Client(server, client_info=info) as client:
            return (await client.list_tools()).tools
    return anyio.run(tools)


def surface(tools: list[Any]) -> int:
    return sum(len((t.name + (t.description or "") + json.dumps(t.input_schema)).encode()) for t in tools)


def test_every_tool_together_stays_within_the_budget() -> None:
    tools = listed("openai-mcp")  # ChatGPT is offered every tool
    assert {t.name for t in tools} == set(TOOL_SCOPES)
    assert surface(tools) <= BUDGET, f"{surface(tools):,} characters; the budget is {BUDGET:,}"


def test_other_clients_are_not_offered_the_duplicate_connector_pair() -> None:
    tools = listed()
    names = {t.name for t in tools}
    assert names == set(TOOL_SCOPES) - {"search", "fetch"}
    assert surface(tools) <= surface(listed("openai-mcp")) - 400  # the pair costs ~500 characters


def test_the_limits_a_model_must_respect_stay_in_the_schemas() -> None:
    for tool in listed("openai-mcp"):
        properties = tool.input_schema.get("properties", {})
        if "query" in properties:
            assert "2,000 characters" in properties["query"]["description"], tool.name
            assert properties["query"]["maxLength"] == 2000
        if "limit" in properties:
            assert properties["limit"]["maximum"] in (20, 50)


def test_only_openais_clients_want_the_connector_pair() -> None:
    assert wants_connector_tools("openai-mcp") and wants_connector_tools("ChatGPT")
    assert not any(wants_connector_tools(name) for name in (None, "", "mcp", "claude-ai", "Visual Studio Code"))
