"""An app-store install through HaRP: our image from our info.xml, no ``--env``, on Nextcloud 34.

Then both MCP protocol generations (2026-07-28: ``auto``; 2025-11-25: ``legacy``) through
Nextcloud's PHP proxy and through HaRP's own ``/exapps/semantic_mcp/mcp`` path, a note made after
the install is found, OAuth discovery answers, and the consent page renders in headless Chromium.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from browser import Chromium, png_colours
from fake_nextcloud.exapp_process import APP_ID
from harpstack import ARTIFACTS, CONTAINER, HarpStack, docker, record
from oauth_support import REDIRECT_URI, ScriptedBrowser, pkce

NOTE = ("Puffin survey logistics", "The puffin survey on Runde needs two kayaks and a drone permit by March.")


def paths(harp: HarpStack) -> dict[str, str]:
    return {"nextcloud-proxy": harp.mcp_url, "harp": harp.harp_mcp_url}


@pytest.fixture(scope="module")
def note(harp: HarpStack) -> tuple[str, str]:
    """A note alice writes after the install, found once its change event reached the app."""
    harp.user("alice").create_note(*NOTE)

    async def found() -> bool:
        return NOTE[0] in await harp.titles("alice", NOTE[1], doc_types=["note"])

    asyncio.run(harp.eventually(found, timeout=120, interval=1.0))
    return NOTE


def test_the_install_finishes_initialised_and_enabled_with_no_env_overrides(harp: HarpStack) -> None:
    assert harp.init_status()["init"] == 100
    assert harp.app_state()["enabled"]
    env = dict(item.split("=", 1) for item in json.loads(docker("inspect", "-f", "{{json .Config.Env}}", CONTAINER)))
    assert "Array" not in env.values(), env.keys()  # AppAPI 34 turns an empty <default> into "Array"
    assert env["HP_SHARED_KEY"] and env["APP_PORT"]  # deployed through HaRP, not as a direct Docker app
    HarpStack.wait_healthy(CONTAINER, timeout=90)  # the image's HEALTHCHECK (heartbeat on the unix socket)


def test_init_time_from_container_start(harp: HarpStack) -> None:
    """Container start to AppAPI's init 100 % (the app's first indexing pass), on this machine."""
    lines = harp.log().splitlines()
    started = datetime.fromisoformat(docker("inspect", "-f", "{{.State.StartedAt}}", CONTAINER)[:26])
    done = [line for line in lines if "Init finished" in line]
    assert done, lines[-20:]
    seconds = (datetime.fromisoformat(done[0].split()[0][:26]) - started).total_seconds()
    record("init_seconds_from_container_start", round(seconds, 1))
    record("register_wait_finish_seconds", round(harp.install_seconds, 1))
    assert seconds < 60, seconds  # the goal is 30 s on 2 cores; a shared CI machine gets headroom


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("path", ["nextcloud-proxy", "harp"])
async def test_both_protocol_generations_on_both_paths_find_a_note_made_after_the_install(
    harp: HarpStack, note: tuple[str, str], mode: str, path: str
) -> None:
    title, text = note
    async with harp.client("alice", mode=mode, url=paths(harp)[path]) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"nc_semantic_search", "nc_get_vector_sync_status"} <= tools
        result = await client.call_tool("nc_semantic_search", {"query": text, "use_query_analysis": False})
        status = await client.call_tool("nc_get_vector_sync_status", {})
    assert not result.is_error, harp.failure(result)
    hits = result.structured_content["results"]
    assert hits[0]["title"] == title and hits[0]["link"].startswith(harp.nextcloud_url)
    assert status.structured_content["user"] == "alice"


async def test_bob_never_sees_alices_note_through_harp(harp: HarpStack, note: tuple[str, str]) -> None:
    async with harp.client("bob", url=harp.harp_mcp_url) as client:
        result = await client.call_tool("nc_semantic_search", {"query": note[1], "use_query_analysis": False})
    assert all(hit["title"] != note[0] for hit in result.structured_content["results"])


@pytest.mark.parametrize("path", ["nextcloud-proxy", "harp"])
def test_oauth_discovery_answers_an_anonymous_client(harp: HarpStack, path: str) -> None:
    challenge = httpx.post(paths(harp)[path], json={}, timeout=30)
    assert challenge.status_code == 401, challenge.text
    metadata_url = challenge.headers["www-authenticate"].split('resource_metadata="')[1].split('"')[0]
    resource = httpx.get(metadata_url, timeout=30)
    assert resource.status_code == 200, (metadata_url, resource.text)
    issuer = resource.json()["authorization_servers"][0]
    server = httpx.get(f"{issuer}/.well-known/oauth-authorization-server", timeout=30).json()
    assert server["issuer"] == issuer and server["registration_endpoint"]


async def session_cookies(harp: HarpStack, user: str) -> list[tuple[str, str, str]]:
    """A Nextcloud session from a scripted login (nc-kit's login page has no JavaScript to render)."""
    browser = ScriptedBrowser(harp.nextcloud_url)
    try:
        await browser.login(user, harp.nc.login_password(user))
        return [(c.name, c.value, c.path or "/") for c in browser.http.cookies.jar]
    finally:
        await browser.aclose()  # in the loop that opened its connections (the front proxy keeps them alive)


def test_the_consent_page_renders_in_headless_chromium(harp: HarpStack, tmp_path: Path) -> None:
    """A client registered dynamically (RFC 7591, as claude.ai does) asks alice, logged in to Nextcloud."""
    issuer = f"{harp.nextcloud_url}/index.php/apps/app_api/proxy/{APP_ID}"
    registered = httpx.post(f"{issuer}/oauth/register", json={
        "client_name": "HaRP Browser Client", "redirect_uris": [REDIRECT_URI],
        "token_endpoint_auth_method": "none"}, timeout=30)
    assert registered.status_code == 201, registered.text
    cookies = asyncio.run(session_cookies(harp, "alice"))
    url = str(httpx.URL(f"{issuer}/oauth/authorize", params={
        "response_type": "code", "client_id": registered.json()["client_id"], "redirect_uri": REDIRECT_URI,
        "state": "harp", "code_challenge": pkce()[1], "code_challenge_method": "S256", "scope": "semantic:read"}))
    chrome = Chromium(tmp_path / "profile")
    try:
        for name, value, cookie_path in cookies:
            chrome.call("Network.setCookie", url=harp.nextcloud_url, name=name, value=value, path=cookie_path)
        chrome.navigate(url)
        chrome.wait_until("!!document.getElementById('client-name')")
        assert chrome.evaluate("document.getElementById('client-name').textContent") == "HaRP Browser Client"
        assert png_colours(chrome.screenshot(ARTIFACTS / "oauth_consent_harp.png")) > 50
    finally:
        chrome.close()
