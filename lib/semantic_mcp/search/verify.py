"""Phase 2 of authorization (ADR-009): is every hit still readable by the caller, right now?

The index can lag behind Nextcloud (a share revoked a second ago, a file deleted while the
webhook worker was down), so before a hit leaves the server it is checked *as the calling user*
against Nextcloud itself. Gone or forbidden (404/403) means drop it and schedule its removal;
a transient failure keeps it (the index is still the best knowledge we have, and the document
was readable when indexed). Checks run concurrently with a bound so a slow server cannot stall
a search.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..documents import DocRef
from ..nextcloud import NextcloudClient, Transient
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
        verdicts = await asyncio.gather(*(self._check(user, hit.doc_key) for hit in hits))
        kept = [hit for hit, ok in zip(hits, verdicts, strict=True) if ok is not False]
        dropped = [_ref(user, hit.doc_key) for hit, ok in zip(hits, verdicts, strict=True) if ok is False]
        if dropped:
            log.info("Dropped %d hit(s) %s can no longer open; removing them from the index", len(dropped), user)
            self._on_gone(dropped)
        return Verification(kept=kept, dropped=dropped, unverified=sum(1 for v in verdicts if v is None))

    async def _check(self, user: str, doc_key: str) -> bool | None:
        ref = _ref(user, doc_key)
        source = self._sources().get(ref.doc_type)
        if source is None:
            return False  # the admin switched this source off: its documents are not served
        try:
            async with self._semaphore:
                return await asyncio.wait_for(source.can_read(self.nc, user, ref.source_id), self.timeout)
        except (Transient, TimeoutError) as exc:
            log.warning("Could not verify %s for %s (%s); keeping it", doc_key, user, exc or type(exc).__name__)
            return None


def _ref(user: str, doc_key: str) -> DocRef:
    doc_type, _, source_id = doc_key.partition(":")
    return DocRef(user, doc_type, source_id)  # type: ignore[arg-type]
