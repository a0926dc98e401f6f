"""PDF through pypdf, page by page: each page is a section, so a hit can name its page.

A page with (almost) no text but an image is a scan: its largest image is read by OCR in the OCR
lane (:mod:`.ocr`); outside it, a PDF with such a page raises :class:`~.ocr.NeedsOcr`, so the whole
file waits for the lane instead of being indexed without its scanned pages.
"""

from __future__ import annotations

import io
import logging

from pypdf import PageObject, PdfReader

from . import common
from .common import Budget, Section, UnsupportedContent
from .ocr import MIN_PAGE_CHARS, MIN_SCAN_SIDE, NeedsOcr, OcrOptions, check_size, read_image

log = logging.getLogger(__name__)


def pdf_pages(data: bytes, ocr: OcrOptions | None = None) -> list[Section]:
    """Text of the first :data:`~common.MAX_PDF_PAGES` pages, stopping early at the :class:`Budget`;
    with ``ocr``, scanned pages (at most ``ocr.max_pages``) are read from their image.

    PDFs with only an owner password (printing/copy restrictions) open with the empty user
    password and are indexed; PDFs that need a password to open are skipped.
    """
    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not _opens_without_password(reader):
        raise UnsupportedContent("encrypted PDF")
    budget = Budget(seconds=ocr.seconds if ocr else None)
    pages: list[Section] = []
    scanned = 0
    for number, page in enumerate(reader.pages, start=1):
        if number > common.MAX_PDF_PAGES:
            log.info("PDF text stopped after %d pages", number - 1)
            break
        text = page.extract_text() or ""
        if len(text.strip()) < MIN_PAGE_CHARS and (image := _largest_image(page)):
            if ocr is None:
                raise NeedsOcr()
            scanned += 1
            if scanned <= ocr.max_pages:
                text = _read_page(page, *image, ocr, budget) or text
        pages.append((f"Page {number}", text))
        budget.spend(len(text))
        if budget.exhausted:
            log.info("PDF text stopped after %d pages", number)
            break
    return pages


def _largest_image(page: PageObject) -> tuple[str, tuple[int, int]] | None:
    """The name and declared size of the page's largest image, read without decoding anything."""
    try:
        xobjects = page["/Resources"].get_object()["/XObject"].get_object()
    except (KeyError, AttributeError, TypeError):
        return None
    sizes = {}
    for name in xobjects:
        item = xobjects[name].get_object()
        if item.get("/Subtype") == "/Image":
            sizes[name] = (int(item.get("/Width", 0)), int(item.get("/Height", 0)))
    if not sizes:
        return None
    name = max(sizes, key=lambda key: sizes[key][0] * sizes[key][1])
    if max(sizes[name]) < MIN_SCAN_SIDE:  # a logo or an icon on a title page, not a scanned page
        return None
    return name, sizes[name]


def _read_page(page: PageObject, name: str, size: tuple[int, int], ocr: OcrOptions, budget: Budget) -> str:
    """One scanned page's text; a page too large to decode is left out, not the whole file."""
    try:
        check_size(size)
    except UnsupportedContent as exc:
        log.info("PDF page not read: %s", exc.reason)
        return ""
    return read_image(page.images[name].image, ocr, budget)


def _opens_without_password(reader: PdfReader) -> bool:
    try:
        return bool(reader.decrypt(""))
    except Exception:  # an encryption algorithm pypdf cannot handle (or lacks the cryptography package for)
        return False
