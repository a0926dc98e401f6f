"""OAuth on a real Nextcloud 34, through the real AppAPI proxy and Nextcloud's own login.

The official SDK client knows only the MCP URL; its client metadata document is served over HTTPS
from loopback (the app trusts the test CA and the admin allows loopback metadata hosts for this
module); the test logs in to Nextcloud as alice over HTTP and approves. Also: bob's token never
returns alice's items, revocation at once, Nextcloud's brute-force throttling of the token route,
and the consent page in headless Chromium with a real Nextcloud session.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from browser import Chromium, png_colours
from fake_nextcloud.exapp_process import APP_ID
from oauth_support import (
    REDIRECT_URI, MetadataHost, ScriptedBrowser, consent_form, metadata_host, next_url, pkce, query_of,
    sdk_oauth_client,
)  # metadata_host: a fixture
from realstack import RealStack

ALICE_NOTE = ("Osprey grant proposal", "The Osprey grant proposal asks for 9,800 euros for river sensors.")
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


@pytest.fixture(scope="module")
def oauth_real(real: RealStack, metadata_host: MetadataHost) -> Iterator[RealStack]:
    """The app restarted trusting the test CA, loopback metadata hosts allowed, alice's note indexed."""
    real.stop_exapp()
    real.env["SSL_CERT_FILE"] = str(metadata_host.tls.ca)
    try:
        real.start_exapp()
        real.set_admin_field("oauth_allow_private_metadata_hosts", True)
        real.user("alice").create_note(*ALICE_NOTE)
        asyncio.run(real.eventually(_alice_note_indexed(real), timeout=90))
        probe = str(httpx.URL(f"{issuer(real)}/oauth/authorize", params={
            "client_id": metadata_host.client("probe.json", "Probe"), "redirect_uri": REDIRECT_URI}))
        asyncio.run(real.eventually(lambda: "private or loopback" not in httpx.get(probe).text, timeout=30))
        yield real
    finally:
        real.stop_exapp()
        del real.env["SSL_CERT_FILE"]
        real.start_exapp()


def _alice_note_indexed(real: RealStack):
    async def check() -> bool:
        return ALICE_NOTE[0] in await real.titles("alice", ALICE_NOTE[1], doc_types=["note"])
    return check


def issuer(real: RealStack) -> str:
    return f"{real.nextcloud_url}/index.php/apps/app_api/proxy/{APP_ID}"


@pytest.fixture
async def alice_browser(oauth_real: RealStack) -> AsyncIterator[ScriptedBrowser]:
    browser = ScriptedBrowser(oauth_real.nextcloud_url)
    await browser.login("alice", oauth_real.nc.login_password("alice"))
    yield browser
    await browser.aclose()


def test_discovery_through_the_real_proxy(oauth_real: RealStack) -> None:
    challenge = httpx.post(oauth_real.mcp_url, json={})
    assert challenge.status_code == 401, challenge.text  # the public route lets the app's 401 through
    metadata_url = f"{issuer(oauth_real)}/.well-known/oauth-protected-resource"
    assert f'resource_metadata="{metadata_url}"' in challenge.headers["www-authenticate"]
    resource = httpx.get(metadata_url).json()
    assert resource["resource"] == oauth_real.mcp_url and resource["authorization_servers"] == [issuer(oauth_real)]
    web_root = f"{oauth_real.nextcloud_url}/.well-known/oauth-authorization-server/index.php/apps/app_api/proxy/{APP_ID}"
    assert httpx.get(web_root).status_code >= 300  # not served by Nextcloud's web root: the client moves on
    assert httpx.get(f"{issuer(oauth_real)}/.well-known/openid-configuration").json()["issuer"] == issuer(oauth_real)


async def test_the_sdk_client_connects_consents_searches_and_is_revoked_at_once(
    oauth_real: RealStack, metadata_host: MetadataHost, alice_browser: ScriptedBrowser
) -> None:
    client_id = metadata_host.client("real-client.json", "Real-tier client")
    async with sdk_oauth_client(oauth_real.mcp_url, alice_browser, client_metadata_url=client_id) as (client, storage):
        result = await client.call_tool("nc_semantic_search", {"query": ALICE_NOTE[1], "use_query_analysis": False})
        status = await client.call_tool("nc_get_vector_sync_status", {})
    assert ALICE_NOTE[0] in [hit["title"] for hit in result.structured_content["results"]]
    assert status.structured_content["user"] == "alice"
    tokens = storage.tokens
    revoked = httpx.post(f"{issuer(oauth_real)}/oauth/revoke", data={"client_id": client_id,
                                                                     "token": tokens.refresh_token})
    assert revoked.status_code == 200
    after = httpx.post(oauth_real.mcp_url, json={}, headers={"Authorization": f"Bearer {tokens.access_token}"})
    assert after.status_code == 401 and 'error="invalid_token"' in after.headers["www-authenticate"]


async def test_alice_finds_her_client_from_her_personal_settings_and_disconnects_it(
    oauth_real: RealStack, metadata_host: MetadataHost, alice_browser: ScriptedBrowser
) -> None:
    """The personal form as Nextcloud's settings page loads it, its link with alice's session, and
    the page's own anti-CSRF token (Nextcloud checks none on proxied requests)."""
    client_id = metadata_host.client("settings-client.json", "Settings-page client")
    async with sdk_oauth_client(oauth_real.mcp_url, alice_browser, client_metadata_url=client_id) as (_, storage):
        pass
    forms = oauth_real.settings_forms("alice")
    assert [(form["section_type"], form["section_id"]) for form in forms] == [("personal", "security")]
    assert oauth_real.mcp_url in forms[0]["description"]
    page = await alice_browser.http.get(forms[0]["doc_url"])
    assert page.status_code == 200 and "Settings-page client" in page.text
    grant = [g for g in (await oauth_real.status("alice"))["connected_clients"] if g["client_id"] == client_id][0]
    access = storage.tokens.access_token
    assert httpx.post(oauth_real.mcp_url, json={}, headers={"Authorization": f"Bearer {access}"}).status_code != 401
    forged = await alice_browser.http.post(forms[0]["doc_url"], data={"grant_id": grant["id"], "csrf_token": "x"})
    assert forged.status_code == 400
    done = await alice_browser.http.post(forms[0]["doc_url"], data={
        "grant_id": grant["id"], "csrf_token": consent_form(page.text)["csrf_token"]})
    assert done.status_code == 200 and "Disconnected" in done.text
    assert httpx.post(oauth_real.mcp_url, json={}, headers={"Authorization": f"Bearer {access}"}).status_code == 401


async def test_an_anonymous_browser_goes_through_nextclouds_login_and_back_to_the_consent_page(
    oauth_real: RealStack, metadata_host: MetadataHost
) -> None:
    client_id = metadata_host.client("anonymous.json", "Anonymous start")
    url = str(httpx.URL(f"{issuer(oauth_real)}/oauth/authorize", params={
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI, "state": "a",
        "code_challenge": pkce()[1], "code_challenge_method": "S256"}))
    browser = ScriptedBrowser(oauth_real.nextcloud_url)
    try:
        first = await browser.http.get(url)
        login = httpx.URL(next_url(first))
        assert first.status_code == 200 and login.path == "/index.php/login"
        back = login.params["redirect_url"]
        assert back.startswith(f"/index.php/apps/app_api/proxy/{APP_ID}/oauth/authorize?")
        location = await browser.login("alice", oauth_real.nc.login_password("alice"), redirect_url=back)
        assert location == f"{oauth_real.nextcloud_url}{back}"  # Nextcloud sends the browser back (303)
        page = await browser.open(location)
    finally:
        await browser.aclose()
    assert page.status_code == 200 and 'id="client-name">Anonymous start<' in page.text


async def test_bobs_token_never_returns_alices_items(oauth_real: RealStack) -> None:
    bob = ScriptedBrowser(oauth_real.nextcloud_url)
    await bob.login("bob", oauth_real.nc.login_password("bob"))
    try:
        async with sdk_oauth_client(oauth_real.mcp_url, bob, client_name="Bob's client") as (client, _):
            result = await client.call_tool("nc_semantic_search", {"query": ALICE_NOTE[1], "use_query_analysis": False})
            status = await client.call_tool("nc_get_vector_sync_status", {})
    finally:
        await bob.aclose()
    assert status.structured_content["user"] == "bob"
    assert ALICE_NOTE[0] not in [hit["title"] for hit in result.structured_content["results"]]


def test_nextcloud_throttles_failed_token_requests(oauth_real: RealStack) -> None:
    """The token route's bruteforce_protection, enforced by AppAPI: after 10 failures, 429 from Nextcloud."""
    oauth_real.nc.occ("security:bruteforce:reset", "127.0.0.1")
    try:
        statuses = []
        for attempt in range(12):
            statuses.append(httpx.post(f"{issuer(oauth_real)}/oauth/token", timeout=60, data={
                "grant_type": "authorization_code", "client_id": "dcr-unknown", "code": f"guess-{attempt}",
                "code_verifier": "v" * 43}).status_code)
        assert statuses[0] == 401 and statuses[-1] == 429, statuses
        assert oauth_real.nc.bruteforce_attempts() > 10
    finally:
        oauth_real.nc.occ("security:bruteforce:reset", "127.0.0.1")


def test_the_consent_page_in_headless_chromium_with_a_nextcloud_session(
    oauth_real: RealStack, metadata_host: MetadataHost, tmp_path: Path
) -> None:
    """Nextcloud's own login page does not render in nc-kit (its JS bundle is missing), so the session
    comes from a scripted login and is handed to the browser as cookies."""
    browser = ScriptedBrowser(oauth_real.nextcloud_url)
    asyncio.run(browser.login("alice", oauth_real.nc.login_password("alice")))
    cookies = [{"name": c.name, "value": c.value, "domain": c.domain or "localhost", "path": c.path or "/"}
               for c in browser.http.cookies.jar]
    asyncio.run(browser.aclose())
    client_id = metadata_host.client("real-browser.json", "Real Browser Client")
    verifier, challenge = pkce()
    url = str(httpx.URL(f"{issuer(oauth_real)}/oauth/authorize", params={
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI, "state": "real",
        "code_challenge": challenge, "code_challenge_method": "S256", "scope": "semantic:read"}))
    chrome = Chromium(tmp_path / "profile")
    try:
        for cookie in cookies:
            chrome.call("Network.setCookie", url=oauth_real.nextcloud_url, name=cookie["name"], value=cookie["value"],
                        path=cookie["path"])
        chrome.navigate(url)
        chrome.wait_until("!!document.getElementById('client-name')")
        assert chrome.evaluate("document.getElementById('client-name').textContent") == "Real Browser Client"
        png = chrome.screenshot(ARTIFACTS / "oauth_consent_real.png")
        assert png_colours(png) > 50
        chrome.evaluate("document.getElementById('approve').click(); true")
        sent = chrome.wait_for_event("Network.requestWillBeSent",
                                     request__url=lambda u: bool(u) and u.startswith(REDIRECT_URI))
    finally:
        chrome.close()
    answer = query_of(sent["request"]["url"])
    token = httpx.post(f"{issuer(oauth_real)}/oauth/token", data={
        "grant_type": "authorization_code", "code": answer["code"], "code_verifier": verifier,
        "redirect_uri": REDIRECT_URI, "client_id": client_id})
    assert token.status_code == 200, token.text
