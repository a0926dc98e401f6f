"""``Source`` declares its optional abilities (ADR 0741): a new app type is one subclass with
``list_changes`` and ``fetch``; the pipeline and the reading tool call the abilities it lacks and get
the base class's "not this source", never an attribute probe."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from semantic_mcp.core.documents import DocRef, IndexedAs, Skipped, SourceDocument
from semantic_mcp.indexing.pipeline import Pipeline
from semantic_mcp.indexing.queue import OCR_PAYLOAD, Task
from semantic_mcp.sources import make_sources
from semantic_mcp.sources.base import Listing, Source, SourceOptions


class Minimal(Source):
    """An app type with only what every source must have."""

    doc_type = "note"

    def __init__(self) -> None:
        super().__init__()
        self.fetched: list[dict[str, Any]] = []

    async def list_changes(self, nc: Any, user: str, cursor: str | None, *, full: bool) -> Listing:
        return Listing(complete=True)

    async def fetch(self, nc: Any, user: str, source_id: str, *, listed: Mapping[str, Any] | None = None,
                    ocr_lane: str | None = None, indexed: IndexedAs | None = None) -> SourceDocument | Skipped:
        self.fetched.append({"listed": listed, "ocr_lane": ocr_lane, "indexed": indexed})
        return Skipped("note", source_id, "a test", version="v1")


def load(source: Source, payload: dict[str, Any] | None, indexed: Any = None) -> SourceDocument | Skipped:
    pipeline = Pipeline.__new__(Pipeline)  # _load needs only the client and what is indexed
    pipeline.nc = None  # type: ignore[assignment]
    pipeline.state = SimpleNamespace(indexed=lambda ref: indexed)  # type: ignore[assignment]
    task = Task(DocRef("alice", "note", "1"), "upsert", payload, 0, 1)
    return asyncio.run(pipeline._load(source, task))


def test_a_source_without_the_optional_abilities_says_so_through_the_base_class() -> None:
    source = Minimal()
    assert asyncio.run(source.current_version(None, "alice", "1")) is None  # type: ignore[arg-type]
    assert asyncio.run(source.document_from_payload("1", {"ics": "x"}, user="alice")) is None


def test_the_pipeline_fetches_from_a_minimal_source_with_what_the_task_carries() -> None:
    source = Minimal()
    load(source, {"listed": {"etag": "e"}})  # an event's payload it cannot use: fetched, with the listing's
    load(source, OCR_PAYLOAD, indexed=SimpleNamespace(version="v0", location="/Notes/a.md", space=None))
    assert source.fetched == [{"listed": {"etag": "e"}, "ocr_lane": None, "indexed": None},
                              {"listed": None, "ocr_lane": "ocr", "indexed": IndexedAs("v0", "/Notes/a.md")}]


def test_every_source_takes_what_the_base_class_fetch_is_given() -> None:
    for doc_type, source in make_sources(SourceOptions()).items():
        assert {"listed", "ocr_lane", "indexed"} <= set(inspect.signature(source.fetch).parameters), doc_type
