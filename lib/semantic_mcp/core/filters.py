"""Search filters, rendered for each place they apply: SQL and plain Python.

A data model beside :mod:`.documents`, not part of :mod:`.search`: the keyword index (a store)
evaluates them too, and a store must not reach up into the search layer (ADR 0011).

:meth:`to_sql` for the keyword index (column names are the metadata keys), which both ranks
the keyword leg under the filters and selects the chunk ids the dense leg may return;
:meth:`matches` checks each dense hit against the metadata it carries. Bounds are inclusive.

Event bounds apply to ``event_start``: calendar events and deck cards with a due date (which
have a start and no end) are selected alike. Documents without one never match an event bound.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .documents import DocType

# (metadata key, operator, field name): the range conditions, shared by every rendering.
_RANGES: tuple[tuple[str, str, str], ...] = (
    ("modified", ">=", "modified_after"),
    ("modified", "<=", "modified_before"),
    ("event_start", ">=", "event_after"),
    ("event_start", "<=", "event_before"),
)


@dataclass(frozen=True)
class SearchFilters:
    doc_types: Sequence[DocType] | None = None
    modified_after: int | None = None  # unix seconds
    modified_before: int | None = None
    event_after: int | None = None
    event_before: int | None = None
    path_prefix: str | None = None  # plain, case-sensitive prefix of ``location``

    def _ranges(self) -> list[tuple[str, str, int]]:
        return [(key, op, value) for key, op, name in _RANGES if (value := getattr(self, name)) is not None]

    @property
    def is_empty(self) -> bool:
        return not self.doc_types and not self._ranges() and not self.path_prefix

    def to_sql(self) -> tuple[str, list[Any]]:
        """A boolean SQL expression over columns named like the metadata keys, and its parameters."""
        clauses: list[str] = []
        params: list[Any] = []
        if self.doc_types:
            clauses.append(f"doc_type IN ({','.join('?' * len(self.doc_types))})")
            params.extend(self.doc_types)
        for key, op, value in self._ranges():
            clauses.append(f"{key} {op} ?")  # NULL (no such metadata) compares as not matching
            params.append(value)
        if self.path_prefix:
            # A range, so the index on location serves it: every string that starts with the
            # prefix sorts between it and the prefix followed by the highest code point.
            clauses.append("location >= ? AND location < ?")
            params.extend([self.path_prefix, self.path_prefix + "\U0010ffff"])
        return (" AND ".join(clauses) or "1"), params

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        if self.doc_types and metadata.get("doc_type") not in self.doc_types:
            return False
        for key, op, value in self._ranges():
            actual = metadata.get(key)
            if actual is None or not (actual >= value if op == ">=" else actual <= value):
                return False
        return not self.path_prefix or str(metadata.get("location", "")).startswith(self.path_prefix)
