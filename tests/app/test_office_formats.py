"""Spreadsheets, presentations, PDFs, RTF, EPUB and e-mail through the whole app: uploaded to the
fake Nextcloud (which names their types as Nextcloud 34 does), indexed, found by their content with
the page, slide or sheet rows in the hit and in the answer's sources, read one part at a time; and
bad ones skipped with a reason while the rest index as before.

The files are written by the libraries users' programs use (tests/support/office_files.py); each test uses
made-up words of its own.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest
from office_files import make_eml, make_epub, make_odp, make_ods, make_pptx, make_rtf, make_xlsx
from stack import Stack
from test_extract import make_pdf

ALICE = "alice"
CANARY = ("Project Phoenix billing migration", "Project plan.md")  # seeded for alice in every profile

PRICE_ROWS = [("Product", "Price", "Supplier")] + [
    (f"Part {i}", f"{i}.50 EUR", "Quillmoor Sprockets" if i == 45 else "Acme") for i in range(1, 81)
]
SLIDES = [
    ("Welcome", "Agenda for the offsite", ""),
    ("Frobnicator rollout", "Pilot in Tarnwick first", "Say that the Glimmerwick budget is frozen"),
    ("Questions", "Thank you", ""),
]
FILES: dict[str, bytes] = {
    "Formats/prices.xlsx": make_xlsx({"Prices": PRICE_ROWS}),
    "Formats/budget.ods": make_ods({"Budget": [("Item", "Cost"), ("Zephyrine boat rental", "900")]}),
    "Formats/offsite.pptx": make_pptx(SLIDES),
    "Formats/offsite.odp": make_odp([(t, b.replace("Tarnwick", "Vellacourt"), n.replace("Glimmerwick", "Brassfen"))
                                     for t, b, n in SLIDES]),
    "Formats/manual.pdf": make_pdf("Installation overview", "Wiring the panel", "Calibrate the Durnholt gauge"),
    "Formats/letter.rtf": make_rtf("Dear Ms Oakhaven,", "your Plinkett subscription is renewed."),
    "Formats/keeper.epub": make_epub("The Keeper", [("Chapter One", "The lamp went dark. " * 80),
                                                    ("Chapter Two", "The Sorrelwyn lighthouse keeper woke.")]),
    "Formats/tapas.eml": make_eml("Tapas on Friday", "Shall we meet at the Marzipella bar at nine?"),
}


def zip_bomb() -> bytes:
    """An ODS whose content.xml inflates past the 64 MB the app allows, from about 70 KB."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("content.xml", b"<a>" + b" " * (70 * 1024 * 1024) + b"</a>")
    return buffer.getvalue()


BAD: dict[str, tuple[bytes, str]] = {
    "Formats/secret.xlsx": (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(2048), "password-protected (encrypted)"),
    "Formats/cut.pptx": (FILES["Formats/offsite.pptx"][:3000], "corrupt or unreadable PPTX"),
    "Formats/bomb.ods": (zip_bomb(), "document too large once uncompressed"),
    "Formats/junk.eml": (bytes(range(1, 256)) * 8, "not an e-mail message"),
}


@pytest.fixture(scope="module")
def formats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, dict[str, int]]]:
    """A private stack (its documents must not change other modules' rankings) holding every file."""
    own = Stack(tmp_path_factory.mktemp("formats"), profile="minimal").start()
    try:
        ids = {path: own.fake.put_file(ALICE, path, data) for path, data in FILES.items()}
        ids |= {path: own.fake.put_file(ALICE, path, data) for path, (data, _) in BAD.items()}
        yield own, ids
    finally:
        own.stop()


async def hit_for(stack: Stack, query: str, file_id: int) -> dict[str, Any]:
    results = (await stack.search(ALICE, query, limit=5, doc_types=["file"], use_reranking=False))["results"]
    found = next((hit for hit in results if hit["id"] == f"file:{file_id}"), None)
    assert found is not None, [(hit["title"], hit.get("section")) for hit in results]
    return found


@pytest.mark.parametrize(
    ("path", "query", "section"),
    [
        ("Formats/offsite.pptx", "Glimmerwick budget frozen", "Slide 2: Frobnicator rollout"),
        ("Formats/offsite.odp", "Brassfen budget frozen", "Slide 2: Frobnicator rollout"),
        ("Formats/manual.pdf", "calibrate the Durnholt gauge", "Page 3"),
        ("Formats/budget.ods", "Zephyrine boat rental cost", "Sheet Budget, row 2"),
        ("Formats/keeper.epub", "Sorrelwyn lighthouse keeper", "Chapter Two"),
        ("Formats/letter.rtf", "Plinkett subscription Oakhaven", None),
        ("Formats/tapas.eml", "Marzipella tapas bar", None),  # one chunk, which starts before any heading
    ],
)
async def test_every_format_is_found_by_its_content_with_its_place(
    formats: tuple[Stack, dict[str, int]], path: str, query: str, section: str | None
) -> None:
    stack, ids = formats
    await stack.wait_idle(ALICE)
    hit = await hit_for(stack, query, ids[path])
    assert hit["title"] == path.rsplit("/", 1)[1] and hit["location"] == "/" + path
    assert hit.get("section") == section, hit


async def test_a_spreadsheet_row_is_found_with_its_header_and_its_row_range(
    formats: tuple[Stack, dict[str, int]]
) -> None:
    stack, ids = formats
    await stack.wait_idle(ALICE)
    hit = await hit_for(stack, "Quillmoor Sprockets", ids["Formats/prices.xlsx"])
    first, last = map(int, re.fullmatch(r"Sheet Prices, rows (\d+)-(\d+)", hit["section"]).groups())
    assert first <= 46 <= last  # "Part 45" is on row 46, under the header row
    assert "Product | Price | Supplier" in hit["excerpt"] or "Part 45 | 45.50 EUR | Quillmoor" in hit["excerpt"]


async def test_the_answer_cites_the_slide(formats: tuple[Stack, dict[str, int]]) -> None:
    stack, ids = formats
    await stack.wait_idle(ALICE)
    result = await stack.call(ALICE, "nc_semantic_search_answer", {"query": "Is the Glimmerwick budget frozen?"})
    assert not result.is_error, stack.failure(result)
    sources = {s["id"]: s for s in result.structured_content["sources"]}
    assert sources[f"file:{ids['Formats/offsite.pptx']}"]["section"] == "Slide 2: Frobnicator rollout"


async def test_one_slide_page_or_sheet_can_be_read_alone(formats: tuple[Stack, dict[str, int]]) -> None:
    stack, ids = formats
    await stack.wait_idle(ALICE)
    deck = f"file:{ids['Formats/offsite.pptx']}"
    slide = (await stack.call(ALICE, "nc_get_document", {"id": deck, "section": "slide 2"})).structured_content
    assert slide["text"].startswith("# Slide 2: Frobnicator rollout") and "Glimmerwick" in slide["text"]
    assert "Agenda" not in slide["text"] and "Thank you" not in slide["text"]
    assert slide["section"] == "slide 2"
    assert slide["sections"] == ["Slide 1: Welcome", "Slide 2: Frobnicator rollout", "Slide 3: Questions"]
    sheet = f"file:{ids['Formats/prices.xlsx']}"
    whole = (await stack.call(ALICE, "nc_get_document", {"id": sheet, "section": "Sheet Prices"})).structured_content
    assert "Part 1 | 1.50 EUR" in whole["text"] and "Part 80 | 80.50 EUR" in whole["text"]
    missing = await stack.call(ALICE, "nc_get_document", {"id": sheet, "section": "Sheet Costs"})
    assert missing.is_error and "Sheet Prices, rows 2-" in str(missing.content)


async def test_bad_files_end_in_a_reason_and_the_rest_index_as_before(formats: tuple[Stack, dict[str, int]]) -> None:
    stack, ids = formats
    await stack.wait_idle(ALICE)
    status = await stack.status(ALICE)
    reasons = {s["id"]: s["reason"] for s in status["skipped_examples"]}
    for path, (_, reason) in BAD.items():
        assert reason in reasons.get(f"file:{ids[path]}", ""), (path, reasons)
    assert not status["failures"], status["failures"]
    titles = [hit["title"] for hit in (await stack.search(ALICE, CANARY[0], doc_types=["file"]))["results"]]
    assert CANARY[1] in titles
