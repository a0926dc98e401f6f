"""Turn a file's bytes into plain text for embedding: text, Markdown, HTML, PDF, DOCX and ODT.

Everything that can go wrong with a user's file ends in :class:`UnsupportedContent` with a reason a
human can read in the status tool ("encrypted PDF", "binary content in a text file"), never in an
arbitrary exception: one bad file must not stop a user's indexing. Work is bounded (characters,
PDF pages, seconds, uncompressed size of Office archives) so a hostile or huge file cannot hang
the indexer. The functions are synchronous and CPU-bound: callers run them in a worker thread.
"""

from __future__ import annotations

import codecs
import io
import logging
import re
import time
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Callable, Iterable
from html.parser import HTMLParser
from pathlib import PurePosixPath

import docx
from docx.table import Table
from pypdf import PdfReader

log = logging.getLogger(__name__)

MAX_CHARS = 1_000_000  # about 200 pages of prose; beyond that retrieval gains little and embedding cost grows
MAX_PDF_PAGES = 500
EXTRACT_SECONDS = 30.0  # checked between PDF pages; callers also stop waiting after this (see files.py)
MAX_UNZIPPED_BYTES = 64 * 1024 * 1024  # DOCX/ODT are zip archives: refuse decompression bombs

DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
ODT_MIME = "application/vnd.oasis.opendocument.text"

_KIND_BY_MIME = {
    "application/pdf": "pdf",
    DOCX_MIME: "docx",
    ODT_MIME: "odt",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/json": "text",
    "application/xml": "text",
    "application/yaml": "text",
    "application/x-yaml": "text",
    "application/javascript": "text",
}
_NOT_TEXT = {"text/rtf"}  # text/* in name only: markup that would embed as noise
_TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".csv", ".tsv", ".log", ".rst", ".json", ".xml", ".yaml", ".yml")
_KIND_BY_SUFFIX = {
    **dict.fromkeys(_TEXT_SUFFIXES, "text"),
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".odt": "odt",
}
_GENERIC_MIMES = {"", "application/octet-stream"}  # the server did not recognise the type: trust the name


class UnsupportedContent(Exception):
    """The file exists but yields no text to index; ``reason`` says why, for the status tool."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def content_kind(mime: str, name: str) -> str:
    """Which extractor handles a file: "text", "html", "pdf", "docx" or "odt".

    The server's MIME type decides; the file name only when the server did not know the type.
    Raises :class:`UnsupportedContent` for everything else (images, archives, media, binaries),
    so callers can skip those before downloading them.
    """
    mime = mime.split(";")[0].strip().lower()
    kind = _KIND_BY_MIME.get(mime)
    if kind is None and mime.startswith("text/") and mime not in _NOT_TEXT:
        kind = "text"
    if kind is None and mime in _GENERIC_MIMES:
        kind = _KIND_BY_SUFFIX.get(PurePosixPath(name).suffix.lower())
    if kind is None:
        raise UnsupportedContent(f"unsupported file type {mime or 'unknown'}")
    return kind


def extract_text(data: bytes, mime: str, name: str) -> str:
    """Extract the text of a file, Markdown-ish (headings as ``#`` lines), at most :data:`MAX_CHARS`."""
    kind = content_kind(mime, name)
    if not data:
        raise UnsupportedContent("empty")
    try:
        text = _EXTRACTORS[kind](data)
    except (UnsupportedContent, MemoryError):  # out of memory is the parser process's bound (ADR 0510)
        raise
    except Exception as exc:  # parsers raise anything on corrupt input; one bad file must not stop indexing
        raise UnsupportedContent(f"corrupt or unreadable {kind.upper()}: {type(exc).__name__}: {exc}"[:300]) from exc
    text = _tidy(text)
    if not text:
        raise UnsupportedContent("no text content")
    if len(text) > MAX_CHARS:
        log.info("%s: text truncated to %d characters", name, MAX_CHARS)
        text = text[:MAX_CHARS]
    return text


def _tidy(text: str) -> str:
    """Strip trailing spaces and collapse runs of blank lines, which carry no meaning for embeddings."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


# --- plain text -------------------------------------------------------------------------------

_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def decode_text(data: bytes) -> str:
    """Decode a text file whatever its encoding: BOM, else UTF-8, else Windows-1252, else Latin-1.

    Latin-1 maps every byte, so legacy files always decode (possibly with a few odd characters)
    instead of being skipped. NUL bytes outside UTF-16 mean the "text" is really binary.
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data.decode(encoding, errors="replace")
    if b"\x00" in data:
        raise UnsupportedContent("binary content in a text file")
    for encoding in ("utf-8", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


# --- HTML -------------------------------------------------------------------------------------


class _HtmlToText(HTMLParser):
    """Keeps the visible text, headings as ``#`` lines, list items as ``-`` lines, cells separated by ``|``."""

    _HIDDEN = {"script", "style", "noscript", "template", "title", "svg"}
    _BLOCKS = {"p", "div", "section", "article", "header", "footer", "main", "nav", "aside", "ul", "ol",
               "table", "tr", "blockquote", "pre", "dl", "dt", "dd", "figure", "figcaption", "hr", "br"}
    _HEADINGS = {f"h{level}": level for level in range(1, 7)}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden_depth = 0
        self._pre_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._HIDDEN:
            self._hidden_depth += 1
        elif tag in self._HEADINGS:
            self.parts.append("\n\n" + "#" * self._HEADINGS[tag] + " ")
        elif tag == "li":
            self.parts.append("\n- ")
        elif tag in ("td", "th"):
            self.parts.append(" | ")
        elif tag in self._BLOCKS:
            self.parts.append("\n")
        if tag == "pre":
            self._pre_depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self._HIDDEN:
            self._hidden_depth = max(0, self._hidden_depth - 1)
        elif tag in self._HEADINGS or tag in self._BLOCKS:
            self.parts.append("\n")
        if tag == "pre":
            self._pre_depth = max(0, self._pre_depth - 1)

    def handle_data(self, data: str) -> None:
        if self._hidden_depth:
            return
        self.parts.append(data if self._pre_depth else re.sub(r"\s+", " ", data))


def _html_text(data: bytes) -> str:
    parser = _HtmlToText()
    parser.feed(decode_text(data))
    parser.close()
    lines = (line.strip() for line in "".join(parser.parts).split("\n"))
    return "\n".join(line.removeprefix("| ") for line in lines)


# --- PDF --------------------------------------------------------------------------------------


def _pdf_text(data: bytes) -> str:
    """Text of the first :data:`MAX_PDF_PAGES` pages, stopping early after :data:`EXTRACT_SECONDS`.

    PDFs with only an owner password (printing/copy restrictions) open with the empty user
    password and are indexed; PDFs that need a password to open are skipped.
    """
    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not _opens_without_password(reader):
        raise UnsupportedContent("encrypted PDF")
    deadline = time.monotonic() + EXTRACT_SECONDS
    pages: list[str] = []
    size = 0
    for number, page in enumerate(reader.pages):
        if number >= MAX_PDF_PAGES or size >= MAX_CHARS or time.monotonic() > deadline:
            log.info("PDF text stopped after %d pages", number)
            break
        text = page.extract_text() or ""
        pages.append(text)
        size += len(text)
    return "\n\n".join(pages)


def _opens_without_password(reader: PdfReader) -> bool:
    try:
        return bool(reader.decrypt(""))
    except Exception:  # an encryption algorithm pypdf cannot handle (or lacks the cryptography package for)
        return False


# --- Office documents -------------------------------------------------------------------------


def _open_zip(data: bytes) -> zipfile.ZipFile:
    archive = zipfile.ZipFile(io.BytesIO(data))
    if sum(info.file_size for info in archive.infolist()) > MAX_UNZIPPED_BYTES:
        raise UnsupportedContent("document too large once uncompressed")
    return archive


def _docx_text(data: bytes) -> str:
    """Paragraphs and tables in document order; Heading N / Title styles become ``#`` lines."""
    _open_zip(data).close()  # size check before python-docx inflates the whole package
    lines: list[str] = []
    for block in docx.Document(io.BytesIO(data)).iter_inner_content():
        if isinstance(block, Table):
            lines.extend(_table_row(cell.text for cell in row.cells) for row in block.rows)
            lines.append("")
            continue
        style = (block.style.name if block.style is not None else "") or ""
        lines.append(_docx_prefix(style) + block.text)
    return "\n".join(lines)


def _docx_prefix(style: str) -> str:
    heading = re.fullmatch(r"heading\s*(\d)", style.strip(), re.IGNORECASE)
    if heading:
        return "#" * min(int(heading.group(1)), 6) + " "
    if style.strip().lower() == "title":
        return "# "
    if style.lower().startswith("list"):
        return "- "
    return ""


def _table_row(cells: Iterable[str]) -> str:
    """One table row as ``a | b``; merged cells repeat their text in python-docx, so repeats are dropped."""
    values: list[str] = []
    for cell in cells:
        cell = " ".join(cell.split())
        if not values or values[-1] != cell:
            values.append(cell)
    return " | ".join(values)


_ODF_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_ODF_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
_ODF_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"


def _odf(namespace: str, local: str) -> str:
    return f"{{{namespace}}}{local}"


def _odt_text(data: bytes) -> str:
    """Walk ``content.xml`` of an OpenDocument text: headings, paragraphs, lists and tables."""
    with _open_zip(data) as archive:
        root = ET.fromstring(archive.read("content.xml"))
    body = root.find(f"{_odf(_ODF_OFFICE, 'body')}/{_odf(_ODF_OFFICE, 'text')}")
    if body is None:
        raise UnsupportedContent("ODT without a text body")
    lines = _OdtLines()
    try:
        lines.blocks(body, prefix="")
    except _OdtLines.Full:
        log.info("ODT text stopped at %d characters", MAX_CHARS)
    return "\n".join(lines)


class _OdtLines(list[str]):
    """The lines of an ODT's text, stopping once they hold :data:`MAX_CHARS` characters: repeat
    counts (``<text:s text:c="…"/>``) make a tiny file stand for any amount of text (issue 21)."""

    MAX_SPACES = 64  # a run of encoded spaces longer than this carries nothing for search

    class Full(Exception):
        pass

    size = 0

    def add(self, line: str) -> None:
        self.append(line)
        self.size += len(line) + 1
        if self.size >= MAX_CHARS:
            raise self.Full

    def blocks(self, element: ET.Element, prefix: str) -> None:
        for child in element:
            if child.tag == _odf(_ODF_TEXT, "h"):
                level = int(child.get(_odf(_ODF_TEXT, "outline-level"), "1") or 1)
                self.add("#" * min(max(level, 1), 6) + " " + self.inline(child))
            elif child.tag == _odf(_ODF_TEXT, "p"):
                self.add(prefix + self.inline(child))
            elif child.tag == _odf(_ODF_TEXT, "list-item"):
                self.blocks(child, prefix="- ")
            elif child.tag == _odf(_ODF_TABLE, "table-row"):
                cells = child.iter(_odf(_ODF_TABLE, "table-cell"))
                self.add(_table_row(" ".join(map(self.inline, cell.iter(_odf(_ODF_TEXT, "p")))) for cell in cells))
            else:
                self.blocks(child, prefix)

    def inline(self, element: ET.Element) -> str:
        """Text of a paragraph, honouring ODF's encoded whitespace (``text:s``, ``text:tab``, ``text:line-break``)."""
        parts = [element.text or ""]
        size = len(parts[0])
        for child in element:
            if child.tag == _odf(_ODF_TEXT, "s"):
                parts.append(" " * min(int(child.get(_odf(_ODF_TEXT, "c"), "1") or 1), self.MAX_SPACES))
            elif child.tag == _odf(_ODF_TEXT, "tab"):
                parts.append("\t")
            elif child.tag == _odf(_ODF_TEXT, "line-break"):
                parts.append("\n")
            elif child.tag != _odf(_ODF_TEXT, "note-citation"):
                parts.append(self.inline(child))
            parts.append(child.tail or "")
            size += len(parts[-1]) + len(parts[-2])
            if self.size + size >= MAX_CHARS:
                break
        return "".join(parts)


_EXTRACTORS: dict[str, Callable[[bytes], str]] = {
    "text": decode_text,
    "html": _html_text,
    "pdf": _pdf_text,
    "docx": _docx_text,
    "odt": _odt_text,
}
