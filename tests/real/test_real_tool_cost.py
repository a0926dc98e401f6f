"""Issue 35 item 4 on a real Nextcloud 34 through the AppAPI PHP proxy: what tools/list and a search
result cost, as the official client and the MCP Inspector CLI receive them, with nothing a model needs
lost (ADR 0710, docs/token-cost.md). Run with -s to see the figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import test_real_mcp
from realstack import RealStack

inspector = test_real_mcp.inspector  # the Inspector CLI fixture: installed from npm once per instance
_inspector = test_real_mcp._inspector

NOTES = [
    ("Lynx survey budget", "The lynx survey needs 2,300 euros for camera traps in the Harz."),
    ("Lynx survey meeting", "Meeting on the lynx survey: camera traps go up in March, the budget is approved."),
]
PAIR = {"search", "fetch"}


@pytest.fixture(scope="module", autouse=True)
def content(real: RealStack) -> None:
    for note in NOTES:
        real.user("alice").create_note(*note)


def _surface(tools: list[dict]) -> int:
    return sum(len((t["name"] + t.get("description", "") + json.dumps(t["inputSchema"])).encode()) for t in tools)


async def _indexed(real: RealStack) -> bool:
    return len(await real.titles("alice", "lynx survey", doc_types=["note"])) >= 2


async def test_tools_list_as_the_official_client_gets_it(real: RealStack) -> None:
    listed = {}
    for name in (None, "openai-mcp"):
        async with real.client("alice", client_name=name) as client:
            tools = [t.model_dump(mode="json", by_alias=True, exclude_none=True)
                     for t in (await client.list_tools()).tools]
        listed[name] = tools
        print(f"\n{name or 'a client'}: {len(tools)} tools, tools/list {len(json.dumps({'tools': tools})):,} B, "
              f"names+descriptions+input schemas {_surface(tools):,} B")
    assert not {t["name"] for t in listed[None]} & PAIR
    assert {t["name"] for t in listed["openai-mcp"]} == {t["name"] for t in listed[None]} | PAIR
    assert _surface(listed["openai-mcp"]) <= 5_000


async def test_a_search_result_keeps_sources_links_and_excerpts(real: RealStack) -> None:
    await real.eventually(lambda: _indexed(real), timeout=90)
    result = await real.call("alice", "nc_semantic_search", {"query": "lynx survey budget", "limit": 5,
                                                             "use_query_analysis": False})
    assert not result.is_error, real.failure(result)
    text = result.content[0].text
    shown = json.loads(text)["results"]
    print(f"\n5-hit search text {len(text.encode()):,} B for {len(shown)} hits: {text}")
    assert {hit["title"] for hit in shown} >= {title for title, _ in NOTES}
    for hit in shown:
        assert hit["link"].startswith(real.nc.url) and hit["excerpt"] and hit["id"] and 0 <= hit["score"] <= 1
    assert "search_method" not in text and result.structured_content["search_method"]
    explained = await real.call("alice", "nc_semantic_search", {"query": "lynx survey budget", "explain": True,
                                                                "use_query_analysis": False})
    assert json.loads(explained.content[0].text)["search_method"]


async def test_chatgpt_searches_and_fetches_through_the_proxy(real: RealStack) -> None:
    await real.eventually(lambda: _indexed(real), timeout=90)
    async with real.client("alice", client_name="openai-mcp") as client:
        found = await client.call_tool("search", {"query": "lynx camera traps"})
        results = json.loads(found.content[0].text)["results"]
        fetched = await client.call_tool("fetch", {"id": results[0]["id"]})
    assert set(results[0]) == {"id", "title", "url"} and results[0]["url"].startswith(real.nc.url)
    doc = json.loads(fetched.content[0].text)
    assert doc["id"] == results[0]["id"] and "camera traps" in doc["text"] and doc["url"] == results[0]["url"]


def test_the_inspector_cli_gets_what_was_measured(real: RealStack, inspector: Path) -> None:
    listed = _inspector(inspector, real, "alice", "--method", "tools/list")["tools"]
    print(f"\nInspector CLI: {len(listed)} tools, names+descriptions+input schemas {_surface(listed):,} B")
    assert not {t["name"] for t in listed} & PAIR and _surface(listed) <= 5_000
    called = _inspector(inspector, real, "alice", "--method", "tools/call", "--tool-name", "nc_semantic_search",
                        "--tool-arg", "query=lynx survey budget", "use_query_analysis=false")
    text = called["content"][0]["text"]
    print(f"Inspector CLI: search text {len(text.encode()):,} B")
    hits = json.loads(text)["results"]
    assert hits and all(hit["link"].startswith(real.nc.url) and hit["excerpt"] for hit in hits)
    assert [hit["link"] for hit in called["structuredContent"]["results"]] == [hit["link"] for hit in hits]
