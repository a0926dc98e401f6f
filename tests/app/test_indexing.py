"""Indexing through the real app: every source follows creates, edits, renames, moves, deletes and
restores, by webhooks, by reconciliation alone, and with duplicated, shuffled and replayed events;
a killed worker resumes without duplicates or re-embedding; bad input is skipped with a reason;
users stay isolated; admin settings apply live.

Everything is observed as users observe it (the MCP tools through the AppAPI proxy) or in the
fake Nextcloud's own state. Each test uses made-up words of its own, so tests sharing the session
stack cannot see each other's documents. Tests that change global switches (dropped webhooks,
the reconciliation interval, admin settings) run on private stacks.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import re
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from stack import APP_ID, Stack

from fake_nextcloud.exapps import signed_headers
from fake_nextcloud.files import Generated
from fake_nextcloud.seed import days_from, event_ics, vcard

ALICE, BOB = "alice", "bob"
CANARY = ("Project Phoenix billing migration", "Project plan.md")  # seeded for alice in both profiles
EMBED_LOG = re.compile(r"Indexing (\d+) document\(s\): (\d+) chunk\(s\), (\d+) newly embedded")


# --- helpers ----------------------------------------------------------------------------------


async def results(stack: Stack, user: str, query: str, doc_type: str | None = None, **args: Any) -> list[dict]:
    """Search as ``user``; every call also checks that no document comes back twice."""
    if doc_type:
        args["doc_types"] = [doc_type]
    found = (await stack.search(user, query, limit=args.pop("limit", 10), use_reranking=False, **args))["results"]
    ids = [hit["id"] for hit in found]
    assert len(ids) == len(set(ids)), f"duplicate hits for {query!r}: {ids}"
    return found


async def lookup(stack: Stack, user: str, query: str, doc_id: str, doc_type: str, **args: Any) -> dict | None:
    """The hit for ``doc_id`` among ``user``'s results for ``query``, or None."""
    return next((hit for hit in await results(stack, user, query, doc_type, **args) if hit["id"] == doc_id), None)


async def until(check: Callable[[], Awaitable[tuple[bool, Any]]], what: str, timeout: float = 60.0,
                interval: float = 0.5) -> Any:
    """Poll ``check`` (returning ``(done, observation)``) until done; fail with the last observation."""
    deadline = time.monotonic() + timeout
    while True:
        done, seen = await check()
        if done:
            return seen
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout:.0f}s; last seen: {seen!r}")
        await asyncio.sleep(interval)


@dataclass
class Doc:
    """One document under test: how to find it, and what it must look like in the index."""

    user: str
    doc_type: str
    doc_id: str
    query: str
    title: str | None = None
    location: str | None = None
    contains: tuple[str, ...] = ()
    lacks: tuple[str, ...] = ()

    def expect(self, **changes: Any) -> Doc:
        for key, value in changes.items():
            setattr(self, key, value)
        return self

    def problems(self, hit: dict | None) -> list[str]:
        if hit is None:
            return ["not found"]
        wrong = []
        if self.title is not None and hit["title"] != self.title:
            wrong.append(f"title {hit['title']!r} != {self.title!r}")
        if self.location is not None and hit["location"] != self.location:
            wrong.append(f"location {hit['location']!r} != {self.location!r}")
        wrong += [f"excerpt lacks {word!r}" for word in self.contains if word not in hit["excerpt"]]
        wrong += [f"excerpt still has {word!r}" for word in self.lacks if word in hit["excerpt"]]
        return wrong

    async def check(self, stack: Stack) -> list[str]:
        return self.problems(await lookup(stack, self.user, self.query, self.doc_id, self.doc_type))

    async def check_gone(self, stack: Stack) -> list[str]:
        hit = await lookup(stack, self.user, self.query, self.doc_id, self.doc_type)
        return [] if hit is None else [f"still found: {hit['title']!r} at {hit['location']!r}"]


async def assert_indexed(stack: Stack, *docs: Doc) -> None:
    """Right now (after wait_idle): every doc is found and looks as expected."""
    problems = {doc.doc_id: p for doc in docs if (p := await doc.check(stack))}
    assert not problems, problems


async def assert_gone(stack: Stack, *docs: Doc) -> None:
    problems = {doc.doc_id: p for doc in docs if (p := await doc.check_gone(stack))}
    assert not problems, problems


async def eventually_indexed(stack: Stack, *docs: Doc, timeout: float = 60.0, what: str = "") -> None:
    async def check() -> tuple[bool, Any]:
        problems = {doc.doc_id: p for doc in docs if (p := await doc.check(stack))}
        return not problems, problems

    await until(check, what or f"{[d.doc_id for d in docs]} indexed as expected", timeout, interval=1.0)


async def eventually_gone(stack: Stack, *docs: Doc, timeout: float = 60.0, what: str = "") -> None:
    async def check() -> tuple[bool, Any]:
        problems = {doc.doc_id: p for doc in docs if (p := await doc.check_gone(stack))}
        return not problems, problems

    await until(check, what or f"{[d.doc_id for d in docs]} removed", timeout, interval=1.0)


async def indexed_count(stack: Stack, user: str, doc_type: str) -> int:
    return (await stack.status(user))["sources"][doc_type]["indexed"]


async def eventually_count(stack: Stack, user: str, doc_type: str, expected: int, timeout: float = 60.0) -> None:
    async def check() -> tuple[bool, Any]:
        count = await indexed_count(stack, user, doc_type)
        return count == expected, count

    await until(check, f"{user}'s indexed {doc_type} count == {expected}", timeout, interval=1.0)


async def assert_canary(stack: Stack) -> None:
    """The rest of the index is intact: a seeded document is still found."""
    titles = [hit["title"] for hit in await results(stack, ALICE, CANARY[0], "file")]
    assert CANARY[1] in titles, titles


def deliver(stack: Stack, payload: Any, user: str = ALICE, raw: bytes | None = None) -> httpx.Response:
    """POST a webhook delivery to the app exactly as the webhook worker does (AppAPI-signed, no Content-Type)."""
    headers = signed_headers(stack.fake.exapp(APP_ID), user)
    body = raw if raw is not None else json.dumps(payload).encode()
    return httpx.post(f"{stack.exapp.url}/webhooks/nextcloud", content=body, headers=headers, timeout=30)


@contextmanager
def emissions(stack: Stack) -> Iterator[list[dict]]:
    """Record, in the order Nextcloud fires them, the payloads of events the app has webhooks for
    (the delivery log has them in delivery order, which is shuffled)."""
    hooks = stack.fake.webhooks
    registered = {hook.event for hook in hooks.hooks.values() if hook.app_id == APP_ID}
    emitted: list[dict] = []
    dispatch = hooks.dispatch

    def recording(event_class: str, actor: str, event: dict) -> None:
        if event_class in registered:
            emitted.append({"event": {**copy.deepcopy(event), "class": event_class},
                            "user": {"uid": actor, "displayName": actor}, "time": int(time.time())})
        dispatch(event_class, actor, event)

    hooks.dispatch = recording  # type: ignore[method-assign]
    try:
        yield emitted
    finally:
        del hooks.dispatch


def restore_from_trash(stack: Stack, user: str, file_id: int) -> None:
    """Restore through the trash bin's WebDAV API, as the Files app does (no file event fires)."""
    fake = stack.fake
    with fake.state.lock:
        item = next(i for i in fake.state.files.trash[user] if i.node.id == file_id)
        trash_name, name = item.trash_name, item.node.name
    base = f"{fake.url}/remote.php/dav/trashbin/{user}"
    response = httpx.request(
        "MOVE", f"{base}/trash/{trash_name}", auth=fake.auth(user),
        headers={"Destination": f"{base}/restore/{name}"},
    )
    assert response.status_code == 201, response.text


def calendar_id(uri: str) -> str:
    return f"calendar_event:personal/{uri}"


def contact_id(uri: str) -> str:
    return f"contact:contacts/{uri}"


def set_setting(stack: Stack, key: str, value: str) -> None:
    stack.fake.set_admin_setting(APP_ID, key, value)


async def apply_setting(stack: Stack, key: str, value: str) -> None:
    """Change an admin setting and wait until the app has re-read it (it logs each change)."""
    seen = stack.log().count("Admin settings changed")
    set_setting(stack, key, value)

    async def applied() -> tuple[bool, Any]:
        return stack.log().count("Admin settings changed") > seen, value

    await until(applied, f"the app applied {key}={value!r}", timeout=10, interval=0.2)


# --- private stacks ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """This module's own seeded stack: its many changes must not leak into other modules' rankings."""
    own = Stack(tmp_path_factory.mktemp("indexing")).start()
    try:
        yield own
    finally:
        own.stop()


@pytest.fixture(scope="module")
def polled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A private stack whose webhooks are lost: only reconciliation (every 1.5 s) keeps the index current."""
    own = Stack(tmp_path_factory.mktemp("polled"), profile="minimal").start()
    own.fake.webhooks.set_dropping(True)
    set_setting(own, "reconcile_interval_minutes", "0.025")
    try:
        yield own
    finally:
        own.stop()


# --- 1a. webhooks alone (shared stack; reconciliation runs every 15 minutes there) ------------------


async def test_file_create_edit_rename_move_delete_by_webhooks(stack: Stack) -> None:
    fake = stack.fake
    deliveries = len(fake.webhooks.events())
    before = await indexed_count(stack, ALICE, "file")
    a_id = fake.put_file(ALICE, "Zorbdir/inner/zorblax-plan.md", "Zorblax expedition: pack the quillwort lanterns.")
    b_id = fake.put_file(ALICE, "Zorbdir/inner/deep/zorblax-list.txt", "Zorblax checklist: the brandlewick compass.")
    await stack.wait_idle(ALICE)
    a = Doc(ALICE, "file", f"file:{a_id}", "zorblax quillwort lanterns", "zorblax-plan.md",
            "/Zorbdir/inner/zorblax-plan.md", contains=("quillwort",))
    b = Doc(ALICE, "file", f"file:{b_id}", "zorblax brandlewick compass", "zorblax-list.txt",
            "/Zorbdir/inner/deep/zorblax-list.txt", contains=("brandlewick",))
    await assert_indexed(stack, a, b)
    assert await indexed_count(stack, ALICE, "file") == before + 2

    fake.put_file(ALICE, "Zorbdir/inner/zorblax-plan.md", "Zorblax expedition: pack the marmalite flares.")
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, a.expect(query="zorblax marmalite flares", contains=("marmalite",),
                                         lacks=("quillwort",)))

    fake.move(ALICE, "Zorbdir/inner/zorblax-plan.md", "Zorbdir/inner/zorblax-route.md")
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, a.expect(title="zorblax-route.md", location="/Zorbdir/inner/zorblax-route.md",
                                         contains=("marmalite", "zorblax-route.md")))

    # One event for the folder only: everything below it must follow.
    fake.move(ALICE, "Zorbdir/inner", "Zorbmoved")
    await stack.wait_idle(ALICE)
    a.expect(location="/Zorbmoved/zorblax-route.md", contains=("marmalite", "/Zorbmoved/zorblax-route.md"))
    b.expect(location="/Zorbmoved/deep/zorblax-list.txt", contains=("brandlewick", "/Zorbmoved/deep/"))
    await assert_indexed(stack, a, b)
    under_new = {hit["id"] for hit in await results(stack, ALICE, "zorblax", "file", path_prefix="/Zorbmoved/")}
    assert {a.doc_id, b.doc_id} <= under_new
    assert not await results(stack, ALICE, "zorblax", "file", path_prefix="/Zorbdir/inner")

    fake.delete(ALICE, "Zorbmoved/zorblax-route.md")
    await stack.wait_idle(ALICE)
    assert await indexed_count(stack, ALICE, "file") == before + 1
    await assert_gone(stack, a)

    fake.delete(ALICE, "Zorbmoved")  # a folder: NodeDeletedEvent has only its path
    await stack.wait_idle(ALICE)
    assert await indexed_count(stack, ALICE, "file") == before
    await assert_gone(stack, b)
    sent = fake.webhooks.events()[deliveries:]
    assert sent and all(d.status == 200 for d in sent), [(d.event, d.status) for d in sent if d.status != 200]


async def test_note_create_edit_retitle_move_delete_by_webhooks(stack: Stack) -> None:
    fake = stack.fake
    before = await indexed_count(stack, ALICE, "note")
    n1 = fake.create_note(ALICE, "Fennimore brewing log", "Fennimore: steep the cobblewort for nine minutes.",
                          category="Fenni/Brews")
    n2 = fake.create_note(ALICE, "Fennimore tasting", "Fennimore: the dravelberry blend tasted smoky.",
                          category="Fenni/Brews")
    await stack.wait_idle(ALICE)
    first = Doc(ALICE, "note", f"note:{n1}", "fennimore cobblewort", "Fennimore brewing log", "Fenni/Brews",
                contains=("cobblewort",))
    second = Doc(ALICE, "note", f"note:{n2}", "fennimore dravelberry", "Fennimore tasting", "Fenni/Brews",
                 contains=("dravelberry",))
    await assert_indexed(stack, first, second)
    assert await indexed_count(stack, ALICE, "note") == before + 2

    fake.update_note(ALICE, n1, content="Fennimore: steep the pellucine leaves for four minutes.")
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, first.expect(query="fennimore pellucine", contains=("pellucine",),
                                             lacks=("cobblewort",)))

    fake.update_note(ALICE, n1, title="Fennimore steeping guide")  # Written + Renamed on the .md file
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, first.expect(title="Fennimore steeping guide"))

    fake.update_note(ALICE, n2, category="Fenni/Archive")  # the file moves to another folder
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, second.expect(location="Fenni/Archive"))

    # Renaming the category folder: one event for the folder, both notes below it change category.
    fake.move(ALICE, "Notes/Fenni", "Notes/Fennimore")
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, first.expect(location="Fennimore/Brews"), second.expect(location="Fennimore/Archive"))

    fake.delete_note(ALICE, n1)
    await stack.wait_idle(ALICE)
    assert await indexed_count(stack, ALICE, "note") == before + 1
    await assert_gone(stack, first)

    fake.delete(ALICE, "Notes/Fennimore")  # the whole category folder, with the remaining note
    await stack.wait_idle(ALICE)
    assert await indexed_count(stack, ALICE, "note") == before
    await assert_gone(stack, second)


async def test_calendar_event_create_edit_retitle_delete_restore_by_webhooks(stack: Stack) -> None:
    fake = stack.fake
    before = await indexed_count(stack, ALICE, "calendar_event")
    uri = "glimwick-recital.ics"
    start = days_from(fake.clock.now(), 12, 18)  # the fake's clock, which the app shares

    def ics(summary: str, description: str) -> str:
        return event_ics("glimwick@example.test", summary, start, 90, description, "Old Town Hall")

    fake.put_calendar_object(ALICE, "personal", uri, ics("Glimwick recital", "Bring the ossifrage sheet music."))
    await stack.wait_idle(ALICE)
    event = Doc(ALICE, "calendar_event", calendar_id(uri), "glimwick ossifrage", "Glimwick recital",
                contains=("ossifrage",))
    await assert_indexed(stack, event)
    hit = await lookup(stack, ALICE, event.query, event.doc_id, "calendar_event")
    assert hit["event_start"] == start.isoformat().replace("+00:00", "Z")
    assert await indexed_count(stack, ALICE, "calendar_event") == before + 1

    fake.put_calendar_object(ALICE, "personal", uri, ics("Glimwick recital", "Bring the wimbrel tuning fork."))
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, event.expect(query="glimwick wimbrel", contains=("wimbrel",), lacks=("ossifrage",)))

    fake.put_calendar_object(ALICE, "personal", uri, ics("Glimwick gala concert", "Bring the wimbrel tuning fork."))
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, event.expect(title="Glimwick gala concert", contains=("Glimwick gala concert",)))

    fake.delete_calendar_object(ALICE, "personal", uri)  # into the calendar trash bin
    await stack.wait_idle(ALICE)
    assert await indexed_count(stack, ALICE, "calendar_event") == before
    await assert_gone(stack, event)

    fake.restore_calendar_object(ALICE, "personal", uri)
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, event)
    assert await indexed_count(stack, ALICE, "calendar_event") == before + 1

    fake.delete_calendar_object(ALICE, "personal", uri)
    await stack.wait_idle(ALICE)
    assert await indexed_count(stack, ALICE, "calendar_event") == before
    await assert_gone(stack, event)


# --- 1c. duplicated, shuffled and late events (shared stack) ----------------------------------------


def _burst(fake: Any) -> dict[str, int]:
    """Changes of every event-driven type in quick succession; returns the ids of what was created."""
    ids = {"a": fake.put_file(ALICE, "Chaos/kelp-a.md", "Glimmerkelp first draft: harvest the sporewing.")}
    fake.put_file(ALICE, "Chaos/kelp-a.md", "Glimmerkelp final draft: harvest the thornapple.")
    fake.move(ALICE, "Chaos/kelp-a.md", "Chaos/kelp-b.md")
    ids["c"] = fake.put_file(ALICE, "Chaos/sub/kelp-c.md", "Glimmerkelp appendix: the driftlamp inventory.")
    fake.move(ALICE, "Chaos/sub", "Chaos/moved")
    ids["d"] = fake.put_file(ALICE, "Chaos/kelp-d.md", "Glimmerkelp scrap: the vanishing bramblecoil.")
    fake.delete(ALICE, "Chaos/kelp-d.md")
    ids["e_old"] = fake.put_file(ALICE, "Chaos/kelp-e.md", "Glimmerkelp old memo: the obsolete fernwhistle.")
    fake.delete(ALICE, "Chaos/kelp-e.md")
    ids["e_new"] = fake.put_file(ALICE, "Chaos/kelp-e.md", "Glimmerkelp new memo: the current moonbarrow.")

    ids["n"] = fake.create_note(ALICE, "Glimmerkelp journal", "Glimmerkelp: the tidepool smelled of saffrine.",
                                category="Chaoscat")
    fake.update_note(ALICE, ids["n"], content="Glimmerkelp: the tidepool smelled of cardamoss.")
    fake.update_note(ALICE, ids["n"], title="Glimmerkelp logbook")
    fake.update_note(ALICE, ids["n"], category="Chaoscat2")
    ids["n_gone"] = fake.create_note(ALICE, "Glimmerkelp draft", "Glimmerkelp: a discarded quibblestone idea.")
    fake.delete_note(ALICE, ids["n_gone"])

    def event(uri: str, summary: str, description: str) -> None:
        start = days_from(fake.clock.now(), 30, 9)
        fake.put_calendar_object(ALICE, "personal", uri, event_ics(uri + "@x", summary, start, 60, description))

    event("kelp-1.ics", "Glimmerkelp dive", "Dive at the pelagrine reef.")
    event("kelp-1.ics", "Glimmerkelp night dive", "Dive at the lumenfold reef.")
    event("kelp-2.ics", "Glimmerkelp cancelled", "The gorsewind trip.")
    fake.delete_calendar_object(ALICE, "personal", "kelp-2.ics")
    event("kelp-3.ics", "Glimmerkelp restored", "The halcyra meeting.")
    fake.delete_calendar_object(ALICE, "personal", "kelp-3.ics")
    fake.restore_calendar_object(ALICE, "personal", "kelp-3.ics")
    return ids


async def test_duplicated_shuffled_and_replayed_events_converge_on_the_truth(stack: Stack) -> None:
    """A burst of changes of every event-driven type, delivered twice and in random order; then every
    event of the burst once more, newest first (late duplicates). The index must end as Nextcloud is."""
    fake, hooks = stack.fake, stack.fake.webhooks
    counts = {t: await indexed_count(stack, ALICE, t) for t in ("file", "note", "calendar_event")}
    first_delivery = len(hooks.events())
    hooks.duplicate = hooks.shuffle = True
    try:
        with emissions(stack) as emitted:
            ids = _burst(fake)
        await stack.wait_idle(ALICE)
    finally:
        hooks.duplicate = hooks.shuffle = False

    live = [
        Doc(ALICE, "file", f"file:{ids['a']}", "glimmerkelp thornapple", "kelp-b.md", "/Chaos/kelp-b.md",
            contains=("thornapple",), lacks=("sporewing",)),
        Doc(ALICE, "file", f"file:{ids['c']}", "glimmerkelp driftlamp", "kelp-c.md", "/Chaos/moved/kelp-c.md"),
        Doc(ALICE, "file", f"file:{ids['e_new']}", "glimmerkelp moonbarrow", "kelp-e.md", "/Chaos/kelp-e.md",
            contains=("moonbarrow",)),
        Doc(ALICE, "note", f"note:{ids['n']}", "glimmerkelp cardamoss", "Glimmerkelp logbook", "Chaoscat2",
            contains=("cardamoss",), lacks=("saffrine",)),
        Doc(ALICE, "calendar_event", calendar_id("kelp-1.ics"), "glimmerkelp lumenfold", "Glimmerkelp night dive",
            contains=("lumenfold",), lacks=("pelagrine",)),
        Doc(ALICE, "calendar_event", calendar_id("kelp-3.ics"), "glimmerkelp halcyra", "Glimmerkelp restored"),
    ]
    gone = [
        Doc(ALICE, "file", f"file:{ids['d']}", "glimmerkelp bramblecoil"),
        Doc(ALICE, "file", f"file:{ids['e_old']}", "glimmerkelp fernwhistle"),
        Doc(ALICE, "note", f"note:{ids['n_gone']}", "glimmerkelp quibblestone"),
        Doc(ALICE, "calendar_event", calendar_id("kelp-2.ics"), "glimmerkelp gorsewind"),
    ]
    expected_counts = {"file": counts["file"] + 3, "note": counts["note"] + 1,
                       "calendar_event": counts["calendar_event"] + 2}

    async def assert_truth(when: str) -> None:
        # Counts first: a search would drop (and then remove) what its re-check finds gone.
        status = await stack.status(ALICE)
        actual = {t: status["sources"][t]["indexed"] for t in expected_counts}
        assert actual == expected_counts, f"{when}: indexed counts {actual} != {expected_counts}"
        await assert_indexed(stack, *live)
        await assert_gone(stack, *gone)

    burst = hooks.events()[first_delivery:]
    assert len(burst) == 2 * len(emitted) and all(d.status == 200 for d in burst)
    await assert_truth("after the shuffled, duplicated burst")

    # Late duplicates, newest first: stale content and deletes must not win over what is now true.
    for payload in reversed(emitted):
        response = deliver(stack, payload)
        assert response.status_code == 200, response.text
    await stack.wait_idle(ALICE)
    await assert_truth("after replaying the burst newest first")


# --- 1b. reconciliation alone (private stack, webhooks dropped) ----------------------------------


async def _file_by_reconciliation(stack: Stack) -> None:
    fake = stack.fake
    before = await indexed_count(stack, ALICE, "file")
    a_id = fake.put_file(ALICE, "Orbit/inner/plumbob-notes.md", "Plumbob survey: the vexillary tower leans north.")
    b_id = fake.put_file(ALICE, "Orbit/inner/deep/plumbob-map.txt", "Plumbob map: the quernstone bridge.")
    a = Doc(ALICE, "file", f"file:{a_id}", "plumbob vexillary tower", "plumbob-notes.md",
            "/Orbit/inner/plumbob-notes.md", contains=("vexillary",))
    b = Doc(ALICE, "file", f"file:{b_id}", "plumbob quernstone bridge", "plumbob-map.txt",
            "/Orbit/inner/deep/plumbob-map.txt")
    await eventually_indexed(stack, a, b, what="file: created")

    fake.put_file(ALICE, "Orbit/inner/plumbob-notes.md", "Plumbob survey: the gallimaufry tower leans south.")
    await eventually_indexed(stack, a.expect(query="plumbob gallimaufry tower", contains=("gallimaufry",),
                                             lacks=("vexillary",)), what="file: edited")

    fake.move(ALICE, "Orbit/inner/plumbob-notes.md", "Orbit/inner/plumbob-survey.md")
    await eventually_indexed(stack, a.expect(title="plumbob-survey.md", location="/Orbit/inner/plumbob-survey.md"),
                             what="file: renamed")

    fake.move(ALICE, "Orbit/inner", "Orbital")
    await eventually_indexed(stack, a.expect(location="/Orbital/plumbob-survey.md"),
                             b.expect(location="/Orbital/deep/plumbob-map.txt"), what="file: folder moved")

    fake.delete(ALICE, "Orbital/plumbob-survey.md")
    await eventually_count(stack, ALICE, "file", before + 1)
    await assert_gone(stack, a)  # counted first: removed by reconciliation, not by a search's re-check

    restore_from_trash(stack, ALICE, a_id)
    await eventually_indexed(stack, a, what="file: restored from the trash bin")
    await eventually_count(stack, ALICE, "file", before + 2)


async def _note_by_reconciliation(stack: Stack) -> None:
    fake = stack.fake
    before = await indexed_count(stack, ALICE, "note")
    n = fake.create_note(ALICE, "Plumbob ledger", "Plumbob ledger: owe the tinsmith three florins.",
                         category="Plumcat/Sub")
    note = Doc(ALICE, "note", f"note:{n}", "plumbob tinsmith florins", "Plumbob ledger", "Plumcat/Sub",
               contains=("tinsmith",))
    await eventually_indexed(stack, note, what="note: created")

    fake.update_note(ALICE, n, content="Plumbob ledger: owe the wheelwright two crowns.")
    await eventually_indexed(stack, note.expect(query="plumbob wheelwright crowns", contains=("wheelwright",),
                                                lacks=("tinsmith",)), what="note: edited")

    fake.update_note(ALICE, n, title="Plumbob accounts")
    await eventually_indexed(stack, note.expect(title="Plumbob accounts"), what="note: retitled")

    fake.move(ALICE, "Notes/Plumcat", "Notes/Plumfolder")
    await eventually_indexed(stack, note.expect(location="Plumfolder/Sub"), what="note: category folder moved")

    fake.delete_note(ALICE, n)
    await eventually_count(stack, ALICE, "note", before)
    await assert_gone(stack, note)  # counted first: removed by reconciliation, not by a search's re-check


async def _calendar_by_reconciliation(stack: Stack) -> None:
    fake = stack.fake
    before = await indexed_count(stack, ALICE, "calendar_event")
    uri, start = "plumbob-fair.ics", days_from(fake.clock.now(), 20, 15)

    def put(summary: str, description: str) -> None:
        fake.put_calendar_object(ALICE, "personal", uri, event_ics("plumbob-fair@x", summary, start, 60, description))

    put("Plumbob fair", "Judge the gourdling contest.")
    event = Doc(ALICE, "calendar_event", calendar_id(uri), "plumbob gourdling contest", "Plumbob fair",
                contains=("gourdling",))
    await eventually_indexed(stack, event, what="calendar: created")

    put("Plumbob fair", "Judge the turnipshire contest.")
    await eventually_indexed(stack, event.expect(query="plumbob turnipshire", contains=("turnipshire",),
                                                 lacks=("gourdling",)), what="calendar: edited")

    put("Plumbob harvest fair", "Judge the turnipshire contest.")
    await eventually_indexed(stack, event.expect(title="Plumbob harvest fair"), what="calendar: retitled")

    fake.delete_calendar_object(ALICE, "personal", uri)
    await eventually_count(stack, ALICE, "calendar_event", before)
    await assert_gone(stack, event)  # counted first: removed by reconciliation, not by a search's re-check

    fake.restore_calendar_object(ALICE, "personal", uri)
    await eventually_indexed(stack, event, what="calendar: restored")
    await eventually_count(stack, ALICE, "calendar_event", before + 1)


async def _deck_card_by_reconciliation(stack: Stack) -> None:
    fake = stack.fake
    before = await indexed_count(stack, ALICE, "deck_card")
    board = fake.create_board(ALICE, "Quokka board")
    backlog = fake.create_stack(ALICE, board, "Backlog", 0)
    shipped = fake.create_stack(ALICE, board, "Shipped", 1)
    card_id = fake.create_card(ALICE, backlog, "Quokka kettle", "Descale the snorkelwort valve.")
    card = Doc(ALICE, "deck_card", f"deck_card:{card_id}", "quokka snorkelwort valve", "Quokka kettle",
               "Quokka board / Backlog", contains=("snorkelwort",))
    await eventually_indexed(stack, card, what="deck: created")

    fake.update_card(ALICE, card_id, description="Replace the brindlecone gasket.")
    await eventually_indexed(stack, card.expect(query="quokka brindlecone gasket", contains=("brindlecone",),
                                                lacks=("snorkelwort",)), what="deck: edited")

    fake.update_card(ALICE, card_id, title="Quokka teapot")
    await eventually_indexed(stack, card.expect(title="Quokka teapot"), what="deck: retitled")

    fake.update_card(ALICE, card_id, stack_id=shipped)
    await eventually_indexed(stack, card.expect(location="Quokka board / Shipped"), what="deck: moved to a stack")

    fake.delete_card(ALICE, card_id)
    await eventually_count(stack, ALICE, "deck_card", before)
    await assert_gone(stack, card)  # counted first: removed by reconciliation, not by a search's re-check


async def _contact_by_reconciliation(stack: Stack) -> None:
    fake = stack.fake
    before = await indexed_count(stack, ALICE, "contact")
    uri = "ximena.vcf"

    def put(name: str, note: str) -> None:
        fake.put_contact(ALICE, "contacts", uri, vcard("ximena-1", name, "ximena@example.test", "Wobblecorp", note))

    put("Ximena Quarrington", "Sells hand-made flumphorns.")
    contact = Doc(ALICE, "contact", contact_id(uri), "Ximena Quarrington flumphorns", "Ximena Quarrington",
                  contains=("flumphorns",))
    await eventually_indexed(stack, contact, what="contact: created")

    put("Ximena Quarrington", "Repairs antique tintinnabula.")
    await eventually_indexed(stack, contact.expect(query="Ximena tintinnabula", contains=("tintinnabula",),
                                                   lacks=("flumphorns",)), what="contact: edited")

    put("Ximena Volkova", "Repairs antique tintinnabula.")
    await eventually_indexed(stack, contact.expect(query="Ximena Volkova tintinnabula", title="Ximena Volkova"),
                             what="contact: renamed")

    fake.delete_contact(ALICE, "contacts", uri)
    await eventually_count(stack, ALICE, "contact", before)
    await assert_gone(stack, contact)  # counted first: removed by reconciliation, not by a search's re-check


async def test_every_source_follows_changes_by_reconciliation_alone(polled: Stack) -> None:
    """Webhooks are lost (a stopped worker; Deck and contacts have none on 32 anyway): every change of
    every source type still reaches the index, by reconciliation. The five run concurrently."""
    hooks = polled.fake.webhooks
    delivered, dropped = len(hooks.events()), len(hooks.dropped)
    scenarios = {
        "file": _file_by_reconciliation,
        "note": _note_by_reconciliation,
        "calendar_event": _calendar_by_reconciliation,
        "deck_card": _deck_card_by_reconciliation,
        "contact": _contact_by_reconciliation,
    }
    outcomes = await asyncio.gather(*(run(polled) for run in scenarios.values()), return_exceptions=True)
    failed = {name: f"{type(o).__name__}: {o}" for name, o in zip(scenarios, outcomes, strict=True) if o is not None}
    assert not failed, failed
    assert len(hooks.events()) == delivered  # nothing reached the app by webhook...
    assert len(hooks.dropped) > dropped  # ...though Nextcloud fired events for files, notes and calendars


# --- 4. isolation and sharing ------------------------------------------------------------------


async def test_alice_content_never_reaches_bob_whatever_the_query_or_filter(stack: Stack) -> None:
    fake = stack.fake
    secret_file = fake.put_file(ALICE, "Hushvault/hushwhisper-codes.md", "Hushwhisper: the vault code is glissando.")
    secret_note = fake.create_note(ALICE, "Hushwhisper diary", "Hushwhisper: met the glissando courier at dawn.")
    await stack.wait_idle(ALICE)
    # What alice has that bob must never get: everything of hers these searches find, but the shared file.
    alice_only: dict[str, str] = {}
    for query in ("Hushwhisper glissando", "Project Phoenix billing", "Meeting notes Q3 planning",
                  "Write release notes", "Dentist appointment Dr. Weber", "Carol Jones Acme Corp"):
        alice_only.update({hit["id"]: hit["title"] for hit in await results(stack, ALICE, query, limit=8)})
    shared = {hit["id"] for hit in await results(stack, BOB, "Garden party barbecue salads", "file")}
    assert shared, "bob should see the file alice shares with him"
    for doc_id in shared:
        alice_only.pop(doc_id, None)
    assert {f"file:{secret_file}", f"note:{secret_note}"} <= alice_only.keys()
    assert {"note", "file", "deck_card", "calendar_event", "contact"} <= {i.partition(":")[0] for i in alice_only}

    probes: list[tuple[str, dict[str, Any]]] = [
        ("hushwhisper-codes.md", {}),  # her exact titles
        ("Hushwhisper diary", {"doc_types": ["note"]}),
        ("Hushwhisper glissando vault code", {"limit": 50}),
        ("Hushwhisper glissando", {"path_prefix": "/Hushvault/"}),  # her folder
        ("Project plan.md Project Phoenix", {"path_prefix": "/Documents/"}),  # a folder both have
        ("Project Phoenix billing", {"doc_types": ["file"], "limit": 50}),
        ("Meeting notes", {"doc_types": ["note"], "limit": 50}),
        ("Write release notes", {"doc_types": ["deck_card"]}),
        ("Dentist appointment", {"doc_types": ["calendar_event"]}),
        ("Carol Jones", {"doc_types": ["contact"]}),
        ("Carol Jones Acme Corp carol@example.test", {"limit": 50}),
    ]
    leaked, bob_found = [], 0
    for query, args in probes:
        for hit in await results(stack, BOB, query, **args):
            bob_found += 1
            if hit["id"] in alice_only or hit["title"] in alice_only.values():
                leaked.append((query, args, hit["id"], hit["title"]))
    assert not leaked, leaked
    assert bob_found > 0  # bob's own content is searched: the empty answers are not a broken search
    assert not await results(stack, BOB, "Hushwhisper glissando", path_prefix="/Hushvault/")


async def test_a_share_reaches_the_recipient_by_reconciliation_and_leaves_with_the_unshare(polled: Stack) -> None:
    fake = polled.fake
    file_id = fake.put_file(ALICE, "Zshare/garnet-recipe.md", "Garnetwhisk recipe: fold the sorrelbloom in.")
    mine = Doc(ALICE, "file", f"file:{file_id}", "garnetwhisk sorrelbloom", "garnet-recipe.md",
               "/Zshare/garnet-recipe.md")
    await eventually_indexed(polled, mine, what="alice's file indexed")
    bob_files = await indexed_count(polled, BOB, "file")
    theirs = Doc(BOB, "file", f"file:{file_id}", "garnetwhisk sorrelbloom", "garnet-recipe.md",
                 "/garnet-recipe.md", contains=("sorrelbloom",))
    assert await theirs.check_gone(polled) == []

    share_id = fake.share(ALICE, "Zshare/garnet-recipe.md", BOB)  # fires no event for bob
    await eventually_indexed(polled, theirs, what="the shared file in bob's index")
    await eventually_count(polled, BOB, "file", bob_files + 1)

    fake.unshare(share_id)
    assert await theirs.check_gone(polled) == []  # at once: every hit is re-checked as bob
    await eventually_count(polled, BOB, "file", bob_files)  # and then removed from bob's index
    await assert_indexed(polled, mine)  # alice keeps hers


# --- 5. admin settings apply without a restart -----------------------------------------------------


async def test_switching_contacts_off_and_on_applies_live(polled: Stack) -> None:
    fake = polled.fake
    fake.put_contact(ALICE, "contacts", "yorick.vcf",
                     vcard("yorick-1", "Yorick Plimsoll", "yorick@example.test", "Plimsoll Ropes", "Sells hawsers."))
    carol = Doc(ALICE, "contact", contact_id("carol.vcf"), "Carol Jones Acme Corp", "Carol Jones")
    yorick = Doc(ALICE, "contact", contact_id("yorick.vcf"), "Yorick Plimsoll hawsers", "Yorick Plimsoll")
    await eventually_indexed(polled, carol, yorick)
    assert await indexed_count(polled, ALICE, "contact") == 2
    try:
        await apply_setting(polled, "index_contacts", "false")
        status = await polled.status(ALICE)
        assert status["sources"]["contact"]["enabled_by_admin"] is False
        # Removed from the index by the app itself, not only when a search happens to meet them.
        await eventually_count(polled, ALICE, "contact", 0, timeout=30)
        for query in ("Carol Jones Acme Corp", "Yorick Plimsoll"):
            assert "contact" not in [hit["doc_type"] for hit in await results(polled, ALICE, query, limit=20)]
            assert not await results(polled, ALICE, query, "contact")
    finally:
        set_setting(polled, "index_contacts", "true")
    await eventually_indexed(polled, carol, yorick, what="contacts back after switching them on again")
    fake.delete_contact(ALICE, "contacts", "yorick.vcf")
    await eventually_count(polled, ALICE, "contact", 1)


async def test_excluded_paths_and_the_exclusion_tag_skip_files_with_a_reason(polled: Stack) -> None:
    fake = polled.fake
    old = fake.put_file(ALICE, "Vault/zircon-old.md", "Zirconquill ledger: the old harbour accounts.")
    later = fake.put_file(ALICE, "Open/zircon-tagged-later.md", "Zirconquill memo: the lighthouse rota.")
    old_doc = Doc(ALICE, "file", f"file:{old}", "zirconquill harbour accounts", "zircon-old.md")
    later_doc = Doc(ALICE, "file", f"file:{later}", "zirconquill lighthouse rota", "zircon-tagged-later.md")
    await eventually_indexed(polled, old_doc, later_doc)
    tag = fake.create_tag("no-ai")  # the default exclusion tag
    fake.tag_file(ALICE, "Open/zircon-tagged-later.md", tag)  # no event the app listens to: reconciliation
    await eventually_gone(polled, later_doc, what="an indexed file tagged no-ai leaves the index")

    fake.webhooks.set_dropping(False)  # so the new files below are fetched (and skipped) at once
    try:
        # A long interval from here on: what is listed below must not be re-listed before it is checked.
        await apply_setting(polled, "reconcile_interval_minutes", "15")
        await apply_setting(polled, "excluded_paths", "/Vault/*, *.log")
        await eventually_gone(polled, old_doc, timeout=20, what="an indexed file excluded since leaves at once")
        new = fake.put_file(ALICE, "Vault/zircon-new.md", "Zirconquill secret: the smuggler's cove map.")
        log_file = fake.put_file(ALICE, "Open/zircon-debug.log", "Zirconquill trace: the brass gearwheel.")
        tagged = fake.put_file(ALICE, "Open/zircon-private.md", "Zirconquill diary: the moth orchid.")
        fake.tag_file(ALICE, "Open/zircon-private.md", tag)  # before the events are delivered
        status = await polled.wait_idle(ALICE)
        reasons = {s["id"]: s["reason"] for s in status["skipped_examples"]}
        assert reasons.get(f"file:{new}") == "excluded by the path pattern '/Vault/*'", reasons
        assert reasons.get(f"file:{log_file}") == "excluded by the path pattern '*.log'", reasons
        assert reasons.get(f"file:{tagged}") == "tagged 'no-ai'", reasons
        log = polled.log()
        assert f"Not indexing file:{new} for alice: excluded by the path pattern '/Vault/*'" in log
        assert f"Not indexing file:{tagged} for alice: tagged 'no-ai'" in log
        await assert_gone(polled, Doc(ALICE, "file", f"file:{new}", "zirconquill smuggler cove"),
                          Doc(ALICE, "file", f"file:{log_file}", "zirconquill brass gearwheel"),
                          Doc(ALICE, "file", f"file:{tagged}", "zirconquill moth orchid"))
    finally:
        fake.webhooks.set_dropping(True)
        set_setting(polled, "excluded_paths", "")
        set_setting(polled, "reconcile_interval_minutes", "0.025")


# --- 3. bad input (shared stack) -----------------------------------------------------------------


async def _skipped_reason(stack: Stack, doc_id: str) -> str | None:
    status = await stack.status(ALICE)
    return next((s["reason"] for s in status["skipped_examples"] if s["id"] == doc_id), None)


async def test_invalid_icalendar_is_skipped_with_a_reason(stack: Stack) -> None:
    broken = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:broken@x\r\nDTSTART:tomorrowish\r\n" \
             "SUMMARY:Wobblefest\r\nEND:VCALENDAR\r\n"
    stack.fake.put_raw_calendar_object(ALICE, "personal", "broken-wobble.ics", broken)
    await stack.wait_idle(ALICE)
    doc_id = calendar_id("broken-wobble.ics")
    reason = await _skipped_reason(stack, doc_id)
    assert reason and reason.startswith("invalid iCalendar"), reason
    assert f"Not indexing {doc_id} for alice: invalid iCalendar" in stack.log()
    assert await lookup(stack, ALICE, "Wobblefest", doc_id, "calendar_event") is None
    await assert_canary(stack)


async def test_empty_file_is_skipped_with_a_reason(stack: Stack) -> None:
    file_id = stack.fake.put_file(ALICE, "Badinput/empty-wobble.txt", b"")
    await stack.wait_idle(ALICE)
    assert await _skipped_reason(stack, f"file:{file_id}") == "empty"
    assert f"Not indexing file:{file_id} for alice: empty" in stack.log()
    await assert_canary(stack)


@dataclass(eq=False)
class CountingContent(Generated):
    """Generated content that records every read, to prove a big file was never downloaded."""

    reads: list[tuple[int, int | None]] = field(default_factory=list)

    def read(self, start: int = 0, end: int | None = None) -> bytes:
        self.reads.append((start, end))
        return super().read(start, end)

    def chunks(self, start: int, end: int, chunk: int = 1 << 20) -> Iterator[bytes]:
        self.reads.append((start, end))
        return super().chunks(start, end, chunk)


async def test_a_200_mb_file_is_skipped_for_size_without_downloading_it(stack: Stack) -> None:
    fake = stack.fake
    size = 200 * 1024 * 1024
    fake.webhooks.pause()
    try:
        file_id = fake.put_big_file(ALICE, "Badinput/huge-wobble.txt", size)
        content = CountingContent(size)
        with fake.state.lock:
            fake.state.files.by_id[file_id].content = content
    finally:
        fake.webhooks.resume()
    await stack.wait_idle(ALICE)
    reason = await _skipped_reason(stack, f"file:{file_id}")
    assert reason == f"too large: {size} bytes, the limit is {20 * 1024 * 1024}", reason
    assert f"Not indexing file:{file_id} for alice: too large" in stack.log()
    assert content.reads == []  # decided from the metadata: the body was never served
    await assert_canary(stack)


async def test_binary_content_named_md_is_skipped_with_a_reason(stack: Stack) -> None:
    file_id = stack.fake.put_file(ALICE, "Badinput/blob-wobble.md", bytes(range(256)) * 16)
    await stack.wait_idle(ALICE)
    assert await _skipped_reason(stack, f"file:{file_id}") == "binary content in a text file"
    assert f"Not indexing file:{file_id} for alice: binary content in a text file" in stack.log()
    await assert_canary(stack)


async def test_windows_1252_text_is_indexed_and_found_with_its_accents(stack: Stack) -> None:
    text = "Crème brûlée chez Zoë Wobblethorpe — déjà vu à la façade, Œuvre complète pour 5 €."
    file_id = stack.fake.put_file(ALICE, "Badinput/recette-wobble.txt", text.encode("cp1252"))
    await stack.wait_idle(ALICE)
    hit = await lookup(stack, ALICE, "crème brûlée Wobblethorpe", f"file:{file_id}", "file")
    assert hit is not None
    assert "Crème brûlée chez Zoë Wobblethorpe — déjà vu" in hit["excerpt"] and "Œuvre" in hit["excerpt"]
    assert "€" in hit["excerpt"]
    assert await _skipped_reason(stack, f"file:{file_id}") is None


async def test_webhook_of_an_unknown_class_is_acknowledged_and_ignored(stack: Stack) -> None:
    payload = {"event": {"class": "OCA\\Talk\\Events\\MessageSentEvent", "message": "hi"},
               "user": {"uid": ALICE, "displayName": "Alice"}, "time": int(time.time())}
    response = deliver(stack, payload)
    assert response.status_code == 200, response.text
    assert "unsupported event class" in response.json()["ignored"]
    assert "Webhook ignored: unsupported event class 'OCA\\\\Talk\\\\Events\\\\MessageSentEvent'" in stack.log()
    await assert_canary(stack)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({"event": {"class": "OCP\\Files\\Events\\Node\\NodeWrittenEvent"}, "user": {"uid": ALICE}},
         "missing 'node' in event"),
        ({"event": {"class": "OCP\\Files\\Events\\Node\\NodeWrittenEvent", "node": {"id": 5}}, "user": {"uid": ALICE}},
         "missing 'path' in event.node"),
        ({"user": {"uid": ALICE}}, "missing 'event' in payload"),
        ({"event": {"class": "OCP\\Calendar\\Events\\CalendarObjectCreatedEvent", "calendarData": {"uri": "x"}},
          "user": {"uid": ALICE}}, "missing 'objectData' in event"),
    ],
    ids=["no-node", "no-path", "no-event", "calendar-no-object"],
)
async def test_webhook_missing_fields_is_rejected_with_the_reason(stack: Stack, payload: dict, reason: str) -> None:
    response = deliver(stack, payload)
    assert response.status_code == 400
    assert reason in response.json()["error"]
    assert f"Rejected a webhook delivery: {reason}" in stack.log()
    await assert_canary(stack)


async def test_webhook_that_is_not_json_is_rejected(stack: Stack) -> None:
    response = deliver(stack, None, raw=b"\x00not json")
    assert response.status_code == 400
    assert "Rejected a webhook delivery" in stack.log()


async def test_event_for_an_unknown_user_is_dropped_with_a_clear_log_line(stack: Stack) -> None:
    payload = {"event": {"class": "OCP\\Files\\Events\\Node\\NodeWrittenEvent",
                         "node": {"id": 987654, "path": "/mallory/files/evil-wobble.md"}},
               "user": {"uid": "mallory", "displayName": "Mallory"}, "time": int(time.time())}
    response = deliver(stack, payload, user="mallory")
    assert response.status_code == 200, response.text

    async def logged() -> tuple[bool, Any]:
        lines = [line for line in stack.log().splitlines() if "mallory" in line]
        return any("Dropping file:987654 for unknown user 'mallory'" in line for line in lines), lines

    lines = await until(logged, "a log line about the unknown user", timeout=20, interval=0.2)
    assert not any("ERROR" in line for line in lines), lines  # dropped at once: no retries, no traceback
    assert (await stack.wait_idle(ALICE))["failures"] == []
    await assert_canary(stack)


# --- 2. crash recovery -----------------------------------------------------------------------------


def _stored_chunks(storage: Path) -> tuple[int, set[str]]:
    """(chunk records in Chroma, distinct chunk texts in the keyword index, which keeps them: ADR 0566),
    over every user, read with the app stopped; the keyword index has the same records."""
    import chromadb

    client = chromadb.PersistentClient(path=str(storage / "chroma"),
                                       settings=chromadb.Settings(anonymized_telemetry=False))
    records = 0
    for collection in client.list_collections():
        got = collection.get(include=["documents"])
        assert set(got["documents"]) == {None}  # Chroma keeps no copy of the texts
        records += len(got["ids"])
    texts: list[str] = []
    with closing(sqlite3.connect(storage / "keyword.db")) as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                                 "AND name GLOB 'kw_*' AND name NOT GLOB 'kw_*_fts*'")]
        for table in tables:
            texts += [text for (text,) in db.execute(f"SELECT text FROM {table}")]
    assert len(texts) == records
    return records, set(texts)


def test_killed_worker_resumes_without_duplicates_or_reembedding(tmp_path: Path) -> None:
    own = Stack(tmp_path, profile="minimal").start()
    try:
        asyncio.run(_crash_and_resume(own, tmp_path / "storage"))
    finally:
        own.stop()


async def _crash_and_resume(own: Stack, storage: Path) -> None:
    fake = own.fake
    baseline = await indexed_count(own, ALICE, "file")
    words = [f"crashword{i:02d}{chr(97 + i % 26)}x" for i in range(30)]
    fake.webhooks.pause()  # the whole batch arrives at once, as after a webhook worker outage
    ids = [fake.put_file(ALICE, f"Crash/item-{i:02d}.txt", f"Crashtest item {i}: the {word} token.")
           for i, word in enumerate(words)]
    fake.webhooks.resume()
    fake.webhooks.flush(30)  # every event is in the app's durable queue before the crash
    assert all(d.status == 200 for d in fake.webhooks.events())

    async def mid_batch() -> tuple[bool, Any]:
        files = (await own.status(ALICE))["sources"]["file"]
        return files["pending"] > 0 and files["indexed"] > baseline, files

    at_kill = await until(mid_batch, "indexing under way", timeout=60, interval=0.1)
    own.exapp.kill()  # SIGKILL: no shutdown handler runs
    first_run_log = own.log()

    own.start_exapp()  # same storage
    fake.exapp(APP_ID).url = own.exapp.url  # the daemon knows the app by its (new) port
    status = await own.wait_idle(ALICE, timeout=120)
    assert at_kill["pending"] > 0

    assert status["sources"]["file"]["indexed"] == baseline + 30
    assert not status["failures"]
    found = await results(own, ALICE, "Crashtest item token", "file", path_prefix="/Crash/", limit=50)
    assert {hit["id"] for hit in found} == {f"file:{i}" for i in ids}
    for i in (0, 13, 29):
        assert await lookup(own, ALICE, f"{words[i]}", f"file:{ids[i]}", "file") is not None

    log = own.log()
    second_run_log = log[len(first_run_log):]
    assert "Resuming" in second_run_log or EMBED_LOG.search(second_run_log), "the second run did no work"
    newly = [int(m.group(3)) for m in EMBED_LOG.finditer(log)]
    own.exapp.stop()  # read the stores at rest

    with closing(sqlite3.connect(storage / "state.db")) as db:
        chunk_total = db.execute("SELECT SUM(chunk_count) FROM documents").fetchone()[0]
        model_id = db.execute("SELECT value FROM meta WHERE key = 'model_id'").fetchone()[0]
        assert db.execute("SELECT COUNT(*) FROM tasks").fetchone()[0] == 0
    with closing(sqlite3.connect(storage / "embeddings.db")) as db:
        cached = {row[0] for row in db.execute("SELECT key FROM embeddings")}
    records, texts = _stored_chunks(storage)
    assert records == chunk_total  # no duplicate chunk, none left over
    expected_keys = {hashlib.sha256(f"{model_id}\0{text}".encode()).digest() for text in texts}
    assert cached == expected_keys  # every stored chunk's vector is cached, nothing else was embedded
    assert sum(newly) == len(texts), (newly, len(texts))  # and each distinct text was embedded exactly once
