"""Per-user bounds of the reading tool (issue 36, item 1; lib/semantic_mcp/mcp/reading_lane.py): a
parse-time budget per user and minute, a few reads at once per user, and a read's OCR page and time
bounds, tested with a fake OCR runner so they hold where Tesseract is absent too."""

from __future__ import annotations

import asyncio
import io
import subprocess
from types import SimpleNamespace
from typing import Any

import pytest
from PIL import Image
from test_reading_lane import SlowFiles, engine_with

from semantic_mcp.core.documents import SourceDocument
from semantic_mcp.mcp import reading
from semantic_mcp.mcp.reading_lane import PER_USER_READS, ReadingLane
from semantic_mcp.sources.extract import common, ocr
from semantic_mcp.sources.parse_failures import FAILURES


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CostlyFiles(SlowFiles):
    """Every parse takes ``seconds`` of the test's clock; each read may come with a new version."""

    def __init__(self, clock: Clock, seconds: float) -> None:
        super().__init__()
        self.clock, self.seconds = clock, seconds

    async def fetch(self, nc: Any, user: str, source_id: str, **options: Any) -> SourceDocument:
        self.clock.now += self.seconds
        return await super().fetch(nc, user, source_id, **options)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(reading, "LANE", ReadingLane(clock=clock, budget_seconds=30))
    monkeypatch.setattr(reading, "screen", lambda doc, options: doc)
    FAILURES.clear()
    return clock


async def test_new_versions_past_a_users_parse_budget_are_refused_with_when_to_try_again(clock: Clock) -> None:
    files = CostlyFiles(clock, seconds=15)  # his slowest file: each new version costs the parser 15 s
    engine = engine_with(files)
    for n in range(2):
        files.version = f"v{n}"
        await reading.read_document(engine, "mallory", "file:7")
    files.version = "v2"
    with pytest.raises(reading.DocumentUnavailable, match=r"parser for 30 s in the last minute.* version in 45 s$"):
        await reading.read_document(engine, "mallory", "file:7")
    assert len(files.parses) == 2  # refused before parsing
    assert (await reading.read_document(engine, "alice", "file:8")).total_chars  # hers: her own budget
    clock.now += 45  # his first parse has left the minute
    assert (await reading.read_document(engine, "mallory", "file:7")).total_chars
    assert len(files.parses) == 4


async def test_a_remembered_version_is_served_past_the_budget(clock: Clock) -> None:
    files = CostlyFiles(clock, seconds=40)
    engine = engine_with(files)
    await reading.read_document(engine, "mallory", "file:7")
    page = await reading.read_document(engine, "mallory", "file:7", offset=20_000)  # paging costs no parse
    assert page.offset == 20_000 and len(files.parses) == 1


async def test_many_clients_of_one_user_are_served_a_few_at_a_time(clock: Clock) -> None:
    files, asked, gate = SlowFiles(), [], asyncio.Event()

    async def current_version(nc: Any, user: str, source_id: str) -> str:
        asked.append(user)
        await gate.wait()
        return "v1"

    files.current_version = current_version  # type: ignore[method-assign]
    engine = engine_with(files)
    his = [asyncio.create_task(reading.read_document(engine, "mallory", f"file:{n}")) for n in range(6)]
    hers = asyncio.create_task(reading.read_document(engine, "alice", "file:100"))
    await asyncio.sleep(0.05)
    assert asked.count("mallory") == PER_USER_READS and asked.count("alice") == 1  # his others wait their turn
    gate.set()
    await asyncio.gather(*his, hers)
    assert asked.count("mallory") == 6


def tiff(pages: int) -> bytes:
    frames = [Image.new("L", (64, 64), color=n % 255) for n in range(pages)]
    out = io.BytesIO()
    frames[0].save(out, "TIFF", save_all=True, append_images=frames[1:])
    return out.getvalue()


@pytest.fixture
def fake_tesseract(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Tesseract replaced by a runner that takes 10 s of a fake clock per page: the bounds are the subject."""
    now, runs = [0.0], []

    def run(command: list[str], **options: Any) -> subprocess.CompletedProcess[bytes]:
        assert command[0] == "tesseract"
        runs.append(options["timeout"])
        now[0] += min(10, options["timeout"])
        if options["timeout"] < 10:  # Tesseract stopped at its page's time, as subprocess.run does
            raise subprocess.TimeoutExpired(command, options["timeout"])
        return subprocess.CompletedProcess(command, 0, stdout=f"page {len(runs)} text".encode(), stderr=b"")

    monkeypatch.setattr(ocr, "installed_languages", lambda: frozenset({"eng"}))
    monkeypatch.setattr(ocr.subprocess, "run", run)
    monkeypatch.setattr(common, "time", SimpleNamespace(monotonic=lambda: now[0]))
    return runs


def test_a_read_ocrs_at_most_its_pages(fake_tesseract: list[float]) -> None:
    options = ocr.OcrOptions(("eng",), ocr.READ_OCR_PAGES, seconds=10_000)
    pages = ocr.image_sections(tiff(30), options)
    assert len(pages) == ocr.READ_OCR_PAGES == len(fake_tesseract)
    assert pages[-1] == (f"Page {ocr.READ_OCR_PAGES}", f"page {ocr.READ_OCR_PAGES} text")


def test_a_read_ocrs_for_at_most_its_seconds(fake_tesseract: list[float]) -> None:
    pages = ocr.image_sections(tiff(30), ocr.OcrOptions(("eng",), 30, ocr.READ_OCR_SECONDS))
    assert [label for label, text in pages if text] == [f"Page {n}" for n in range(1, 7)]  # 10 s a page
    assert len(pages) <= 7 and sum(min(10, t) for t in fake_tesseract) <= ocr.READ_OCR_SECONDS + 0.1


def test_indexings_ocr_lane_reads_more_pages_than_a_read(fake_tesseract: list[float]) -> None:
    pages = ocr.image_sections(tiff(60), ocr.OcrOptions(("eng",), seconds=10_000))
    assert len(pages) == ocr.MAX_OCR_PAGES > ocr.READ_OCR_PAGES
