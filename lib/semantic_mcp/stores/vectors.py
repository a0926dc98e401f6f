"""Chunk vectors in Chroma: one collection per user and embedding model.

One collection per user is the isolation boundary (a query can only ever see that user's
chunks, whatever its filter) and is also what makes search fast: measured with 50,000
384-d vectors, top-10 took 1.2-1.7 ms p50 in a per-user collection against 34-52 ms with a
``user_id`` filter on a shared one. The model id is part of the collection name, so
switching models starts new collections (a re-index) instead of mixing vector spaces.

Embeddings are always passed in: collections are opened with ``embedding_function=None``
because Chroma's default one downloads a model at run time.

Given ``texts`` (the keyword index's, as the app does), Chroma keeps vectors and metadata alone and
hits get their texts from there: Chroma keeps a text three times over, half its insert CPU and 83 %
of its disk (ADR 0566). Chunks written before keep the text Chroma has.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import chromadb
import numpy as np
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.errors import InternalError, NotFoundError

from . import chroma_local
from ..core.documents import ChunkRecord, MetadataValue, chunk_doc_key

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
Metadata = dict[str, MetadataValue]
Texts = Callable[[str, Sequence[str]], Mapping[str, str]]  # (user, chunk ids) -> the texts known, by id


def _settings() -> chromadb.Settings:
    """Fresh settings per client: Chroma's client constructors modify the object they are given."""
    return chromadb.Settings(anonymized_telemetry=False)


class DimensionMismatch(ValueError):
    """A collection holds vectors of another size or model than the one in use."""


@dataclass(frozen=True)
class Hit:
    """A chunk found by vector search; ``score`` is the cosine similarity (1 - cosine distance),
    in [-1, 1] and for e5 in practice within about [0.7, 0.95]."""

    chunk_id: str
    doc_key: str
    score: float
    text: str  # None only as read with ``read_texts`` False, not yet read (ADR 0567)
    metadata: Metadata


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40]


def _hash(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _guarded(method: F) -> F:
    """A public call of :class:`VectorStore`, made inside :meth:`VectorStore._using`."""

    @functools.wraps(method)
    def call(self: VectorStore, *args: Any, **kwargs: Any) -> Any:
        with self._using():
            return method(self, *args, **kwargs)

    return call  # type: ignore[return-value]


# What embedded Chroma holds in memory for a collection it has opened, fitted on two bench runs
# (bench/RESULTS-scale.md: 176 users with 353k chunks -> +1,162 MB; 338 users with 136k -> +1,171 MB):
# the vectors and graph, ~2 KB a chunk, and ~2.7 MB a collection whatever its size.
COLLECTION_BYTES = 2_700_000
CHUNK_BYTES = 2_000


class VectorStore:
    """Chroma, embedded (:meth:`embedded`) or a server (:meth:`remote`); synchronous, call it from a thread.

    Embedded Chroma keeps the HNSW index of every collection it has opened in memory (~3.3 KB a chunk)
    and, at this app's sizes, never lets one go: its own cache bound cannot be used, because an index it
    evicts comes back without its unsaved writes (docs/adr/0561). So the store bounds memory itself:
    once the collections opened since the client was made take more than ``memory_limit`` bytes by
    the estimate above, it closes the client (which frees every index) and opens a new one, which
    reloads each collection, its unsaved writes included, on its next use.
    """

    def __init__(self, client: ClientAPI, model_id: str, dim: int, reopen: Callable[[], ClientAPI] | None = None,
                 memory_limit: int = 0, in_process: bool = True, texts: Texts | None = None) -> None:
        self.client = client
        self.texts = texts
        self.in_process = in_process  # False for a Chroma server: a query then waits on another process
        self.model_id = model_id
        self.dim = dim
        self._collections: dict[str, Collection] = {}
        self._reopen, self._memory_limit = reopen, memory_limit
        self._held_bytes = 0  # estimated memory of the collections opened since the client was made
        self.reopened = 0
        self._gate = threading.Condition()
        self._busy = 0  # calls using the client now
        self._closing = False

    @classmethod
    def embedded(
        cls, path: str | os.PathLike[str], model_id: str, dim: int, *, memory_limit: int = 0, texts: Texts | None = None
    ) -> VectorStore:
        """``memory_limit``: reopen Chroma once the collections it has opened take more bytes than this
        (0: never; memory then grows with every user who searches until the process restarts)."""

        def connect() -> ClientAPI:
            return chromadb.PersistentClient(path=str(path), settings=_settings())

        client = connect()
        chroma_local.index_write_log(os.path.join(path, "chroma.sqlite3"))
        return cls(client, model_id, dim, reopen=connect, memory_limit=memory_limit, texts=texts)

    @contextmanager
    def _using(self) -> Iterator[None]:
        """Around each public call: the client is not closed under it, and one that holds too many
        chunks is replaced before it (once no call is using it)."""
        with self._gate:
            while self._closing:
                self._gate.wait()
            if self._reopen and self._memory_limit and self._held_bytes > self._memory_limit:
                self._closing = True
                while self._busy:
                    self._gate.wait()
                try:
                    self._replace_client()
                finally:
                    self._closing = False
                    self._gate.notify_all()
            self._busy += 1
        try:
            yield
        finally:
            with self._gate:
                self._busy -= 1
                self._gate.notify_all()

    def _replace_client(self) -> None:
        assert self._reopen is not None
        log.info("reopening embedded Chroma: its open collections take ~%d MB (limit %d MB)",
                 self._held_bytes // 10**6, self._memory_limit // 10**6)
        self._collections.clear()
        self.client.close()  # the last reference to Chroma's own client: its indexes are freed
        chroma_local.return_freed_memory()
        self.client = self._reopen()
        self._held_bytes = 0
        self.reopened += 1

    @classmethod
    def remote(cls, host: str, port: int, model_id: str, dim: int, ssl: bool = False,
               texts: Texts | None = None) -> VectorStore:
        return cls(chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=_settings()), model_id, dim,
                   in_process=False, texts=texts)

    # --- collections -------------------------------------------------------------------------

    @staticmethod
    def _user_prefix(user: str) -> str:
        return f"u{_hash(user, 32)}-"

    def collection_name(self, user: str) -> str:
        """``u<sha256(user)>-<model slug>-<sha256(model)>``: Chroma-safe whatever the user id,
        unique per (user, model) and recognisable per user for :meth:`delete_user`."""
        return f"{self._user_prefix(user)}{_slug(self.model_id)}-{_hash(self.model_id, 8)}"

    def _collection(self, user: str, create: bool) -> Collection | None:
        name = self.collection_name(user)
        if name in self._collections:
            return self._collections[name]
        if create:
            collection = self.client.get_or_create_collection(
                name,
                configuration={"hnsw": {"space": "cosine", **chroma_local.SAVE_INDEX}},
                metadata={"model_id": self.model_id, "dim": self.dim},
                embedding_function=None,
            )
        else:
            try:
                collection = self.client.get_collection(name, embedding_function=None)
            except NotFoundError:
                return None
        meta = collection.metadata or {}
        if meta.get("dim") != self.dim or meta.get("model_id") != self.model_id:
            raise DimensionMismatch(
                f"collection {name} holds {meta.get('model_id')} vectors of dimension {meta.get('dim')}, "
                f"but the embedder is {self.model_id} with dimension {self.dim}"
            )
        chroma_local.save_index_often(collection)
        self._collections[name] = collection
        if self._memory_limit:
            self._held(COLLECTION_BYTES + CHUNK_BYTES * collection.count())
        return collection

    def _held(self, size: int) -> None:
        """Count ``size`` bytes more in Chroma's memory (a collection opened, or chunks written)."""
        with self._gate:
            self._held_bytes += size

    # --- writing -----------------------------------------------------------------------------

    @_guarded
    def upsert(self, user: str, chunks: Sequence[ChunkRecord], embeddings: np.ndarray) -> None:
        """Insert or replace chunks by id (the caller removes chunks a shorter version no longer has)."""
        if len(chunks) != len(embeddings):
            raise ValueError(f"{len(chunks)} chunks but {len(embeddings)} embeddings")
        if not chunks:
            return
        vectors = np.asarray(embeddings, dtype=np.float32)
        if vectors.shape[1] != self.dim:
            raise DimensionMismatch(f"embeddings have dimension {vectors.shape[1]}, the store expects {self.dim}")
        collection = self._collection(user, create=True)
        assert collection is not None
        step = self.client.get_max_batch_size()
        for i in range(0, len(chunks), step):
            part = chunks[i : i + step]
            collection.upsert(
                ids=[c.chunk_id for c in part],
                embeddings=vectors[i : i + step],
                documents=None if self.texts else [c.text for c in part],
                metadatas=[{**c.metadata, "doc_key": c.doc_key} for c in part],
            )
        if self._memory_limit:
            self._held(CHUNK_BYTES * len(chunks))

    @_guarded
    def delete_doc(self, user: str, doc_key: str) -> None:
        """Remove every chunk of one document."""
        if collection := self._collection(user, create=False):
            collection.delete(where={"doc_key": doc_key})

    @_guarded
    def delete_chunks(self, user: str, chunk_ids: Sequence[str]) -> None:
        if chunk_ids and (collection := self._collection(user, create=False)):
            collection.delete(ids=list(chunk_ids))

    @_guarded
    def delete_user(self, user: str) -> None:
        """Drop the user's collections for every model, not just the current one."""
        prefix = self._user_prefix(user)
        for collection in self.client.list_collections():
            if collection.name.startswith(prefix):
                self.client.delete_collection(collection.name)
                self._collections.pop(collection.name, None)

    # --- reading -----------------------------------------------------------------------------

    @_guarded
    def query(
        self, user: str, embedding: np.ndarray, k: int, *, among: Sequence[str] | None = None,
        read_texts: bool = True, ids_only: bool = False,
    ) -> list[Hit]:
        """The ``k`` nearest chunks of ``user``, best first; only chunks among ``among`` when given.

        Filters are applied by restricting to chunk ids (which the keyword index selects with
        SQL), not with a Chroma ``where``: at 100k chunks a metadata ``where`` cost 100-700 ms
        whatever its selectivity, a restriction to ids 35-55 ms (see bench/RESULTS-search.md).

        ``read_texts`` False: the hits carry what Chroma kept (None since ADR 0566), for a caller
        that keeps a few of many and reads their texts with :meth:`texts_of` (the search, ADR 0567).
        ``ids_only``: nor their metadata (empty, the doc key from the chunk id): Chroma's query with
        its hits' metadata took twice as long at a million chunks (ADR 0568); no texts either.
        """
        collection = self._collection(user, create=False)
        if collection is None or k <= 0 or (among is not None and not among):
            return []
        return self._query(user, collection, embedding, k, among, read_texts and not ids_only, ids_only)

    def _query(self, user: str, collection: Collection, embedding: np.ndarray, k: int,
               among: Sequence[str] | None = None, read_texts: bool = True, ids_only: bool = False) -> list[Hit]:
        try:
            result = chroma_local.query_index(
                collection,
                query_embeddings=[np.asarray(embedding, dtype=np.float32)],
                n_results=k,
                ids=list(among) if among is not None else None,
                include=["distances"] if ids_only else ["documents", "metadatas", "distances"],
            )
        except InternalError as exc:
            if among is None or "finding id" not in str(exc):
                raise
            # An id the collection lacks (the keyword index a step behind Chroma, which an
            # interrupted delete can leave until reconciliation) fails the whole restricted query:
            # search unrestricted, deep enough, and keep the hits among the ids.
            wanted = set(among)
            fetch = min(10 * k, max(k, k * collection.count() // max(1, len(wanted)) * 2))
            hits = self._query(user, collection, embedding, fetch, read_texts=read_texts, ids_only=ids_only)
            return [hit for hit in hits if hit.chunk_id in wanted][:k]
        ids = result["ids"][0]
        if ids_only:
            return [Hit(chunk_id, chunk_doc_key(chunk_id), 1.0 - float(distance), None, {})  # type: ignore[arg-type]
                    for chunk_id, distance in zip(ids, result["distances"][0], strict=True)]
        texts = self._texts(user, ids, result["documents"][0], read_texts)
        return [
            Hit(chunk_id, str(meta["doc_key"]), 1.0 - float(distance), text, dict(meta))
            for chunk_id, text, meta, distance in zip(ids, texts, result["metadatas"][0], result["distances"][0],
                                                      strict=True)
            if text is not None or not read_texts
        ]

    def texts_of(self, user: str, ids: Sequence[str], documents: Sequence[str | None]) -> list[str | None]:
        """The chunks' texts: the keyword index's, else the one Chroma kept for a chunk written before
        ADR 0566 (``documents``, as a read with ``read_texts`` False returned it); None for a chunk whose
        text is not written yet (its two writes run side by side): not to be served."""
        known = self.texts(user, ids) if self.texts and ids else {}
        return [known.get(chunk_id, document) for chunk_id, document in zip(ids, documents, strict=True)]

    def _texts(self, user: str, ids: Sequence[str], documents: Sequence[str | None],
               read_texts: bool) -> list[str | None]:
        return self.texts_of(user, ids, documents) if read_texts else list(documents)

    @_guarded
    def rank_among(self, user: str, embedding: np.ndarray, chunk_ids: Sequence[str], k: int,
                   read_texts: bool = True) -> list[Hit]:
        """Like :meth:`query` restricted to ``chunk_ids``, by exact cosine over their stored vectors:
        faster for a few hundred chunks, where an HNSW search that may visit only those few
        wanders through most of the graph (130 ms for 100 of 100k chunks)."""
        collection = self._collection(user, create=False)
        if collection is None or k <= 0 or not chunk_ids:
            return []
        result = chroma_local.get_by_ids(collection, chunk_ids, ["embeddings", "documents", "metadatas"])
        if not result["ids"]:
            return []
        vectors = np.asarray(result["embeddings"], dtype=np.float32)
        query = np.asarray(embedding, dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1) * (np.linalg.norm(query) or 1.0)
        cosine = vectors @ query / np.where(norms > 0, norms, 1.0)
        best = np.argsort(-cosine, kind="stable")[:k]
        texts = self._texts(user, [result["ids"][i] for i in best], [result["documents"][i] for i in best], read_texts)
        return [
            Hit(result["ids"][i], str(result["metadatas"][i]["doc_key"]), float(cosine[i]), text,
                dict(result["metadatas"][i]))
            for i, text in zip(best, texts, strict=True)
            if text is not None or not read_texts
        ]

    @_guarded
    def get_chunks(self, user: str, chunk_ids: Sequence[str], read_texts: bool = True) -> list[ChunkRecord]:
        """The stored chunks among ``chunk_ids``, in the order asked (missing ones left out);
        ``read_texts`` as in :meth:`query`."""
        collection = self._collection(user, create=False)
        if collection is None or not chunk_ids:
            return []
        result = chroma_local.get_by_ids(collection, chunk_ids, ["documents", "metadatas"])
        texts = self._texts(user, result["ids"], result["documents"], read_texts)
        found = {
            chunk_id: ChunkRecord(chunk_id, str(meta["doc_key"]), text, dict(meta))
            for chunk_id, text, meta in zip(result["ids"], texts, result["metadatas"], strict=True)
            if text is not None or not read_texts
        }
        return [found[i] for i in chunk_ids if i in found]

    @_guarded
    def embeddings(self, user: str, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of the chunks among ``chunk_ids`` that exist, by chunk id."""
        collection = self._collection(user, create=False)
        if collection is None or not chunk_ids:
            return {}
        result = chroma_local.get_by_ids(collection, chunk_ids, ["embeddings"])
        return {
            chunk_id: np.asarray(vector, dtype=np.float32)
            for chunk_id, vector in zip(result["ids"], result["embeddings"], strict=True)
        }

    @_guarded
    def count(self, user: str) -> int:
        """Chunks stored for ``user``."""
        collection = self._collection(user, create=False)
        return collection.count() if collection else 0
