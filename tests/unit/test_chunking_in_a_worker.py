"""The pipeline makes a batch's chunk records in a parser worker (ADR 0569): the same records as
made in the app, and a batch that trips the worker's bounds costs only the document at fault."""

from __future__ import annotations

from typing import Any

import pytest

from semantic_mcp.core.documents import DocRef, SourceDocument
from semantic_mcp.indexing import pipeline, writing
from semantic_mcp.indexing.records import chunk_records
from semantic_mcp.indexing.queue import Task
from semantic_mcp.workers import parser_process


class Lane:
    """The part of the pipeline that chunks, with its failures recorded instead of queued."""

    _chunked = pipeline.Pipeline._chunked
    _parse_failed = pipeline.Pipeline._parse_failed

    def __init__(self) -> None:
        self.failed: list[tuple[str, str, str | None]] = []

    def _fail(self, task: Task, reason: str, *, refused: str | None = None, give_up: bool = False) -> None:
        self.failed.append((task.ref.source_id, reason, refused))


def item(source_id: str, title: str, text: str) -> tuple[Task, SourceDocument]:
    doc = SourceDocument("note", source_id, title, text, 1_700_000_000, f"v{source_id}", f"/n/{source_id}")
    return Task(DocRef("alice", "note", source_id), "upsert", None, 0, 1), doc


ITEMS = [
    item("1", "Ferry", "The ferry to the island leaves at 07:40 from pier three. " * 40),
    item("2", "Kaution", "Die Kaution für die Wohnung beträgt drei Monatsmieten und wird zurückgezahlt."),
    item("3", "Empty", ""),
]


@pytest.fixture(autouse=True)
def _fresh_workers() -> Any:
    parser_process.shutdown()
    yield
    parser_process.shutdown()


async def test_a_batch_is_chunked_in_a_worker_as_in_the_app() -> None:
    lane = Lane()
    chunked = await lane._chunked(ITEMS)
    assert [(task, doc) for task, doc, _ in chunked] == ITEMS
    assert [recs for _, _, recs in chunked] == [chunk_records(doc, task.ref) for task, doc in ITEMS]
    assert chunked[1][2][0].metadata["lang"] == "de" and len(chunked[0][2]) > 1 and not lane.failed


async def test_a_batch_that_trips_a_bound_costs_only_the_document_at_fault(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writing, "_CHUNK_BATCH", "chunk_bombs:chunk_batch")
    lane = Lane()
    bomb = item("4", "bomb", "Whatever this says, the worker dies on it.")
    chunked = await lane._chunked([ITEMS[0], bomb, ITEMS[1]])
    assert [doc.source_id for _, doc, _ in chunked] == ["1", "2"]
    assert [recs for _, _, recs in chunked] == [chunk_records(doc, task.ref) for task, doc in (ITEMS[0], ITEMS[1])]
    assert lane.failed == [("4", "chunking: the parser process died on this document (killed by signal 6)", "v4")]
