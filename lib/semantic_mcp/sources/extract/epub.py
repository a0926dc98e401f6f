"""EPUB books through ebooklib: the chapters in reading order (the spine), each through the HTML
extractor, so a chapter's headings give the heading path of its chunks."""

from __future__ import annotations

import io
import re

import ebooklib
from ebooklib import epub

from .common import Budget, UnsupportedContent, open_zip
from .text import html_text

_CHAPTER = re.compile(r'URI="[^"]+\.(x?html?|xml)"', re.IGNORECASE)


def epub_text(data: bytes) -> str:
    with open_zip(data) as archive:
        # Fonts are often "encrypted" (obfuscated) in ordinary books; encrypted chapters mean DRM.
        if "META-INF/encryption.xml" in archive.namelist() and _CHAPTER.search(
            archive.read("META-INF/encryption.xml").decode("utf-8", "replace")
        ):
            raise UnsupportedContent("DRM-protected EPUB (its chapters are encrypted)")
    book = epub.read_epub(io.BytesIO(data), options={"ignore_ncx": True})
    budget = Budget()
    chapters: list[str] = []
    for idref, _linear in book.spine:
        item = book.get_item_with_id(idref)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT or isinstance(item, epub.EpubNav):
            continue
        chapters.append(html_text(item.get_content()))
        budget.spend(len(chapters[-1]))
        if budget.exhausted:
            break
    return "\n\n".join(chapters)
