"""Turn a file's bytes into plain text for embedding, with the pages, slides and sheets it holds.

Formats: text, Markdown, HTML, RTF, PDF, Word (DOCX), OpenDocument (ODT, ODS, ODP), Excel (XLSX,
XLSM), PowerPoint (PPTX, PPTM), EPUB, e-mail (.eml), and with OCR images (PNG, JPEG, TIFF, WEBP,
GIF, BMP) and scanned PDF pages. One module per format family reads them through a maintained
library (pypdf, python-docx, openpyxl, python-pptx, ebooklib, striprtf, ``email``, Pillow and
Tesseract); this module picks the extractor and assembles what it returns.

Everything that can go wrong with a user's file ends in :class:`UnsupportedContent` with a reason a
human can read in the status tool ("encrypted PDF", "binary content in a text file"), never in an
arbitrary exception: one bad file must not stop a user's indexing. Work is bounded (characters,
pages, rows, seconds, uncompressed size of zip packages: see :mod:`.common`) so a hostile or huge
file cannot hang the indexer. The functions are synchronous and CPU-bound: the app runs them in its
bounded parser process (ADR 0510).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from . import common
from .common import Section, UnsupportedContent
from .epub import epub_text
from .mail import eml_text
from .odf import odp_slides, ods_sheets, odt_text
from .ocr import NeedsOcr, OcrOptions, image_sections
from .ooxml import docx_text, pptx_slides, xlsx_sheets
from .pdf import pdf_pages
from .text import decode_text, html_text, rtf_text

__all__ = ["Extracted", "NeedsOcr", "OcrOptions", "UnsupportedContent", "content_kind", "decode_text", "extract",
           "extract_text"]

log = logging.getLogger(__name__)

DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
ODT_MIME = "application/vnd.oasis.opendocument.text"
XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
ODS_MIME = "application/vnd.oasis.opendocument.spreadsheet"
PPTX_MIME = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
ODP_MIME = "application/vnd.oasis.opendocument.presentation"

# As Nextcloud names them (resources/config/mimetypemapping.dist.json, Nextcloud 34), in lower case.
_KIND_BY_MIME = {
    "application/pdf": "pdf",
    DOCX_MIME: "docx",
    ODT_MIME: "odt",
    XLSX_MIME: "xlsx",
    "application/vnd.ms-excel.sheet.macroenabled.12": "xlsx",
    ODS_MIME: "ods",
    PPTX_MIME: "pptx",
    "application/vnd.ms-powerpoint.presentation.macroenabled.12": "pptx",
    ODP_MIME: "odp",
    "application/epub+zip": "epub",
    "message/rfc822": "eml",
    "text/rtf": "rtf",
    "application/rtf": "rtf",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/json": "text",
    "application/xml": "text",
    "application/yaml": "text",
    "application/x-yaml": "text",
    "application/javascript": "text",
    **dict.fromkeys(("image/png", "image/jpeg", "image/tiff", "image/webp", "image/gif", "image/bmp"), "image"),
}
_TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".csv", ".tsv", ".log", ".rst", ".json", ".xml", ".yaml", ".yml")
_KIND_BY_SUFFIX = {
    **dict.fromkeys(_TEXT_SUFFIXES, "text"),
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".odt": "odt",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".ods": "ods",
    ".pptx": "pptx",
    ".pptm": "pptx",
    ".odp": "odp",
    ".epub": "epub",
    ".eml": "eml",
    ".rtf": "rtf",
    **dict.fromkeys((".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".gif", ".bmp"), "image"),
}
_GENERIC_MIMES = {"", "application/octet-stream"}  # the server did not recognise the type: trust the name

# Each returns text (Markdown-ish: headings as "#" lines) or labelled sections (pages, slides, row groups).
_EXTRACTORS: dict[str, Callable[[bytes], str | list[Section]]] = {
    "text": decode_text,
    "html": html_text,
    "rtf": rtf_text,
    "docx": docx_text,
    "odt": odt_text,
    "xlsx": xlsx_sheets,
    "ods": ods_sheets,
    "pptx": pptx_slides,
    "odp": odp_slides,
    "epub": epub_text,
    "eml": eml_text,
}


@dataclass(frozen=True)
class Extracted:
    """A file's text, and where its sections start in it: ``(offset, label)`` for each page, slide or
    group of a sheet's rows ("Page 3", "Slide 2: Pricing", "Sheet Prices, rows 2-31"). Each section's
    text starts with its label as a ``#`` heading, so the label is in every chunk cut from it."""

    text: str
    sections: tuple[tuple[int, str], ...] = ()


def content_kind(mime: str, name: str) -> str:
    """Which extractor handles a file: "text", "html", "pdf", "docx", "xlsx", ... (see ``_EXTRACTORS``).

    The server's MIME type decides; the file name only when the server did not know the type.
    Raises :class:`UnsupportedContent` for everything else (archives, audio, video, binaries),
    so callers can skip those before downloading them.
    """
    mime = mime.split(";")[0].strip().lower()
    kind = _KIND_BY_MIME.get(mime)
    if kind is None and mime.startswith("text/"):
        kind = "text"
    if kind is None and mime in _GENERIC_MIMES:
        kind = _KIND_BY_SUFFIX.get(PurePosixPath(name).suffix.lower())
    if kind is None:
        raise UnsupportedContent(f"unsupported file type {mime or 'unknown'}")
    return kind


def extract(data: bytes, mime: str, name: str, ocr: OcrOptions | None = None) -> Extracted:
    """Extract the text of a file and its sections, at most ``MAX_CHARS`` characters.

    Text in images is read only with ``ocr`` (the OCR lane); without it, a file that has its text
    in images raises :class:`NeedsOcr`."""
    kind = content_kind(mime, name)
    if not data:
        raise UnsupportedContent("empty")
    try:
        if kind == "image":
            if ocr is None:
                raise NeedsOcr()
            result = image_sections(data, ocr)
        elif kind == "pdf":
            result = pdf_pages(data, ocr)
        else:
            result = _EXTRACTORS[kind](data)
    except (UnsupportedContent, MemoryError):  # out of memory is the parser process's bound (ADR 0510)
        raise
    except Exception as exc:  # parsers raise anything on corrupt input; one bad file must not stop indexing
        raise UnsupportedContent(f"corrupt or unreadable {kind.upper()}: {type(exc).__name__}: {exc}"[:300]) from exc
    extracted = _assemble(result)
    if not extracted.text and kind == "pdf":
        raise UnsupportedContent("PDF without a text layer and without scanned pages: nothing to read")
    if not extracted.text and kind == "image":
        raise UnsupportedContent("no text found in the image")
    if not extracted.text:
        raise UnsupportedContent("no text content")
    if len(extracted.text) > common.MAX_CHARS:
        log.info("%s: text truncated to %d characters", name, common.MAX_CHARS)
        cut = common.MAX_CHARS
        extracted = Extracted(extracted.text[:cut], tuple(s for s in extracted.sections if s[0] < cut))
    return extracted


def extract_text(data: bytes, mime: str, name: str) -> str:
    """:func:`extract`'s text alone."""
    return extract(data, mime, name).text


def _assemble(result: str | list[Section]) -> Extracted:
    if isinstance(result, str):
        return Extracted(_tidy(result))
    blocks: list[str] = []
    sections: list[tuple[int, str]] = []
    offset = 0
    for label, body in result:
        body = _tidy(body)
        if not body:  # an empty page or slide (a scan, a picture) has nothing to find
            continue
        sections.append((offset, label))
        blocks.append(f"# {label}\n\n{body}")
        offset += len(blocks[-1]) + 2
    return Extracted("\n\n".join(blocks), tuple(sections))


def _tidy(text: str) -> str:
    """Strip trailing spaces and collapse runs of blank lines, which carry no meaning for embeddings."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
