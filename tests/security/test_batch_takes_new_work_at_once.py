"""A main-lane batch must not hold another user's edited note behind a slow fetch (issue 36: bob
uploads new versions of his slowest file again and again). It goes on as soon as the fetches it has
stop finishing, and new work woken meanwhile is claimed at once, not after the slow wait
(lib/semantic_mcp/indexing/pipeline.py, ``_fetch_batch``)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from semantic_mcp.core.documents import SourceDocument
from semantic_mcp.indexing import pipeline
from semantic_mcp.indexing.pipeline import Pipeline
from semantic_mcp.workers import parser_process


def task(user: str, source_id: str) -> Any:
    return SimpleNamespace(ref=SimpleNamespace(user=user, key=f"file:{source_id}", source_id=source_id))


def doc(source_id: str) -> SourceDocument:
    return SourceDocument("file", source_id, source_id, "text", 0, "v1", f"/f/{source_id}")


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> tuple[Pipeline, list[Any], asyncio.Event]:
    monkeypatch.setattr(pipeline, "SLOW_FETCH_SECONDS", 120.0)  # far beyond the test's patience
    queue: list[Any] = []
    state = SimpleNamespace(claim=lambda n, lane: [queue.pop(0) for _ in range(min(n, len(queue)))])
    nc = SimpleNamespace(health=SimpleNamespace(usable=True))
    indexer = Pipeline(state, dict, nc, None, None, None, lambda user: True)  # type: ignore[arg-type]
    his_parse_ends = asyncio.Event()

    async def fetch(task: Any) -> SourceDocument:
        if task.ref.user == "bob":
            await his_parse_ends.wait()  # his file takes the parser's whole bound
        return doc(task.ref.source_id)

    indexer._fetch = fetch  # type: ignore[method-assign]
    return indexer, queue, his_parse_ends


async def test_her_note_claimed_with_his_slow_file_does_not_wait_for_it(queued: Any) -> None:
    indexer, queue, his_parse_ends = queued
    queue.extend([task("bob", "1"), task("alice", "2")])
    batch = await asyncio.wait_for(indexer._fetch_batch("main"), 10)
    assert [t.ref.user for t in batch.tasks] == ["alice"]
    his_parse_ends.set()
    assert [t.ref.user for t in (await asyncio.wait_for(indexer._fetch_batch("main"), 10)).tasks] == ["bob"]


async def test_her_note_queued_while_his_slow_file_is_carried_is_claimed_at_once(queued: Any) -> None:
    indexer, queue, his_parse_ends = queued
    queue.append(task("bob", "1"))
    waiting = asyncio.create_task(indexer._fetch_batch("main"))  # only his slow fetch: nothing to return yet
    await asyncio.sleep(0.1)
    queue.append(task("alice", "2"))
    indexer.wake()
    batch = await asyncio.wait_for(waiting, 10)
    assert [t.ref.user for t in batch.tasks] == ["alice"]
    his_parse_ends.set()
    assert [t.ref.user for t in (await asyncio.wait_for(indexer._fetch_batch("main"), 10)).tasks] == ["bob"]


async def test_a_heavy_users_fetch_is_not_waited_for_at_all(queued: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bob, whose parse overran its bound lately (parser_process.HEAVY): the batch goes on with her note
    as soon as it is fetched, without even the short wait for a stalled fetch."""
    indexer, queue, his_parse_ends = queued
    monkeypatch.setattr(pipeline, "QUIET_FETCH_SECONDS", 120.0)
    heavy = parser_process.HeavyOwners()
    heavy.mark("bob")
    monkeypatch.setattr(parser_process, "HEAVY", heavy)
    queue.extend([task("bob", "1"), task("alice", "2")])
    batch = await asyncio.wait_for(indexer._fetch_batch("main"), 10)
    assert [t.ref.user for t in batch.tasks] == ["alice"]
    his_parse_ends.set()
