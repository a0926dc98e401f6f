"""The per-network registration quota behind HaRP (issue 36 item 4), on the real deployment.

Deployed through HaRP, every request reaches the app from HaRP's own address, so counting the
connecting peer would make one quota for everyone (30 registrations closed it). The app believes the
caller's address that Nextcloud forwards (``X-Origin-IP``) only on a request carrying HaRP's shared
key, which AppAPI adds and no caller knows; a caller who sends ``X-Origin-IP`` himself, with a key he
guessed, is counted where the front proxy saw him (ex_app/oauth_http.py ``caller_address``).

Nextcloud here trusts the front proxy's ``X-Forwarded-For`` (``trusted_proxies``), as behind any
reverse proxy, so the test's requests can come from documentation networks. This tier's front proxy
appends no ``X-Forwarded-For`` of its own, so on HaRP's ``/exapps/`` path the header the test sends
stands for the one an admin's front proxy would append.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from fake_nextcloud.exapp_process import APP_ID
from harpstack import HarpStack
from oauth_support import REDIRECT_URI
from semantic_mcp.oauth.clients import QUOTAS

PER_NETWORK, _ = QUOTAS["registration"]
BODY = json.dumps({"client_name": "Quota probe", "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"})


@pytest.fixture(scope="module")
def behind_a_reverse_proxy(harp: HarpStack) -> Iterator[HarpStack]:
    """Nextcloud takes a caller's address from the front proxy's X-Forwarded-For, as an admin sets it."""
    harp.nc.occ("config:system:set", "trusted_proxies", "0", "--value=127.0.0.1")
    harp.nc.occ("config:system:set", "forwarded_for_headers", "0", "--value=HTTP_X_FORWARDED_FOR")
    try:
        yield harp
    finally:
        harp.nc.occ("config:system:delete", "forwarded_for_headers", check=False)
        harp.nc.occ("config:system:delete", "trusted_proxies", check=False)


def register(url: str, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(url, content=BODY, headers={"Content-Type": "application/json", **headers}, timeout=60)


def test_through_nextcloud_each_callers_network_has_its_own_quota(behind_a_reverse_proxy: HarpStack) -> None:
    """Nextcloud's proxy URL (PHP, then HaRP): the address Nextcloud saw counts, so one network's flood
    leaves the next network open, and an X-Origin-IP the caller sends changes nothing."""
    url = f"{behind_a_reverse_proxy.nextcloud_url}/index.php/apps/app_api/proxy/{APP_ID}/oauth/register"
    statuses = [register(url, {"X-Forwarded-For": f"198.51.100.{i + 1}"}).status_code for i in range(PER_NETWORK)]
    assert statuses == [201] * PER_NETWORK, statuses
    # The caller's own X-Origin-IP (and a guessed key) are dropped or not believed: still his network.
    refused = register(url, {"X-Forwarded-For": "198.51.100.200", "X-Origin-IP": "192.0.2.9",
                             "harp-shared-key": "guess"})
    assert refused.status_code == 429, refused.text
    assert "from your network" in refused.json()["error_description"]
    # Another network is someone else: HaRP's one address for all would have refused it too.
    assert register(url, {"X-Forwarded-For": "203.0.113.7"}).status_code == 201


def test_on_harps_own_path_a_forged_origin_and_key_are_not_believed(behind_a_reverse_proxy: HarpStack) -> None:
    """HaRP's /exapps/ path passes the caller's headers through: X-Origin-IP from a different network on
    every request, with a guessed shared key, still counts as the one network the front proxy saw."""
    url = f"{behind_a_reverse_proxy.front.url}/exapps/{APP_ID}/oauth/register"
    statuses = [register(url, {"X-Forwarded-For": "198.18.0.1", "X-Origin-IP": f"10.{i}.0.1",
                               "harp-shared-key": "guess"}).status_code for i in range(PER_NETWORK + 1)]
    assert statuses == [201] * PER_NETWORK + [429], statuses
