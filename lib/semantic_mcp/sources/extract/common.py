"""What every extractor shares: the bounds on its work, the error it ends in, and small helpers.

The bounds are read at call time (``common.MAX_CHARS``), so tests and deployments can change them.
"""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import Iterable

MAX_CHARS = 1_000_000  # about 200 pages of prose; beyond that retrieval gains little and embedding cost grows
MAX_PDF_PAGES = 500
EXTRACT_SECONDS = 30.0  # checked between pages, slides and rows; the parser process also stops a parse (ADR 0510)
MAX_UNZIPPED_BYTES = 64 * 1024 * 1024  # Office files and EPUBs are zip archives: refuse decompression bombs

Section = tuple[str, str]  # (label, text): a page, a slide, a group of a sheet's rows


class UnsupportedContent(Exception):
    """The file exists but yields no text to index; ``reason`` says why, for the status tool."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Budget:
    """How much text an extractor may still produce, and until when: :attr:`exhausted` once
    :data:`MAX_CHARS` characters are out or :data:`EXTRACT_SECONDS` have passed, so a huge PDF,
    sheet or deck gives its first part instead of nothing."""

    def __init__(self, seconds: float | None = None) -> None:
        self.left = MAX_CHARS
        self.deadline = time.monotonic() + (EXTRACT_SECONDS if seconds is None else seconds)

    def spend(self, chars: int) -> None:
        self.left -= chars

    @property
    def seconds_left(self) -> float:
        return self.deadline - time.monotonic()

    @property
    def exhausted(self) -> bool:
        return self.left <= 0 or time.monotonic() > self.deadline


_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # a Compound File, not a zip: how Office stores an encrypted file


def open_zip(data: bytes) -> zipfile.ZipFile:
    """The archive of an Office file or EPUB, once its declared uncompressed size is within bounds."""
    if data.startswith(_OLE):
        raise UnsupportedContent("password-protected (encrypted) or pre-2007 Office file")
    archive = zipfile.ZipFile(io.BytesIO(data))
    if sum(info.file_size for info in archive.infolist()) > MAX_UNZIPPED_BYTES:
        raise UnsupportedContent("document too large once uncompressed")
    return archive


def check_zip(data: bytes) -> None:
    """:func:`open_zip` before a library inflates the whole package itself."""
    open_zip(data).close()


def table_row(cells: Iterable[str]) -> str:
    """One table row as ``a | b``; merged cells repeat their text in python-docx, so repeats are dropped."""
    values: list[str] = []
    for cell in cells:
        cell = " ".join(cell.split())
        if not values or values[-1] != cell:
            values.append(cell)
    return " | ".join(values)
