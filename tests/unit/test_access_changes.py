"""What others share, served on a kept verdict only while the companion says at once when access to it may
have ended (ADR 0781; search/verify.py, ex_app's /access-changed, the companion's Listener\\AccessChanged).

The real server's side (alice ends a share, bob's next search no longer gets it, however busy Nextcloud is)
is tests/real/test_real_a_sharer.py."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from semantic_mcp.nextcloud.companion import changed_items
from semantic_mcp.search.recent_verdicts import RecentVerdicts
from semantic_mcp.search.verify import Verifier
from test_recheck_window import OWN, OWN2, SHARED, Clock, Hit, Nextcloud, settle


class Companion:
    """The companion as the verifier sees it: it forwards access changes (or not); its one-request check is
    left to the sources' checks here (``readable`` says it is not there)."""

    def __init__(self, forwards: bool) -> None:
        self.forwards_access_changes = forwards

    async def readable(self, *_: Any, **__: Any) -> None:
        return None


def verifier(nextcloud: Nextcloud, clock: Clock, *, forwards: bool) -> Verifier:
    source = type("Notes", (), {"readable": staticmethod(nextcloud.readable_for)})()
    return Verifier(object(), lambda: {"note": source}, lambda refs: None, timeout=0.2,  # type: ignore[arg-type]
                    short_circuit_seconds=0, window=lambda: 10.0, recent=RecentVerdicts(clock=clock),
                    crowd=0, companion=Companion(forwards))  # type: ignore[arg-type]


async def test_while_the_companion_forwards_access_changes_a_shared_hit_is_served_on_its_kept_verdict() -> None:
    nextcloud, clock = Nextcloud({"alice": {"1", "2"}}), Clock()
    v = verifier(nextcloud, clock, forwards=True)  # busy: every search
    assert (await v.verify("alice", [OWN, SHARED])).kept == [OWN, SHARED]
    clock.now += 3
    nextcloud.gate = asyncio.Event()  # Nextcloud stops answering: the kept verdicts serve both
    result = await v.verify("alice", [OWN, SHARED])
    assert result.kept == [OWN, SHARED] and result.withheld == 0 and result.unverified == 0
    assert len(nextcloud.asked) == 1 and v.metrics["from_window"] == 2
    nextcloud.gate.set()


async def test_without_it_the_same_shared_hit_is_asked_and_withheld_when_nextcloud_cannot_answer() -> None:
    nextcloud, clock = Nextcloud({"alice": {"1", "2"}}), Clock()
    v = verifier(nextcloud, clock, forwards=False)
    assert (await v.verify("alice", [OWN, SHARED])).kept == [OWN, SHARED]
    clock.now += 3
    nextcloud.gate = asyncio.Event()
    result = await v.verify("alice", [OWN, SHARED])
    assert result.kept == [OWN] and result.withheld == 1
    nextcloud.gate.set()


async def test_after_an_access_change_no_earlier_verdict_about_a_shared_item_is_served() -> None:
    nextcloud, clock = Nextcloud({"alice": {"1", "2"}}), Clock()
    v = verifier(nextcloud, clock, forwards=True)
    assert (await v.verify("alice", [OWN, SHARED])).kept == [OWN, SHARED]
    clock.now += 1
    nextcloud.readable["alice"] = {"1"}  # bob ended the share; the companion says so before his request answers
    v.access_changed()
    result = await v.verify("alice", [OWN, SHARED])  # asked again: gone, and removed from the index
    assert result.kept == [OWN] and [ref.key for ref in result.dropped] == ["note:2"]
    assert nextcloud.asked[-1] == ("alice", ["2"])  # the own item still served on its kept verdict
    assert v.metrics["access_changes"] == 1


async def test_a_question_sent_before_the_change_answers_no_search_made_after_it() -> None:
    nextcloud, clock = Nextcloud({"alice": {"1", "2"}}), Clock()
    v = verifier(nextcloud, clock, forwards=True)
    assert (await v.verify("alice", [OWN, SHARED])).kept == [OWN, SHARED]
    clock.now += 6  # past half the window: the next search's question also asks the known items again
    nextcloud.gate = asyncio.Event()
    before = asyncio.create_task(v.verify("alice", [SHARED]))
    await settle()
    v.access_changed()  # while that question is under way
    clock.now += 0.01
    after = asyncio.create_task(v.verify("alice", [SHARED]))
    await settle()
    assert len([a for a in nextcloud.asked if "2" in a[1]]) == 3  # asked anew, not joined to the earlier one
    nextcloud.gate.set()  # both answer "can open", sent before the share ended: not kept for shared items
    await before, await after
    nextcloud.gate = asyncio.Event()
    clock.now += 0.1
    result = await v.verify("alice", [SHARED])  # the question sent after the change counts
    assert result.kept == [SHARED] and result.withheld == 0
    nextcloud.gate.set()


async def test_the_route_is_the_companions_only_and_marks_the_change(stack: Any) -> None:
    from fake_nextcloud.exapp_process import APP_ID
    from fake_nextcloud.exapps import encode_pair

    url = stack.exapp.url + "/access-changed"
    assert httpx.post(url, json={"event": "ShareDeletedEvent"}, timeout=30).status_code == 401  # unsigned
    headers = {"ex-app-id": APP_ID, "ex-app-version": "0.2.0", "aa-version": "34.0.0",
               "authorization-app-api": encode_pair("", stack.exapp.secret)}
    assert httpx.post(url, json={"event": "ShareDeletedEvent"}, headers=headers, timeout=30).status_code == 204
    status = await stack.status("alice")
    assert status["verification"]["access_changes"] >= 1, status["verification"]


async def test_a_file_moved_or_deleted_distrusts_its_verdicts_for_everyone_and_nothing_else() -> None:
    """Alice moves her file out of the folder she shares with bob (no share ends): the companion names it."""
    nextcloud, clock = Nextcloud({"alice": {"1", "2"}, "bob": {"2"}}), Clock()
    v = verifier(nextcloud, clock, forwards=True)
    theirs = Hit("note:2", {"owner": "alice"})
    assert (await v.verify("alice", [OWN, OWN2])).kept == [OWN, OWN2]
    assert (await v.verify("bob", [theirs])).kept == [theirs]
    clock.now += 1
    nextcloud.readable["bob"] = set()
    v.access_changed(["note:2", "file:2"])
    nextcloud.gate = asyncio.Event()  # Nextcloud cannot answer now
    assert (await v.verify("bob", [theirs])).withheld == 1  # not served on the verdict from before the move
    result = await v.verify("alice", [OWN, OWN2])  # her own: note 1 on its kept verdict, note 2 unchecked
    assert result.kept == [OWN, OWN2] and result.unverified == 1 and v.metrics["from_window"] >= 1
    nextcloud.gate.set()


def test_a_notice_names_items_or_is_read_as_the_widest_change() -> None:
    assert changed_items(b'{"event": "NodeRenamedEvent", "items": ["file:7", "note:7"]}') == ["file:7", "note:7"]
    for body in (b'{"event": "ShareDeletedEvent"}', b"", b"not json", b"[]", b'{"items": []}',
                 b'{"items": [7]}', b'{"items": "file:7"}', b'{"items": ["file:1"]' + b', "x:1"' * 300 + b"]}"):
        assert changed_items(body) is None, body
