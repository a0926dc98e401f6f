"""Reconciliation: find what no event told us about, cheaply, and queue only real changes.

Covers the sources that have no events on Nextcloud 32/33 (Deck cards, contacts), events missed
while the webhook worker or this app was down, and share changes (a share fires no event for the
recipient). Each source lists changes since its stored cursor; versions (and, for files, paths)
are compared with the ledger so unchanged content is never fetched or embedded again. A full
listing (every ``full_every`` seconds, and on the first pass) also finds deletions.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from ..core.documents import DocRef, DocType
from ..nextcloud.client import NextcloudClient, NextcloudError
from ..sources.base import Listing, Source
from .state import IndexState

log = logging.getLogger(__name__)


@dataclass
class ReconcileResult:
    doc_type: DocType
    queued_upserts: int = 0
    queued_deletes: int = 0
    error: str | None = None


async def reconcile_source(
    state: IndexState,
    nc: NextcloudClient,
    source: Source,
    user: str,
    *,
    full_every: float,
    force_full: bool = False,
) -> ReconcileResult:
    """Compare one user's documents of one type with the ledger and queue the differences."""
    doc_type = source.doc_type
    result = ReconcileResult(doc_type)
    cursor, last_full = state.cursor(user, doc_type)
    full = force_full or cursor is None or last_full is None or time.time() - last_full >= full_every
    try:
        listing = await source.list_changes(nc, user, None if full else cursor, full=full)
        if listing.team_folders is not None and state.set_team_folders(user, listing.team_folders) and not full:
            # A team folder gained, lost (removed from its group, folder deleted) or moved: no event
            # says so, and only a full listing finds what left with it.
            log.info("The team folders of %s changed: listing all their files", user)
            listing = await source.list_changes(nc, user, None, full=True)
    except NextcloudError as exc:
        # Keep the old cursor: the next pass retries the same window.
        log.warning("Reconciling %s for %s failed: %s", doc_type, user, exc)
        result.error = str(exc)
        return result

    indexed = state.indexed_versions(user, doc_type)
    skipped = state.skipped_versions(user, doc_type)
    located = state.indexed_locations(user, doc_type) if listing.locations else {}

    def moved(source_id: str) -> bool:
        now = listing.locations.get(source_id)
        return now is not None and source_id in located and located[source_id] != now

    refused, queued = state.refused_versions(user, doc_type), state.queued(user, doc_type)

    def changed(source_id: str, version: str | None) -> bool:
        # Its task reads the current version anyway (or indexes what it carries, and a version
        # changed since is queued by the pass after it); queuing it again would reset its attempts.
        if source_id in queued:
            return False
        if source_id in refused:  # dead-lettered by its own fault: only a new version is tried again
            return version is not None and refused[source_id] not in ("", version)
        if source_id not in indexed and source_id not in skipped:
            return True
        return (version is not None and version != indexed.get(source_id, skipped.get(source_id))) or moved(source_id)

    upserts = [DocRef(user, doc_type, s) for s, version in listing.items.items() if changed(s, version)]
    gone = set(listing.deleted)
    if listing.complete:
        # An indexed document left out is gone from the index (deleted, or excluded since); a skipped
        # one only when Nextcloud no longer has it at all, or its skipped count would come and go.
        gone |= set(indexed) - set(listing.items)
        gone |= set(skipped) - set(listing.items) - (listing.unindexed or set())
    deletes = [DocRef(user, doc_type, source_id) for source_id in sorted(gone)]

    if upserts:
        carried = await _carried(source, nc, listing, user, [ref.source_id for ref in upserts])
        result.queued_upserts = state.enqueue(
            upserts, "upsert", payloads={ref: {"listed": carried[ref.source_id]} for ref in upserts
                                         if ref.source_id in carried})
    if deletes:
        result.queued_deletes = state.enqueue(deletes, "delete")
    # The cursor is saved only after the work is queued: a crash in between re-lists, never loses.
    state.save_cursor(user, doc_type, listing.cursor, full=listing.complete)
    if upserts or deletes:
        log.info(
            "Reconciliation %s for %s: %d to refresh, %d to remove%s",
            doc_type, user, len(upserts), len(deletes), " (full listing)" if listing.complete else "",
        )
    return result


async def _carried(
    source: Source, nc: NextcloudClient, listing: Listing, user: str, source_ids: list[str]
) -> dict[str, dict[str, Any]]:
    """What the new tasks carry to fetch (ADR 0530); nothing when Nextcloud cannot say it now:
    each task then fetches what it needs itself, as one from an event does."""
    try:
        return await source.carried(nc, user, listing, source_ids)
    except Exception as exc:  # noqa: BLE001 - reading ahead only saves requests: it never keeps changes from the queue
        log.info("Reading %d %s of %s ahead failed (%s): each is fetched alone", len(source_ids),
                 source.doc_type, user, exc)
        return {}
