"""The indexing worker: take queued tasks, fetch, chunk, embed, upsert or delete.

Two lanes drain the one queue: the main lane (changes users just made, then catching up) and the
OCR lane, one file at a time, for files whose text is in images (ADR 0601). A source raises
:class:`NeedsOcr` for such a file in the main lane; the task moves to the OCR lane, which runs
beside the main one, so a thousand scans never hold up anybody's edited note.

This module claims and fetches (the first stage); ``writing.py`` chunks, embeds and writes. Idempotent
by construction (see there): a crash at any point repeats at most the cheap steps on restart, never
the embedding, and never leaves a duplicate.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..core.documents import DocRef, IndexedAs, Skipped, SourceDocument, Unchanged
from ..embedding.backends import Embedder
from ..stores.keyword import KeywordIndex
from ..nextcloud.client import CredentialsRefused, NextcloudClient, NotFound, Transient, Unavailable, UserRefused
from ..sources.base import Source, screen
from ..sources.extract import NeedsOcr
from ..sources.parse_failures import FAILURES, GIVE_UP_AFTER
from ..workers import parser_process
from ..workers.parser_process import ParserFailed, parse_owner
from ..stores.vectors import VectorStore
from .stages import Stages
from .queue import OCR_PAYLOAD, Task
from .shared_spaces import SharedSpaces, space_of, team_folder_of
from .state import IndexState
from .writing import EmbedAndWrite, PipelineStats, Written

log = logging.getLogger(__name__)

# A batch should take about BATCH_SECONDS: an event queued meanwhile waits at most about one batch,
# and a fast embedder (a remote service) gets many documents per request. The local model embeds
# ~3 chunks/s on 2 cores, so its batches stay small; an instant one reaches MAX_BATCH.
BATCH_SECONDS = 2.0
MIN_BATCH, MAX_BATCH = 4, 64
FETCH_SLOTS = 8  # documents fetched from Nextcloud at once: its PHP workers are few
SLOW_FETCH_SECONDS = 2.0  # a main-lane batch waits this long for a fetch, then goes on without it
QUIET_FETCH_SECONDS = 0.3  # ... or less, once some are fetched and none has finished for this long
CARRIED_BATCHES = 4  # fetches in flight, slow ones carried included, at most this many batches' worth


def next_batch_size(size: int, taken: int, seconds: float) -> int:
    """The size that would have taken ``BATCH_SECONDS``: it shrinks at once, grows at most twofold
    (a batch of cheap documents, unchanged or skipped, says little about the next)."""
    if taken < size:  # the queue ran short: the batch says nothing about a full one
        return size
    fitting = int(BATCH_SECONDS * taken / max(seconds, 1e-3))
    return max(MIN_BATCH, min(MAX_BATCH, 2 * size, fitting))


@dataclass
class Batch:
    """Claimed tasks on their way through the stages, with the documents fetched for them."""

    lane: str
    tasks: list[Task]
    docs: list[tuple[Task, SourceDocument]]
    started: float  # time.monotonic() at the claim


class Pipeline(EmbedAndWrite):
    """Drains the queue. One instance per process; ``run`` loops until cancelled."""

    max_attempts = 5

    def __init__(
        self,
        state: IndexState,
        sources: Callable[[], dict[str, Source]],
        nc: NextcloudClient,
        store: VectorStore,
        keyword: KeywordIndex,
        embedder: Callable[[], Embedder],
        is_user_enabled: Callable[[str], bool],
        *,
        batch_size: int = 8,
        backoff_seconds: float = 2.0,
    ) -> None:
        self.state = state
        self.spaces = SharedSpaces(state, store, keyword)
        self._sources = sources
        self.nc = nc
        self.store = store
        self.keyword = keyword
        self._embedder = embedder
        self._is_user_enabled = is_user_enabled
        self.batch_size = batch_size
        self.backoff_seconds = backoff_seconds  # before the second attempt, doubled at each one after
        self.stats = PipelineStats()
        self._wake = {"main": asyncio.Event(), "ocr": asyncio.Event()}
        self._carried: list[tuple[Task, asyncio.Future[SourceDocument | None]]] = []  # slow fetches (_fetch_batch)

    def wake(self, lane: str = "main") -> None:
        """Called after enqueueing, so new work starts now rather than at the next poll."""
        self._wake[lane].set()

    async def run(self) -> None:
        recovered = self.state.recover(self.max_attempts)
        if recovered:
            log.info("Resuming %d indexing task(s) interrupted by the last shutdown", recovered)
        await asyncio.gather(self._run_stages(), self._run_lane("ocr"))

    async def _run_lane(self, lane: str) -> None:
        while True:
            # The whole queue waits while Nextcloud is unavailable or refuses the app: no task is
            # tried, so none spends an attempt or dead-letters for what is not its fault.
            await self.nc.health.wait_usable()
            processed = await self.run_once(lane)
            if not processed:
                await self._idle(lane)

    async def _idle(self, lane: str) -> None:
        """Wait for work: a wake-up, or the lane's next task becoming ready (a retry's back-off)."""
        wait = self.state.next_ready_in(lane)
        self._wake[lane].clear()
        try:
            await asyncio.wait_for(self._wake[lane].wait(), timeout=min(wait if wait is not None else 30.0, 30.0))
        except TimeoutError:
            pass

    async def run_once(self, lane: str = "main") -> int:
        """Process one batch of the lane, one stage after the other; returns how many tasks it took."""
        batch = await self._fetch_batch(lane)
        if batch is None:
            return 0
        await self._write_batch(batch, await self._embed(batch.docs))
        return len(batch.tasks)

    async def _fetch(self, task: Task) -> SourceDocument | None:
        """Resolve one task to a document to index, or finish it here (delete, skip, failure)."""
        ref = task.ref
        try:
            if not self._is_user_enabled(ref.user):
                self.state.complete(task)
                return None
            source = self._sources().get(ref.doc_type)
            if source is None:
                # A source the admin switched off is removed from the index like a deleted document.
                await self._delete(ref)
                self.state.complete(task)
                return None
            # Every delete is confirmed with Nextcloud first: events arrive late and out of order,
            # so a delete may be older than a restore or than a new document at its path, and the
            # queue keeps only the newest event of a document (a late delete replaces a create).
            doc = await self._load(source, task)
            if isinstance(doc, SourceDocument):
                doc = screen(doc, source.options)  # the admin's exclusions and the size caps, for every source
        except NotFound:
            log.info("%s for %s is gone or no longer readable: removing it", ref.key, ref.user)
            await self._delete(ref)
            self.state.complete(task)
            return None
        except Unavailable as exc:
            if exc.item_suspect:
                self._fail(task, f"Nextcloud failed on it: {exc}")
            else:  # not this item's fault: back to the queue untouched; run() waits for Nextcloud
                self.state.release(task)
            return None
        except CredentialsRefused:
            self.state.release(task)
            return None
        except UserRefused:
            # The app's own credentials work (checked), so AppAPI refuses this account: gone or disabled.
            log.warning("Dropping %s for unknown user %r: Nextcloud refuses to act as them (HTTP 401), while "
                        "the app's own credentials work", ref.key, ref.user)
            self.state.complete(task)
            return None
        except Transient as exc:  # e.g. a timeout on this one request
            self._fail(task, f"Nextcloud could not answer: {exc}")
            return None
        except NeedsOcr:  # its text is in images: read in the OCR lane, after everything else
            log.info("%s for %s has its text in images: moved to the OCR lane", ref.key, ref.user)
            self.state.to_ocr_lane(task)
            self.wake("ocr")
            return None
        except ParserFailed as exc:  # out of time or memory: retried once, then dead-lettered with the reason
            self._parse_failed(task, exc.reason, exc.version)
            return None
        except Exception as exc:  # a bug or bad data must not stop the worker
            log.exception("Indexing %s for %s failed", ref.key, ref.user)
            self._fail(task, f"{type(exc).__name__}: {exc}")
            return None
        if isinstance(doc, Unchanged):  # a duplicate or late event: nothing downloaded, nothing to do
            self.state.complete(task)
            return None
        if isinstance(doc, Skipped) and task.action == "delete":
            # No longer a document of this source (excluded since, or a file that became a note).
            log.info("%s for %s is no longer a document to index (%s): removing it", ref.key, ref.user, doc.reason)
            await self._delete(ref)
            self.state.complete(task)
            return None
        if isinstance(doc, Skipped):
            await self._delete(ref)
            if doc.counted:  # a folder is no skipped document: the status counts only files
                log.info("Not indexing %s for %s: %s", ref.key, ref.user, doc.reason)
                self.state.record_skipped(ref, doc.version, doc.reason, doc.location)
                self.stats.skipped += 1
            self.state.complete(task)
            return None
        known = self.state.indexed(ref)
        if (known and known.version == doc.version and known.location == doc.location and known.title == doc.title
                and known.space == space_of(doc)):
            self.state.complete(task)  # duplicate or late event: nothing changed, nothing to embed
            return None
        if await asyncio.to_thread(self._join_space, doc, ref, known):
            self._completed(task)  # a team folder's file its space holds already: one row, nothing embedded
            return None
        return doc

    async def _load(self, source: Source, task: Task) -> SourceDocument | Skipped | Unchanged:
        """Use what the event already carried (a calendar webhook has the full iCalendar) or fetch."""
        payload = task.payload or {}
        known = self.state.indexed(task.ref)
        indexed = IndexedAs(known.version, known.location, team_folder_of(known.space)) if known else None
        doc = await source.document_from_payload(task.ref.source_id, payload, user=task.ref.user) if payload else None
        # Events arrive late and out of order: what one carried is used only if it is still the
        # current version (a HEAD, which also says 404 for an object deleted since).
        if doc is not None and doc.version == await source.current_version(self.nc, task.ref.user, task.ref.source_id):
            return doc
        if payload == OCR_PAYLOAD:
            return await source.fetch(self.nc, task.ref.user, task.ref.source_id, ocr_lane="ocr", indexed=indexed)
        return await source.fetch(self.nc, task.ref.user, task.ref.source_id, listed=payload.get("listed"),
                                  indexed=indexed)  # ADR 0530

    async def _delete(self, ref: DocRef) -> None:
        known = self.state.indexed(ref)
        await asyncio.to_thread(self.store.delete_doc, ref.user, ref.key)
        await asyncio.to_thread(self.keyword.delete_doc, ref.user, ref.key)
        if known is not None and known.space is not None:  # the user's row goes; the chunks with the last one
            await asyncio.to_thread(self.spaces.release_row, known.space, ref)
        else:
            self.state.forget(ref)
        self.stats.deleted += 1

    def _parse_failed(self, task: Task, reason: str, version: str) -> None:
        """A parser's bound tripped on this version: a third try would cost the whole bound again."""
        failures = FAILURES.record(task.ref.doc_type, task.ref.source_id, version, reason)
        self._fail(task, reason, refused=version, give_up=failures >= GIVE_UP_AFTER)

    def _fail(self, task: Task, reason: str, *, refused: str | None = None, give_up: bool = False) -> None:
        """A failed attempt; ``refused`` (the version) when the document itself is at fault, so a
        dead letter is not retried after every restart or reconciliation, only for a new version;
        ``give_up`` dead-letters it now."""
        self.stats.failed += 1
        attempts = min(self.max_attempts, task.attempts) if give_up else self.max_attempts
        dead = self.state.retry_later(task, reason, max_attempts=attempts, backoff=self.backoff_seconds,
                                      refused=refused)
        if dead:
            log.error("Giving up on %s for %s after %d attempts: %s", task.ref.key, task.ref.user, task.attempts, reason)
        else:
            log.info("Indexing %s for %s failed (attempt %d), trying again later: %s", task.ref.key, task.ref.user,
                     task.attempts, reason)

    # --- the main lane's stages: fetch, embed, write, overlapping -----------------------------------

    async def _run_stages(self) -> None:
        """The main lane: fetch, embed and write overlapping, a batch in each (stages.py)."""
        try:
            await Stages(lambda: self._fetch_batch("main"), lambda batch: self._embed(batch.docs), self._write_batch,
                         may_fetch=lambda: self.nc.health.usable, ready=self.nc.health.wait_usable,
                         idle=lambda: self._idle("main")).run()
        finally:  # slow fetches carried between batches stop with the lane (their tasks are recovered)
            for _, future in self._carried:
                future.cancel()
            self._carried = []

    async def _fetch_batch(self, lane: str) -> Batch | None:
        """Claim a batch of the lane and fetch its documents, ``FETCH_SLOTS`` at a time; None when
        nothing is ready. Tasks finished while fetching (deletes, skips, failures) are done here."""
        if lane != "main":
            tasks, started = self.state.claim(1, lane), time.monotonic()
            if not tasks:
                return None
            return Batch(lane, tasks, [(t, d) for t in tasks if isinstance(d := await self._fetch(t), SourceDocument)],
                         started)
        # A fetch still parsing after SLOW_FETCH_SECONDS (a file that takes its parser's whole bound) goes
        # on beside the batch and joins a later one: the batch, and another user's edited note in it,
        # does not wait for it (issue 36). Meanwhile new work is claimed and fetched beside it.
        pending, claimed = self._carried, 0
        started = time.monotonic()
        slots = asyncio.Semaphore(FETCH_SLOTS)

        def claim_more() -> None:  # a batch's worth beside those carried (at most a few batches in flight)
            nonlocal claimed
            room = min(self.batch_size - claimed, CARRIED_BATCHES * self.batch_size - len(pending))
            if room > 0 and self.nc.health.usable:  # paused: nothing more is claimed, no attempt spent
                tasks = self.state.claim(room, lane)
                claimed += len(tasks)
                pending.extend((task, asyncio.ensure_future(self._fetch_in(slots, task))) for task in tasks)

        claim_more()
        if not pending:
            return None
        last_finished = started
        try:
            while True:  # until all are fetched, or some are and the rest are slow (or stalled)
                done = [pair for pair in pending if pair[1].done()]
                now = time.monotonic()
                waiting = [task.ref.user for task, future in pending if not future.done()]
                if done and (now - started >= SLOW_FETCH_SECONDS or now - last_finished >= QUIET_FETCH_SECONDS
                             or all(user in parser_process.HEAVY for user in waiting)):  # not waited for at all
                    break
                # A wake-up (new work: another user's edited note) is claimed at once (issue 36).
                self._wake[lane].clear()
                woken = asyncio.ensure_future(self._wake[lane].wait())
                finished, _ = await asyncio.wait(
                    [woken, *(future for _, future in pending if not future.done())],
                    timeout=QUIET_FETCH_SECONDS if done else SLOW_FETCH_SECONDS, return_when=asyncio.FIRST_COMPLETED)
                woken.cancel()
                if finished - {woken}:
                    last_finished = time.monotonic()
                if woken in finished or not finished:  # new work, or a slow wait: never grown per fetch
                    claim_more()  # (each claim is a batch's worth: grown per fetch, it kept newcomers waiting)
        except asyncio.CancelledError:
            for _, future in pending:
                future.cancel()
            pending.clear()
            raise
        self._carried = [pair for pair in pending if not pair[1].done()]
        docs = [(task, doc) for task, future in done if isinstance(doc := future.result(), SourceDocument)]
        return Batch(lane, [task for task, _ in done], docs, started)

    async def _fetch_in(self, slots: asyncio.Semaphore, task: Task) -> SourceDocument | None:
        parse_owner.set(task.ref.user)  # this coroutine's own context: its parses count as the user's
        async with slots:
            return await self._fetch(task)

    async def _write_batch(self, batch: Batch, written: list[Written]) -> None:
        """The last stage: the index writes, then what the batch teaches about the next one's size."""
        if written:
            await self._store(written)
        self.stats.processed += len(batch.tasks)
        if batch.lane == "main":  # an OCR file's minutes say nothing about the main lane's batches
            # From claim to written, waiting behind the batch before included: what a new event waits for
            self.stats.last_batch_seconds = time.monotonic() - batch.started
            self.batch_size = next_batch_size(self.batch_size, len(batch.tasks), self.stats.last_batch_seconds)
