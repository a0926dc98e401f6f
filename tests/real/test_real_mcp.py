"""MCP clients on a real Nextcloud 34, through the real AppAPI PHP proxy.

The official Python client on both protocol generations (2026-07-28: ``auto``; 2025-11-25:
``legacy``), as alice and bob, and the MCP Inspector CLI (npm) as an independent client.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from realstack import RealStack
from scripted_model import ScriptedModel

ALICE_NOTE = ("Heron expedition budget", "The Heron expedition needs 4,200 euros for boat rental in Tromsø.")
BOB_NOTE = ("Kestrel rota", "Kestrel on-call rota: Bob covers weekends in December.")
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"


@pytest.fixture(scope="module", autouse=True)
def content(real: RealStack) -> None:
    real.user("alice").create_note(*ALICE_NOTE)
    real.user("bob").create_note(*BOB_NOTE)
    import asyncio

    for user in ("alice", "bob"):
        asyncio.run(real.eventually(lambda u=user: _has_note(real, u), timeout=60))


async def _has_note(real: RealStack, user: str) -> bool:
    title = (ALICE_NOTE if user == "alice" else BOB_NOTE)[0]
    return title in await real.titles(user, title, doc_types=["note"])


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("user", ["alice", "bob"])
async def test_both_protocol_generations_list_search_and_status(real: RealStack, mode: str, user: str) -> None:
    title, text = ALICE_NOTE if user == "alice" else BOB_NOTE
    async with real.client(user, mode=mode) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"nc_semantic_search", "nc_semantic_search_answer", "nc_get_vector_sync_status",
                "nc_enable_vector_sync", "nc_disable_vector_sync"} <= tools
        result = await client.call_tool("nc_semantic_search", {"query": text, "use_query_analysis": False})
        status = await client.call_tool("nc_get_vector_sync_status", {})
    hits = result.structured_content["results"]
    assert hits[0]["title"] == title and hits[0]["link"].startswith(real.nc.url)
    assert status.structured_content["user"] == user
    assert status.structured_content["sources"]["note"]["indexed"] >= 1


async def test_a_sampling_client_on_2026_07_28_gets_a_written_answer(real: RealStack) -> None:
    model = ScriptedModel(answer="The boat rental costs 4,200 euros [1].")
    result = await real.call("alice", "nc_semantic_search_answer", {"query": "How much is the boat rental?"},
                             sampling_callback=model)
    assert not result.is_error, real.failure(result)
    answer = result.structured_content
    assert answer["generated_answer"] == "The boat rental costs 4,200 euros [1]."
    assert answer["model_used"] == "scripted-model" and answer["sources"][0]["title"] == ALICE_NOTE[0]
    assert "answer" in model.kinds()


@pytest.mark.parametrize("sampling", [True, False], ids=["sampling-client", "no-sampling-client"])
async def test_a_2025_11_25_client_through_the_proxy_gets_the_sources_within_5_seconds(
    real: RealStack, sampling: bool
) -> None:
    """The PHP proxy cannot carry a sampling request mid-call: none is sent, the sources come at once."""
    model = ScriptedModel() if sampling else None
    started = time.monotonic()
    result = await real.call("alice", "nc_semantic_search_answer", {"query": "How much is the boat rental?"},
                             mode="legacy", sampling_callback=model, read_timeout=30)
    elapsed = time.monotonic() - started
    assert not result.is_error, real.failure(result)
    answer = result.structured_content
    assert elapsed < 5, elapsed
    assert answer["sources"][0]["title"] == ALICE_NOTE[0]
    assert answer["generated_answer"].startswith("[Sampling unavailable")
    assert model is None or model.requests == []


def test_the_event_stream_get_is_refused_through_the_proxy_instead_of_holding_a_php_worker(real: RealStack) -> None:
    """A 2025-11-25 client opens the server-to-client stream with a GET on its session; through the
    buffering proxy it would never complete and hold a PHP worker while the client waits."""
    headers = {**real.auth_headers("alice"), "Accept": "application/json, text/event-stream"}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}}
    with httpx.stream("POST", real.mcp_url, json=initialize, headers=headers, timeout=30) as response:
        session = response.headers["mcp-session-id"]
    started = time.monotonic()
    response = httpx.get(real.mcp_url, headers={**headers, "Accept": "text/event-stream", "mcp-session-id": session,
                                                "mcp-protocol-version": "2025-11-25"}, timeout=15)
    assert response.status_code == 405
    assert time.monotonic() - started < 5


async def test_enable_and_disable_for_oneself(real: RealStack) -> None:
    off = await real.call("bob", "nc_disable_vector_sync")
    assert off.structured_content["enabled"] is False
    assert (await real.search("bob", BOB_NOTE[1]))["results"] == []
    on = await real.call("bob", "nc_enable_vector_sync")
    assert on.structured_content["enabled"] is True
    await real.eventually(lambda: _has_note(real, "bob"), timeout=90)


# --- an independent client: the MCP Inspector CLI (TypeScript SDK) -------------------------------------


@pytest.fixture(scope="module")
def inspector(real: RealStack) -> Path:
    """The Inspector CLI, installed from npm once per instance directory."""
    prefix = real.nc.dir / "npm"
    binary = prefix / "node_modules" / ".bin" / "mcp-inspector"
    if not binary.exists():
        npm = shutil.which("npm")
        assert npm, "npm is needed for the MCP Inspector CLI"
        subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", INSPECTOR],
                       check=True, capture_output=True, timeout=600)
    return binary


def _inspector(binary: Path, real: RealStack, user: str, *args: str) -> dict:
    auth = real.auth_headers(user)["Authorization"]
    result = subprocess.run(
        [str(binary), "--cli", real.mcp_url, "--transport", "http", "--header", f"Authorization: {auth}", *args],
        capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def test_the_mcp_inspector_cli_lists_tools_and_calls_one(real: RealStack, inspector: Path) -> None:
    listed = _inspector(inspector, real, "bob", "--method", "tools/list")
    assert "nc_semantic_search" in {tool["name"] for tool in listed["tools"]}
    called = _inspector(inspector, real, "bob", "--method", "tools/call", "--tool-name", "nc_semantic_search",
                        "--tool-arg", f"query={BOB_NOTE[1]}", "use_query_analysis=false")
    hits = called["structuredContent"]["results"]
    assert hits[0]["title"] == BOB_NOTE[0]
    assert all(hit["title"] != ALICE_NOTE[0] for hit in hits)
