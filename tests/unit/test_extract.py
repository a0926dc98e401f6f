"""Text extraction from file bytes: every supported format, and every way a file can be unusable."""

from __future__ import annotations

import io
import time
import zipfile

import docx
import pytest
from pypdf import PdfReader, PdfWriter

from semantic_mcp.sources.extract import DOCX_MIME, ODT_MIME, UnsupportedContent, common, content_kind, extract, extract_text


def make_pdf(*pages: str) -> bytes:
    """A minimal valid PDF with one line of Helvetica text per page (pypdf cannot draw text)."""
    page_ids = [4 + 2 * i for i in range(len(pages))]
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % p for p in page_ids), len(pages)),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    }
    for page_id, text in zip(page_ids, pages, strict=True):
        stream = b"BT /F1 12 Tf 72 720 Td (%s) Tj ET" % text.encode("latin-1")
        objects[page_id] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (page_id + 1)
        )
        objects[page_id + 1] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (number, objects[number])
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offsets[number] for number in sorted(objects))
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def encrypt_pdf(data: bytes, user_password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def make_docx() -> bytes:
    document = docx.Document()
    document.add_heading("Quarterly report", level=1)
    document.add_paragraph("Revenue grew in the north.")
    document.add_heading("Details", level=2)
    document.add_paragraph("first point", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    for row, values in zip(table.rows, [("Region", "Sales"), ("North", "42")], strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_paragraph("After the table.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def make_zip(members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return buffer.getvalue()


ODT_CONTENT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
  xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
  xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" office:version="1.3">
 <office:body><office:text>
  <text:h text:outline-level="1">Meeting minutes</text:h>
  <text:p>Present:<text:s text:c="2"/>Alice<text:tab/>Bob<text:line-break/>and <text:span>Carol</text:span>.</text:p>
  <text:h text:outline-level="2">Decisions</text:h>
  <text:list><text:list-item><text:p>Ship on Friday</text:p></text:list-item></text:list>
  <table:table><table:table-row><table:table-cell><text:p>Owner</text:p></table:table-cell>
   <table:table-cell><text:p>Alice</text:p></table:table-cell></table:table-row></table:table>
 </office:text></office:body>
</office:document-content>"""


def test_plain_text_and_markdown() -> None:
    assert extract_text(b"hello\r\nworld\n\n\n\nend  \n", "text/plain", "a.txt") == "hello\nworld\n\nend"
    assert extract_text(b"# Title\n\nbody", "text/markdown", "a.md") == "# Title\n\nbody"
    assert extract_text(b"a,b\n1,2", "text/csv; charset=utf-8", "t.csv") == "a,b\n1,2"


def test_legacy_encodings_decode_instead_of_failing() -> None:
    assert extract_text("café – naïve".encode("cp1252"), "text/plain", "old.txt") == "café – naïve"
    assert extract_text(b"x\x81y", "text/plain", "odd.txt") == "x\x81y"  # not cp1252 either: Latin-1
    assert extract_text("grüße".encode("utf-16"), "text/plain", "wide.txt") == "grüße"  # BOM, NULs allowed


def test_empty_file_is_skipped() -> None:
    with pytest.raises(UnsupportedContent, match="empty"):
        extract_text(b"", "text/plain", "empty.txt")


def test_binary_behind_a_text_extension_is_skipped() -> None:
    with pytest.raises(UnsupportedContent, match="binary content"):
        extract_text(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "text/markdown", "photo.md")


def test_whitespace_only_has_no_text() -> None:
    with pytest.raises(UnsupportedContent, match="no text"):
        extract_text(b" \n\t\n", "text/plain", "blank.txt")


def test_html_keeps_headings_lists_and_visible_text_only() -> None:
    html = b"""<html><head><title>Tab title</title><style>p{color:red}</style></head><body>
      <h1>Release &amp; plan</h1><p>First   paragraph,<br>second line.</p>
      <ul><li>one</li><li>two</li></ul><table><tr><th>k</th><td>v</td></tr></table>
      <script>alert('no')</script><h3>Later</h3></body></html>"""
    assert extract_text(html, "text/html", "page.html") == (
        "# Release & plan\n\nFirst paragraph,\nsecond line.\n\n- one\n- two\n\nk | v\n\n### Later"
    )


def test_pdf_text_page_by_page() -> None:
    extracted = extract(make_pdf("Hello PDF world", "", "Third page"), "application/pdf", "r.pdf")
    assert extracted.text == "# Page 1\n\nHello PDF world\n\n# Page 3\n\nThird page"  # a page without text is left out
    assert extracted.sections == ((0, "Page 1"), (extracted.text.index("# Page 3"), "Page 3"))


def test_pdf_page_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "MAX_PDF_PAGES", 2)
    text = extract_text(make_pdf("one", "two", "three"), "application/pdf", "long.pdf")
    assert "two" in text and "three" not in text


def test_a_10000_page_pdf_gives_its_first_pages_within_bounds() -> None:
    started = time.monotonic()
    extracted = extract(make_pdf(*(f"Page number {n} of the archive" for n in range(1, 10_001))),
                        "application/pdf", "archive.pdf")
    assert len(extracted.sections) == common.MAX_PDF_PAGES and extracted.sections[-1][1] == "Page 500"
    assert time.monotonic() - started < common.EXTRACT_SECONDS + 10


def test_a_pdf_without_a_text_layer_says_so() -> None:
    with pytest.raises(UnsupportedContent, match="PDF without a text layer"):
        extract_text(make_pdf("", ""), "application/pdf", "scan.pdf")


def test_password_protected_pdf_is_skipped() -> None:
    with pytest.raises(UnsupportedContent, match="encrypted PDF"):
        extract_text(encrypt_pdf(make_pdf("secret"), "open-sesame"), "application/pdf", "locked.pdf")


def test_pdf_with_only_an_owner_password_is_read() -> None:
    assert extract_text(encrypt_pdf(make_pdf("restricted but readable"), ""), "application/pdf", "r.pdf") == (
        "# Page 1\n\nrestricted but readable"
    )


@pytest.mark.parametrize("data", [b"%PDF-1.4\nthis is not a pdf", make_pdf("cut")[:60], b"\x00" * 64])
def test_corrupt_pdf_is_skipped(data: bytes) -> None:
    with pytest.raises(UnsupportedContent):
        extract_text(data, "application/pdf", "broken.pdf")


def test_docx_headings_lists_and_tables() -> None:
    assert extract_text(make_docx(), DOCX_MIME, "report.docx") == (
        "# Quarterly report\nRevenue grew in the north.\n## Details\n- first point\n"
        "Region | Sales\nNorth | 42\n\nAfter the table."
    )


def test_corrupt_docx_is_skipped() -> None:
    with pytest.raises(UnsupportedContent, match="corrupt or unreadable DOCX"):
        extract_text(b"PK\x03\x04 definitely not a zip", DOCX_MIME, "broken.docx")


def test_zip_bomb_is_refused_before_inflating(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "MAX_UNZIPPED_BYTES", 1000)
    bomb = make_zip({"content.xml": "<a>" + "x" * 5000 + "</a>"})
    with pytest.raises(UnsupportedContent, match="too large once uncompressed"):
        extract_text(bomb, ODT_MIME, "bomb.odt")


def test_odt_text() -> None:
    data = make_zip({"mimetype": ODT_MIME, "content.xml": ODT_CONTENT})
    assert extract_text(data, ODT_MIME, "minutes.odt") == (
        "# Meeting minutes\nPresent:  Alice\tBob\nand Carol.\n## Decisions\n- Ship on Friday\nOwner | Alice"
    )


def test_odt_without_content_is_skipped() -> None:
    with pytest.raises(UnsupportedContent, match="corrupt or unreadable ODT"):
        extract_text(make_zip({"mimetype": ODT_MIME}), ODT_MIME, "hollow.odt")


def test_long_text_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "MAX_CHARS", 10)
    assert extract_text(b"0123456789abcdef", "text/plain", "long.txt") == "0123456789"


@pytest.mark.parametrize(
    ("mime", "name", "kind"),
    [
        ("text/markdown", "n.md", "text"),
        ("text/plain;charset=UTF-8", "n.txt", "text"),
        ("application/json", "d.json", "text"),
        ("application/octet-stream", "README.md", "text"),  # server did not know the type: trust the name
        ("", "page.htm", "html"),
        ("application/pdf", "x.bin", "pdf"),  # the server's type wins over the name
        (DOCX_MIME, "r.docx", "docx"),
        (ODT_MIME, "r.odt", "odt"),
        ("text/rtf", "letter.rtf", "rtf"),  # text/* in name only: markup, read by its own extractor
        ("image/jpeg", "photo.jpg", "image"),  # read by OCR (tests/app/test_ocr.py)
        ("application/octet-stream", "scan.TIFF", "image"),
    ],
)
def test_content_kind(mime: str, name: str, kind: str) -> None:
    assert content_kind(mime, name) == kind


@pytest.mark.parametrize(
    ("mime", "name"),
    [
        ("image/svg+xml", "drawing.svg"),
        ("application/zip", "archive.zip"),
        ("video/mp4", "clip.mp4"),
        ("audio/mpeg", "song.mp3"),
        ("application/octet-stream", "program.bin"),
        ("application/vnd.ms-excel", "legacy.xls"),
    ],
)
def test_unsupported_types(mime: str, name: str) -> None:
    with pytest.raises(UnsupportedContent, match="unsupported file type"):
        extract_text(b"data", mime, name)
