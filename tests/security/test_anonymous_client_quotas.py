"""Threat: an anonymous caller makes the app store client registrations or fetch client metadata
documents without end (issue 21). Both are bounded per caller network and hour; registrations that
nobody used are bounded in number (tests/security/test_registration_flood.py, issue 36).

The caller's address is what AppAPI's proxy puts in ``X-Origin-IP`` (Nextcloud's view of the client,
with ``trusted_proxies`` applied); the proxy drops an ``X-Origin-IP`` the caller sends, so a caller
cannot pose as many addresses (checked through the fake proxy, which does as AppAPI 32 and 34 do).
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.requests import Request

from ex_app.oauth_http import caller_address
from oauth_support import REDIRECT_URI, Clock, MetadataHost, clock, metadata_host  # noqa: F401 (fixtures)
from semantic_mcp.oauth import ClientRegistry, MetadataPolicy, OAuthError, OAuthStore
from semantic_mcp.oauth.clients import QUOTA_WINDOW_SECONDS, QUOTAS
from stack import APP_ID, Stack

PER_SOURCE, _ = QUOTAS["registration"]
BODY = json.dumps({"client_name": "Flood", "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"})


@pytest.fixture
def registry(tmp_path: Path, clock: Clock, metadata_host: MetadataHost) -> ClientRegistry:
    trust = ssl.create_default_context(cafile=str(metadata_host.tls.ca))
    return ClientRegistry(OAuthStore(tmp_path / "oauth.db"), verify=trust, fetch_seconds=2.0, clock=clock)


def refused(call) -> OAuthError:
    with pytest.raises(OAuthError) as error:
        call()
    assert error.value.status == 429 and error.value.error == "temporarily_unavailable"
    return error.value


def test_one_address_registers_a_bounded_number_of_clients_per_hour(registry: ClientRegistry, clock: Clock) -> None:
    for _ in range(PER_SOURCE):
        registry.register(BODY.encode(), "203.0.113.7")
    assert "from your network" in refused(lambda: registry.register(BODY.encode(), "203.0.113.7")).description
    registry.register(BODY.encode(), "198.51.100.1")  # another address is not held up
    clock.now += QUOTA_WINDOW_SECONDS + 1
    registry.register(BODY.encode(), "203.0.113.7")  # an hour later, again


def test_a_malformed_registration_costs_no_quota(registry: ClientRegistry) -> None:
    for _ in range(PER_SOURCE + 5):
        with pytest.raises(OAuthError) as error:
            registry.register(b'{"redirect_uris": ["javascript:alert(1)"]}', "203.0.113.7")
        assert error.value.error == "invalid_redirect_uri"
    registry.register(BODY.encode(), "203.0.113.7")


async def test_one_address_makes_the_app_fetch_a_bounded_number_of_metadata_documents(
    registry: ClientRegistry, metadata_host: MetadataHost
) -> None:
    per_source, _ = QUOTAS["metadata document fetch"]
    policy = MetadataPolicy(allow_private=True)
    urls = [metadata_host.client(f"flood-{i}.json", f"Flood {i}") for i in range(per_source + 1)]
    for url in urls[:-1]:
        await registry.find(url, policy, "203.0.113.7")
    with pytest.raises(OAuthError) as error:
        await registry.find(urls[-1], policy, "203.0.113.7")
    assert error.value.status == 429
    assert (await registry.find(urls[0], policy, "203.0.113.7")).name == "Flood 0"  # cached: no fetch, no quota


def request_from(peer: str, headers: dict[str, str]) -> Request:
    return Request({"type": "http", "method": "POST", "path": "/oauth/register", "client": (peer, 40000),
                    "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]})


def test_behind_harp_a_callers_own_x_origin_ip_is_not_believed(monkeypatch: pytest.MonkeyPatch) -> None:
    """HaRP 0.4.4 sets no X-Origin-IP and passes the caller's through (its haproxy.cfg.template):
    there, every caller counts as HaRP's own address."""
    forged = request_from("10.1.2.3", {"X-Origin-IP": "192.0.2.1"})
    assert caller_address(forged) == "192.0.2.1"  # AppAPI's PHP proxy: it set this one itself
    monkeypatch.setenv("HP_SHARED_KEY", "harp-key")
    assert caller_address(forged) == "10.1.2.3"


@pytest.fixture(scope="module")
def quota_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    stack = Stack(tmp_path_factory.mktemp("quotas"), profile="minimal")
    try:
        yield stack.start()
    finally:
        stack.stop()


def test_a_caller_cannot_pose_as_many_addresses_through_the_proxy(quota_stack: Stack) -> None:
    url = f"{quota_stack.nextcloud_url}/index.php/apps/app_api/proxy/{APP_ID}/oauth/register"
    statuses = [httpx.post(url, content=BODY, headers={"Content-Type": "application/json",
                                                       "X-Origin-IP": f"192.0.2.{i}"}).status_code
                for i in range(PER_SOURCE + 1)]
    assert statuses[:PER_SOURCE] == [201] * PER_SOURCE and statuses[-1] == 429, statuses
    answer = httpx.post(url, content=BODY, headers={"Content-Type": "application/json"})
    assert answer.status_code == 429 and "Retry-After" in answer.headers
    assert "too many client registrations" in answer.json()["error_description"]
