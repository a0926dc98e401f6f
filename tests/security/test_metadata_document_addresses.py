"""An anonymous caller names a client metadata document on a host whose address is public on its face
but reaches loopback or the cloud metadata service through a gateway (NAT64, 6to4), a mapping or a
tunnel. The fetch is refused before any connection (second review, issue 36)."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from semantic_mcp.oauth.addresses import embedded_ipv4, is_public, network_of
from semantic_mcp.oauth.clients import ClientRegistry, MetadataPolicy
from semantic_mcp.oauth.errors import OAuthError
from semantic_mcp.oauth.store import OAuthStore

HIDDEN = {
    "NAT64 to loopback": "64:ff9b::7f00:1",
    "NAT64 to the metadata address": "64:ff9b::a9fe:a9fe",
    "local-use NAT64": "64:ff9b:1::808:808",
    "6to4 around loopback": "2002:7f00:1::1",
    "6to4 around the metadata address": "2002:a9fe:a9fe::1",
    "6to4 around a private network": "2002:0a00:0001::1",
    "IPv4-mapped loopback": "::ffff:127.0.0.1",
    "IPv4-compatible loopback": "::127.0.0.1",
    "Teredo with a private client": "2001:0:4136:e378:8000:63bf:f5ff:fffe",  # client 10.0.0.1, inverted
}


@pytest.mark.parametrize("address", HIDDEN.values(), ids=HIDDEN.keys())
async def test_a_document_host_hiding_a_private_ipv4_address_is_refused(
    address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def resolves_to(host: str, port: int, **_: object) -> list[tuple]:
        return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0))]

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", resolves_to)
    registry = ClientRegistry(OAuthStore(tmp_path / "oauth.db"), fetch_seconds=1.0)
    with pytest.raises(OAuthError) as refused:
        await registry.find("https://client.example/mcp.json", MetadataPolicy())
    assert "private or loopback address" in refused.value.description


@pytest.mark.parametrize("address", ["64:ff9b::808:808", "2002:808:808::1", "2606:4700::1111", "8.8.8.8"])
def test_public_addresses_stay_public(address: str) -> None:
    assert is_public(address)


def test_the_embedded_address_is_the_one_a_gateway_reaches() -> None:
    assert [str(a) for a in embedded_ipv4(__import__("ipaddress").ip_address("64:ff9b::a9fe:a9fe"))] == ["169.254.169.254"]


@pytest.mark.parametrize(("address", "network"), [
    ("203.0.113.77", "203.0.113.0/24"),
    ("::ffff:203.0.113.77", "203.0.113.0/24"),
    ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
    ("not an address", "not an address"),
])
def test_a_quota_counts_an_address_in_its_network(address: str, network: str) -> None:
    assert network_of(address) == network
