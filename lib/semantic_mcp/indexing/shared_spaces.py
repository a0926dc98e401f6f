"""Shared content stored once (ADR 0352): a team folder's documents live in a space of their own.

A space is a collection and keyword tables keyed by a pseudo-user, ``team-folder:<id>``, that no
account can have (Nextcloud user ids never hold a ``:``), so the vector store, the keyword index,
their memory bound and deletion by "user" work on it unchanged. Who may see each document stays
where it always was: in the member's own ``documents`` row, which now names the space its chunks are
in (``space``; NULL for the member's own collection). ``space_docs`` says what each space holds.

Each member's task still fetches the file *as that member* (ADR 0350): found readable, it records
their row, and the chunks are written only when the space does not hold that version at that place
yet; not found, the row goes, and the document leaves the space with its last row. The rows are a
pre-filter for searches, never the authority: every hit is still re-checked as the caller.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Collection
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from ..core.documents import DocRef, SourceDocument
from ..stores.keyword import KeywordIndex
from ..stores.migrations import Step, run_sql
from ..stores.vectors import VectorStore

log = logging.getLogger(__name__)

SPACE_PREFIX = "team-folder:"

SPACE_DOCS_SCHEMA = """
CREATE TABLE IF NOT EXISTS space_docs (  -- what each shared space holds (ADR 0352)
    space TEXT NOT NULL, doc_type TEXT NOT NULL, source_id TEXT NOT NULL,
    version TEXT NOT NULL, location TEXT NOT NULL, title TEXT NOT NULL, chunk_count INTEGER NOT NULL,
    PRIMARY KEY (space, doc_type, source_id)
);
"""

# The index state's migration to shared spaces: the rows say where their chunks are, and every member's
# copy of a team folder's file is queued once, so the space takes it and the copy is removed then
# (never before: the member keeps finding it meanwhile).
MIGRATION: Step = run_sql("documents.space, and members' copies of team-folder files queued for their space", """
    CREATE INDEX IF NOT EXISTS documents_space ON documents (space, doc_type, source_id);
    CREATE INDEX IF NOT EXISTS documents_user_space ON documents (user, space);
    INSERT OR IGNORE INTO tasks (user, doc_type, source_id, action, enqueued_at, priority)
        SELECT d.user, d.doc_type, d.source_id, 'upsert', CAST(strftime('%s', 'now') AS REAL), 1 FROM documents d
        WHERE d.doc_type = 'file' AND d.space IS NULL AND EXISTS (
            SELECT 1 FROM team_folders t WHERE t.user = d.user AND (d.location = t.mount_point
                OR substr(d.location, 1, length(t.mount_point) + 1) = t.mount_point || '/'))""")


def space_of(doc: SourceDocument) -> str | None:
    """The shared space ``doc`` is stored in, or None for its reader's own collection."""
    folder = doc.extra.get("team_folder")
    return f"{SPACE_PREFIX}{folder}" if folder else None


def team_folder_of(space: str | None) -> str:
    """The team folder id of a space (:func:`space_of`'s inverse), "" for the reader's own collection."""
    return space.removeprefix(SPACE_PREFIX) if space else ""


@dataclass(frozen=True)
class SpaceDoc:
    version: str
    location: str
    title: str
    chunk_count: int

    def holds(self, doc: SourceDocument) -> bool:
        """Whether these chunks are ``doc``'s as fetched (same version, at the same place, same title)."""
        return (self.version, self.location, self.title) == (doc.version, doc.location, doc.title)


class SpaceRecords:
    """Part of :class:`~.state.IndexState`, on its connection."""

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]: ...  # provided by IndexState

    def _rows(self, sql: str, *args: Any) -> list[sqlite3.Row]: ...  # provided by IndexState

    def space_doc(self, space: str, ref: DocRef) -> SpaceDoc | None:
        rows = self._rows("SELECT version, location, title, chunk_count FROM space_docs"
                          " WHERE space = ? AND doc_type = ? AND source_id = ?", space, ref.doc_type, ref.source_id)
        return SpaceDoc(*rows[0]) if rows else None

    def record_space_doc(self, space: str, ref: DocRef, held: SpaceDoc) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO space_docs VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (space, ref.doc_type, ref.source_id, held.version, held.location, held.title, held.chunk_count))

    def forget_space_doc(self, space: str, ref: DocRef) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM space_docs WHERE space = ? AND doc_type = ? AND source_id = ?",
                       (space, ref.doc_type, ref.source_id))

    def space_readers(self, space: str, ref: DocRef) -> int:
        """How many users have a row for this document of the space."""
        return self._rows("SELECT COUNT(*) FROM documents WHERE space = ? AND doc_type = ? AND source_id = ?",
                          space, ref.doc_type, ref.source_id)[0][0]

    def user_spaces(self, user: str) -> dict[str, tuple[int, int]]:
        """The spaces ``user`` has rows in: space -> (how many documents they may be served there, how many
        the space holds). A search asks these besides the user's own collection."""
        mine = self._rows("SELECT space, COUNT(*) FROM documents WHERE user = ? AND space IS NOT NULL GROUP BY space",
                          user)
        return {space: (count, self._rows("SELECT COUNT(*) FROM space_docs WHERE space = ?", space)[0][0])
                for space, count in mine}

    def readable_in(self, user: str, space: str, doc_keys: Collection[str]) -> set[str]:
        """Those of ``doc_keys`` (``doc_type:source_id``) ``user`` has a row for in ``space``."""
        pairs = [key.partition(":")[::2] for key in doc_keys]
        if not pairs:
            return set()
        values = ", ".join("(?, ?)" for _ in pairs)
        rows = self._rows(f"SELECT doc_type, source_id FROM documents WHERE user = ? AND space = ? AND"
                          f" (doc_type, source_id) IN (VALUES {values})", user, space, *(v for p in pairs for v in p))
        return {f"{row[0]}:{row[1]}" for row in rows}

    def orphaned_space_docs(self) -> list[tuple[str, DocRef]]:
        """Documents a space holds that no user has a row for any more (their last reader purged)."""
        rows = self._rows("""SELECT s.space, s.doc_type, s.source_id FROM space_docs s WHERE NOT EXISTS (
                                 SELECT 1 FROM documents d WHERE d.space = s.space AND d.doc_type = s.doc_type
                                 AND d.source_id = s.source_id)""")
        return [(row["space"], DocRef(row["space"], row["doc_type"], row["source_id"])) for row in rows]

    def space_is_empty(self, space: str) -> bool:
        return not self._rows("SELECT 1 FROM space_docs WHERE space = ? LIMIT 1", space)


class SharedSpaces:
    """The store side of the spaces: a document leaves its space with its last reader's row, and a
    space left with nothing is dropped (a folder deleted leaves nothing behind)."""

    def __init__(self, state: Any, store: VectorStore, keyword: KeywordIndex) -> None:
        self.state, self.store, self.keyword = state, store, keyword
        # Held while a space's document is written and its row recorded, and while a last row's release
        # drops it: a release must never drop chunks a member is just recording a row for.
        self.lock = threading.RLock()

    def release_row(self, space: str, ref: DocRef) -> None:
        """Forget ``ref.user``'s row, and the document from the space with the last row."""
        with self.lock:
            self.state.forget(ref)
            self.release(space, ref)

    def release(self, space: str, ref: DocRef) -> None:
        """``ref.user``'s row has gone: drop the document from the space if nobody else has one."""
        with self.lock:
            if not self.state.space_readers(space, ref):
                self._drop(space, ref)

    def _drop(self, space: str, ref: DocRef) -> None:
        self.store.delete_doc(space, ref.key)
        self.keyword.delete_doc(space, ref.key)
        self.state.forget_space_doc(space, ref)
        log.info("%s left %s: its last reader's row went", ref.key, space)
        if self.state.space_is_empty(space):
            self.store.delete_user(space)
            self.keyword.delete_user(space)

    def sweep(self) -> int:
        """Release what users purged or switched off left without a reader; returns how many."""
        orphans = self.state.orphaned_space_docs()
        for space, ref in orphans:
            self.release(space, ref)
        return len(orphans)
