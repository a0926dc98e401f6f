"""OpenDocument (ODT, ODS, ODP): ``content.xml`` read with ElementTree.

One walker for the family, because its one danger is shared: repeat counts (``text:c`` spaces,
``number-rows-repeated``, ``number-columns-repeated``) let a tiny file stand for any amount of
text (issue 21), so every count is honoured only up to a bound and text stops at ``MAX_CHARS``.
"""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from . import common
from .common import Budget, Section, UnsupportedContent, open_zip, table_row
from .tables import MAX_COLUMNS, sheet_sections, slide_section

log = logging.getLogger(__name__)

_NS = {
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
}
MAX_SPACES = 64  # a run of encoded spaces longer than this carries nothing for search


def _q(name: str) -> str:
    prefix, _, local = name.partition(":")
    return f"{{{_NS[prefix]}}}{local}"


def _body(data: bytes, kind: str) -> ET.Element:
    with open_zip(data) as archive:
        root = ET.fromstring(archive.read("content.xml"))
    body = root.find(f"{_q('office:body')}/{_q('office:' + kind)}")
    if body is None:
        raise UnsupportedContent(f"OpenDocument without a {kind} body")
    return body


def _count(element: ET.Element, attribute: str) -> int:
    try:
        return max(1, int(element.get(_q(attribute), "1")))
    except ValueError:
        return 1


def inline(element: ET.Element, room: int) -> str:
    """Text of a paragraph, honouring ODF's encoded whitespace (``text:s``, ``text:tab``,
    ``text:line-break``), cut once it passes ``room`` characters."""
    parts = [element.text or ""]
    size = len(parts[0])
    for child in element:
        if child.tag == _q("text:s"):
            parts.append(" " * min(_count(child, "text:c"), MAX_SPACES))
        elif child.tag == _q("text:tab"):
            parts.append("\t")
        elif child.tag == _q("text:line-break"):
            parts.append("\n")
        elif child.tag != _q("text:note-citation"):
            parts.append(inline(child, room - size))
        parts.append(child.tail or "")
        size += len(parts[-1]) + len(parts[-2])
        if size >= room:
            break
    return "".join(parts)


# --- text documents ---------------------------------------------------------------------------


def odt_text(data: bytes) -> str:
    """Headings, paragraphs, lists and tables of an OpenDocument text."""
    lines = _OdtLines()
    try:
        lines.blocks(_body(data, "text"), prefix="")
    except _OdtLines.Full:
        log.info("ODT text stopped at %d characters", common.MAX_CHARS)
    return "\n".join(lines)


class _OdtLines(list[str]):
    """The lines of an ODT's text, stopping once they hold ``MAX_CHARS`` characters."""

    class Full(Exception):
        pass

    size = 0

    def add(self, line: str) -> None:
        self.append(line)
        self.size += len(line) + 1
        if self.size >= common.MAX_CHARS:
            raise self.Full

    def blocks(self, element: ET.Element, prefix: str) -> None:
        for child in element:
            if child.tag == _q("text:h"):
                level = min(_count(child, "text:outline-level"), 6)
                self.add("#" * level + " " + self.inline(child))
            elif child.tag == _q("text:p"):
                self.add(prefix + self.inline(child))
            elif child.tag == _q("text:list-item"):
                self.blocks(child, prefix="- ")
            elif child.tag == _q("table:table-row"):
                cells = child.iter(_q("table:table-cell"))
                self.add(table_row(" ".join(map(self.inline, cell.iter(_q("text:p")))) for cell in cells))
            else:
                self.blocks(child, prefix)

    def inline(self, element: ET.Element) -> str:
        return inline(element, common.MAX_CHARS - self.size)


# --- spreadsheets -----------------------------------------------------------------------------


def ods_sheets(data: bytes) -> list[Section]:
    """Every sheet's rows, as :func:`~.tables.sheet_sections` groups them."""
    budget = Budget()
    sections: list[Section] = []
    for table in _body(data, "spreadsheet").findall(_q("table:table")):
        sections.extend(sheet_sections(table.get(_q("table:name"), ""), _ods_rows(table, budget), budget))
        if budget.exhausted:
            break
    return sections


def _ods_rows(table: ET.Element, budget: Budget) -> Iterator[tuple[int, list[str]]]:
    """Each row once with its number: identical adjacent rows are written once with a count, and
    their copies would add nothing to find (a hostile count would only add work to embed)."""
    number = 1
    for row in table.iter(_q("table:table-row")):
        yield number, _ods_cells(row, budget)
        number += _count(row, "table:number-rows-repeated")


def _ods_cells(row: ET.Element, budget: Budget) -> list[str]:
    cells: list[str] = []
    for cell in row:
        if cell.tag not in (_q("table:table-cell"), _q("table:covered-table-cell")):
            continue
        text = " ".join(inline(p, max(budget.left, 0)) for p in cell.iter(_q("text:p")))
        cells.extend([text] * min(_count(cell, "table:number-columns-repeated"), MAX_COLUMNS - len(cells)))
        if len(cells) >= MAX_COLUMNS:
            break
    return cells


# --- presentations ----------------------------------------------------------------------------


def odp_slides(data: bytes) -> list[Section]:
    """Slide by slide: the title frame, every other frame's paragraphs, the speaker notes."""
    budget = Budget()
    sections: list[Section] = []
    for number, page in enumerate(_body(data, "presentation").findall(_q("draw:page")), start=1):
        title, lines, notes = "", [], []
        for child in page:
            if child.tag == _q("presentation:notes"):
                notes.extend(_paragraphs(child, budget))
            elif child.get(_q("presentation:class")) == "title":
                title = " ".join(_paragraphs(child, budget))
            else:
                lines.extend(_paragraphs(child, budget))
        sections.append(slide_section(number, title, lines, "\n".join(notes)))
        if budget.exhausted:
            break
    return sections


def _paragraphs(element: ET.Element, budget: Budget) -> Iterator[str]:
    for child in element.iter():
        if child.tag in (_q("text:p"), _q("text:h")):
            text = inline(child, max(budget.left, 0))
            budget.spend(len(text) + 1)
            yield text
