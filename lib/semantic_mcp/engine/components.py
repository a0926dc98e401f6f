"""The parts of the engine that follow the admin settings: the sources, the embedding model and the
vector store of its vector space. Settings reach them through :meth:`SettingsComponents.apply` alone
(ADR 0740): reading a part never changes anything, so a search never changes state."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from ..core.clock import Clock
from ..core.config import AdminSettings, Deployment
from ..embedding.backends import Embedder, make_embedder
from ..embedding.cache import CachedEmbedder, EmbeddingCache
from ..indexing.state import IndexState
from ..sources import make_sources
from ..sources.base import Source, SourceOptions
from ..stores.keyword import KeywordIndex
from ..stores.vectors import VectorStore

log = logging.getLogger(__name__)


class SettingsComponents:
    """Part of :class:`~semantic_mcp.engine.Engine`."""

    deployment: Deployment  # provided by Engine
    clock: Clock
    settings: Callable[[], AdminSettings]
    state: IndexState
    keyword: KeywordIndex
    _full_pass: bool

    def request_reconcile(self) -> None: ...  # provided by Engine

    def _init_components(self, embedding_cache: EmbeddingCache) -> None:
        self._embedding_cache = embedding_cache
        self._embedder: Embedder | None = None
        self._embedder_config: tuple[Any, ...] | None = None
        self._store: VectorStore | None = None
        # The model and the store are made on first use, which may come from several threads at once
        # (indexing and searches after a restart that had no /init); Chroma's client is not safe to
        # create concurrently ("RustBindingsAPI object has no attribute bindings").
        self._components_lock = threading.RLock()
        self._sources_key: tuple[Any, ...] | None = None
        self._sources: dict[str, Source] = {}

    def apply(self, settings: AdminSettings | None = None) -> None:
        """Take the admin settings (the shell's settings refresher calls this after each read; None:
        read them now): the one place a change of settings changes anything. New sources, limits or
        exclusions ask for a full pass; a new embedding model re-indexes into new collections.
        Unchanged settings change nothing, and reading :meth:`sources` or :meth:`embedder` never does."""
        settings = settings or self.settings()
        with self._components_lock:
            self._apply_sources(settings)
            self._apply_embedder(settings)

    def _apply_sources(self, settings: AdminSettings) -> None:
        key = (settings.enabled_doc_types, settings.max_file_size_mb, settings.excluded_paths, settings.excluded_tag,
               settings.index_nextcloud_examples, settings.reading_languages)
        if key == self._sources_key:
            return
        options = SourceOptions(
            max_file_size=settings.max_file_size_mb * 1024 * 1024, excluded_paths=settings.excluded_paths,
            excluded_tag=settings.excluded_tag, index_examples=settings.index_nextcloud_examples, clock=self.clock,
            ocr_languages=settings.reading_languages,
        )
        self._sources = {t: s for t, s in make_sources(options).items() if t in settings.enabled_doc_types}
        if self._sources_key is not None:
            # Sources, limits or exclusions changed: compare everything with them now (a full
            # pass), so documents they now exclude leave the index and included ones arrive.
            # Items skipped under the old rules are decided again, even if unchanged.
            self.state.forget_skipped()
            self._full_pass = True
            self.request_reconcile()
        self._sources_key = key

    def _apply_embedder(self, settings: AdminSettings) -> None:
        config = (settings.embedding_backend, settings.embedding_url, settings.embedding_model,
                  settings.embedding_concurrency)
        if config == self._embedder_config:
            return
        embedder = CachedEmbedder(make_embedder(settings.embedding_backend, **settings.remote_embedder_options()),
                                  self._embedding_cache)
        previous = self.state.get_meta("model_id")
        if previous is not None and previous != embedder.model_id:
            log.warning("Embedding model changed from %s to %s: re-indexing everything", previous, embedder.model_id)
            self._start_over()
        self.state.set_meta("model_id", embedder.model_id)
        if self._store is not None and (self._store.model_id, self._store.dim) != (embedder.model_id, embedder.dim):
            # Another model's collections. (An embedded client stays open for the old store, so until a
            # restart the new one's reopening cannot free memory: ADR 0561; a model switch re-indexes anyway.)
            self._store = None
        self._embedder, self._embedder_config = embedder, config

    def _applied(self) -> None:
        """Before the first :meth:`apply` (a search or the indexing worker in the seconds after a start,
        before the refresher's first read), the settings as they are are applied once."""
        if self._sources_key is None or self._embedder is None:
            self.apply()

    def embedder(self) -> Embedder:
        """The embedding model of the settings last applied."""
        with self._components_lock:
            self._applied()
            assert self._embedder is not None
            return self._embedder

    def sources(self) -> dict[str, Source]:
        """The sources of the settings last applied."""
        with self._components_lock:
            self._applied()
            return self._sources

    def store(self) -> VectorStore:
        with self._components_lock:
            return self._current_store()

    def _current_store(self) -> VectorStore:
        if self._store is None:
            embedder = self.embedder()
            if self.deployment.chroma_host:
                self._store = VectorStore.remote(self.deployment.chroma_host, self.deployment.chroma_port,
                                                 embedder.model_id, embedder.dim, texts=self.keyword.texts)
            else:
                self._store = VectorStore.embedded(self.deployment.storage / "chroma", embedder.model_id, embedder.dim,
                                                   memory_limit=self.deployment.chroma_memory_mb * 10**6,
                                                   texts=self.keyword.texts)  # ADR 0566
        return self._store

    def _start_over(self) -> None:
        """Forget what was indexed (not who opted in), so reconciliation queues everything again."""
        self.state.forget_everything_indexed()
        self.keyword.clear()
        self._full_pass = True
        self.request_reconcile()


class Current:
    """Forwards to the engine's current store or embedder, replaced when the embedding model changes."""

    def __init__(self, current: Callable[[], Any]) -> None:
        self._current = current

    def __getattr__(self, name: str) -> Any:
        return getattr(self._current(), name)

