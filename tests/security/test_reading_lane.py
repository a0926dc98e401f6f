"""One user hammering the reading tool must not delay indexing or another user (second review,
issue 36): reads parse in their own lane, one at a time per user, once per item version, and a
version whose parse failed is refused at once (lib/semantic_mcp/mcp/reading_lane.py)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from types import SimpleNamespace
from typing import Any

import pytest

from semantic_mcp.mcp import reading
from semantic_mcp.core.documents import SourceDocument
from semantic_mcp.mcp.reading_lane import LANE, ReadingLane
from semantic_mcp.workers import parser_process
from semantic_mcp.sources.parse_failures import FAILURES
from semantic_mcp.workers.parser_process import ParserFailed


class SlowFiles:
    """A files source whose parse the test controls; it records how often it parsed and in which lane."""

    options = SimpleNamespace(excluded_tags=(), excluded_paths=(), max_bytes=0)

    def __init__(self) -> None:
        self.version = "v1"
        self.parses: list[tuple[str, str, str]] = []  # (user, id, lane)
        self.gates: dict[str, asyncio.Event] = {}
        self.fail: str | None = None

    async def current_version(self, nc: Any, user: str, source_id: str) -> str:
        return self.version

    async def fetch(self, nc: Any, user: str, source_id: str, **_: Any) -> SourceDocument:
        self.parses.append((user, source_id, parser_process.default_lane.get()))
        if gate := self.gates.get(user):
            await gate.wait()
        if self.fail:
            error = ParserFailed(self.fail)
            error.version = self.version
            raise error
        return SourceDocument("file", source_id, f"{source_id}.pdf", "x" * 50_000, 0, self.version, f"/f/{source_id}")


@pytest.fixture
def files(monkeypatch: pytest.MonkeyPatch) -> SlowFiles:
    monkeypatch.setattr(reading, "LANE", ReadingLane())
    monkeypatch.setattr(reading, "screen", lambda doc, options: doc)
    FAILURES.clear()
    return SlowFiles()


def engine_with(source: SlowFiles) -> Any:
    search = SimpleNamespace(absolute_link=lambda link: f"https://cloud.example.com{link}")
    clock = SimpleNamespace(now=lambda: datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc))  # fixed: no day matters
    return SimpleNamespace(sources=lambda: {"file": source}, nc=None, search=search, clock=clock)


async def test_paging_and_repeated_reads_parse_once_per_version(files: SlowFiles) -> None:
    engine = engine_with(files)
    first = await reading.read_document(engine, "mallory", "file:7", 0, 20_000)
    await reading.read_document(engine, "mallory", "file:7", first.next_offset, 20_000)
    await reading.read_document(engine, "mallory", "file:7", 0, 20_000)
    assert len(files.parses) == 1
    files.version = "v2"  # a new version is read again
    await reading.read_document(engine, "mallory", "file:7")
    assert len(files.parses) == 2
    await reading.read_document(engine, "alice", "file:7")  # each reader's own memory: access is theirs
    assert len(files.parses) == 3


async def test_a_version_whose_parse_failed_is_refused_at_once_with_the_reason(files: SlowFiles) -> None:
    engine = engine_with(files)
    files.fail = "parsing took longer than 60 s (stopped)"
    for _ in range(3):
        with pytest.raises(reading.DocumentUnavailable, match="took longer than 60 s"):
            await reading.read_document(engine, "mallory", "file:9")
    assert len(files.parses) == 1
    files.version, files.fail = "v2", None  # fixed: read again
    assert (await reading.read_document(engine, "mallory", "file:9")).total_chars == 50_000


async def test_reads_parse_in_their_own_lane_one_at_a_time_per_user(files: SlowFiles) -> None:
    engine = engine_with(files)
    files.gates["mallory"] = asyncio.Event()
    hammering = [asyncio.create_task(reading.read_document(engine, "mallory", f"file:{n}")) for n in range(5)]
    await asyncio.sleep(0.05)
    assert [user for user, _, _ in files.parses] == ["mallory"]  # his others wait for his first...
    await asyncio.wait_for(reading.read_document(engine, "alice", "file:100"), 1)  # ...hers does not
    files.gates["mallory"].set()
    await asyncio.gather(*hammering)
    assert {lane for _, _, lane in files.parses} == {"read"}
    assert parser_process.default_lane.get() == "main"  # indexing's parses stay in indexing's lane


def test_the_reading_lane_has_workers_of_its_own() -> None:
    parser_process.configure(size=2, timeout=5, memory_mb=200)
    try:
        read, main = parser_process.pool("read"), parser_process.pool("main")
        assert read is not main and read.size == parser_process.READ_LANE_WORKERS
    finally:
        parser_process.shutdown()


def test_remembered_text_is_bounded() -> None:
    lane = ReadingLane(max_chars=120_000)
    for n in range(5):
        lane.remember("mallory", f"file:{n}", SourceDocument("file", str(n), "t", "x" * 50_000, 0, "v", "/f"))
    assert lane.remembered("mallory", "file:4", "v") and not lane.remembered("mallory", "file:0", "v")
    assert LANE is not lane


async def test_one_users_parses_leave_a_worker_free_for_everyone_else() -> None:
    """Indexing: bob's new versions of files that each take the whole bound cannot fill every parser
    worker; alice's note is parsed (and chunked) beside them."""
    pool = parser_process.ParserPool(size=2, timeout=30, memory_mb=200)
    finished: list[str] = []

    async def parse(owner: str, name: str, seconds: float) -> None:
        parser_process.parse_owner.set(owner)
        await pool.run("time:sleep", seconds)
        finished.append(name)

    try:
        await pool.run("time:sleep", 0)  # both workers started
        await pool.run("time:sleep", 0)
        bob = [asyncio.create_task(parse("bob", f"bob {n}", 2.0)) for n in range(2)]
        await asyncio.sleep(0.3)
        await parse("alice", "alice", 0.1)
        await asyncio.gather(*bob)
    finally:
        pool.close()
    assert finished[0] == "alice", finished
