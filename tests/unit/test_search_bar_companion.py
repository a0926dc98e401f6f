"""The ExApp's half of the search bar and of the companion's one-request re-checks (fast tier).

The real server's side (the PHP provider, its checks and the OCS endpoint) is tested in
tests/real/test_real_search_bar.py; here: the request the provider sends, the ranking, and how
the verifier uses the companion when Nextcloud says it is enabled and falls back when it is not.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from semantic_mcp.nextcloud.client import NextcloudClient
from semantic_mcp.search.verify import Verifier
from semantic_mcp.nextcloud.companion import CHECK_PATH, Companion
from semantic_mcp.surfaces.search_bar import BadRequest, read_request, titles_first


@pytest.mark.parametrize("body, message", [
    (None, "must be a JSON object"), ({"limit": 5}, "no term"), ({"term": "  "}, "no term"),
    ({"term": "x", "limit": 0}, "positive whole number"), ({"term": "x", "limit": True}, "positive whole number"),
])
def test_a_malformed_request_is_refused_in_one_sentence(body: Any, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        read_request(body)


def test_the_request_is_bounded_and_carries_no_user() -> None:
    assert read_request({"term": " herons ", "limit": 1000}) == ("herons", 100)
    assert read_request({"term": "herons", "user": "bob"}) == ("herons", 10)  # a user in the body is ignored


def test_titles_that_are_the_term_come_first_then_titles_containing_it_in_rank_order() -> None:
    hits = [{"title": t} for t in ("Heron photos", "Bird count", "Herons", "herons.md", "Grey herons")]
    assert [h["title"] for h in titles_first(hits, "Herons")] == [
        "Herons", "herons.md", "Grey herons", "Heron photos", "Bird count"]


@dataclass
class FakeServer:
    """Nextcloud's capabilities and the companion's check endpoint, as the real ones answer."""

    enabled: bool = True
    readable: set[str] = field(default_factory=set)
    checks: list[tuple[str, list[str]]] = field(default_factory=list)
    dav_requests: int = 0

    def handle(self, request: httpx.Request) -> httpx.Response:
        user = request.headers.get("x-user", "")
        if request.url.path == "/ocs/v2.php/cloud/capabilities":
            caps = {"semantic_search": {"version": "0.1.0"}} if self.enabled else {}
            return httpx.Response(200, json={"ocs": {"data": {"capabilities": caps}}})
        if request.url.path == CHECK_PATH:
            if not self.enabled:
                return httpx.Response(404, json={"ocs": {"meta": {"statuscode": 404}, "data": []}})
            items = json.loads(request.content)["items"]
            self.checks.append((user, items))
            return httpx.Response(200, json={"ocs": {"data": {"readable": {i: i in self.readable for i in items}}}})
        self.dav_requests += 1
        return httpx.Response(404)


@dataclass
class Hit:
    doc_key: str
    metadata: dict[str, Any]


class CountingSource:
    """A source whose own check says everything is readable (today's path), counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    async def readable(self, nc: Any, user: str, ids: list[str], **_: Any) -> dict[str, bool | None]:
        self.calls += 1
        return dict.fromkeys(ids, True)


def _client(server: FakeServer) -> NextcloudClient:
    return NextcloudClient("http://nc", lambda user: {"x-user": user}, transport=httpx.MockTransport(server.handle))


async def test_with_the_companion_every_hit_is_rechecked_in_one_request_as_the_caller() -> None:
    server = FakeServer(readable={"note:1", "deck_card:7"})
    companion = Companion(interval=0)
    source = CountingSource()
    nc = _client(server)
    await companion.refresh(nc)
    assert companion.status()["state"] == "installed"
    gone: list = []
    verifier = Verifier(nc, lambda: {"note": source, "deck_card": source, "contact": source}, gone.extend,
                        companion=companion)
    hits = [Hit("note:1", {"owner": "alice"}), Hit("deck_card:7", {"owner": "bob"}),
            Hit("contact:book/x.vcf", {"owner": "alice"}), Hit("file:9", {"owner": "alice"})]
    result = await verifier.verify("alice", hits)
    assert [h.doc_key for h in result.kept] == ["note:1", "deck_card:7"]
    # One request, as alice, for every source the admin left on; the file source is off: not served, not asked.
    assert server.checks == [("alice", ["note:1", "deck_card:7", "contact:book/x.vcf"])]
    assert {ref.key for ref in result.dropped} == {"contact:book/x.vcf", "file:9"}
    assert source.calls == 0
    await nc.aclose()


async def test_without_the_companion_the_sources_check_as_today_and_a_disabled_one_is_noticed() -> None:
    server = FakeServer(enabled=False)
    companion = Companion(interval=0)
    source = CountingSource()
    nc = _client(server)
    await companion.refresh(nc)
    assert companion.status()["state"] == "not installed"
    verifier = Verifier(nc, lambda: {"note": source}, lambda refs: None, companion=companion)
    assert len((await verifier.verify("alice", [Hit("note:1", {"owner": "alice"})])).kept) == 1
    assert source.calls == 1 and server.checks == []
    # Enabled, then disabled between two capability reads: the endpoint's 404 switches back at once.
    companion.present = True
    assert len((await verifier.verify("alice", [Hit("note:1", {"owner": "alice"})])).kept) == 1
    assert companion.present is False and source.calls == 2
    await nc.aclose()


async def test_a_companion_that_does_not_answer_in_time_leaves_the_hits_unverified() -> None:
    async def slow(request: httpx.Request) -> httpx.Response:
        if request.url.path == CHECK_PATH:
            await asyncio.sleep(1.0)
        return httpx.Response(200, json={"ocs": {"data": {"readable": {}}}})

    nc = NextcloudClient("http://nc", lambda user: {}, transport=httpx.MockTransport(slow))
    companion = Companion()
    companion.present = True
    assert await companion.readable(nc, "alice", ["note:1"], timeout=0.05) == {"note:1": None}
    await nc.aclose()


# --- the ExApp's /search-bar route, on the fake Nextcloud's stack ---------------------------------


def _bar(stack: Any, user: str, body: Any) -> httpx.Response:
    """The request the companion's provider sends through exAppRequest: the user in AppAPI's headers only."""
    from fake_nextcloud.exapp_process import APP_ID
    from fake_nextcloud.exapps import encode_pair

    headers = {"ex-app-id": APP_ID, "ex-app-version": "0.1.0", "aa-version": "34.0.0",
               "authorization-app-api": encode_pair(user, stack.exapp.secret)}
    return httpx.post(stack.exapp.url + "/search-bar", json=body, headers=headers, timeout=30)


async def test_the_route_answers_the_signed_users_hits_ranked_with_their_place(stack: Any) -> None:
    mcp = (await stack.search("alice", "dentist appointment"))["results"]
    assert mcp, "the demo content has alice's dentist appointment"
    answer = _bar(stack, "alice", {"term": "dentist appointment", "limit": 5})
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert {f"{r['type']}:{r['id']}" for r in results} >= {mcp[0]["id"]}
    first = next(r for r in results if f"{r['type']}:{r['id']}" == mcp[0]["id"])
    assert first["title"] == mcp[0]["title"] and first["link"].startswith("/")
    assert set(first) == {"type", "id", "title", "link", "place", "starts"}  # no text, no excerpt, no owner
    # bob asks the same with his own signature: none of alice's items.
    bob = {f"{r['type']}:{r['id']}" for r in _bar(stack, "bob", {"term": "dentist appointment"}).json()["results"]}
    assert not bob & {f"{r['type']}:{r['id']}" for r in results}


def test_the_route_refuses_an_unsigned_call_and_a_malformed_body(stack: Any) -> None:
    assert httpx.post(stack.exapp.url + "/search-bar", json={"term": "x"}, timeout=30).status_code == 401
    refused = _bar(stack, "alice", {"limit": 3})
    assert refused.status_code == 400 and refused.json() == {"error": "The search bar request has no term to search for."}
    assert _bar(stack, "", {"term": "dentist"}).status_code == 403  # the app itself is nobody's search bar
