"""Issue 20 on a real Nextcloud 34.0.1: spreadsheets, presentations, a PDF, RTF, EPUB, e-mails
(.eml and Outlook's .msg), photos of receipts, a scanned PDF and a fax uploaded through WebDAV as
a sync client does (no type of its own: Nextcloud names it from the extension), indexed through
the webhooks (the images and the scans by OCR, in its own lane), and found through the proxy by
their content with the page, slide or sheet rows in the hit; a password-protected workbook is
skipped with the reason.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from realstack import RealStack

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from office_files import (
    make_eml,
    make_epub,
    make_image,
    make_msg,
    make_multipage_tiff,
    make_odp,
    make_ods,
    make_pptx,
    make_rtf,
    make_scanned_pdf,
    make_xlsx,
)
from test_extract import make_pdf

ROWS = [("Product", "Price", "Supplier")] + [
    (f"Part {i}", f"{i}.50 EUR", "Quillmoor Sprockets" if i == 45 else "Acme") for i in range(1, 81)
]
SLIDES = [("Welcome", "Agenda for the offsite", ""),
          ("Frobnicator rollout", "Pilot in Tarnwick first", "Say that the Glimmerwick budget is frozen")]
FILES = {
    "/Formats/prices.xlsx": (make_xlsx({"Prices": ROWS}), "Quillmoor Sprockets", "Sheet Prices, rows "),
    "/Formats/offsite.pptx": (make_pptx(SLIDES), "Glimmerwick budget frozen", "Slide 2: Frobnicator rollout"),
    "/Formats/budget.ods": (make_ods({"Budget": [("Item", "Cost"), ("Zephyrine boat rental", "900")]}),
                            "Zephyrine boat rental", "Sheet Budget, row 2"),
    "/Formats/retreat.odp": (make_odp([("Retreat", "Venue: Brassfen manor", "Book the Brassfen manor early")]),
                             "Brassfen manor venue", "Slide 1: Retreat"),
    "/Formats/manual.pdf": (make_pdf("Installation overview", "Calibrate the Durnholt gauge"),
                            "calibrate the Durnholt gauge", "Page 2"),
    "/Formats/letter.rtf": (make_rtf("Dear Ms Oakhaven,", "your Plinkett subscription is renewed."),
                            "Plinkett subscription", None),
    "/Formats/keeper.epub": (make_epub("The Keeper", [("Chapter One", "The Sorrelwyn lighthouse keeper woke.")]),
                             "Sorrelwyn lighthouse keeper", None),
    "/Formats/tapas.eml": (make_eml("Tapas on Friday", "Shall we meet at the Marzipella bar at nine?"),
                           "Marzipella tapas bar", None),
    "/Formats/boiler.msg": (make_msg("Boiler service", "The Heizwerk Brandt technician services the boiler on Tuesday."),
                            "Heizwerk Brandt boiler service", None),
    "/Formats/receipt.jpg": (make_image("Thornbury hardware: two brass hinges, total EUR 41.90", "JPEG"),
                             "brass hinges from Thornbury hardware", None),
    "/Formats/screenshot.webp": (make_image("Wi-Fi for guests: network Larkspur-Gast, valid through December", "WEBP"),
                                 "guest wifi network Larkspur", None),
    "/Formats/parking.png": (make_image("Parking permit for the Wexcombe depot, valid until June"),
                             "Wexcombe depot parking permit", None),
    "/Formats/lease-scan.pdf": (make_scanned_pdf("Lease agreement, page one: the parties.",
                                                 "Die Kaution für die Wohnung in Quellbrunn beträgt 2.850 Euro."),
                                "Kaution Wohnung Quellbrunn", "Page 2"),
    "/Formats/fax.tiff": (make_multipage_tiff("Fax cover sheet", "The Ravensholm delivery is postponed to Friday."),
                          "Ravensholm delivery postponed", "Page 2"),
}
LOCKED = "/Formats/locked.xlsx"


@pytest.fixture(scope="module", autouse=True)
def uploaded(real: RealStack) -> None:
    alice = real.user("alice")
    alice.mkdir("/Formats")
    for path, (data, _, _) in FILES.items():
        alice.put_file(path, data, content_type="application/octet-stream")
    alice.put_file(LOCKED, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(4096), content_type="application/octet-stream")
    asyncio.run(real.eventually(lambda: _all_found(real), timeout=240, interval=3))


async def _hit(real: RealStack, path: str, query: str) -> dict | None:
    results = (await real.search("alice", query, doc_types=["file"], limit=5))["results"]
    return next((hit for hit in results if hit["location"] == path), None)


async def _all_found(real: RealStack) -> bool:
    return all([await _hit(real, path, query) for path, (_, query, _) in FILES.items()])


async def test_every_format_is_found_with_its_page_slide_or_rows(real: RealStack) -> None:
    for path, (_, query, section) in FILES.items():
        hit = await _hit(real, path, query)
        assert hit is not None, path
        if section is None:
            continue
        assert (hit.get("section") or "").startswith(section), (path, hit)


async def test_one_slide_is_read_alone_and_a_locked_workbook_has_its_reason(real: RealStack) -> None:
    deck = await _hit(real, "/Formats/offsite.pptx", "Glimmerwick budget frozen")
    slide = (await real.call("alice", "nc_get_document", {"id": deck["id"], "section": "Slide 2"})).structured_content
    assert "Glimmerwick" in slide["text"] and "Agenda for the offsite" not in slide["text"]
    reasons = [s["reason"] for s in (await real.status("alice"))["skipped_examples"]]
    assert any("password-protected" in reason for reason in reasons), reasons
