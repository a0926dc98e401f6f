"""What a hit becomes when Nextcloud cannot re-check it in time (search/verify.py), decided explicitly.

A Nextcloud whose PHP workers are all held by proxied searches cannot answer the app's re-checks;
here that is a server that accepts the connection and never answers.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import httpx

from semantic_mcp.nextcloud import NextcloudClient
from semantic_mcp.search.verify import Verifier
from semantic_mcp.sources import make_sources


@dataclass
class Hit:
    doc_key: str
    metadata: dict = field(default_factory=dict)


OWN = Hit("file:10", {"owner": "alice"})
SHARED = Hit("file:20", {"owner": "bob"})
UNKNOWN = Hit("note:30")  # indexed before owners were recorded, or a read-only note from a share


def client(handler) -> NextcloudClient:
    return NextcloudClient("https://cloud.test", lambda user: {}, transport=httpx.MockTransport(handler))


async def test_unverifiable_own_hits_are_served_and_shared_ones_withheld_then_checks_pause() -> None:
    calls = []

    async def never_answers(request: httpx.Request) -> httpx.Response:
        calls.append(request.method)
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    verifier = Verifier(client(never_answers), make_sources, lambda refs: None, timeout=0.3, short_circuit_seconds=60)
    first = await verifier.verify("alice", [OWN, SHARED, UNKNOWN])
    assert first.kept == [OWN] and first.unverified == 1 and first.withheld == 2 and first.dropped == []
    assert calls  # it did try

    calls.clear()
    started = time.monotonic()
    second = await verifier.verify("alice", [OWN, SHARED])
    assert time.monotonic() - started < 0.1 and calls == []  # short-circuited: no waiting on Nextcloud
    assert second.kept == [OWN] and second.withheld == 1
    assert verifier.metrics["withheld"] == 3 and verifier.metrics["short_circuited_searches"] == 1


async def test_a_shared_hit_nextcloud_confirms_is_served_and_a_gone_one_dropped() -> None:
    found = """<?xml version="1.0"?><d:multistatus xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">
      <d:response><d:href>/remote.php/dav/files/alice/shared.md</d:href><d:propstat><d:prop>
      <oc:fileid>20</oc:fileid></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
      </d:multistatus>"""

    async def answers(request: httpx.Request) -> httpx.Response:
        return httpx.Response(207, content=found.encode())

    gone = []
    verifier = Verifier(client(answers), make_sources, gone.extend)
    result = await verifier.verify("alice", [OWN, SHARED])
    assert result.kept == [SHARED] and [ref.key for ref in result.dropped] == ["file:10"]
    assert result.unverified == 0 and result.withheld == 0 and [ref.key for ref in gone] == ["file:10"]
