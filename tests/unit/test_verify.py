"""What a hit becomes when Nextcloud cannot re-check it in time (search/verify.py), decided explicitly.

A Nextcloud whose PHP workers are all held by proxied searches cannot answer the app's re-checks;
here that is a server that accepts the connection and never answers.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import httpx

from semantic_mcp.nextcloud.client import NextcloudClient
from semantic_mcp.search.verify import Verifier
from semantic_mcp.sources import make_sources


@dataclass
class Hit:
    doc_key: str
    metadata: dict = field(default_factory=dict)


OWN = Hit("file:10", {"owner": "alice"})
SHARED = Hit("file:20", {"owner": "bob"})
UNKNOWN = Hit("note:30")  # indexed before owners were recorded (now every source asks Nextcloud)


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


async def test_after_a_pause_one_search_probes_with_a_short_bound_and_a_good_answer_resumes_checks() -> None:
    state = {"answer": False, "calls": 0}
    found = """<?xml version="1.0"?><d:multistatus xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">
      <d:response><d:href>/remote.php/dav/files/alice/shared.md</d:href><d:propstat><d:prop>
      <oc:fileid>20</oc:fileid></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
      </d:multistatus>"""

    async def handler(request: httpx.Request) -> httpx.Response:
        state["calls"] += 1
        if not state["answer"]:
            await asyncio.sleep(3600)
        return httpx.Response(207, content=found.encode())

    verifier = Verifier(client(handler), make_sources, lambda refs: None, timeout=0.5, short_circuit_seconds=0.2,
                        probe_timeout=0.1)
    await verifier.verify("alice", [SHARED])  # times out after 0.5 s: checks pause
    await asyncio.sleep(0.25)
    started = time.monotonic()
    probes = await asyncio.gather(*(verifier.verify("alice", [SHARED]) for _ in range(5)))
    assert time.monotonic() - started < 0.4  # the probe gives up after 0.1 s; the others do not wait
    assert state["calls"] == 2 and all(p.withheld == 1 for p in probes)
    state["answer"] = True
    await asyncio.sleep(0.25)
    assert (await verifier.verify("alice", [SHARED])).kept == [SHARED]
    assert (await verifier.verify("alice", [SHARED])).kept == [SHARED]  # checks are back to normal
    assert state["calls"] == 4
