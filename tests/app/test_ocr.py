"""Issue 20: text in images and scanned PDFs, read by Tesseract in its own lane (ADR 0601).

The extraction tests run the real Tesseract on pages rendered by ``office_files``; the lane tests run
the real ExApp process on the fake Nextcloud: scans wait for everything else, a user's edit is never
held up by another user's scans, OCR can be switched off, and hostile images end in a reason.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from office_files import make_blank_png, make_image, make_multipage_tiff, make_png_claiming, make_scanned_pdf
from PIL import Image
from semantic_mcp.sources.extract import NeedsOcr, OcrOptions, UnsupportedContent, extract, ocr
from stack import APP_ID, Stack, on_own_stack

pytestmark = pytest.mark.skipif(not ocr.installed_languages(), reason="Tesseract is not installed (make test installs it)")

LEASE = "Die Kaution beträgt drei Monatsmieten, zusammen 2.850 Euro, zahlbar bis zum ersten März."
RECEIPT = "Hardware store receipt: two hinges and a tin of varnish, total EUR 41.90, paid by card."
ALL = OcrOptions(("eng", "deu", "fra", "spa"))


@pytest.mark.parametrize(("name", "mime", "image_format"), [
    ("receipt.png", "image/png", "PNG"), ("receipt.jpg", "image/jpeg", "JPEG"),
    ("receipt.tiff", "image/tiff", "TIFF"), ("receipt.webp", "image/webp", "WEBP"),
])
def test_an_image_is_read_in_the_ocr_lane_only(name: str, mime: str, image_format: str) -> None:
    data = make_image(RECEIPT, image_format)
    with pytest.raises(NeedsOcr):
        extract(data, mime, name)
    text = extract(data, mime, name, ALL).text
    assert "hinges" in text and "41.90" in text


def test_umlauts_need_the_language() -> None:
    data = make_image(LEASE)
    assert "beträgt" in extract(data, "image/png", "lease.png", OcrOptions(("deu",))).text
    assert "beträgt" not in extract(data, "image/png", "lease.png", OcrOptions(("eng",))).text


def test_a_scanned_pdf_is_read_page_by_page() -> None:
    data = make_scanned_pdf(RECEIPT, LEASE)
    with pytest.raises(NeedsOcr):
        extract(data, "application/pdf", "scan.pdf")
    extracted = extract(data, "application/pdf", "scan.pdf", ALL)
    labels = {label: offset for offset, label in extracted.sections}
    assert list(labels) == ["Page 1", "Page 2"]
    assert "hinges" in extracted.text[: labels["Page 2"]] and "Kaution" in extracted.text[labels["Page 2"]:]


def test_a_multipage_tiff_has_a_section_per_page() -> None:
    extracted = extract(make_multipage_tiff(RECEIPT, LEASE), "image/tiff", "fax.tiff", ALL)
    assert [label for _, label in extracted.sections] == ["Page 1", "Page 2"]


def test_a_pdf_with_text_pages_and_a_scanned_page_reads_both() -> None:
    from pypdf import PdfReader, PdfWriter
    from test_extract import make_pdf

    writer = PdfWriter()
    for document in (make_pdf("The typed cover letter about the flat in Gartenstraße."), make_scanned_pdf(LEASE)):
        for page in PdfReader(io.BytesIO(document)).pages:
            writer.add_page(page)
    buffer = io.BytesIO()
    writer.write(buffer)
    with pytest.raises(NeedsOcr):  # the whole file waits for the lane, not indexed without its scan
        extract(buffer.getvalue(), "application/pdf", "mixed.pdf")
    text = extract(buffer.getvalue(), "application/pdf", "mixed.pdf", ALL).text
    assert "cover letter" in text and "Kaution" in text


def test_a_logo_on_a_title_page_is_not_a_scan() -> None:
    """A small picture on a page with little text does not send a typed PDF to the OCR lane."""
    from pypdf import PdfReader, PdfWriter
    from test_extract import make_pdf

    logo = io.BytesIO()
    Image.new("RGB", (240, 90), (200, 30, 30)).save(logo, "PDF")
    writer = PdfWriter()
    for document in (logo.getvalue(), make_pdf("The annual report of the rowing club, with the treasurer's figures.")):
        for page in PdfReader(io.BytesIO(document)).pages:
            writer.add_page(page)
    buffer = io.BytesIO()
    writer.write(buffer)
    assert [label for _, label in extract(buffer.getvalue(), "application/pdf", "report.pdf").sections] == ["Page 2"]


# --- bad files: a reason, never a crash, a hang or a bomb decoded ------------------------------------


def test_a_20000_pixel_square_image_is_refused_before_decoding() -> None:
    with pytest.raises(UnsupportedContent, match="image too large"):
        extract(make_blank_png(20_000, 20_000), "image/png", "huge.png", ALL)


def test_a_decompression_bomb_header_is_refused() -> None:
    with pytest.raises(UnsupportedContent, match="image too large"):
        extract(make_png_claiming(100_000, 100_000), "image/png", "bomb.png", ALL)


@pytest.mark.parametrize("data", [b"\x89PNG\r\n\x1a\n garbage", make_image(RECEIPT, "JPEG")[:3000]])
def test_corrupt_and_truncated_images_end_in_a_reason(data: bytes) -> None:
    with pytest.raises(UnsupportedContent):
        extract(data, "image/png", "broken.png", ALL)


def test_an_image_without_text_says_so() -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (800, 600), (40, 120, 200)).save(buffer, "PNG")
    with pytest.raises(UnsupportedContent, match="no text found in the image"):
        extract(buffer.getvalue(), "image/png", "sky.png", ALL)


def test_a_page_that_overruns_its_time_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ocr, "PAGE_SECONDS", 0.1)
    started = time.monotonic()
    with pytest.raises(UnsupportedContent, match="no text found"):
        extract(make_image(RECEIPT), "image/png", "slow.png", ALL)
    assert time.monotonic() - started < 5


def test_without_tesseract_or_its_languages_the_reason_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ocr, "installed_languages", lambda: frozenset())
    with pytest.raises(UnsupportedContent, match="OCR is not available"):
        extract(make_image(RECEIPT), "image/png", "r.png", ALL)
    assert ocr.usable_languages(("eng", "xyz")) == ()


# --- the lane, on the real ExApp process ------------------------------------------------------------


def test_scans_wait_in_their_own_lane_and_are_found_with_their_page(tmp_path: Path) -> None:
    on_own_stack(tmp_path, _scans_in_their_lane, profile="minimal")


async def _scans_in_their_lane(stack: Stack) -> None:
    fake = stack.fake
    await stack.wait_backfilled()
    scans = {f"/Scans/letter-{i:02d}.pdf": make_scanned_pdf(f"Letter {i} about the garden shed.", RECEIPT)
             for i in range(6)}
    for path, data in scans.items():
        fake.put_file("alice", path, data)
    await stack.eventually(lambda: _waiting_for_ocr(stack, "alice") >= 3, timeout=60)

    edited = time.monotonic()
    fake.create_note("bob", "Ferry", "The ferry to the island leaves at 07:40 from pier three.")
    await stack.eventually(lambda: _titles_have(stack, "bob", "when does the ferry leave", "Ferry"), timeout=60)
    assert _waiting_for_ocr(stack, "alice") >= 1, "the edit waited for alice's scans"
    print(f"bob's edit found {time.monotonic() - edited:.1f} s after it, beside alice's scans")

    status = (await stack.status("alice"))["sources"]["file"]
    assert status["waiting_for_ocr"] <= status["pending"]
    await stack.eventually(lambda: _waiting_for_ocr(stack, "alice") == 0 and not _queued(stack, "alice"), timeout=300)
    hits = (await stack.search("alice", "how much did the varnish and hinges cost", doc_types=["file"]))["results"]
    assert hits and hits[0]["title"].startswith("letter-"), hits
    assert hits[0]["section"] == "Page 2", hits[0]
    assert len(stack.indexed_files("alice", "/Scans/")) == len(scans)  # each once
    page = (await stack.call("alice", "nc_get_document", {"id": hits[0]["id"], "section": "Page 2"})).structured_content
    assert "hinges" in page["text"] and "garden shed" not in page["text"], page  # read by OCR on demand


async def _titles_have(stack: Stack, user: str, query: str, title: str) -> bool:
    return title in await stack.titles(user, query)


def _waiting_for_ocr(stack: Stack, user: str) -> int:
    return stack.db_rows("SELECT COUNT(*) FROM tasks WHERE user = ? AND priority = 2", (user,))[0][0]


def _queued(stack: Stack, user: str) -> int:
    return stack.db_rows("SELECT COUNT(*) FROM tasks WHERE user = ?", (user,))[0][0]


def test_ocr_off_skips_images_with_a_reason_and_on_again_reads_them(tmp_path: Path) -> None:
    on_own_stack(tmp_path, _ocr_switched, profile="minimal")


async def _ocr_switched(stack: Stack) -> None:
    fake = stack.fake
    await stack.wait_backfilled()
    fake.set_admin_setting(APP_ID, "ocr_enabled", "")  # an unticked checkbox, as the admin page stores it
    await stack.eventually(lambda: "Admin settings changed" in stack.log(), timeout=30)
    fake.put_file("alice", "/Receipts/hardware.png", make_image(RECEIPT))
    fake.put_file("alice", "/Receipts/scan.pdf", make_scanned_pdf(RECEIPT))

    async def skipped() -> list[str]:  # the scan is read and skipped; an image is not even listed while OCR is off
        return [item["reason"] for item in (await stack.status("alice"))["skipped_examples"] if "OCR is off" in item["reason"]]

    assert await stack.eventually(skipped, timeout=60) == ["text only in images (a scan or a photo): OCR is off"]
    assert stack.indexed_files("alice", "/Receipts/") == []

    fake.set_admin_setting(APP_ID, "ocr_enabled", "1")
    await stack.all_indexed("alice", "/Receipts/", {"/Receipts/hardware.png": "hinges", "/Receipts/scan.pdf": "hinges"},
                            timeout=180)
