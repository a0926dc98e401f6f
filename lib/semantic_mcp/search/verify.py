"""Phase 2 of authorization (ADR-009): is every hit still readable by the caller, right now?

The index can lag behind Nextcloud (a share revoked a second ago, a file deleted while the
webhook worker was down), so before a hit leaves the server it is checked *as the calling user*
against Nextcloud itself. Gone or forbidden (404/403) means drop it and schedule its removal;
a transient failure keeps it (the index is still the best knowledge we have, and the document
was readable when indexed). Each source checks its hits in as few requests as its API allows
(files and notes: one WebDAV SEARCH for many file ids); requests run concurrently within a
bound, each with a timeout, so a slow server cannot stall a search.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..documents import DocRef
from ..nextcloud import NextcloudClient
from ..sources.base import Source

log = logging.getLogger(__name__)


class HasDocKey(Protocol):
    doc_key: str


@dataclass
class Verification:
    kept: list
    dropped: list[DocRef]
    unverified: int  # kept because Nextcloud could not answer in time


class Verifier:
    def __init__(
        self,
        nc: NextcloudClient,
        sources: Callable[[], dict[str, Source]],
        on_gone: Callable[[list[DocRef]], None],
        *,
        concurrency: int = 12,
        timeout: float = 5.0,
    ) -> None:
        self.nc = nc
        self._sources = sources
        self._on_gone = on_gone
        self._semaphore = asyncio.Semaphore(concurrency)
        self.timeout = timeout

    async def verify(self, user: str, hits: Sequence[HasDocKey]) -> Verification:
        refs = [_ref(user, hit.doc_key) for hit in hits]
        by_type: dict[str, list[str]] = {}
        for ref in refs:
            by_type.setdefault(ref.doc_type, []).append(ref.source_id)
        verdicts: dict[str, bool | None] = {}
        for part in await asyncio.gather(*(self._check(user, doc_type, ids) for doc_type, ids in by_type.items())):
            verdicts.update(part)
        kept = [hit for hit, ref in zip(hits, refs, strict=True) if verdicts[ref.key] is not False]
        dropped = [ref for ref in refs if verdicts[ref.key] is False]
        unverified = sum(1 for ref in refs if verdicts[ref.key] is None)
        if dropped:
            log.info("Dropped %d hit(s) %s can no longer open; removing them from the index", len(dropped), user)
            self._on_gone(dropped)
        if unverified:
            log.warning("Could not re-check %d hit(s) for %s with Nextcloud; keeping them", unverified, user)
        return Verification(kept=kept, dropped=dropped, unverified=unverified)

    async def _check(self, user: str, doc_type: str, source_ids: list[str]) -> dict[str, bool | None]:
        """Verdicts by doc key for one type's hits, in as few requests as its source can manage."""
        source = self._sources().get(doc_type)
        if source is None:  # the admin switched this source off: its documents are not served
            return {f"{doc_type}:{i}": False for i in source_ids}
        result = await source.readable(self.nc, user, source_ids, slots=self._semaphore, timeout=self.timeout)
        return {f"{doc_type}:{i}": result.get(i) for i in source_ids}


def _ref(user: str, doc_key: str) -> DocRef:
    doc_type, _, source_id = doc_key.partition(":")
    return DocRef(user, doc_type, source_id)  # type: ignore[arg-type]
