"""Office files, books, e-mails and scans written the way users' programs write them: with openpyxl,
python-pptx, odfpy, ebooklib, the standard library's ``email`` and Pillow (no binary fixtures).

Scans are text rendered onto a white page at about 300 dpi with a little noise and a slight tilt, as a
phone or an office scanner delivers them; a scanned PDF is such pages with no text layer."""

from __future__ import annotations

import datetime as dt
import io
import struct
import zlib
from collections.abc import Sequence
from email.message import EmailMessage

import openpyxl
import pptx
from extract_msg.ole_writer import OleWriter
from ebooklib import epub
from odf.draw import Frame, Page, TextBox
from odf.opendocument import OpenDocumentPresentation, OpenDocumentSpreadsheet
from odf.presentation import Notes
from odf.style import MasterPage, PageLayout
from odf.table import Table, TableCell, TableRow
from odf.text import P
from PIL import Image, ImageDraw, ImageFilter, ImageFont

Sheets = dict[str, Sequence[Sequence[object]]]
Slides = Sequence[tuple[str, str, str]]  # (title, body, speaker notes)


def make_xlsx(sheets: Sheets) -> bytes:
    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def make_ods(sheets: Sheets) -> bytes:
    document = OpenDocumentSpreadsheet()
    for name, rows in sheets.items():
        table = Table(name=name)
        for row in rows:
            table_row = TableRow()
            for value in row:
                cell = TableCell(valuetype="string")
                if value is not None:  # shown as the cell's text, as LibreOffice does (dates in ISO form here)
                    cell.addElement(P(text=value.date().isoformat() if isinstance(value, dt.datetime) else str(value)))
                table_row.addElement(cell)
            table.addElement(table_row)
        document.spreadsheet.addElement(table)
    return _odf_bytes(document)


def make_pptx(slides: Slides) -> bytes:
    deck = pptx.Presentation()
    for title, body, notes in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])  # "Title and Content"
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def make_odp(slides: Slides) -> bytes:
    document = OpenDocumentPresentation()
    layout = PageLayout(name="layout")
    document.automaticstyles.addElement(layout)
    master = MasterPage(name="master", pagelayoutname=layout)
    document.masterstyles.addElement(master)
    for number, (title, body, notes) in enumerate(slides, start=1):
        page = Page(name=f"page{number}", masterpagename=master)
        page.addElement(_frame(title, presentation_class="title"))
        page.addElement(_frame(body, presentation_class="outline"))
        if notes:
            notes_element = Notes()
            notes_element.addElement(_frame(notes, presentation_class="notes"))
            page.addElement(notes_element)
        document.presentation.addElement(page)
    return _odf_bytes(document)


def _frame(text: str, presentation_class: str) -> Frame:
    frame = Frame(width="20cm", height="3cm", x="1cm", y="1cm", attributes={"class": presentation_class})
    box = TextBox()
    for line in text.split("\n"):
        box.addElement(P(text=line))
    frame.addElement(box)
    return frame


def _odf_bytes(document: object) -> bytes:
    buffer = io.BytesIO()
    document.write(buffer)  # type: ignore[attr-defined]
    return buffer.getvalue()


def make_rtf(*paragraphs: str) -> bytes:
    """RTF as WordPad writes it: a font table, then ``\\par``-ended paragraphs, non-ASCII as ``\\'xx``."""
    body = "".join(
        "".join(ch if ord(ch) < 128 else f"\\'{ord(ch.encode('cp1252', 'replace')):02x}" for ch in p) + "\\par\n"
        for p in paragraphs
    )
    return ("{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0\\fnil Calibri;}}\n\\f0\\fs22 " + body + "}").encode()


def make_epub(title: str, chapters: Sequence[tuple[str, str]]) -> bytes:
    book = epub.EpubBook()
    book.set_identifier("test-book")
    book.set_title(title)
    book.set_language("en")
    items = []
    for number, (heading, text) in enumerate(chapters, start=1):
        item = epub.EpubHtml(title=heading, file_name=f"chapter{number}.xhtml", lang="en")
        item.content = f"<html><body><h1>{heading}</h1><p>{text}</p></body></html>"
        book.add_item(item)
        items.append(item)
    book.toc = items
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    buffer = io.BytesIO()
    epub.write_epub(buffer, book)
    return buffer.getvalue()


def make_eml(subject: str, plain: str | None, html: str | None = None, attachment: str | None = None) -> bytes:
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = "Carla Ruiz <carla@example.org>"
    message["To"] = "alice@example.org"
    message["Date"] = "Tue, 03 Nov 2026 09:30:00 +0100"
    if plain is not None:
        message.set_content(plain)
    if html is not None:
        if plain is None:
            message.set_content(html, subtype="html")
        else:
            message.add_alternative(html, subtype="html")
    if attachment:
        message.add_attachment(b"%PDF-1.4 not read", maintype="application", subtype="pdf", filename=attachment)
    return message.as_bytes()


def make_msg(subject: str, body: str, sender: str = "Carla Ruiz", html: str | None = None) -> bytes:
    """An Outlook message (.msg) as Outlook stores one: a Compound File whose properties are streams
    (``__substg1.0_<tag>``, UTF-16 strings) listed in ``__properties_version1.0`` ([MS-OXMSG])."""
    strings = {0x001A: "IPM.Note", 0x0037: subject, 0x0C1A: sender, 0x0E04: "alice@example.org"}
    if body:
        strings[0x1000] = body
    writer = OleWriter()
    table = bytearray(32)  # the top-level header: reserved, next recipient/attachment ids, counts
    for prop_id, text in strings.items():
        data = text.encode("utf-16-le")
        tag = prop_id << 16 | 0x001F  # PT_UNICODE
        writer.addEntry(f"__substg1.0_{tag:08X}", data)
        table += struct.pack("<IIII", tag, 6, len(data) + 2, 0)  # readable and writable; size with its NUL
    if html is not None:  # PR_HTML, binary
        writer.addEntry("__substg1.0_10130102", html.encode())
        table += struct.pack("<IIII", 0x10130102, 6, len(html.encode()), 0)
    writer.addEntry("__properties_version1.0", bytes(table))
    writer.addEntry("__nameid_version1.0", storage=True)
    for stream in ("00020102", "00030102", "00040102"):
        writer.addEntry(f"__nameid_version1.0/__substg1.0_{stream}", b"")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


_FONT_FILE = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # Debian's fonts-dejavu-core: accents and umlauts


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.truetype(_FONT_FILE, size)
    except OSError:  # Pillow's own font has no accented letters: fine for English pages
        return ImageFont.load_default(size=size)


def render_page(text: str, *, width: int = 2480, font_size: int = 42, tilt: float = 0.6) -> Image.Image:
    """``text`` (lines wrapped at ~70 characters) on an A4-wide page at 300 dpi, slightly tilted and blurred."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        words, line = paragraph.split(), ""
        for word in words:
            if len(line) + len(word) > 70:
                lines.append(line)
                line = ""
            line = f"{line} {word}".strip()
        lines.append(line)
    height = max(600, 200 + len(lines) * int(font_size * 1.6))
    page = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(page)
    font = _font(font_size)
    for number, line in enumerate(lines):
        draw.text((150, 120 + number * int(font_size * 1.6)), line, font=font, fill=20)
    return page.rotate(tilt, fillcolor=255, expand=False).filter(ImageFilter.GaussianBlur(0.7))


def make_image(text: str, image_format: str = "PNG", **page: object) -> bytes:
    """A photo or scan of one page: PNG, JPEG, TIFF or WEBP."""
    buffer = io.BytesIO()
    render_page(text, **page).convert("RGB" if image_format == "JPEG" else "L").save(buffer, image_format)
    return buffer.getvalue()


def make_scanned_pdf(*pages: str) -> bytes:
    """A PDF as a scanner writes it: one image per page and no text layer."""
    images = [render_page(text).convert("RGB") for text in pages]
    buffer = io.BytesIO()
    images[0].save(buffer, "PDF", resolution=300.0, save_all=True, append_images=images[1:])
    return buffer.getvalue()


def make_multipage_tiff(*pages: str) -> bytes:
    images = [render_page(text) for text in pages]
    buffer = io.BytesIO()
    images[0].save(buffer, "TIFF", save_all=True, append_images=images[1:], compression="tiff_deflate")
    return buffer.getvalue()


def make_blank_png(width: int, height: int) -> bytes:
    """A white 1-bit PNG: 20,000 x 20,000 is 50 MB decoded and a few kilobytes on disk."""
    buffer = io.BytesIO()
    Image.new("1", (width, height), 1).save(buffer, "PNG")
    return buffer.getvalue()


def make_png_claiming(width: int, height: int) -> bytes:
    """A small PNG whose header (IHDR, with a valid CRC) claims ``width`` x ``height`` pixels."""
    data = bytearray(make_blank_png(100, 100))
    data[16:24] = width.to_bytes(4, "big") + height.to_bytes(4, "big")
    data[29:33] = zlib.crc32(bytes(data[12:29])).to_bytes(4, "big")
    return bytes(data)
