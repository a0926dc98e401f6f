"""Wires the layers together and runs the background work: indexing worker and reconciliation.

The ExApp shell owns one Engine. Everything here is independent of AppAPI: the shell passes a
:class:`NextcloudClient` that knows how to authenticate, a function returning the current admin
settings, and a function that lists Nextcloud's users.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..nextcloud.accounts import AccountDirectory, DataHolder
from ..core.config import AdminSettings, Deployment
from ..core.documents import DOC_TYPES, DocRef
from ..embedding.cache import EmbeddingCache
from ..indexing.events import plan_event
from ..indexing.pipeline import Pipeline
from ..indexing.reconcile import reconcile_source
from ..indexing.state import IndexState
from ..stores.keyword import KeywordIndex
from ..nextcloud.client import NextcloudClient
from ..search import rerank
from ..search.assistant import NextcloudAssistant
from ..search.retrieval import Fusion, HybridRetriever
from ..search.sampling import SamplingGate
from ..search.service import SearchService
from ..search.verify import Verifier
from ..nextcloud.companion import Companion
from ..sources.base import SourceOptions
from .components import SettingsComponents, Current
from ..nextcloud.webhook_health import WebhookHealth

log = logging.getLogger(__name__)

Progress = Callable[[int, str], Awaitable[None]]


class Engine(SettingsComponents):
    def __init__(
        self,
        deployment: Deployment,
        nc: NextcloudClient,
        settings: Callable[[], AdminSettings],
        list_users: Callable[[], Awaitable[list[str]]],
        *,
        public_url: str | None = None,
    ) -> None:
        self.deployment = deployment
        self.clock = deployment.clock
        self.nc = nc
        self.settings = settings
        self._list_users = list_users
        storage = deployment.storage
        storage.mkdir(parents=True, exist_ok=True)
        self.state = IndexState(storage / "state.db")
        self.keyword = KeywordIndex(storage / "keyword.db")
        self._init_components(EmbeddingCache(storage / "embeddings.db"))
        self.gates = {"query_analysis": SamplingGate("query analysis"), "rerank": SamplingGate("re-ranking"),
                      "answer": SamplingGate("answer")}
        # Answers through Nextcloud's own AI when the client cannot sample.
        recheck = deployment.nextcloud_ai_recheck_seconds
        self.assistant = NextcloudAssistant(nc, no_provider_ttl=recheck, provider_ttl=recheck)
        self.pipeline = Pipeline(
            self.state, self.sources, nc, Current(self.store), self.keyword, self.embedder, self.is_user_enabled,
            backoff_seconds=deployment.retry_seconds,
        )
        self.accounts = AccountDirectory(nc, identities=self.state)  # who each indexed user was
        self.accounts.holders.append(DataHolder(self.state.users_with_data, self.purge_user))
        self.verifier = Verifier(nc, self.sources, self._schedule_removal, timeout=deployment.recheck_timeout_seconds,
                                 companion=Companion(float(os.environ.get("COMPANION_CHECK_SECONDS", "60"))),
                                 window=lambda: self.settings().recheck_window_seconds)
        self.search = SearchService(
            HybridRetriever(
                Current(self.store), self.keyword, Current(self.embedder),
                Fusion.rrf() if deployment.search_fusion == "rrf" else Fusion(), spaces=self.state,
            ),
            self.verifier, public_url or nc.base_url, reranker=rerank.from_setting(deployment.search_rerank),
            before_retrieval=functools.partial(self.accounts.confirm_same_person, timeout=self.verifier.timeout),
        )
        self._tasks: list[asyncio.Task[None]] = []
        self._reconcile_wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop the background work runs on (start())
        self._full_pass = False
        self._backfill: asyncio.Task[None] | None = None
        self.backfill_progress: int | None = None  # of the indexing pass started when the app was enabled
        self.health = nc.health
        self.health.on_resume(self._catch_up)
        self.webhooks = WebhookHealth()

    # --- users --------------------------------------------------------------------------------

    def is_user_enabled(self, user: str) -> bool:
        choice = self.state.user_choice(user)
        return self.settings().users_enabled_by_default if choice is None else choice

    async def enable_user(self, user: str) -> int:
        self.state.set_user_enabled(user, True)
        return await self.reconcile_user(user, force_full=True)

    async def disable_user(self, user: str) -> None:
        self.state.set_user_enabled(user, False)
        await asyncio.to_thread(self.store().delete_user, user)
        await asyncio.to_thread(self.keyword.delete_user, user)
        await asyncio.to_thread(self.pipeline.spaces.sweep)  # their rows went: what only they read leaves its space
        log.info("Indexing disabled for %s; their vectors were deleted", user)

    async def users(self) -> list[str]:
        """Users to index: Nextcloud's users that are enabled, plus anyone who opted in. What was kept
        for an account Nextcloud no longer has, or that now belongs to someone else, is purged."""
        try:
            listed = await self._list_users()
        except Exception as exc:  # keep indexing known users when the listing fails
            log.warning("Could not list Nextcloud users (%s); using the users already known", exc)
            return sorted(u for u in self.state.known_users() if self.is_user_enabled(u))
        await self.accounts.sweep(listed)
        return sorted(u for u in listed if self.is_user_enabled(u))

    def purge_user(self, user: str) -> None:
        """Everything indexed for a departed account: its state rows, keyword index and vectors."""
        self.state.delete_user(user)
        self.keyword.delete_user(user)
        self.store().delete_user(user)
        self.pipeline.spaces.sweep()  # only their rows in the shared spaces: what nobody else reads leaves

    # --- events and reconciliation --------------------------------------------------------------

    def handle_event(self, payload: Any) -> dict[str, Any]:
        """Queue the work a webhook delivery implies; raises MalformedEvent with a clear reason."""
        plan = plan_event(payload, self.state, notes_folder=SourceOptions().notes_folder)
        if plan.ignored:
            log.log(logging.INFO if plan.unexpected else logging.DEBUG, "Webhook ignored: %s", plan.ignored)
            return {"queued": 0, "ignored": plan.ignored}
        if plan.user and not self.is_user_enabled(plan.user):
            return {"queued": 0, "ignored": f"indexing is disabled for {plan.user}"}
        if plan.user:
            self.state.note_event(plan.user)
        queued = 0
        for ref in plan.deletes:
            queued += self.state.enqueue([ref], "delete", urgent=True)
        for ref, hint in plan.upserts:
            queued += self.state.enqueue([ref], "upsert", hint, urgent=True)
        for user, _doc_type in plan.reconcile:
            self._reconcile_wake.set()
            log.info("Event asks for reconciliation of %s", user)
        self.pipeline.wake()
        return {"queued": queued}

    def _schedule_removal(self, refs: list[DocRef]) -> None:
        self.state.enqueue(refs, "delete", urgent=True)  # hits the user can no longer open
        self.pipeline.wake()

    def _drop_disabled_sources(self, user: str, settings: AdminSettings) -> int:
        """Documents of a source the admin switched off leave the index (searches stopped serving
        them at once); its cursor is forgotten, so switching it on again lists everything."""
        queued = 0
        for doc_type in DOC_TYPES:
            if settings.source_enabled(doc_type):
                continue
            refs = [DocRef(user, doc_type, source_id) for source_id in self.state.indexed_versions(user, doc_type)]
            if refs:
                log.info("Removing %d %s document(s) of %s: the source is switched off", len(refs), doc_type, user)
                queued += self.state.enqueue(refs, "delete")
            if self.state.cursor(user, doc_type)[0] is not None:
                self.state.save_cursor(user, doc_type, None, full=False)
        return queued

    async def reconcile_user(self, user: str, *, force_full: bool = False) -> int:
        settings = self.settings()
        queued = self._drop_disabled_sources(user, settings)
        for source in self.sources().values():
            result = await reconcile_source(
                self.state, self.nc, source, user,
                full_every=max(settings.reconcile_interval_minutes, 0.01) * 60 * 4, force_full=force_full,
            )
            queued += result.queued_upserts + result.queued_deletes
        if queued:
            self.pipeline.wake()
        return queued

    async def reconcile_all(self, *, force_full: bool = False) -> int:
        queued = sum([await self.reconcile_user(user, force_full=force_full) for user in await self.users()])
        self.state.set_meta("last_reconcile", str(time.time()))
        return queued

    async def prepare(self, progress: Progress) -> None:
        """Local start-up work with real progress: what AppAPI's /init may do.

        AppAPI refuses every request an ExApp makes to Nextcloud until the app is enabled (only
        the init-status call is exempt), so content cannot be read here; the first indexing pass
        starts when the app is enabled (:meth:`start_backfill`).
        """
        await progress(10, "opening the index state")
        await progress(20, "loading the embedding model")
        embedder = await asyncio.to_thread(self.embedder)
        await progress(70, f"embedding model {embedder.model_id} ready ({embedder.dim} dimensions)")
        await asyncio.to_thread(self.store)
        await progress(90, "vector store ready")
        await progress(100, "")

    def start_backfill(self) -> None:
        """Index every enabled user's content in the background (a full pass; unchanged items are skipped)."""
        if self._backfill is None or self._backfill.done():
            self._backfill = asyncio.create_task(self._run_backfill(), name="backfill")

    async def _run_backfill(self) -> None:
        try:
            users = await self.users()
            log.info("Indexing pass started for %d user(s)", len(users))
            for user in users:
                await self.reconcile_user(user, force_full=True)
            total = max(self.state.pending_count(), 1)
            while (pending := self.state.pending_count()) > 0:
                self.backfill_progress = int(100 * (total - pending) / total)
                await asyncio.sleep(1.0)
            self.backfill_progress = 100
            log.info("Indexing pass finished: %d item(s) processed", total)
        except Exception:
            log.exception("Indexing pass failed; reconciliation will retry")

    def _catch_up(self, *, full: bool = False) -> None:
        """After any gap (a pause, a restart): list what changed since the last change seen, and
        give dead-lettered items another chance now that Nextcloud answers."""
        requeued = self.state.requeue_dead_letters()
        if requeued:
            log.info("Retrying %d dead-lettered item(s)", requeued)
        self._full_pass = self._full_pass or full
        self._reconcile_wake.set()
        self.pipeline.wake()

    async def _reconcile_loop(self) -> None:
        """Reconcile every interval; the interval is re-read while waiting, so a new setting applies now.
        While webhooks are missing, changes arrive only this way: reconcile every minute at most."""
        last_run = time.monotonic()
        while True:
            interval = max(self.settings().reconcile_interval_minutes, 0.01) * 60
            if self.webhooks.missing:
                interval = min(interval, MISSING_WEBHOOKS_INTERVAL)
            remaining = last_run + interval - time.monotonic()
            if remaining > 0 and not self._reconcile_wake.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._reconcile_wake.wait(), timeout=min(remaining, 2.0))
                continue
            await self.health.wait_usable()
            self._reconcile_wake.clear()
            last_run = time.monotonic()
            full, self._full_pass = self._full_pass, False
            pauses = self.health.pauses
            try:
                await self.reconcile_all(force_full=full)
            except Exception:
                log.exception("Reconciliation pass failed")
            if self.health.pauses != pauses:
                # Interrupted by a pause: sources that failed kept their cursors; go again once resumed.
                self._full_pass = self._full_pass or full
                self._reconcile_wake.set()

    def request_reconcile(self) -> None:
        """Wake the reconciliation loop now; safe from any thread (:meth:`apply` may run in one)."""
        loop = self._loop
        if loop is None or _running_loop() is loop:
            self._reconcile_wake.set()
        else:
            loop.call_soon_threadsafe(self._reconcile_wake.set)

    # --- lifecycle and status -------------------------------------------------------------------

    def start(self) -> None:
        if not self._tasks:
            self._loop = asyncio.get_running_loop()
            if self.state.has_cursors():
                # A restart: webhook deliveries made while the app was down are lost for good, so
                # compare everything with Nextcloud now (a full listing also finds deletions).
                log.info("Catching up on changes made while the app was not running")
                self._catch_up(full=True)
            self._tasks = [
                asyncio.create_task(_supervised("indexing worker", self.pipeline.run), name="indexing-worker"),
                asyncio.create_task(_supervised("reconciliation", self._reconcile_loop), name="reconciliation"),
            ]

    async def stop(self) -> None:
        if self._backfill is not None:
            self._tasks.append(self._backfill)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        await self.nc.aclose()
        self.state.close()


MISSING_WEBHOOKS_INTERVAL = 60.0


async def _supervised(name: str, loop: Callable[[], Awaitable[None]]) -> None:
    """Run a background loop forever: an unexpected error is logged and the loop restarted, never
    left to end silently (the app would look alive and do nothing)."""
    while True:
        try:
            await loop()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("The %s stopped on an unexpected error; restarting it in 5 s", name)
            await asyncio.sleep(5.0)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
