"""Sections of spreadsheets and presentations, whatever file format they come from.

A sheet becomes groups of rows that each fit one chunk (see ``indexing/chunking.py``), every group
starting with the sheet's header row, so a row read alone still says what its values are; the
label names the sheet and the rows as the spreadsheet numbers them. A slide becomes one section:
its text, then its speaker notes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .common import Budget, Section

ROW_GROUP_CHARS = 700  # with the title and label in a chunk's header, one group fits one chunk
MAX_COLUMNS = 256  # columns read per row: wider sheets are data dumps, and padding must stay bounded
_LABEL_CHARS = 100


def row_line(cells: Sequence[str]) -> str:
    """``a | b | | d``: empty cells keep their place so values stay under their header; trailing ones go."""
    values = [" ".join(cell.split()) for cell in cells[:MAX_COLUMNS]]
    while values and not values[-1]:
        values.pop()
    return " | ".join(values)


def sheet_sections(sheet: str, rows: Iterable[tuple[int, Sequence[str]]], budget: Budget) -> list[Section]:
    """``rows`` as (row number, cell texts) become sections of at most :data:`ROW_GROUP_CHARS`, each
    starting with the header row (the first non-empty one). Stops when ``budget`` is exhausted."""
    name = _short(sheet)
    sections: list[Section] = []
    header = ""
    group: list[str] = []
    first = last = 0

    def close() -> None:
        span = f"row {first}" if first == last else f"rows {first}-{last}"
        sections.append((f"Sheet {name}, {span}", "\n".join([header, *group])))
        group.clear()

    for number, cells in rows:
        line = row_line(cells)
        budget.spend(len(line) + 1 if line else 0)
        if budget.exhausted:  # checked for empty rows too: a sheet may claim a million of them
            break
        if not line:
            continue
        if not header:
            header, first, last = line, number, number
        else:
            if group and len(header) + sum(map(len, group)) + len(group) + len(line) > ROW_GROUP_CHARS:
                close()
            if not group:
                first = number
            group.append(line)
            last = number
    if group or (header and not sections):
        close()
    return sections


def slide_section(number: int, title: str, lines: Iterable[str], notes: str) -> Section:
    title = _short(title)
    body = "\n".join(line for line in lines if line.strip() and line.strip() != title)
    if notes.strip():
        body += f"\n\nSpeaker notes:\n{notes.strip()}"
    return (f"Slide {number}: {title}" if title else f"Slide {number}", body)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"
