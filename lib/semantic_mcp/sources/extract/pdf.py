"""PDF through pypdf, page by page: each page is a section, so a hit can name its page."""

from __future__ import annotations

import io
import logging

from pypdf import PdfReader

from . import common
from .common import Budget, Section, UnsupportedContent

log = logging.getLogger(__name__)


def pdf_pages(data: bytes) -> list[Section]:
    """Text of the first :data:`~common.MAX_PDF_PAGES` pages, stopping early at the :class:`Budget`.

    PDFs with only an owner password (printing/copy restrictions) open with the empty user
    password and are indexed; PDFs that need a password to open are skipped.
    """
    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not _opens_without_password(reader):
        raise UnsupportedContent("encrypted PDF")
    budget = Budget()
    pages: list[Section] = []
    for number, page in enumerate(reader.pages, start=1):
        if number > common.MAX_PDF_PAGES:
            log.info("PDF text stopped after %d pages", number - 1)
            break
        text = page.extract_text() or ""
        pages.append((f"Page {number}", text))
        budget.spend(len(text))
        if budget.exhausted:
            log.info("PDF text stopped after %d pages", number)
            break
    return pages


def _opens_without_password(reader: PdfReader) -> bool:
    try:
        return bool(reader.decrypt(""))
    except Exception:  # an encryption algorithm pypdf cannot handle (or lacks the cryptography package for)
        return False
