"""What the indexing tests share (tests/app/test_indexing*.py): searching as a user, waiting for an item to be
indexed or gone, delivering webhooks, changing settings, and each module's private stacks.

Each test uses made-up words of its own, so tests sharing a module's stack cannot see each other's documents.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from stack import APP_ID, Stack

from fake_nextcloud.exapps import signed_headers

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
