"""The re-check window (search/verify.py, search/recent_verdicts.py, ADR 0780): while Nextcloud is busy, hits
are served on a verdict Nextcloud gave as the caller within the window; concurrent searches of one user share
one request, a request outlives the search that gave up on it, and known items are asked again before they
expire. At a quiet time every search asks, as without a window.

Most tests here use ``crowd=0``: Nextcloud counts as busy from the first search on."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from semantic_mcp.search.recent_verdicts import RecentVerdicts
from semantic_mcp.search.verify import Verifier


@dataclass
class Hit:
    doc_key: str
    metadata: dict = field(default_factory=dict)


OWN = Hit("note:1", {"owner": "alice"})
SHARED = Hit("note:2", {"owner": "bob"})
OWN2 = Hit("note:2", {"owner": "alice"})  # only the caller's own items are served on a kept verdict


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Nextcloud:
    """The notes source's own check, as Nextcloud would answer it: who may open which note, now."""

    def __init__(self, readable: dict[str, set[str]]) -> None:
        self.readable = readable
        self.asked: list[tuple[str, list[str]]] = []
        self.gate: asyncio.Event | None = None  # while set to an unset event, Nextcloud does not answer

    async def readable_for(self, nc: Any, user: str, ids: list[str], **_: Any) -> dict[str, bool | None]:
        self.asked.append((user, sorted(ids)))
        if self.gate is not None:
            await self.gate.wait()
        return {i: i in self.readable.get(user, set()) for i in ids}


def verifier(nextcloud: Nextcloud, clock: Clock, window: float = 10.0, timeout: float = 0.2,
             crowd: int = 0) -> Verifier:
    source = type("Notes", (), {"readable": staticmethod(nextcloud.readable_for)})()
    return Verifier(object(), lambda: {"note": source}, lambda refs: None, timeout=timeout,  # type: ignore[arg-type]
                    short_circuit_seconds=0, window=lambda: window, recent=RecentVerdicts(clock=clock),
                    crowd=crowd)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_verdict_serves_hits_within_the_window_and_is_asked_again_after_it() -> None:
    nextcloud, clock = Nextcloud({"alice": {"1", "2"}}), Clock()
    v = verifier(nextcloud, clock)
    assert (await v.verify("alice", [OWN, OWN2])).kept == [OWN, OWN2]
    clock.now += 4  # under half the window: served on the verdict, nothing asked
    assert (await v.verify("alice", [OWN, OWN2])).kept == [OWN, OWN2]
    assert len(nextcloud.asked) == 1 and v.metrics["from_window"] == 2
    nextcloud.readable["alice"] = {"1"}  # alice deleted note 2
    clock.now += 7  # past the window: asked again, the deleted note is gone
    result = await v.verify("alice", [OWN, OWN2])
    assert result.kept == [OWN] and [ref.key for ref in result.dropped] == ["note:2"]
    assert len(nextcloud.asked) == 2


async def test_a_search_with_no_hits_asks_nothing() -> None:
    nextcloud, clock = Nextcloud({}), Clock()
    for crowd in (0, 2):
        result = await verifier(nextcloud, clock, crowd=crowd).verify("alice", [])
        assert result.kept == [] and result.dropped == [] and nextcloud.asked == []


async def test_a_verdict_is_never_served_to_another_user() -> None:
    nextcloud, clock = Nextcloud({"alice": {"2"}, "bob": set()}), Clock()
    v = verifier(nextcloud, clock)
    assert (await v.verify("alice", [SHARED])).kept == [SHARED]
    assert (await v.verify("bob", [SHARED])).kept == []
    assert nextcloud.asked == [("alice", ["2"]), ("bob", ["2"])]


async def test_concurrent_searches_of_one_user_share_one_request() -> None:
    nextcloud, clock = Nextcloud({"alice": {"1", "2"}}), Clock()
    nextcloud.gate = asyncio.Event()
    v = verifier(nextcloud, clock, timeout=5)
    searches = [asyncio.create_task(v.verify("alice", [OWN, SHARED])) for _ in range(6)]
    await settle()
    nextcloud.gate.set()
    results = await asyncio.gather(*searches)
    assert all(result.kept == [OWN, SHARED] for result in results)
    assert nextcloud.asked == [("alice", ["1", "2"])]


async def test_a_request_outlives_the_search_that_gave_up_and_fills_the_window() -> None:
    nextcloud, clock = Nextcloud({"alice": {"1", "2"}}), Clock()
    nextcloud.gate = asyncio.Event()
    v = verifier(nextcloud, clock, timeout=0.05)
    first = await v.verify("alice", [OWN, OWN2])
    assert first.kept == [OWN, OWN2] and first.unverified == 2  # ADR 0010's rules: own hits served
    nextcloud.gate.set()  # Nextcloud answers after the search gave up
    await settle()
    second = await v.verify("alice", [OWN, OWN2])
    assert second.kept == [OWN, OWN2] and second.unverified == 0 and second.withheld == 0
    assert len(nextcloud.asked) == 1


async def test_known_items_are_asked_again_in_the_background_before_they_expire() -> None:
    nextcloud, clock = Nextcloud({"alice": {"1", "2"}}), Clock()
    v = verifier(nextcloud, clock)
    await v.verify("alice", [OWN])
    await v.verify("alice", [OWN2])
    clock.now += 6  # past half the window: served at once, and both known items asked again in one request
    assert (await v.verify("alice", [OWN])).kept == [OWN]
    await settle()
    assert nextcloud.asked[-1] == ("alice", ["1", "2"]) and v.metrics["asked_ahead"] == 2
    clock.now += 6  # 12 s after the first answer, 6 s after the second: still within the window
    assert (await v.verify("alice", [OWN2])).kept == [OWN2]
    assert v.metrics["from_window"] == 2


async def test_at_a_quiet_time_every_search_asks_so_an_ended_share_is_gone_at_once() -> None:
    nextcloud, clock = Nextcloud({"alice": {"1", "2"}}), Clock()
    v = verifier(nextcloud, clock, crowd=2)  # one search at a time
    assert (await v.verify("alice", [OWN, SHARED])).kept == [OWN, SHARED]
    nextcloud.readable["alice"] = {"1"}
    clock.now += 1
    assert (await v.verify("alice", [OWN, SHARED])).kept == [OWN]
    assert len(nextcloud.asked) == 2 and not v.busy() and v.metrics["from_window"] == 0


async def test_a_hit_nextcloud_does_not_answer_about_in_time_falls_back_on_its_kept_verdict() -> None:
    nextcloud, clock = Nextcloud({"alice": {"1", "2"}}), Clock()
    v = verifier(nextcloud, clock, timeout=0.05, crowd=2)
    await v.verify("alice", [OWN, OWN2])
    nextcloud.gate = asyncio.Event()  # from now on Nextcloud does not answer in time
    clock.now += 3
    result = await v.verify("alice", [OWN, OWN2, Hit("note:3", {"owner": "bob"})])
    assert result.kept == [OWN, OWN2] and result.withheld == 1 and result.unverified == 0
    assert v.busy() and v.metrics["from_window"] == 2
    nextcloud.gate.set()


async def test_without_a_window_every_search_asks() -> None:
    nextcloud, clock = Nextcloud({"alice": {"1"}}), Clock()
    v = verifier(nextcloud, clock, window=0)
    for _ in range(3):
        assert (await v.verify("alice", [OWN])).kept == [OWN]
    assert len(nextcloud.asked) == 3 and v.metrics["from_window"] == 0


def test_the_verdicts_kept_are_bounded_and_an_older_answer_never_replaces_a_newer_one() -> None:
    clock = Clock()
    recent = RecentVerdicts(clock=clock, max_items=3)
    recent.record("alice", {"note:1": True}, asked_at=clock.now)
    recent.record("alice", {"note:1": False}, asked_at=clock.now - 5)  # sent earlier, landed later
    assert recent.fresh("alice", ["note:1"], 10) == {"note:1": (True, 0.0)}
    recent.record("alice", {f"note:{i}": True for i in range(2, 6)}, asked_at=clock.now)
    assert len(recent.fresh("alice", [f"note:{i}" for i in range(1, 6)], 10)) == 3
    recent.record("alice", {"note:9": None}, asked_at=clock.now)  # "could not say" is not a verdict
    assert recent.fresh("alice", ["note:9"], 10) == {}


async def test_a_users_request_asks_their_known_items_again_before_their_next_search() -> None:
    """A client opens its session before it searches: the known items are asked then, so the search
    finds fresh verdicts. A changed window trusts no verdict given under the old one."""
    nextcloud, clock = Nextcloud({"alice": {"1", "2"}}), Clock()
    window = [10.0]
    source = type("Notes", (), {"readable": staticmethod(nextcloud.readable_for)})()
    v = Verifier(object(), lambda: {"note": source}, lambda refs: None, timeout=0.2,  # type: ignore[arg-type]
                 short_circuit_seconds=0, window=lambda: window[0], recent=RecentVerdicts(clock=clock), crowd=0)
    await v.verify("alice", [OWN, OWN2])
    v.ask_ahead("alice")  # fresh: nothing to ask
    v.ask_ahead("bob")  # knows nothing of bob
    await settle()
    assert len(nextcloud.asked) == 1
    window[0] = 20.0
    v.ask_ahead("alice")
    await settle()
    assert nextcloud.asked[-1] == ("alice", ["1", "2"])
    assert (await v.verify("alice", [OWN, OWN2])).kept == [OWN, OWN2]
    assert len(nextcloud.asked) == 2 and v.metrics["from_window"] == 2


async def test_a_request_after_a_pause_asks_the_known_items_although_nextcloud_is_not_busy() -> None:
    """A burst of clients after a quiet minute: their sessions open before Nextcloud counts as busy, and
    their known items are asked then, so the burst's first searches have fresh verdicts to fall back on."""
    nextcloud, clock = Nextcloud({"alice": {"1", "2"}}), Clock()
    v = verifier(nextcloud, clock, crowd=99)  # never busy
    await v.verify("alice", [OWN, OWN2])
    clock.now += 60
    v.ask_ahead("alice")
    await settle()
    assert nextcloud.asked[-1] == ("alice", ["1", "2"]) and v.metrics["asked_ahead"] == 2
    v.ask_ahead("alice")  # answered a moment ago: not asked again
    await settle()
    assert len(nextcloud.asked) == 2


async def test_a_search_that_starts_while_two_others_wait_for_rechecks_makes_nextcloud_count_as_busy() -> None:
    nextcloud, clock = Nextcloud({"alice": {"1", "2"}}), Clock()
    nextcloud.gate = asyncio.Event()
    v = verifier(nextcloud, clock, crowd=2, timeout=5)
    waiting = [asyncio.create_task(v.verify("alice", [OWN])) for _ in range(2)]
    await settle()
    assert not v.busy()
    third = asyncio.create_task(v.verify("alice", [SHARED]))
    await settle()
    assert v.busy()
    nextcloud.gate.set()
    await asyncio.gather(*waiting, third)


async def test_a_kept_verdict_that_expires_while_the_search_waits_is_not_served() -> None:
    nextcloud, clock = Nextcloud({"alice": {"1", "2"}}), Clock()
    v = verifier(nextcloud, clock, timeout=0.3)
    await v.verify("alice", [SHARED])
    nextcloud.gate = asyncio.Event()  # Nextcloud stops answering
    clock.now += 9.9
    search = asyncio.create_task(v.verify("alice", [SHARED, Hit("note:3", {"owner": "bob"})]))
    await settle()
    clock.now += 0.5  # the kept verdict passes the window while the search waits for note:3
    result = await search
    assert result.kept == [] and result.withheld == 2
    nextcloud.gate.set()


async def test_what_others_share_is_never_served_on_a_kept_verdict() -> None:
    """A share ended (or an ACL that now denies) takes effect at once, however busy Nextcloud is."""
    nextcloud, clock = Nextcloud({"alice": {"1", "2"}}), Clock()
    v = verifier(nextcloud, clock, crowd=0)  # busy: every search
    assert (await v.verify("alice", [OWN, SHARED])).kept == [OWN, SHARED]
    nextcloud.readable["alice"] = {"1"}  # bob ended the share
    clock.now += 1
    result = await v.verify("alice", [OWN, SHARED])
    assert result.kept == [OWN] and [ref.key for ref in result.dropped] == ["note:2"]
    nextcloud.gate = asyncio.Event()  # Nextcloud stops answering: the shared hit is withheld, never served
    clock.now += 1
    result = await v.verify("alice", [OWN, SHARED])
    assert result.kept == [OWN] and result.withheld == 1
