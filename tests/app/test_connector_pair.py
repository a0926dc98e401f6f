"""One pair of tools for most clients, the connector pair too for OpenAI's (ADR 0710), and result text a
model can afford that still carries every source (issue 35, item 4). Through the proxy with the official
client, against the seeded fake Nextcloud."""

from __future__ import annotations

import json

import pydantic_core
import pytest

from stack import Stack

PAIR = {"search", "fetch"}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_connector_pair_is_listed_for_openais_clients_only(stack: Stack, mode: str) -> None:
    async with stack.client("alice", mode=mode) as client:
        plain = {tool.name for tool in (await client.list_tools()).tools}
    async with stack.client("alice", mode=mode, client_name="openai-mcp") as client:
        chatgpt = {tool.name for tool in (await client.list_tools()).tools}
    assert {"nc_semantic_search", "nc_get_document"} <= plain and not plain & PAIR
    assert chatgpt == plain | PAIR


async def test_a_client_that_calls_the_pair_by_name_is_still_served(stack: Stack) -> None:
    found = await stack.call("alice", "search", {"query": "When is my next dentist appointment?"})
    assert not found.is_error, found.content
    assert found.structured_content["results"][0]["title"] == "Dentist appointment"


async def test_a_result_text_keeps_sources_links_and_excerpts_at_half_the_size(stack: Stack) -> None:
    result = await stack.call("alice", "nc_semantic_search", {"query": "project kickoff meeting notes", "limit": 5})
    assert not result.is_error, result.content
    text = result.content[0].text
    shown = json.loads(text)
    full = result.structured_content
    assert [hit["id"] for hit in shown["results"]] == [hit["id"] for hit in full["results"]]
    for hit, whole in zip(shown["results"], full["results"], strict=True):
        assert hit["title"] == whole["title"] and hit["link"] == whole["link"] and hit["score"] == whole["score"]
        assert hit["excerpt"] and all(line in whole["excerpt"].split("\n") for line in hit["excerpt"].split("\n"))
        assert whole["location"].startswith(hit.get("location", ""))
    assert shown["notes"] == full["notes"]
    assert "search_method" not in text and full["search_method"]  # the structured content stays whole
    assert len(text.encode()) * 2 <= len(pydantic_core.to_json(full, indent=2))


async def test_explain_brings_the_method_into_the_text(stack: Stack) -> None:
    result = await stack.call("alice", "nc_semantic_search", {"query": "quarterly budget", "explain": True})
    shown = json.loads(result.content[0].text)
    assert shown["search_method"] == result.structured_content["search_method"]
    assert "similarity" in shown["results"][0]
