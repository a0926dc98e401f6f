"""Phase 2 of authorization (ADR-009): is every hit still readable by the caller, right now?

The index can lag behind Nextcloud (a share revoked a second ago, a file deleted while the
webhook worker was down), so before a hit leaves the server it is checked *as the calling user*
against Nextcloud itself. Gone or forbidden (404/403) means drop it and schedule its removal.
Each source checks its hits in as few requests as its API allows: one WebDAV SEARCH for files and
notes, one multiget per calendar or address book, one request per Deck board (ADR-0010). When the
companion app ``semantic_search`` is enabled, all of a search's hits are checked in one PHP request
instead (nextcloud/companion.py, ADR 0370).

When Nextcloud cannot answer in time the hit is *unverifiable*, and what it becomes is decided
here, explicitly: the caller's own document is served (the index can only be stale about it, and
the result says how many were not re-checked); a document shared with the caller, or whose owner
the index does not know, is withheld (the result says how many). Behind AppAPI's PHP proxy every
search holds one of Nextcloud's PHP workers while the app calls back, so a saturated Nextcloud
cannot answer those calls until searches give up; after a check times out, checks are skipped
(short-circuited) for a few seconds so searches answer at once instead of queueing behind
Nextcloud, and one search then tries again.

With a re-check window (the admin's "re-check window", ADR 0780), a verdict Nextcloud gave as the
user is kept that many seconds (search/recent_verdicts.py). While Nextcloud answers promptly every
search still asks about every hit. Once searches queue for re-checks (one starts while ``crowd``
others wait) or one goes unanswered, Nextcloud counts as busy for ``busy_seconds``: hits are then
served on their kept verdict; the user's known
items are asked again in the background before it expires. Either way a user's concurrent searches
share one request, and a request outlives the search that gave up on it. So under load searches
rarely wait for a PHP worker, and every hit served was confirmed within the window. What others share
is served on a kept verdict only while the companion app tells the app at once when access to it may
have ended (a share ended, a group or team folder changed), and only on a verdict asked after the last
such change (ADR 0781); without the companion it is always asked.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..core.documents import DocRef
from ..nextcloud.client import NextcloudClient
from ..sources.base import Source
from ..nextcloud.companion import MAX_ITEMS, Companion
from .recent_verdicts import RecentVerdicts

log = logging.getLogger(__name__)


class HasDocKey(Protocol):
    doc_key: str


@dataclass
class Verification:
    kept: list
    dropped: list[DocRef]
    unverified: int  # the caller's own hits, served although Nextcloud could not re-check them in time
    withheld: int = 0  # shared (or unknown-owner) hits left out because Nextcloud could not re-check them


class Verifier:
    def __init__(
        self,
        nc: NextcloudClient,
        sources: Callable[[], dict[str, Source]],
        on_gone: Callable[[list[DocRef]], None],
        *,
        concurrency: int = 12,
        timeout: float = 1.5,
        short_circuit_seconds: float = 5.0,
        probe_timeout: float = 0.75,
        companion: Companion | None = None,
        window: Callable[[], float] = lambda: 0.0,
        recent: RecentVerdicts | None = None,
        crowd: int = 2,
        busy_seconds: float = 5.0,
    ) -> None:
        self.nc = nc
        self.companion = companion  # when its app is enabled, all of a search's checks are one request
        self._sources = sources
        self._on_gone = on_gone
        self._semaphore = asyncio.Semaphore(concurrency)
        self.timeout = timeout
        self.short_circuit_seconds = short_circuit_seconds
        self._skip_until = 0.0  # monotonic time until which checks are not attempted
        # After a short-circuit, the first checks are probes with a shorter bound: a search that waits
        # on a saturated Nextcloud holds one of its PHP workers all that time.
        self.probe_timeout = probe_timeout
        self._probing = False
        self._probe_in_flight = False
        # The re-check window in seconds (the admin's setting; 0: every hit asked inside its search), the
        # verdicts kept for it, and the requests under way by (user, doc key) (ADR 0780).
        self._window = window
        self.recent = recent or RecentVerdicts()
        self._last_window: float | None = None
        self._in_flight: dict[tuple[str, str], asyncio.Task] = {}
        # Nextcloud counts as busy for ``busy_seconds`` after a search started while ``crowd`` others were
        # waiting for re-checks (behind the PHP proxy each holds a worker), or a re-check went unanswered;
        # only then are hits served on kept verdicts. A lone search always asks.
        self.crowd = crowd
        self.busy_seconds = busy_seconds
        self._busy_until = 0.0
        self._waiting = 0  # searches waiting for a re-check now
        # When the companion last said that access to what others share may have ended (recent's clock).
        self._access_changed_at = float("-inf")
        self.metrics = {"checked": 0, "unverified_served": 0, "withheld": 0, "short_circuited_searches": 0,
                        "from_window": 0, "asked_ahead": 0, "access_changes": 0}

    async def verify(self, user: str, hits: Sequence[HasDocKey]) -> Verification:
        refs = [_ref(user, hit.doc_key) for hit in hits]
        own = {ref.key for hit, ref in zip(hits, refs, strict=True) if _owner(hit) == user}
        verdicts = await self._verdicts(user, refs, own)
        kept, dropped, unverified, withheld = [], [], 0, 0
        for hit, ref in zip(hits, refs, strict=True):
            verdict = verdicts[ref.key]
            if verdict is False:
                dropped.append(ref)
            elif verdict is True:
                kept.append(hit)
            elif _owner(hit) == user:
                kept.append(hit)
                unverified += 1
            else:
                withheld += 1
        self.metrics["checked"] += len(refs)
        self.metrics["unverified_served"] += unverified
        self.metrics["withheld"] += withheld
        if dropped:
            log.info("Dropped %d hit(s) %s can no longer open; removing them from the index", len(dropped), user)
            self._on_gone(dropped)
        if unverified or withheld:
            log.info("Nextcloud could not re-check %d hit(s) for %s in time: served %d of their own, withheld %d "
                     "shared with them", unverified + withheld, user, unverified, withheld)
        return Verification(kept=kept, dropped=dropped, unverified=unverified, withheld=withheld)

    async def _verdicts(self, user: str, refs: list[DocRef], own: set[str]) -> dict[str, bool | None]:
        if not refs:  # a search that found nothing has nothing to ask
            return {}
        window = self._current_window()
        if self._waiting >= self.crowd:
            self._busy_until = time.monotonic() + self.busy_seconds
        if window <= 0:  # every hit asked at search time, inside the search (ADR 0010)
            return await self._asked(user, refs, None)
        if not self.busy():
            # Nextcloud answers promptly: every hit is asked now, as without a window; a kept verdict
            # stands in only for a hit Nextcloud did not answer about within the search's bound.
            verdicts = await self._asked(user, refs, window)
            unanswered = [key for key, verdict in verdicts.items() if verdict is None]
            fallback = {key: verdict for key, (verdict, _) in self._kept(user, unanswered, own, window).items()}
            self.metrics["from_window"] += len(fallback)
            return {**verdicts, **fallback}
        # Nextcloud is busy: hits it confirmed (or denied) as this user within the window are served on that
        # verdict; the rest are asked in one request, shared with any search of the user already asking.
        known = self._kept(user, [ref.key for ref in refs], own, window)
        missing = [ref for ref in refs if ref.key not in known]
        if not missing:
            self._ask_ahead(user, window)
            self.metrics["from_window"] += len(known)
            return {key: verdict for key, (verdict, _) in known.items()}
        verdicts = await self._asked(user, missing, window)
        # Still within the window after that wait (or answered again meanwhile)? Otherwise not re-checked.
        still = self._kept(user, list(known), own, window)
        self.metrics["from_window"] += len(still)
        return {**dict.fromkeys(known), **{key: verdict for key, (verdict, _) in still.items()}, **verdicts}

    def _kept(self, user: str, keys: list[str], own: set[str], window: float) -> dict[str, tuple[bool, float]]:
        """The kept verdicts a search may be served on: about the caller's own items; about what others
        share only while the companion says at once when access to it may have ended, and only if asked
        after the last such change. Otherwise a share ended or an ACL that now denies could still be
        served for a window: such items are asked (or withheld)."""
        found = self.recent.fresh(user, [key for key in keys if key in own], window)
        if self.companion is not None and self.companion.forwards_access_changes:
            found.update(self.recent.fresh(user, [key for key in keys if key not in own], window,
                                           since=self._access_changed_at))
        return found

    def access_changed(self, keys: Sequence[str] | None = None) -> None:
        """The companion says someone may have lost access: to these items (moved or deleted), or to any
        of what others share (a share ended, a group or team folder changed) (ADR 0781)."""
        self.metrics["access_changes"] += 1
        if keys is None:
            self._access_changed_at = self.recent.clock()
            self._in_flight.clear()  # a question sent before the change must not answer searches made after it
            return
        self.recent.changed(keys)
        for user, key in [pair for pair in self._in_flight if pair[1] in set(keys)]:
            del self._in_flight[(user, key)]

    def busy(self) -> bool:
        """Whether searches lately queued for re-checks, or one went unanswered (ADR 0780)."""
        return time.monotonic() < self._busy_until

    async def _asked(self, user: str, refs: list[DocRef], window: float | None) -> dict[str, bool | None]:
        """Verdicts from Nextcloud within the search's bound; with a window, the question outlives the search
        (its answer fills the window for the next ones)."""
        # While checks are paused, or another search is probing whether Nextcloud answers again, skip.
        if time.monotonic() < self._skip_until or (self._probing and self._probe_in_flight):
            self.metrics["short_circuited_searches"] += 1
            if window is not None:
                self._ask(user, refs, window)
            return dict.fromkeys((ref.key for ref in refs), None)
        probe = self._probing
        timeout = min(self.timeout, self.probe_timeout) if probe else self.timeout
        self._probe_in_flight = self._probe_in_flight or probe
        self._waiting += 1
        try:
            if window is None:
                verdicts = await self._request(user, refs, timeout)
            else:
                verdicts = await _within(self._ask(user, refs, window), timeout)
        finally:
            self._waiting -= 1
            if probe:
                self._probe_in_flight = False
        if None not in verdicts.values():
            self._probing = False
            return verdicts
        self._busy_until = time.monotonic() + self.busy_seconds
        if time.monotonic() >= self._skip_until:
            self._skip_until = time.monotonic() + self.short_circuit_seconds
            self._probing = True
            log.warning("Nextcloud did not answer a re-check within %gs; skipping re-checks for %gs (own results are "
                        "served unchecked, shared ones withheld)", timeout, self.short_circuit_seconds)
        return verdicts

    def _ask(self, user: str, refs: list[DocRef], window: float) -> dict[str, asyncio.Task]:
        """The request answering each of ``refs``: one already under way for the item, or a new one that
        also carries the user's known items due to be asked again (one request, not one per search)."""
        new = [ref for ref in refs if (user, ref.key) not in self._in_flight]
        if new:
            keys = {ref.key for ref in new}
            ahead = [key for key in self.recent.due(user, window, MAX_ITEMS)
                     if key not in keys and (user, key) not in self._in_flight][:max(0, MAX_ITEMS - len(new))]
            self._start(user, new + [_ref(user, key) for key in ahead], window)
        return {ref.key: self._in_flight[(user, ref.key)] for ref in refs}

    def ask_ahead(self, user: str) -> None:
        """Any request of ``user``: ask again now, in the background, their known items that are due. At a
        quiet time too: when a burst of clients arrives after a pause, their first searches find fresh
        verdicts instead of waiting inside proxied requests for re-checks that need another PHP worker."""
        window = self._current_window()
        if window > 0:
            self._ask_ahead(user, window)

    def _current_window(self) -> float:
        window = self._window()
        if window != self._last_window:  # a changed window trusts no verdict given under the old one
            self._last_window = window
            self.recent.expire()
        return window

    def _ask_ahead(self, user: str, window: float) -> None:
        """Ask again, in the background, the user's known items whose verdict is half the window old."""
        due = [key for key in self.recent.due(user, window, MAX_ITEMS) if (user, key) not in self._in_flight]
        if due:
            self.metrics["asked_ahead"] += len(due)
            self._start(user, [_ref(user, key) for key in due], window)

    def _start(self, user: str, refs: list[DocRef], window: float) -> None:
        task = asyncio.create_task(self._fill(user, refs, max(self.timeout, min(window, 30.0))))
        for ref in refs:
            self._in_flight[(user, ref.key)] = task

        def landed(_: asyncio.Task) -> None:
            for ref in refs:
                if self._in_flight.get((user, ref.key)) is task:
                    del self._in_flight[(user, ref.key)]
        task.add_done_callback(landed)

    async def _fill(self, user: str, refs: list[DocRef], bound: float) -> dict[str, bool | None]:
        asked_at = self.recent.clock()
        try:
            verdicts = await self._request(user, refs, bound)
        except Exception:  # noqa: BLE001 - a question nobody waits for must not die unseen; "could not say"
            log.exception("A re-check for %s failed", user)
            verdicts = dict.fromkeys((ref.key for ref in refs), None)
        self.recent.record(user, verdicts, asked_at)
        return verdicts

    async def _request(self, user: str, refs: list[DocRef], timeout: float) -> dict[str, bool | None]:
        """One question to Nextcloud about ``refs``: through the companion, else each source's own checks."""
        by_type: dict[str, list[str]] = {}
        for ref in refs:
            by_type.setdefault(ref.doc_type, []).append(ref.source_id)
        verdicts = await self._through_companion(user, by_type, timeout)
        if verdicts is None:
            verdicts = {}
            checks = (self._check(user, doc_type, ids, timeout) for doc_type, ids in by_type.items())
            for part in await asyncio.gather(*checks):
                verdicts.update(part)
        return verdicts

    async def _through_companion(
        self, user: str, by_type: dict[str, list[str]], timeout: float
    ) -> dict[str, bool | None] | None:
        """Every verdict from one request to the companion app, or None when it is not there."""
        if self.companion is None:
            return None
        sources = self._sources()
        keys = [f"{doc_type}:{i}" for doc_type, ids in by_type.items() if doc_type in sources for i in ids]
        verdicts = await self.companion.readable(self.nc, user, keys, timeout) if keys else {}
        if verdicts is None:
            return None
        # A source the admin switched off: its documents are not served (as in _check).
        return {**verdicts, **{f"{t}:{i}": False for t, ids in by_type.items() if t not in sources for i in ids}}

    async def _check(self, user: str, doc_type: str, source_ids: list[str], timeout: float) -> dict[str, bool | None]:
        """Verdicts by doc key for one type's hits, in as few requests as its source can manage."""
        source = self._sources().get(doc_type)
        if source is None:  # the admin switched this source off: its documents are not served
            return {f"{doc_type}:{i}": False for i in source_ids}
        result = await source.readable(self.nc, user, source_ids, slots=self._semaphore, timeout=timeout)
        return {f"{doc_type}:{i}": result.get(i) for i in source_ids}


async def _within(requests: dict[str, asyncio.Task], timeout: float) -> dict[str, bool | None]:
    """Each key's verdict from its request if that answered within ``timeout`` (None otherwise); the
    requests go on either way."""
    done, _ = await asyncio.wait(set(requests.values()), timeout=timeout)
    return {key: task.result().get(key) if task in done else None for key, task in requests.items()}


def _owner(hit: object) -> str | None:
    """The account owning a hit's document, as the source recorded it at indexing (None: unknown)."""
    metadata = getattr(hit, "metadata", None) or {}
    return metadata.get("owner") if isinstance(metadata, dict) else None


def _ref(user: str, doc_key: str) -> DocRef:
    doc_type, _, source_id = doc_key.partition(":")
    return DocRef(user, doc_type, source_id)  # type: ignore[arg-type]
