"""Bad input is skipped with a reason (invalid iCalendar, empty, huge or binary files, malformed webhooks,
unknown users), and a killed worker resumes without duplicates or re-embedding.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from indexing_support import (
    ALICE,
    EMBED_LOG,
    assert_canary,
    calendar_id,
    deliver,
    indexed_count,
    lookup,
    results,
    stack,  # noqa: F401 - this module's stacks (fixtures)
    until,
)
from stack import APP_ID, Stack

from fake_nextcloud.files import Generated


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
