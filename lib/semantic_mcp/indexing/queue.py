"""The work queue in the index state: what is waiting to be indexed or removed, and who goes next.

The queue coalesces: one row per (user, doc_type, source_id). A burst of events for one document
(a note save fires Created + Written + Written) becomes one task; a newer event bumps the row's
``generation`` so a worker that was mid-way through an older version does not drop the newer one.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal

from ..core.documents import DocRef
from .turns import Turns

Action = Literal["upsert", "delete"]

# A task's priority: its lane and place in it (ADR 0015, ADR 0601).
URGENT, CATCHING_UP, OCR = 0, 1, 2  # a change a user just made; catching up; a file waiting for OCR
OCR_PAYLOAD = {"ocr": True}  # what an OCR-lane task carries, so that its source reads the images


@dataclass
class Task:
    ref: DocRef
    action: Action
    payload: dict[str, Any] | None
    generation: int
    attempts: int


class TaskQueue:
    """Part of :class:`~.state.IndexState`, on its connection."""

    _turns: dict[int, Turns]  # provided by IndexState

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]: ...  # provided by IndexState

    def _rows(self, sql: str, *args: Any) -> list[sqlite3.Row]: ...  # provided by IndexState

    def enqueue(
        self, refs: Iterable[DocRef], action: Action, payload: dict[str, Any] | None = None, *, urgent: bool = False,
        payloads: Mapping[DocRef, dict[str, Any]] | None = None,
    ) -> int:
        """Queue work; a pending task for the same document is replaced (the newest event wins).
        ``urgent``: a change a user just made (an event), served before any catching up.
        ``payloads``: a payload of each document's own, in place of ``payload``."""
        now, refs = time.time(), list(refs)
        with self._tx() as db:
            for ref in refs:
                db.execute(
                    """INSERT INTO tasks (user, doc_type, source_id, action, payload, enqueued_at, priority)
                       VALUES (?, ?, ?, ?, ?, ?, ?)
                       ON CONFLICT (user, doc_type, source_id) DO UPDATE SET
                         action = excluded.action, payload = excluded.payload,
                         generation = tasks.generation + 1, attempts = 0, not_before = 0,
                         last_error = NULL, priority = MIN(tasks.priority, excluded.priority)""",
                    (*doc_key(ref), action, _json((payloads or {}).get(ref, payload)), now,
                     URGENT if urgent else CATCHING_UP),
                )
        return len(refs)

    def claim(self, limit: int, lane: str = "main") -> list[Task]:
        """Take up to ``limit`` ready tasks and mark them running: the changes users just made
        first, then the catching up, users taking turns (each user's oldest task, then each
        user's second…), so a user with 50,000 items to index holds nobody else up. The ``"ocr"``
        lane takes only the files waiting for OCR, users taking turns as well (ADR 0601).

        The attempt is counted here, before the work: a task that hangs the worker or kills the
        process (out of memory, ``kill -9``) has spent it when :meth:`recover` finds it running.
        """
        now = time.time()
        with self._tx() as db:
            if lane == "ocr":
                rows = self._turns[OCR].take(db, now, limit)
            else:
                rows = db.execute(
                    "SELECT * FROM tasks INDEXED BY tasks_turns WHERE priority = 0 AND running = 0 AND not_before <= ?"
                    " ORDER BY enqueued_at LIMIT ?",
                    (now, limit),
                ).fetchall()
            if len(rows) < limit and lane != "ocr":
                rows += self._turns[CATCHING_UP].take(db, now, limit - len(rows))
            for row in rows:
                db.execute(f"UPDATE tasks SET running = 1, attempts = attempts + 1 WHERE {ONE_DOC}", doc_key(row))
        return [
            Task(row_ref(row), row["action"], json.loads(row["payload"]) if row["payload"] else None,
                 row["generation"], row["attempts"] + 1)
            for row in rows
        ]

    def complete(self, task: Task) -> None:
        """Drop a finished task unless a newer event arrived for the document meanwhile."""
        key = doc_key(task.ref)
        with self._tx() as db:
            db.execute(f"DELETE FROM tasks WHERE {ONE_DOC} AND generation = ?", (*key, task.generation))
            db.execute(f"UPDATE tasks SET running = 0 WHERE {ONE_DOC}", key)
            for table in ("dead_letters", "refused"):
                db.execute(f"DELETE FROM {table} WHERE {ONE_DOC}", key)

    def retry_later(
        self, task: Task, error: str, *, max_attempts: int, backoff: float, refused: str | None = None
    ) -> bool:
        """Record a failure of the attempt :meth:`claim` counted; True when the task was dead-lettered.
        ``refused`` is the version of a document that failed by its own fault (a parser's bound)."""
        ref = task.ref
        with self._tx() as db:
            if task.attempts >= max_attempts:
                db.execute(f"DELETE FROM tasks WHERE {ONE_DOC} AND generation = ?", (*doc_key(ref), task.generation))
                _dead_letter(db, ref, error, task.attempts, refused)
            db.execute(
                f"UPDATE tasks SET last_error = ?, not_before = ? WHERE {ONE_DOC} AND generation = ?",
                (error, time.time() + backoff * 2 ** (task.attempts - 1), *doc_key(ref), task.generation),
            )
            db.execute(f"UPDATE tasks SET running = 0 WHERE {ONE_DOC}", doc_key(ref))
        return task.attempts >= max_attempts

    def to_ocr_lane(self, task: Task) -> None:
        """Hand a claimed file whose text is in images to the OCR lane, the attempt not spent; a
        newer event for it meanwhile wins (its task is tried again, and comes back here if need be)."""
        with self._tx() as db:
            db.execute(
                f"UPDATE tasks SET priority = {OCR}, payload = ?, attempts = MAX(attempts - 1, 0)"
                f" WHERE {ONE_DOC} AND generation = ?", (json.dumps(OCR_PAYLOAD), *doc_key(task.ref), task.generation))
            db.execute(f"UPDATE tasks SET running = 0 WHERE {ONE_DOC}", doc_key(task.ref))

    def release(self, task: Task) -> None:
        """Give a claimed task back: Nextcloud could not be asked, so the attempt is not spent."""
        with self._tx() as db:
            db.execute(f"UPDATE tasks SET running = 0, attempts = MAX(attempts - 1, 0) WHERE {ONE_DOC}", doc_key(task.ref))

    def requeue_dead_letters(self) -> int:
        """Queue every dead-lettered document again with a fresh budget (an upsert: the worker
        confirms with Nextcloud, so one that is gone is removed instead). Its dead letter stays
        until it succeeds or fails again. Not those that failed by their own fault (refused)."""
        with self._tx() as db:
            rows = db.execute(f"SELECT * FROM dead_letters d WHERE NOT EXISTS (SELECT 1 FROM refused r WHERE {_JOIN})")
            rows = rows.fetchall()
        return self.enqueue(map(row_ref, rows), "upsert")

    def recover(self, max_attempts: int) -> int:
        """After a restart nothing is running: give interrupted tasks back to the queue, and
        dead-letter those that were running when the app stopped ``max_attempts`` times, so a
        document that crashes or hangs the app cannot do it again after every restart."""
        with self._tx() as db:
            for row in db.execute("SELECT * FROM tasks WHERE running = 1 AND attempts >= ?", (max_attempts,)).fetchall():
                db.execute(f"DELETE FROM tasks WHERE {ONE_DOC}", doc_key(row))
                reason = f"the app stopped while indexing it, {row['attempts']} times (crashed, killed or hung)"
                _dead_letter(db, row_ref(row), reason, row["attempts"], refused="")
            return db.execute(
                "UPDATE tasks SET running = 0, last_error = 'interrupted: the app stopped while indexing it' "
                "WHERE running = 1"
            ).rowcount

    def pending_count(self, user: str | None = None) -> int:
        where, args = ("", ()) if user is None else ("WHERE user = ?", (user,))
        return self._rows(f"SELECT COUNT(*) FROM tasks {where}", *args)[0][0]

    def next_ready_in(self, lane: str = "main") -> float | None:
        """Seconds until the lane's next task becomes ready (0 if one is ready now), None if it has none."""
        lanes = f"priority = {OCR}" if lane == "ocr" else f"priority < {OCR}"
        row = self._rows(f"SELECT MIN(not_before) FROM tasks WHERE running = 0 AND {lanes}")[0][0]
        return None if row is None else max(0.0, row - time.time())


def _json(payload: dict[str, Any] | None) -> str | None:
    return json.dumps(payload) if payload else None


ONE_DOC = "user = ? AND doc_type = ? AND source_id = ?"  # one document's row, with doc_key's values


def doc_key(item: DocRef | sqlite3.Row) -> tuple[str, str, str]:
    if isinstance(item, DocRef):
        return (item.user, item.doc_type, item.source_id)
    return (item["user"], item["doc_type"], item["source_id"])


def row_ref(row: sqlite3.Row) -> DocRef:
    return DocRef(row["user"], row["doc_type"], row["source_id"])


_JOIN = "r.user = d.user AND r.doc_type = d.doc_type AND r.source_id = d.source_id"


def _dead_letter(db: sqlite3.Connection, ref: DocRef, reason: str, attempts: int, refused: str | None = None) -> None:
    db.execute(
        "INSERT OR REPLACE INTO dead_letters (user, doc_type, source_id, reason, attempts, at) VALUES (?, ?, ?, ?, ?, ?)",
        (*doc_key(ref), reason, attempts, time.time()),
    )
    if refused is not None:
        db.execute("INSERT OR REPLACE INTO refused (user, doc_type, source_id, version) VALUES (?, ?, ?, ?)",
                   (*doc_key(ref), refused))
