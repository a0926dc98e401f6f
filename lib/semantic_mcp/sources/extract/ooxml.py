"""Office Open XML (Word, Excel, PowerPoint) through python-docx, openpyxl and python-pptx.

Macro-enabled variants (.xlsm, .pptm) are read like the others: only cell and shape text is read,
the macros are neither run nor indexed.
"""

from __future__ import annotations

import datetime as dt
import io
import re
from collections.abc import Iterable, Iterator
from typing import Any

from .common import Budget, Section, check_zip, table_row
from .tables import MAX_COLUMNS, sheet_sections, slide_section

# The three libraries are imported where they are used: together they cost ~0.5 s of CPU, which the
# app's own process (it only dispatches to the parser processes) need not pay at every start. A parser
# process imports them up front, before its memory cap is set (parser_process.PRELOAD).

# --- Word -------------------------------------------------------------------------------------


def docx_text(data: bytes) -> str:
    """Paragraphs and tables in document order; Heading N / Title styles become ``#`` lines."""
    import docx
    from docx.table import Table

    check_zip(data)  # size check before python-docx inflates the whole package
    lines: list[str] = []
    for block in docx.Document(io.BytesIO(data)).iter_inner_content():
        if isinstance(block, Table):
            lines.extend(table_row(cell.text for cell in row.cells) for row in block.rows)
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


# --- Excel ------------------------------------------------------------------------------------


def xlsx_sheets(data: bytes) -> list[Section]:
    """Every worksheet's rows (the values last computed, for formulas), streamed: read-only mode
    never holds a whole sheet, and the declared dimensions are ignored so a sheet claiming a
    million rows and columns pads nothing (rows are as wide as their last cell)."""
    import openpyxl

    check_zip(data)
    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_links=False)
    budget = Budget()
    sections: list[Section] = []
    try:
        for sheet in book.worksheets:
            sheet.reset_dimensions()
            rows = enumerate(sheet.iter_rows(values_only=True), start=1)  # a missing row comes as ()
            numbered = ((number, [_cell(value) for value in values[:MAX_COLUMNS]]) for number, values in rows)
            sections.extend(sheet_sections(sheet.title, numbered, budget))
            if budget.exhausted:
                break
    finally:
        book.close()
    return sections


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ", timespec="minutes")
    return str(value)


# --- PowerPoint -------------------------------------------------------------------------------


def pptx_slides(data: bytes) -> list[Section]:
    """Slide by slide: the title, the text of every shape (groups and tables included), the notes."""
    import pptx

    check_zip(data)
    budget = Budget()
    sections: list[Section] = []
    for number, slide in enumerate(pptx.Presentation(io.BytesIO(data)).slides, start=1):
        title = slide.shapes.title
        title_text = title.text_frame.text if title is not None and title.has_text_frame else ""
        title_id = title.shape_id if title is not None else None
        lines = _shape_lines(shape for shape in slide.shapes if shape.shape_id != title_id)
        notes = ""
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text
        section = slide_section(number, title_text, lines, notes.replace("\v", "\n"))
        sections.append(section)
        budget.spend(len(section[1]))
        if budget.exhausted:
            break
    return sections


def _shape_lines(shapes: Iterable[Any]) -> Iterator[str]:
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    for shape in shapes:
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            yield from _shape_lines(shape.shapes)
        elif shape.has_text_frame:
            yield shape.text_frame.text.replace("\v", "\n")  # python-pptx writes a line break as a vertical tab
        elif getattr(shape, "has_table", False) and shape.has_table:
            yield from (table_row(cell.text for cell in row.cells) for row in shape.table.rows)
