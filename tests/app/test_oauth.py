"""OAuth end to end through the fake AppAPI proxy: the official SDK client knowing only the MCP URL,
a scripted browser logging in to Nextcloud and consenting, and one test per refusal case.

The stack's ExApp trusts the loopback metadata host's test CA (SSL_CERT_FILE) and the admin allows
loopback metadata hosts, as a test deployment would.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from oauth_support import (
    REDIRECT_URI, ConsentRefused, MetadataHost, ScriptedBrowser, code_from, consent_form, make_certificates, next_url,
    pkce, query_of, sdk_oauth_client,
)
from stack import APP_ID, Stack


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory):
    return make_certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def metadata_host(tls) -> Iterator[MetadataHost]:
    host = MetadataHost(tls).start()
    try:
        yield host
    finally:
        host.stop()


@pytest.fixture(scope="module")
def oauth_stack(tmp_path_factory: pytest.TempPathFactory, tls, metadata_host: MetadataHost) -> Iterator[Stack]:
    stack = Stack(tmp_path_factory.mktemp("oauth"), profile="minimal", env={"SSL_CERT_FILE": str(tls.ca)})
    try:
        stack.start()
        stack.set_admin_field("oauth_allow_private_metadata_hosts", True)
        probe = str(httpx.URL(f"{issuer(stack)}/oauth/authorize", params={
            "client_id": metadata_host.client("probe.json", "Probe"), "redirect_uri": REDIRECT_URI}))
        asyncio.run(stack.eventually(lambda: "private or loopback" not in httpx.get(probe).text, timeout=15,
                                     interval=0.2))
        yield stack
    finally:
        stack.stop()


@pytest.fixture
async def browser(oauth_stack: Stack) -> AsyncIterator[ScriptedBrowser]:
    """Alice, logged in to Nextcloud in her browser."""
    browser = ScriptedBrowser(oauth_stack.nextcloud_url)
    await browser.login("alice", oauth_stack.app_password("alice"))
    yield browser
    await browser.aclose()


def issuer(stack: Stack) -> str:
    return f"{stack.nextcloud_url}/index.php/apps/app_api/proxy/{APP_ID}"


async def settings_applied(stack: Stack, check) -> None:
    await stack.eventually(check, timeout=15, interval=0.2)


# --- discovery and the happy paths ----------------------------------------------------------------


def test_discovery_works_from_the_proxy_path(oauth_stack: Stack) -> None:
    challenge = httpx.post(oauth_stack.mcp_url, json={})
    assert challenge.status_code == 401
    header = challenge.headers["www-authenticate"]
    metadata_url = f"{issuer(oauth_stack)}/.well-known/oauth-protected-resource"
    assert header.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in header
    resource = httpx.get(metadata_url).json()
    assert resource["resource"] == oauth_stack.mcp_url and resource["authorization_servers"] == [issuer(oauth_stack)]
    # Nextcloud's web root does not serve the RFC 8414 path-inserted URL; the issuer path does.
    web_root = f"{oauth_stack.nextcloud_url}/.well-known/oauth-authorization-server/index.php/apps/app_api/proxy/{APP_ID}"
    assert httpx.get(web_root).status_code == 404
    server = httpx.get(f"{issuer(oauth_stack)}/.well-known/openid-configuration").json()
    assert server["issuer"] == issuer(oauth_stack)
    assert server["code_challenge_methods_supported"] == ["S256"] and server["client_id_metadata_document_supported"]


async def test_the_sdk_client_connects_with_a_metadata_document_and_searches_as_alice(
    oauth_stack: Stack, metadata_host: MetadataHost, browser: ScriptedBrowser
) -> None:
    client_id = metadata_host.client("claude-code.json", "Claude Code (test)")
    async with sdk_oauth_client(oauth_stack.mcp_url, browser, client_metadata_url=client_id) as (client, storage):
        result = await client.call_tool("nc_semantic_search", {"query": "budget review", "use_query_analysis": False})
        status = await client.call_tool("nc_get_vector_sync_status", {})
    assert storage.client_info.client_id == client_id  # CIMD, no registration
    assert not result.is_error and result.structured_content["results"], result.content
    assert "Meeting notes" in [hit["title"] for hit in result.structured_content["results"]]
    assert status.structured_content["user"] == "alice"
    assert "Claude Code (test)" in [c["client_name"] for c in status.structured_content["connected_clients"]]


async def test_bobs_token_never_returns_alices_items(oauth_stack: Stack) -> None:
    bob = ScriptedBrowser(oauth_stack.nextcloud_url)
    await bob.login("bob", oauth_stack.app_password("bob"))
    try:
        async with sdk_oauth_client(oauth_stack.mcp_url, bob, client_name="Bob's client") as (client, storage):
            result = await client.call_tool("nc_semantic_search", {"query": "budget review meeting notes",
                                                                   "use_query_analysis": False})
            status = await client.call_tool("nc_get_vector_sync_status", {})
    finally:
        await bob.aclose()
    assert storage.client_info.client_id.startswith("dcr-")  # no metadata URL given: dynamic registration
    assert status.structured_content["user"] == "bob"
    titles = [hit["title"] for hit in result.structured_content["results"]]
    assert "Meeting notes" not in titles


async def test_app_passwords_keep_working(oauth_stack: Stack) -> None:
    assert (await oauth_stack.status("alice"))["user"] == "alice"
    result = await oauth_stack.call("bob", "nc_get_vector_sync_status", bearer=False)
    assert result.structured_content["user"] == "bob"


# --- a hand-driven client for the refusal cases ----------------------------------------------------


class Flow:
    """One registered public client, driving authorization and token requests by hand."""

    def __init__(self, stack: Stack, browser: ScriptedBrowser) -> None:
        self.stack = stack
        self.browser = browser
        self.base = issuer(stack)
        registered = httpx.post(f"{self.base}/oauth/register", json={
            "client_name": "Hand-driven client", "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"]})
        assert registered.status_code == 201, registered.text
        self.client_id = registered.json()["client_id"]

    def authorization_url(self, challenge: str | None, **overrides: str | None) -> str:
        params: dict[str, Any] = {
            "response_type": "code", "client_id": self.client_id, "redirect_uri": REDIRECT_URI, "state": "xyz",
            "code_challenge": challenge, "code_challenge_method": "S256", "scope": "semantic:read semantic:write",
            "resource": self.stack.mcp_url, **overrides,
        }
        return str(httpx.URL(f"{self.base}/oauth/authorize", params={k: v for k, v in params.items() if v is not None}))

    async def code(self, challenge: str, **overrides: str | None) -> str:
        return code_from(await self.browser.consent(self.authorization_url(challenge, **overrides))).code

    def token(self, **form: str) -> httpx.Response:
        return httpx.post(f"{self.base}/oauth/token", data={"client_id": self.client_id, **form})

    def exchange(self, code: str, verifier: str) -> httpx.Response:
        return self.token(grant_type="authorization_code", code=code, code_verifier=verifier, redirect_uri=REDIRECT_URI)

    async def tokens(self, **overrides: str | None) -> dict[str, Any]:
        verifier, challenge = pkce()
        answer = self.exchange(await self.code(challenge, **overrides), verifier)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def mcp_status(self, access_token: str) -> int:
        """Status of an MCP initialize with this bearer token (401 = refused)."""
        response = httpx.post(self.stack.mcp_url, headers={
            "Authorization": f"Bearer {access_token}", "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        return response.status_code


@pytest.fixture
async def flow(oauth_stack: Stack, browser: ScriptedBrowser) -> Flow:
    return Flow(oauth_stack, browser)


def refused(response: httpx.Response, error: str, status: int = 400) -> str:
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert body["error"] == error, body
    return body["error_description"]


async def test_an_unregistered_redirect_uri_is_refused_without_redirecting(flow: Flow) -> None:
    verifier, challenge = pkce()
    with pytest.raises(ConsentRefused) as page:
        await flow.browser.consent(flow.authorization_url(challenge, redirect_uri="https://evil.example/callback"))
    assert page.value.response.status_code == 400 and next_url(page.value.response) is None
    assert "redirect_uri is not registered" in page.value.response.text


async def test_an_unknown_client_is_refused(flow: Flow) -> None:
    verifier, challenge = pkce()
    with pytest.raises(ConsentRefused) as page:
        await flow.browser.consent(flow.authorization_url(challenge, client_id="dcr-unknown"))
    assert page.value.response.status_code == 400 and "unknown client_id" in page.value.response.text


async def test_pkce_is_required_and_only_s256(flow: Flow) -> None:
    for overrides in ({"code_challenge": None}, {"code_challenge_method": "plain"}):
        response = await flow.browser.open(flow.authorization_url("x" * 43, **overrides))
        answer = query_of(next_url(response))
        assert answer["error"] == "invalid_request" and "PKCE" in answer["error_description"]
        assert answer["state"] == "xyz" and next_url(response).startswith(REDIRECT_URI)


async def test_a_wrong_or_missing_code_verifier_is_refused(flow: Flow) -> None:
    verifier, challenge = pkce()
    code = await flow.code(challenge)
    assert "PKCE" in refused(flow.exchange(code, pkce()[0]), "invalid_grant")
    code = await flow.code(challenge)
    assert "code_verifier" in refused(flow.token(grant_type="authorization_code", code=code,
                                                 redirect_uri=REDIRECT_URI), "invalid_request")


async def test_a_code_used_twice_is_refused_and_revokes_what_it_gave(flow: Flow) -> None:
    verifier, challenge = pkce()
    code = await flow.code(challenge)
    first = flow.exchange(code, verifier)
    assert first.status_code == 200 and flow.mcp_status(first.json()["access_token"]) == 200
    assert "already used" in refused(flow.exchange(code, verifier), "invalid_grant")
    assert flow.mcp_status(first.json()["access_token"]) == 401


async def test_revocation_takes_effect_at_once(flow: Flow) -> None:
    tokens = await flow.tokens()
    assert flow.mcp_status(tokens["access_token"]) == 200
    revoked = httpx.post(f"{flow.base}/oauth/revoke", data={"client_id": flow.client_id, "token": tokens["refresh_token"]})
    assert revoked.status_code == 200
    assert flow.mcp_status(tokens["access_token"]) == 401
    refused(flow.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"]), "invalid_grant")


async def test_disconnecting_on_the_connected_clients_page_revokes_at_once(flow: Flow) -> None:
    tokens = await flow.tokens()
    page = await flow.browser.http.get(f"{flow.base}/oauth/clients")
    assert page.status_code == 200 and "Hand-driven client" in page.text
    grant_id = [g for g in (await flow.stack.status("alice"))["connected_clients"] if g["client_id"] == flow.client_id][0]["id"]
    csrf = consent_form(page.text)["csrf_token"]
    forged = await flow.browser.http.post(f"{flow.base}/oauth/clients", data={"grant_id": grant_id, "csrf_token": "x"})
    assert forged.status_code == 400 and flow.mcp_status(tokens["access_token"]) == 200
    done = await flow.browser.http.post(f"{flow.base}/oauth/clients", data={"grant_id": grant_id, "csrf_token": csrf})
    assert done.status_code == 200 and "Disconnected" in done.text
    assert flow.mcp_status(tokens["access_token"]) == 401


async def test_the_personal_settings_form_leads_to_the_connected_clients_page(flow: Flow) -> None:
    await flow.tokens()
    forms = flow.stack.settings_forms("alice")
    assert [(form["section_type"], form["section_id"]) for form in forms] == [("personal", "security")]
    assert flow.stack.mcp_url in forms[0]["description"]  # the address to give a client
    page = await flow.browser.http.get(forms[0]["doc_url"])
    assert page.status_code == 200 and "Hand-driven client" in page.text
    assert {form["section_type"] for form in flow.stack.settings_forms("admin")} == {"admin", "personal"}


async def test_an_invalid_or_expired_token_gets_the_challenge(flow: Flow) -> None:
    response = httpx.post(flow.stack.mcp_url, json={}, headers={"Authorization": "Bearer not-a-token-of-ours"})
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


async def test_a_token_for_another_resource_is_refused(flow: Flow) -> None:
    response = await flow.browser.open(flow.authorization_url(pkce()[1], resource="https://other.example/mcp"))
    assert query_of(next_url(response))["error"] == "invalid_target"
    verifier, challenge = pkce()
    code = await flow.code(challenge)
    refused(flow.token(grant_type="authorization_code", code=code, code_verifier=verifier, redirect_uri=REDIRECT_URI,
                       resource="https://other.example/mcp"), "invalid_target")


async def test_a_refresh_cannot_add_scopes(flow: Flow) -> None:
    tokens = await flow.tokens(scope="semantic:read")
    assert tokens["scope"] == "semantic:read"
    escalated = flow.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"],
                           scope="semantic:read semantic:write")
    refused(escalated, "invalid_scope")
    narrowed = flow.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"])
    assert narrowed.status_code == 200 and narrowed.json()["scope"] == "semantic:read"


async def test_a_read_only_token_cannot_use_write_tools(oauth_stack: Stack, flow: Flow) -> None:
    tokens = await flow.tokens(scope="semantic:read")
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['access_token']}"})
    async with http, Client(streamable_http_client(oauth_stack.mcp_url, http_client=http)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("nc_enable_vector_sync", {})  # harmless if it got through
    assert "nc_semantic_search" in names and "nc_enable_vector_sync" not in names
    assert result.is_error and "semantic:write" in result.content[0].text


async def test_the_consent_form_needs_its_own_csrf_token_and_its_user(oauth_stack: Stack, flow: Flow) -> None:
    page = await flow.browser.open(flow.authorization_url(pkce()[1]))
    form = consent_form(page.text)
    action = f"{oauth_stack.nextcloud_url}{form.pop('action')}"
    forged = await flow.browser.http.post(action, data={**form, "csrf_token": "guessed", "decision": "approve"})
    assert forged.status_code == 400 and next_url(forged) is None
    bob = ScriptedBrowser(oauth_stack.nextcloud_url)
    await bob.login("bob", oauth_stack.app_password("bob"))
    try:
        other_user = await bob.http.post(action, data={**form, "decision": "approve"})
    finally:
        await bob.aclose()
    assert other_user.status_code == 400 and next_url(other_user) is None


async def test_an_anonymous_browser_is_sent_to_nextcloud_login_and_back(oauth_stack: Stack, flow: Flow) -> None:
    anonymous = httpx.get(flow.authorization_url(pkce()[1]), follow_redirects=False)
    assert anonymous.status_code == 200  # a page that moves on: the proxy would follow a redirect itself
    login = httpx.URL(next_url(anonymous))
    assert str(login).startswith(f"{oauth_stack.nextcloud_url}/index.php/login")
    back = login.params["redirect_url"]
    assert back.startswith(f"/index.php/apps/app_api/proxy/{APP_ID}/oauth/authorize?")
    browser = ScriptedBrowser(oauth_stack.nextcloud_url)
    try:
        location = await browser.login("alice", oauth_stack.app_password("alice"), redirect_url=back)
        assert location == f"{oauth_stack.nextcloud_url}{back}"
        page = await browser.open(location)
    finally:
        await browser.aclose()
    assert page.status_code == 200 and 'id="client-name">Hand-driven client<' in page.text


async def test_a_private_metadata_host_is_refused_when_the_admin_does_not_allow_it(
    oauth_stack: Stack, metadata_host: MetadataHost, flow: Flow
) -> None:
    client_id = metadata_host.client("needs-allowance.json", "Private client")
    oauth_stack.set_admin_field("oauth_allow_private_metadata_hosts", False)
    try:
        async def refused_now() -> bool:
            response = await flow.browser.open(flow.authorization_url(pkce()[1], client_id=client_id))
            return response.status_code == 400 and "private or loopback" in response.text

        await settings_applied(oauth_stack, refused_now)
    finally:
        oauth_stack.set_admin_field("oauth_allow_private_metadata_hosts", True)


async def test_switching_oauth_off_stops_tokens_and_discovery(oauth_stack: Stack, flow: Flow) -> None:
    tokens = await flow.tokens()
    oauth_stack.set_admin_field("oauth_enabled", False)
    try:
        await settings_applied(oauth_stack, lambda: flow.mcp_status(tokens["access_token"]) == 401)
        challenge = httpx.post(oauth_stack.mcp_url, json={})
        assert challenge.status_code == 401 and "resource_metadata" not in challenge.headers["www-authenticate"]
        assert httpx.get(f"{flow.base}/.well-known/oauth-protected-resource").status_code == 404
        assert (await oauth_stack.status("alice"))["user"] == "alice"  # app passwords unaffected
    finally:
        oauth_stack.set_admin_field("oauth_enabled", True)
    await settings_applied(oauth_stack, lambda: flow.mcp_status(tokens["access_token"]) == 200)


async def test_brute_force_on_the_token_endpoint_is_throttled_by_nextcloud(oauth_stack: Stack, flow: Flow) -> None:
    """The route's bruteforce_protection: after 10 failed exchanges Nextcloud answers 429 itself."""
    try:
        statuses = [flow.token(grant_type="authorization_code", code=f"guess-{i}", code_verifier="v" * 43,
                               redirect_uri=REDIRECT_URI).status_code for i in range(12)]
        assert statuses[:11] == [400] * 11 and statuses[11] == 429
        before = oauth_stack.fake.proxy_count(APP_ID, "oauth/token")
        assert flow.token(grant_type="refresh_token", refresh_token="anything").status_code == 429
        assert oauth_stack.fake.proxy_count(APP_ID, "oauth/token") == before  # never reached the app
    finally:
        oauth_stack.fake.bruteforce_reset()



async def test_the_admin_can_switch_dynamic_registration_off(oauth_stack: Stack) -> None:
    register = f"{issuer(oauth_stack)}/oauth/register"
    oauth_stack.set_admin_field("oauth_allow_registration", False)
    try:
        await settings_applied(oauth_stack, lambda: httpx.post(register, json={"redirect_uris": [REDIRECT_URI]})
                               .status_code == 403)
        metadata = httpx.get(f"{issuer(oauth_stack)}/.well-known/oauth-authorization-server").json()
        assert "registration_endpoint" not in metadata
    finally:
        oauth_stack.set_admin_field("oauth_allow_registration", True)
    await settings_applied(oauth_stack, lambda: httpx.post(register, json={"redirect_uris": [REDIRECT_URI]})
                           .status_code == 201)
