"""An anonymous flood of client registrations (second review, issue 36): 291 registrations from ten
addresses of one IPv6 /64 used to close registration for everyone for an hour, and behind HaRP, where
every caller shared one address, 30 were enough. Now a quota counts a caller's whole network (/64,
/24), there is no total anyone can use up, never-used registrations are what a flood displaces, and
behind HaRP the caller's address is the one Nextcloud forwards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.requests import Request

from ex_app.oauth_http import caller_address
from oauth_support import REDIRECT_URI, Clock, clock  # noqa: F401 (fixture)
from semantic_mcp.oauth import ClientRegistry, OAuthError, OAuthStore
from semantic_mcp.oauth import store as oauth_store
from semantic_mcp.oauth.clients import QUOTAS

PER_NETWORK, _ = QUOTAS["registration"]
BODY = json.dumps({"client_name": "Flood", "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"})


@pytest.fixture
def registry(tmp_path: Path, clock: Clock) -> ClientRegistry:
    return ClientRegistry(OAuthStore(tmp_path / "oauth.db"), clock=clock)


def test_addresses_of_one_ipv6_network_share_its_quota(registry: ClientRegistry) -> None:
    for i in range(PER_NETWORK):
        registry.register(BODY.encode(), f"2001:db8:7:1::{i + 1:x}")
    with pytest.raises(OAuthError, match="from your network"):
        registry.register(BODY.encode(), "2001:db8:7:1:ffff::99")
    with pytest.raises(OAuthError, match="from your network"):
        registry.register(BODY.encode(), "2001:db8:7:1:abcd::1")
    registry.register(BODY.encode(), "2001:db8:7:2::1")  # the next /64 is someone else


def test_many_networks_cannot_close_registration_for_everyone(registry: ClientRegistry,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oauth_store, "MAX_UNUSED_REGISTRATIONS", 50)
    kept = registry.register(BODY.encode(), "198.51.100.7")["client_id"]
    registry.store.add_grant("alice", kept, "Flood", REDIRECT_URI, "semantic:read", "https://x/mcp", 0.0,
                             account_id="a", expires_at=1e12)
    for i in range(400):  # 400 from 40 networks: the old total of 300 an hour closed registration here
        registry.register(BODY.encode(), f"10.{i // 10}.0.{i % 10}")
    answer = registry.register(BODY.encode(), "192.0.2.10")  # still open for a newcomer
    assert registry.store.client(answer["client_id"]) is not None
    assert registry.store.client(kept) is not None  # one a user authorized is never displaced
    unused = registry.store._run("SELECT COUNT(*) AS n FROM clients WHERE client_id NOT IN "  # noqa: SLF001
                                 "(SELECT client_id FROM grants)")[0]["n"]
    assert unused == 50


def test_a_registration_nobody_used_expires_within_a_day(registry: ClientRegistry, clock: Clock) -> None:
    unused = registry.register(BODY.encode(), "198.51.100.8")["client_id"]
    clock.now += 86400 + 1
    registry.store.purge_expired(clock.now)
    assert registry.store.client(unused) is None


def request_from(peer: str, headers: dict[str, str]) -> Request:
    return Request({"type": "http", "method": "POST", "path": "/oauth/register", "client": (peer, 40000),
                    "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]})


def test_behind_harp_the_address_nextcloud_forwards_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HP_SHARED_KEY", "harp-key")
    # AppAPI's proxy, through HaRP: it sends HaRP's key and the caller's address as Nextcloud saw it.
    signed = request_from("127.0.0.1", {"X-Origin-IP": "203.0.113.5", "harp-shared-key": "harp-key"})
    assert caller_address(signed) == "203.0.113.5"
    # HaRP's own path: a caller's X-Origin-IP (or a wrong key) is not believed; the front proxy's view is.
    assert caller_address(request_from("127.0.0.1", {"X-Origin-IP": "192.0.2.1", "harp-shared-key": "guess",
                                                     "X-Forwarded-For": "192.0.2.1, 198.51.100.20"})) == "198.51.100.20"
    assert caller_address(request_from("127.0.0.1", {"X-Origin-IP": "192.0.2.1"})) == "127.0.0.1"
