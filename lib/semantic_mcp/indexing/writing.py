"""The pipeline's last two stages: chunk and embed a batch's documents, then write them to the index.

Idempotent by construction: chunk ids are derived from the document (``doc_key#n``), Chroma and
the keyword index upsert by id, embeddings come from a persistent cache keyed by text, and the
ledger in :class:`IndexState` is written last.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..core.documents import SourceDocument
from ..embedding.backends import Embedder
from ..stores.keyword import KeywordIndex
from ..stores.vectors import ChunkRecord, VectorStore
from ..workers.parser_process import ParserFailed, run_parser
from .queue import Task
from ..core.documents import DocRef
from .records import chunk_batch
from .shared_spaces import SharedSpaces, SpaceDoc, space_of
from .state import IndexedDoc, IndexState

log = logging.getLogger(__name__)

Records = list[ChunkRecord]
_CHUNK_BATCH = f"{chunk_batch.__module__}:{chunk_batch.__name__}"  # run in a parser worker


@dataclass
class Written:
    """One document on its way into the index: its task, the document, its chunks and their vectors."""

    task: Task
    doc: SourceDocument
    recs: list[ChunkRecord]
    vectors: np.ndarray


@dataclass
class PipelineStats:
    processed: int = 0
    indexed: int = 0
    deleted: int = 0
    skipped: int = 0
    failed: int = 0
    chunks_embedded: int = 0
    last_batch_seconds: float = 0.0
    recent_latencies: list[float] = field(default_factory=list)  # enqueue-to-searchable, seconds


class EmbedAndWrite:
    """Part of :class:`~.pipeline.Pipeline`: its embed and write stages."""

    state: IndexState  # provided by Pipeline
    spaces: SharedSpaces
    store: VectorStore
    keyword: KeywordIndex
    stats: PipelineStats
    _embedder: Callable[[], Embedder]

    def _fail(self, task: Task, reason: str, *, refused: str | None = None, give_up: bool = False) -> None: ...

    def _parse_failed(self, task: Task, reason: str, version: str) -> None: ...

    async def _embed(self, items: list[tuple[Task, SourceDocument]]) -> list[Written]:
        """The documents' chunks with their vectors; on failure every task fails and nothing is left."""
        records = await self._chunked(items)
        texts = [record.text for _, _, recs in records for record in recs]
        if not texts:
            return [Written(task, doc, recs, np.zeros((0, 0))) for task, doc, recs in records]
        embedder = self._embedder()
        computed_before = getattr(embedder, "computed", 0)
        try:
            embeddings = await asyncio.to_thread(embedder.embed_passages, texts)
        except Exception as exc:
            log.exception("Embedding a batch of %d chunks failed", len(texts))
            for task, _ in items:
                self._fail(task, f"embedding failed: {exc}")
            return []
        # Logged as soon as the vectors are cached, so the count survives a crash during the writes.
        newly = getattr(embedder, "computed", 0) - computed_before
        log.info("Indexing %d document(s): %d chunk(s), %d newly embedded", len(items), len(texts), newly)
        self.stats.chunks_embedded += newly
        written, offset = [], 0
        for task, doc, recs in records:
            written.append(Written(task, doc, recs, embeddings[offset : offset + len(recs)]))
            offset += len(recs)
        return written

    async def _chunked(self, items: list[tuple[Task, SourceDocument]]) -> list[tuple[Task, SourceDocument, Records]]:
        """The documents with their chunk records, made in a parser worker: chunking and language
        detection took a fifth of the app's CPU, on the interpreter the event loop and the index
        writes need (ADR 0569). A batch that trips the worker's bounds is done again a document at a
        time, so that only a document at fault fails."""
        if not items:
            return []
        try:
            chunked = await run_parser(_CHUNK_BATCH, [(doc, task.ref) for task, doc in items])
            return [(task, doc, recs) for (task, doc), recs in zip(items, chunked, strict=True)]
        except ParserFailed as exc:
            if len(items) == 1:
                task, doc = items[0]
                self._parse_failed(task, f"chunking: {exc.reason}", doc.version)
                return []
        return [each for item in items for each in await self._chunked([item])]

    async def _store(self, written: list[Written]) -> None:
        """Write the documents to the index, each user's at once, and complete their tasks."""
        by_user: dict[str, list[Written]] = {}
        for each in written:
            by_user.setdefault(each.task.ref.user, []).append(each)
        for user, group in by_user.items():
            try:  # one Chroma and one FTS5 write for the user's whole batch: ~8x fewer commits than one each
                await asyncio.to_thread(self._write, user, group)
            except Exception:  # then one by one, so only a document that cannot be written fails
                log.warning("Writing %d document(s) of %s at once failed; writing them one by one", len(group), user,
                            exc_info=True)
                for each in group:
                    try:
                        await asyncio.to_thread(self._write, user, [each])
                    except Exception as exc:
                        log.exception("Writing %s for %s to the index failed", each.task.ref.key, user)
                        self._fail(each.task, f"index write failed: {exc}")
                        continue
                    self._completed(each.task)
                continue
            for each in group:
                self._completed(each.task)

    def _completed(self, task: Task) -> None:
        self.state.complete(task)
        self.stats.indexed += 1

    def _write(self, user: str, group: list[Written]) -> None:
        """Chunks and ledger of documents of one user; a crash between the writes is harmless (chunk
        ids are deterministic, and the tasks are completed only after). The keyword index first: it
        holds the texts hits show (ADR 0566), and a chunk it has that Chroma lacks is not served.
        A team folder's documents go to its shared space instead (ADR 0352)."""
        own = [written for written in group if space_of(written.doc) is None]
        recs = [rec for written in own for rec in written.recs]
        if recs:
            self.keyword.upsert(user, recs)
            self.store.upsert(user, recs, np.concatenate([written.vectors for written in own]))
        stale = []  # chunks a document that shrank no longer has
        for written in own:
            previous = self.state.indexed(written.task.ref)
            if previous and previous.space is None and previous.chunk_count > len(written.recs):
                stale += [f"{written.task.ref.key}#{i}" for i in range(len(written.recs), previous.chunk_count)]
        if stale:
            self.store.delete_chunks(user, stale)
            self.keyword.delete_chunks(user, stale)
        for written in group:
            if (space := space_of(written.doc)) is not None:
                self._write_shared(space, written)
                continue
            previous = self.state.indexed(written.task.ref)
            self._record(written.task.ref, written.doc, len(written.recs), None)
            if previous is not None and previous.space is not None:  # it left a team folder for the user's own
                self.spaces.release(previous.space, written.task.ref)

    def _write_shared(self, space: str, written: Written) -> None:
        """A team folder's document into its space (unless a member's task wrote this version meanwhile),
        then the user's row; the user's own copy from before goes once the space holds it."""
        ref, doc = written.task.ref, written.doc
        with self.spaces.lock:
            held = self.state.space_doc(space, ref)
            if held is None or not held.holds(doc):
                if written.recs:
                    self.keyword.upsert(space, written.recs)
                    self.store.upsert(space, written.recs, written.vectors)
                if held is not None and held.chunk_count > len(written.recs):
                    shrunk = [f"{ref.key}#{i}" for i in range(len(written.recs), held.chunk_count)]
                    self.store.delete_chunks(space, shrunk)
                    self.keyword.delete_chunks(space, shrunk)
                self.state.record_space_doc(space, ref, SpaceDoc(doc.version, doc.location, doc.title,
                                                                 len(written.recs)))
            self._placed(ref, doc, space, self.state.indexed(ref))

    def _join_space(self, doc: SourceDocument, ref: DocRef, known: IndexedDoc | None) -> bool:
        """Record ``ref.user``'s row for a team folder's document its space holds at this version
        already (another member's task wrote it): nothing to chunk, embed or store. False otherwise."""
        space = space_of(doc)
        if space is None:
            return False
        with self.spaces.lock:
            held = self.state.space_doc(space, ref)
            if held is None or not held.holds(doc):
                return False
            self._placed(ref, doc, space, known)
        return True

    def _placed(self, ref: DocRef, doc: SourceDocument, space: str, previous: IndexedDoc | None) -> None:
        """The user's row for a document in ``space``; where its chunks were before for them goes."""
        held = self.state.space_doc(space, ref)
        self._record(ref, doc, held.chunk_count if held else 0, space)
        if previous is None or previous.space == space:
            return
        if previous.space is None:  # the user's own copy (from before spaces, or before it moved in)
            self.store.delete_doc(ref.user, ref.key)
            self.keyword.delete_doc(ref.user, ref.key)
        else:
            self.spaces.release(previous.space, ref)

    def _record(self, ref: DocRef, doc: SourceDocument, chunk_count: int, space: str | None) -> None:
        self.state.record_indexed(ref, doc.version, doc.location, doc.title, chunk_count, doc.modified, space)
        log.info("Indexed %s for %s: %d chunk(s)%s", ref.key, ref.user, chunk_count, f" in {space}" if space else "")
