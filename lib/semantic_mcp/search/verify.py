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
from ..nextcloud.companion import Companion

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
        self.metrics = {"checked": 0, "unverified_served": 0, "withheld": 0, "short_circuited_searches": 0}

    async def verify(self, user: str, hits: Sequence[HasDocKey]) -> Verification:
        refs = [_ref(user, hit.doc_key) for hit in hits]
        verdicts = await self._verdicts(user, refs)
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

    async def _verdicts(self, user: str, refs: list[DocRef]) -> dict[str, bool | None]:
        # While checks are paused, or another search is probing whether Nextcloud answers again, skip.
        if time.monotonic() < self._skip_until or (self._probing and self._probe_in_flight):
            self.metrics["short_circuited_searches"] += 1
            return dict.fromkeys((ref.key for ref in refs), None)
        by_type: dict[str, list[str]] = {}
        for ref in refs:
            by_type.setdefault(ref.doc_type, []).append(ref.source_id)
        probe = self._probing
        timeout = min(self.timeout, self.probe_timeout) if probe else self.timeout
        self._probe_in_flight = self._probe_in_flight or probe
        try:
            companion = await self._through_companion(user, by_type, timeout)
            verdicts: dict[str, bool | None] = companion if companion is not None else {}
            if companion is None:
                checks = (self._check(user, doc_type, ids, timeout) for doc_type, ids in by_type.items())
                for part in await asyncio.gather(*checks):
                    verdicts.update(part)
        finally:
            if probe:
                self._probe_in_flight = False
        if None not in verdicts.values():
            self._probing = False
        elif time.monotonic() >= self._skip_until:
            self._skip_until = time.monotonic() + self.short_circuit_seconds
            self._probing = True
            log.warning("Nextcloud did not answer a re-check within %gs; skipping re-checks for %gs (own results are "
                        "served unchecked, shared ones withheld)", timeout, self.short_circuit_seconds)
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


def _owner(hit: object) -> str | None:
    """The account owning a hit's document, as the source recorded it at indexing (None: unknown)."""
    metadata = getattr(hit, "metadata", None) or {}
    return metadata.get("owner") if isinstance(metadata, dict) else None


def _ref(user: str, doc_key: str) -> DocRef:
    doc_type, _, source_id = doc_key.partition(":")
    return DocRef(user, doc_type, source_id)  # type: ignore[arg-type]
