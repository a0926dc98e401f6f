"""The authorization server's own rules, with a clock the tests move: lifetimes, audience, rotation;
and the bounds on fetching client metadata documents, against a real HTTPS host on loopback.

Flows across HTTP (discovery, consent, the SDK client, the proxy) are in test_oauth.py.
"""

from __future__ import annotations

import json
import ssl
from pathlib import Path

import pytest

from oauth_support import (  # noqa: F401 (fixtures)
    REDIRECT_URI, Clock, Document, MetadataHost, clock, metadata_host, pkce,
)
from semantic_mcp.core.config import READ_SCOPE, WRITE_SCOPE, AdminSettings
from semantic_mcp.oauth import AuthorizationServer, ClientRegistry, MetadataPolicy, OAuthError, OAuthStore
from semantic_mcp.oauth.clients import MAX_DOCUMENT_BYTES
from semantic_mcp.oauth.server import ACCESS_TOKEN_SECONDS, CODE_SECONDS, REFRESH_TOKEN_SECONDS

PUBLIC_URL = "https://cloud.example.com"


def make_server(path: Path, clock: Clock, public_url: str = PUBLIC_URL,
                settings: AdminSettings | None = None) -> AuthorizationServer:
    store = OAuthStore(path / "oauth.db")
    return AuthorizationServer(store, ClientRegistry(store, clock=clock), lambda: settings or AdminSettings(),
                               public_url, "semantic_mcp", clock=clock)


@pytest.fixture
def server(tmp_path: Path, clock: Clock) -> AuthorizationServer:
    return make_server(tmp_path, clock)


def register(server: AuthorizationServer) -> str:
    body = {"client_name": "Unit client", "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"}
    return server.clients.register(json.dumps(body).encode())["client_id"]


async def code_for(server: AuthorizationServer, client_id: str, challenge: str, scope: str | None = None) -> str:
    params = {"client_id": client_id, "redirect_uri": REDIRECT_URI, "response_type": "code", "state": "s",
              "code_challenge": challenge, "code_challenge_method": "S256", "resource": server.resource}
    if scope:
        params["scope"] = scope
    request, _ = await server.validate_authorization(params)
    request_id, csrf = server.begin_consent("alice", request)
    redirect = await server.decide("alice", request_id, csrf, approve=True)
    return redirect.split("code=", 1)[1].split("&", 1)[0]


async def tokens(server: AuthorizationServer, scope: str | None = None) -> tuple[str, dict]:
    client_id = register(server)
    verifier, challenge = pkce()
    code = await code_for(server, client_id, challenge, scope)
    answer = await server.token({"grant_type": "authorization_code", "code": code, "code_verifier": verifier,
                                 "redirect_uri": REDIRECT_URI, "client_id": client_id})
    return client_id, answer


@pytest.mark.clock_sensitive
async def test_a_token_works_for_its_user_until_it_expires(server: AuthorizationServer, clock: Clock) -> None:
    _, answer = await tokens(server)
    grant = (await server.verify(answer["access_token"]))
    assert grant is not None and grant.user == "alice" and grant.scopes == {READ_SCOPE, WRITE_SCOPE}
    clock.now += ACCESS_TOKEN_SECONDS + 1
    assert (await server.verify(answer["access_token"])) is None


@pytest.mark.clock_sensitive
async def test_an_expired_code_is_refused(server: AuthorizationServer, clock: Clock) -> None:
    client_id = register(server)
    verifier, challenge = pkce()
    code = await code_for(server, client_id, challenge)
    clock.now += CODE_SECONDS + 1
    with pytest.raises(OAuthError) as refused:
        await server.token({"grant_type": "authorization_code", "code": code, "code_verifier": verifier,
                            "client_id": client_id})
    assert refused.value.error == "invalid_grant" and "expired" in refused.value.description


@pytest.mark.clock_sensitive
async def test_an_expired_refresh_token_is_refused(server: AuthorizationServer, clock: Clock) -> None:
    client_id, answer = await tokens(server)
    clock.now += REFRESH_TOKEN_SECONDS + 1
    with pytest.raises(OAuthError) as refused:
        await server.token({"grant_type": "refresh_token", "refresh_token": answer["refresh_token"],
                            "client_id": client_id})
    assert refused.value.error == "invalid_grant" and "expired" in refused.value.description


async def test_a_token_minted_for_another_resource_is_refused(tmp_path: Path, clock: Clock) -> None:
    """The audience check: the same storage behind another public URL (another resource) honours nothing."""
    first = make_server(tmp_path, clock, "https://old.example.com")
    _, answer = await tokens(first)
    assert (await first.verify(answer["access_token"])) is not None
    moved = make_server(tmp_path, clock, "https://cloud.example.com")
    assert (await moved.verify(answer["access_token"])) is None


async def test_the_admin_narrowing_scopes_narrows_tokens_already_issued(tmp_path: Path, clock: Clock) -> None:
    settings = {"now": AdminSettings()}
    store = OAuthStore(tmp_path / "oauth.db")
    server = AuthorizationServer(store, ClientRegistry(store, clock=clock), lambda: settings["now"], PUBLIC_URL,
                                 "semantic_mcp", clock=clock)
    _, answer = await tokens(server)
    settings["now"] = AdminSettings(oauth_scopes=(READ_SCOPE,))
    assert (await server.verify(answer["access_token"])).scopes == {READ_SCOPE}
    settings["now"] = AdminSettings(oauth_enabled=False)
    assert (await server.verify(answer["access_token"])) is None


async def test_refresh_rotates_and_a_reused_refresh_token_revokes_the_grant(server: AuthorizationServer) -> None:
    client_id, first = await tokens(server)
    second = await server.token({"grant_type": "refresh_token", "refresh_token": first["refresh_token"],
                                 "client_id": client_id})
    assert second["refresh_token"] != first["refresh_token"] and (await server.verify(second["access_token"]))
    with pytest.raises(OAuthError) as reused:
        await server.token({"grant_type": "refresh_token", "refresh_token": first["refresh_token"],
                            "client_id": client_id})
    assert reused.value.error == "invalid_grant"
    assert (await server.verify(second["access_token"])) is None  # the whole grant went with it


@pytest.mark.clock_sensitive
async def test_housekeeping_drops_expired_tokens_and_unused_registrations(server: AuthorizationServer,
                                                                        clock: Clock) -> None:
    _, answer = await tokens(server)
    unused = register(server)
    clock.now += REFRESH_TOKEN_SECONDS + 1
    _, fresh = await tokens(server)  # issuing tokens runs the hourly housekeeping
    assert server.store.token(answer["refresh_token"], "refresh") is None
    assert server.store.client(unused) is None
    assert (await server.verify(fresh["access_token"])) is not None


async def test_grants_survive_a_restart(tmp_path: Path, clock: Clock) -> None:
    server = make_server(tmp_path, clock)
    _, answer = await tokens(server)
    server.store.close()
    again = make_server(tmp_path, clock)
    assert (await again.verify(answer["access_token"])).user == "alice"
    assert [c["client_name"] for c in again.connected_clients("alice")] == ["Unit client"]


# --- client metadata documents ----------------------------------------------------------------------


@pytest.fixture
def registry(tmp_path: Path, metadata_host: MetadataHost) -> ClientRegistry:
    trust = ssl.create_default_context(cafile=str(metadata_host.tls.ca))
    return ClientRegistry(OAuthStore(tmp_path / "oauth.db"), verify=trust, fetch_seconds=1.0)


LOOPBACK_ALLOWED = MetadataPolicy(allow_private=True)


async def test_a_metadata_document_identifies_its_client(registry: ClientRegistry, metadata_host: MetadataHost) -> None:
    url = metadata_host.client("good.json", "Good client")
    client = await registry.find(url, LOOPBACK_ALLOWED)
    assert client.name == "Good client" and client.redirect_uris == (REDIRECT_URI,) and client.from_metadata_document


async def refusal(registry: ClientRegistry, url: str, policy: MetadataPolicy = LOOPBACK_ALLOWED) -> str:
    with pytest.raises(OAuthError) as refused:
        await registry.find(url, policy)
    assert refused.value.error == "invalid_client"
    return refused.value.description


async def test_a_document_on_a_loopback_address_is_refused_unless_the_admin_allows_it(
    registry: ClientRegistry, metadata_host: MetadataHost
) -> None:
    url = metadata_host.client("private.json", "Private client")
    assert "private or loopback" in await refusal(registry, url, MetadataPolicy())


async def test_tightening_the_policy_stops_documents_already_cached(
    registry: ClientRegistry, metadata_host: MetadataHost
) -> None:
    url = metadata_host.client("cached.json", "Cached client")
    assert (await registry.find(url, LOOPBACK_ALLOWED)).name == "Cached client"
    assert "private or loopback" in await refusal(registry, url, MetadataPolicy())
    assert "not allowed" in await refusal(registry, url, MetadataPolicy(allowed_hosts=("claude.ai",), allow_private=True))


async def test_a_huge_document_is_refused(registry: ClientRegistry, metadata_host: MetadataHost) -> None:
    url = metadata_host.client("huge.json", "Huge client", description="x" * MAX_DOCUMENT_BYTES)
    assert "exceeds" in await refusal(registry, url)


async def test_a_huge_document_without_content_length_is_refused(
    registry: ClientRegistry, metadata_host: MetadataHost
) -> None:
    url = metadata_host.client("chunked.json", "Chunked client", description="x" * MAX_DOCUMENT_BYTES)
    metadata_host.documents["chunked.json"].chunks = 4
    assert "exceeds" in await refusal(registry, url)


async def test_a_slow_document_is_refused(registry: ClientRegistry, metadata_host: MetadataHost) -> None:
    url = metadata_host.client("slow.json", "Slow client")
    metadata_host.documents["slow.json"].delay = 3.0
    assert "took too long" in await refusal(registry, url)


async def test_a_redirecting_document_is_refused(registry: ClientRegistry, metadata_host: MetadataHost) -> None:
    target = metadata_host.client("target.json", "Target")
    metadata_host.documents["moved.json"] = Document(b"", status=302, headers={"location": target})
    assert "redirect" in await refusal(registry, f"{metadata_host.base_url}/moved.json")


async def test_a_document_naming_another_client_id_is_refused(
    registry: ClientRegistry, metadata_host: MetadataHost
) -> None:
    metadata_host.client("impostor.json", "Impostor", client_id="https://claude.ai/oauth/claude-code-client-metadata")
    assert "own URL" in await refusal(registry, f"{metadata_host.base_url}/impostor.json")


async def test_a_host_outside_the_admins_allow_list_is_refused(
    registry: ClientRegistry, metadata_host: MetadataHost
) -> None:
    url = metadata_host.client("listed.json", "Listed client")
    policy = MetadataPolicy(allowed_hosts=("claude.ai", "*.example.com"), allow_private=True)
    assert "not allowed" in await refusal(registry, url, policy)
    assert (await registry.find(url, MetadataPolicy(allowed_hosts=("localhost",), allow_private=True))).name


def test_registration_refuses_redirect_uris_that_could_leak_codes(tmp_path: Path) -> None:
    registry = ClientRegistry(OAuthStore(tmp_path / "oauth.db"))
    for uri in ("http://evil.example/cb", "javascript:alert(1)", "https://x.example/cb#frag"):
        with pytest.raises(OAuthError) as refused:
            registry.register(json.dumps({"redirect_uris": [uri]}).encode())
        assert refused.value.error == "invalid_redirect_uri"
    ok = registry.register(json.dumps({"redirect_uris": ["https://claude.ai/api/mcp/auth_callback"]}).encode())
    assert ok["token_endpoint_auth_method"] == "client_secret_post" and ok["client_secret"]
