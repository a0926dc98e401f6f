"""The reading tool's own lane: reads never delay indexing or another user (issue 36, ADR 0322).

A read used to parse the file again on every call and every page, in the parser workers indexing
uses, with no bound per user: one user calling it twice a minute on a slow file kept another user's
edited note out of the index for minutes. Now:

* **its own workers**: every parse a read causes runs in the ``read`` parser lane (two workers,
  ``parser_process.pool``), never in indexing's; a user whose parse ran out of its whole bound parses
  in the ``heavy`` lane instead (one worker at a lower CPU priority, ``parser_process.HEAVY``);
* **one parse at a time per user**: a user's reads wait for his own earlier ones, not anyone else's;
  so one user holds at most one of the lane's workers;
* **remembered by item and version**: what a read extracted is kept for the next page and the next
  call while the item's version (ETag, asked of Nextcloud as the reader on every call: access is
  always re-checked) is unchanged; a version whose parse failed is refused at once with the reason
  (``parse_failures.FAILURES``, shared with indexing);
* **a parse-time budget per user**: a user's reads may keep the lane's parsers busy for at most
  ``PARSE_SECONDS_PER_MINUTE`` of any minute; past it a read that needs a new parse (a new item or
  version) is refused with when to try again, while remembered ones are still served. A user who
  uploads a new version of his slowest file before every read gets a parse of his own bound about
  twice a minute, not a worker;
* **a few reads at once per user**: ``PER_USER_READS`` of his calls are served together, the others
  wait their turn, so many clients of one user cost the app what two do;
* **OCR bounded per read**: at most ``READ_OCR_PAGES`` pages and ``READ_OCR_SECONDS`` (sources/extract/ocr.py).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from ..core.documents import SourceDocument
from ..workers import parser_process

MAX_REMEMBERED_CHARS = 50_000_000  # of extracted text, all users together (about 100 MB at worst)
PER_USER_PARSES = 1
PER_USER_READS = 2
PARSE_SECONDS_PER_MINUTE = 30.0  # half of one of the lane's two workers


class ReadBudgetSpent(Exception):
    """The user's reads used their parse time of the last minute; the message says when to try again."""


class ReadingLane:
    def __init__(self, max_chars: int = MAX_REMEMBERED_CHARS, clock: Callable[[], float] = time.monotonic,
                 budget_seconds: float = PARSE_SECONDS_PER_MINUTE) -> None:
        self._max_chars = max_chars
        self._clock, self.budget_seconds = clock, budget_seconds
        self._spent: dict[str, list[tuple[float, float]]] = {}  # user: (ended at, seconds) of his parses
        self._reads: dict[str, asyncio.Semaphore] = {}
        self._lock = threading.Lock()
        self._texts: OrderedDict[tuple[str, str], SourceDocument] = OrderedDict()
        self._chars = 0
        self._slots: dict[str, asyncio.Semaphore] = {}

    def remembered(self, user: str, doc_id: str, version: str) -> SourceDocument | None:
        """What ``user`` read of ``doc_id`` when it is still this version."""
        if not version:
            return None
        with self._lock:
            doc = self._texts.get((user, doc_id))
            if doc is None or doc.version != version:
                return None
            self._texts.move_to_end((user, doc_id))
            return doc

    def remember(self, user: str, doc_id: str, doc: SourceDocument) -> None:
        if not doc.version or len(doc.text) > self._max_chars:
            return
        with self._lock:
            old = self._texts.pop((user, doc_id), None)
            self._chars += len(doc.text) - (len(old.text) if old else 0)
            self._texts[(user, doc_id)] = doc
            while self._chars > self._max_chars:
                _, dropped = self._texts.popitem(last=False)
                self._chars -= len(dropped.text)

    def forget_user(self, user: str) -> None:
        with self._lock:
            for key in [key for key in self._texts if key[0] == user]:
                self._chars -= len(self._texts.pop(key).text)

    @asynccontextmanager
    async def reading(self, user: str) -> AsyncIterator[None]:
        """One of ``user``'s ``PER_USER_READS`` turns: his other calls wait, no one else's."""
        async with self._reads.setdefault(user, asyncio.Semaphore(PER_USER_READS)):
            yield

    @asynccontextmanager
    async def parsing(self, user: str) -> AsyncIterator[None]:
        """Hold one of ``user``'s parse slots, with every parse inside going to the reading lane; the
        time it is held counts against his budget. Raises ReadBudgetSpent when none is left."""
        slot = self._slots.setdefault(user, asyncio.Semaphore(PER_USER_PARSES))
        async with slot:
            self._check_budget(user)
            lane, owner = parser_process.default_lane.set("read"), parser_process.parse_owner.set(user)
            started = self._clock()
            try:
                yield
            finally:
                parser_process.default_lane.reset(lane)
                parser_process.parse_owner.reset(owner)
                ended = self._clock()
                with self._lock:
                    self._spent.setdefault(user, []).append((ended, ended - started))

    def _check_budget(self, user: str) -> None:
        now = self._clock()
        with self._lock:
            recent = [(ended, seconds) for ended, seconds in self._spent.get(user, []) if ended > now - 60]
            self._spent[user] = recent
        spent = sum(seconds for _, seconds in recent)
        if spent < self.budget_seconds:
            return
        # When enough of the last minute's parses have aged out of it to bring him under the budget
        over, wait = spent - self.budget_seconds, 60.0
        for ended, seconds in recent:
            over -= seconds
            if over < 0:
                wait = ended + 60 - now
                break
        raise ReadBudgetSpent(
            f"Your reads used the document parser for {spent:.0f} s in the last minute, the {self.budget_seconds:.0f} s "
            f"each user may: what you have already read can still be read, and a new item or version in "
            f"{max(1, math.ceil(wait))} s")


LANE = ReadingLane()
