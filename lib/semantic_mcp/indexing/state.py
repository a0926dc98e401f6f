"""Durable indexing state in one SQLite file: the work queue (``queue.py``), what is indexed, cursors,
dead letters, users' choices and team folders.

Why SQLite: every write is a committed transaction, so a crash or ``kill -9`` loses nothing
that was acknowledged, and restart picks up exactly where the last commit left off.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.documents import DocRef, DocType
from ..stores.migrations import add_column, is_new, migrate, run_sql
from .queue import CATCHING_UP, OCR, ONE_DOC, TaskQueue, doc_key, row_ref
from .shared_spaces import MIGRATION as SHARED_SPACES, SPACE_DOCS_SCHEMA, SpaceRecords
from .team_folder_records import TEAM_FOLDERS_SCHEMA, TeamFolderRecords
from .turns import Turns
from .user_records import UserRecords

_SCHEMA = """
PRAGMA journal_mode=WAL;
PRAGMA synchronous=NORMAL;
CREATE TABLE IF NOT EXISTS tasks (
    user TEXT NOT NULL, doc_type TEXT NOT NULL, source_id TEXT NOT NULL,
    action TEXT NOT NULL,
    payload TEXT,                -- JSON hint from the event (e.g. the iCalendar text), may be NULL
    generation INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    not_before REAL NOT NULL DEFAULT 0,
    running INTEGER NOT NULL DEFAULT 0,
    enqueued_at REAL NOT NULL,
    last_error TEXT,
    priority INTEGER NOT NULL DEFAULT 1,  -- 0: a change a user just made (an event); 1: catching up; 2: OCR
    PRIMARY KEY (user, doc_type, source_id)
);
CREATE INDEX IF NOT EXISTS tasks_ready ON tasks (running, not_before);
CREATE TABLE IF NOT EXISTS documents (
    user TEXT NOT NULL, doc_type TEXT NOT NULL, source_id TEXT NOT NULL,
    version TEXT NOT NULL, location TEXT NOT NULL DEFAULT '', title TEXT NOT NULL DEFAULT '',
    chunk_count INTEGER NOT NULL, modified INTEGER NOT NULL DEFAULT 0, indexed_at REAL NOT NULL,
    PRIMARY KEY (user, doc_type, source_id)
);
CREATE INDEX IF NOT EXISTS documents_location ON documents (user, location);
CREATE INDEX IF NOT EXISTS documents_source ON documents (doc_type, source_id);
CREATE TABLE IF NOT EXISTS skipped (
    user TEXT NOT NULL, doc_type TEXT NOT NULL, source_id TEXT NOT NULL,
    version TEXT NOT NULL, reason TEXT NOT NULL, at REAL NOT NULL,
    location TEXT NOT NULL DEFAULT '',  -- a file's path: deleting it (or its folder) there forgets it
    PRIMARY KEY (user, doc_type, source_id)
);
CREATE TABLE IF NOT EXISTS dead_letters (
    user TEXT NOT NULL, doc_type TEXT NOT NULL, source_id TEXT NOT NULL,
    reason TEXT NOT NULL, attempts INTEGER NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (user, doc_type, source_id)
);
CREATE TABLE IF NOT EXISTS refused (  -- dead letters the document caused itself (ADR 0510): not retried
    user TEXT NOT NULL, doc_type TEXT NOT NULL, source_id TEXT NOT NULL,
    version TEXT,                -- as far as known: a new version is tried again
    PRIMARY KEY (user, doc_type, source_id)
);
CREATE TABLE IF NOT EXISTS cursors (
    user TEXT NOT NULL, doc_type TEXT NOT NULL, cursor TEXT,
    last_reconcile REAL, last_full REAL,
    PRIMARY KEY (user, doc_type)
);
CREATE TABLE IF NOT EXISTS users (
    user TEXT PRIMARY KEY,
    enabled INTEGER,             -- the user's own choice; NULL when they never chose (admin default applies)
    changed_at REAL NOT NULL,
    last_event REAL,
    account_id TEXT              -- the account's identity when last seen (accounts.py): a new one means a new person
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
""" + TEAM_FOLDERS_SCHEMA + SPACE_DOCS_SCHEMA

# The layouts since the first, in order (stores/migrations.py); append, never change or reorder.
_MIGRATIONS = (
    add_column("users", "account_id", "TEXT"),  # the account's identity (accounts.py)
    add_column("tasks", "priority", "INTEGER NOT NULL DEFAULT 1"),  # lanes and turns (ADR 0015)
    run_sql("tasks_turns index and no folders counted as skipped files", """
        CREATE INDEX IF NOT EXISTS tasks_turns ON tasks (priority, running, user, enqueued_at, not_before);
        DELETE FROM skipped WHERE reason = 'folder'"""),  # the index covers claim()'s queries
    add_column("skipped", "location", "TEXT NOT NULL DEFAULT ''"),  # rows from before: forgotten at a full pass
    add_column("documents", "space", "TEXT"),  # where a document's chunks are: NULL, the user's own (ADR 0352)
    SHARED_SPACES,
)


@dataclass
class IndexedDoc:
    ref: DocRef
    version: str
    location: str
    title: str
    chunk_count: int
    space: str | None = None  # the shared space its chunks are in; None: the user's own collection



class IndexState(TaskQueue, UserRecords, TeamFolderRecords, SpaceRecords):
    """All durable indexing state. Thread-safe: the pipeline calls it from worker threads too."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._turns = {CATCHING_UP: Turns(CATCHING_UP), OCR: Turns(OCR)}
        new = is_new(self._db)
        self._db.executescript(_SCHEMA)
        migrate(self._db, _MIGRATIONS, name="index state", new=new)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _rows(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # --- what is indexed ----------------------------------------------------------------------

    def indexed(self, ref: DocRef) -> IndexedDoc | None:
        rows = self._rows(f"SELECT * FROM documents WHERE {ONE_DOC}", *doc_key(ref))
        return _indexed(rows[0]) if rows else None

    def indexed_versions(self, user: str, doc_type: DocType) -> dict[str, str]:
        rows = self._rows("SELECT source_id, version FROM documents WHERE user = ? AND doc_type = ?", user, doc_type)
        return {row["source_id"]: row["version"] for row in rows}

    def indexed_locations(self, user: str, doc_type: DocType) -> dict[str, str]:
        rows = self._rows("SELECT source_id, location FROM documents WHERE user = ? AND doc_type = ?", user, doc_type)
        return {row["source_id"]: row["location"] for row in rows}

    def skipped_versions(self, user: str, doc_type: DocType) -> dict[str, str]:
        rows = self._rows("SELECT source_id, version FROM skipped WHERE user = ? AND doc_type = ?", user, doc_type)
        return {row["source_id"]: row["version"] for row in rows}

    def queued(self, user: str, doc_type: DocType) -> set[str]:
        return {row[0] for row in self._rows("SELECT source_id FROM tasks WHERE user = ? AND doc_type = ?", user, doc_type)}

    def refused_versions(self, user: str, doc_type: DocType) -> dict[str, str]:
        """Documents dead-lettered by their own fault, with the version that failed ("" if unknown)."""
        rows = self._rows("SELECT source_id, version FROM refused WHERE user = ? AND doc_type = ?", user, doc_type)
        return {row["source_id"]: row["version"] or "" for row in rows}

    def holders(self, doc_type: DocType, source_id: str) -> list[str]:
        """Users who have this document indexed (a shared file is in several users' indexes)."""
        rows = self._rows("SELECT user FROM documents WHERE doc_type = ? AND source_id = ?", doc_type, source_id)
        return [row["user"] for row in rows]

    def under_location(self, user: str, location: str) -> list[IndexedDoc]:
        """Indexed documents at ``location`` or below it (files and notes, by user-relative path)."""
        prefix = location.rstrip("/") + "/"
        rows = self._rows(
            "SELECT * FROM documents WHERE user = ? AND (location = ? OR substr(location, 1, ?) = ?)",
            user, location, len(prefix), prefix,
        )
        return [_indexed(row) for row in rows]

    def skipped_under(self, user: str, location: str) -> list[DocRef]:
        """Documents skipped at ``location`` or below it: a deleted file or folder's, which no longer
        count once their delete is confirmed (a delete event names no id for them)."""
        prefix = location.rstrip("/") + "/"
        rows = self._rows(
            "SELECT * FROM skipped WHERE user = ? AND location != '' AND (location = ? OR substr(location, 1, ?) = ?)",
            user, location, len(prefix), prefix,
        )
        return [row_ref(row) for row in rows]

    def record_indexed(self, ref: DocRef, version: str, location: str, title: str, chunk_count: int, modified: int,
                       space: str | None = None) -> None:
        with self._tx() as db:
            db.execute(
                """INSERT OR REPLACE INTO documents
                   (user, doc_type, source_id, version, location, title, chunk_count, modified, indexed_at, space)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (*doc_key(ref), version, location, title, chunk_count, modified, time.time(), space),
            )
            db.execute(f"DELETE FROM skipped WHERE {ONE_DOC}", doc_key(ref))

    def record_skipped(self, ref: DocRef, version: str, reason: str, location: str = "") -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO skipped (user, doc_type, source_id, version, reason, at, location)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*doc_key(ref), version, reason, time.time(), location),
            )

    def forget(self, ref: DocRef) -> None:
        with self._tx() as db:
            for table in ("documents", "skipped"):
                db.execute(f"DELETE FROM {table} WHERE {ONE_DOC}", doc_key(ref))

    def forget_skipped(self) -> None:
        """Forget every decision not to index: the rules behind them changed (admin settings), so the
        next full pass lists and decides again instead of trusting an unchanged version."""
        with self._tx() as db:
            db.execute("DELETE FROM skipped")

    def forget_everything_indexed(self) -> None:
        """For a new embedding model: forget what is indexed and every cursor (not who opted in)."""
        with self._tx() as db:
            for table in ("documents", "skipped", "cursors", "space_docs"):
                db.execute(f"DELETE FROM {table}")

    # --- cursors, status and meta ------------------------------------------------------------

    def has_cursors(self) -> bool:
        """Whether anything was ever listed (an app restarted, rather than installed anew)."""
        return bool(self._rows("SELECT 1 FROM cursors WHERE cursor IS NOT NULL LIMIT 1"))

    def cursor(self, user: str, doc_type: DocType) -> tuple[str | None, float | None]:
        rows = self._rows("SELECT cursor, last_full FROM cursors WHERE user = ? AND doc_type = ?", user, doc_type)
        return (rows[0]["cursor"], rows[0]["last_full"]) if rows else (None, None)

    def save_cursor(self, user: str, doc_type: DocType, cursor: str | None, *, full: bool) -> None:
        now = time.time()
        with self._tx() as db:
            db.execute(
                """INSERT INTO cursors (user, doc_type, cursor, last_reconcile, last_full) VALUES (?, ?, ?, ?, ?)
                   ON CONFLICT (user, doc_type) DO UPDATE SET cursor = excluded.cursor,
                     last_reconcile = excluded.last_reconcile,
                     last_full = COALESCE(excluded.last_full, cursors.last_full)""",
                (user, doc_type, cursor, now, now if full else None),
            )

    def status(self, user: str) -> dict[str, Any]:
        """Per-source counts and times for the status tool."""
        per_type: dict[str, dict[str, Any]] = {}

        def bump(table: str, key: str, where: str = "") -> None:
            for row in self._rows(
                    f"SELECT doc_type, COUNT(*) AS n FROM {table} WHERE user = ? {where} GROUP BY doc_type", user):
                per_type.setdefault(row["doc_type"], {})[key] = row["n"]

        bump("documents", "indexed")
        bump("tasks", "pending")
        bump("tasks", "waiting_for_ocr", f"AND priority = {OCR}")  # part of pending
        bump("dead_letters", "failed")
        bump("skipped", "skipped")
        for row in self._rows("SELECT doc_type, last_reconcile FROM cursors WHERE user = ?", user):
            per_type.setdefault(row["doc_type"], {})["last_reconciliation"] = row["last_reconcile"]
        users = self._rows("SELECT last_event FROM users WHERE user = ?", user)
        latest = "WHERE user = ? ORDER BY at DESC LIMIT 20"
        dead = self._rows(f"SELECT doc_type, source_id, reason, attempts, at FROM dead_letters {latest}", user)
        skipped = self._rows(f"SELECT doc_type, source_id, reason FROM skipped {latest}", user)
        return {
            "per_type": per_type,
            "last_event": users[0]["last_event"] if users else None,
            "dead_letters": [dict(row) for row in dead],
            "skipped": [dict(row) for row in skipped],
        }

    def get_meta(self, key: str) -> str | None:
        rows = self._rows("SELECT value FROM meta WHERE key = ?", key)
        return rows[0]["value"] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


def _indexed(row: sqlite3.Row) -> IndexedDoc:
    return IndexedDoc(row_ref(row), row["version"], row["location"], row["title"], row["chunk_count"], row["space"])
