"""Document versions a parser failed on (ran out of its time or memory, or its worker died).

Parsing is the costly step, and a version that broke a parser's bound once will break it again: the
same bytes, the same parser. So failures are remembered by item and version (``doc_type``,
``source_id``, ETag), for every user at once, since a shared file is the same bytes for each: the
indexing stops trying a version after :data:`GIVE_UP_AFTER` failures (not the five attempts a
passing fault gets), and the reading tool refuses a version that failed at once, with the reason,
instead of holding a parser worker for the whole bound again. A new version is tried afresh.
Kept in memory, bounded; after a restart a version can cost its bound twice more at most.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

GIVE_UP_AFTER = 2
MAX_REMEMBERED = 10_000


class ParseFailures:
    def __init__(self, capacity: int = MAX_REMEMBERED) -> None:
        self._capacity = capacity
        self._lock = threading.Lock()
        self._failed: OrderedDict[tuple[str, str, str], tuple[int, str]] = OrderedDict()

    def record(self, doc_type: str, source_id: str, version: str, reason: str) -> int:
        """Remember one more failure of this version; how many there have been."""
        if not version:
            return 1  # an unknown version cannot be recognised again
        key = (doc_type, source_id, version)
        with self._lock:
            count = self._failed.pop(key, (0, ""))[0] + 1
            self._failed[key] = (count, reason)
            while len(self._failed) > self._capacity:
                self._failed.popitem(last=False)
        return count

    def reason(self, doc_type: str, source_id: str, version: str) -> str | None:
        """Why this version failed, when it did; None when it never failed (or is unknown)."""
        with self._lock:
            found = self._failed.get((doc_type, source_id, version)) if version else None
        return found[1] if found else None

    def clear(self) -> None:
        with self._lock:
            self._failed.clear()


FAILURES = ParseFailures()
