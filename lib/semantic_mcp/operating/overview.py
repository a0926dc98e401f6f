"""The admins' overview across users (issue 40, item 1): what ``occ semantic_mcp:status`` prints and the
admin page shows, the same numbers for both.

Per user and per source: indexed, pending (of which waiting for OCR), failed, and skipped by reason;
the first indexing pass's progress and the time it still needs; the last reconciliation; Nextcloud's
and the webhooks' health; the embedding model; the index's size on disk and the app's memory.

The counts are read from the indexing state's SQLite file through a read-only connection of its own
(the queries live here, not in ``indexing/state.py``: they serve admins only, and never write).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.documents import DOC_TYPES
from ..search.service import iso

if TYPE_CHECKING:
    from ..engine import Engine

OCR_PRIORITY = 2  # indexing/state.py's OCR lane: a file waiting for its text to be read from images


def read_only(path: Path) -> sqlite3.Connection:
    """A connection that can only read ``path`` (the indexing state stays the pipeline's to write)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10, check_same_thread=False)
    db.row_factory = sqlite3.Row
    return db


def reason_kind(reason: str) -> str:
    """A skip reason without its particulars, so alike reasons count together: "too large: 9 MB, the limit
    is 5 MB" -> "too large"; a rule's name is kept ("excluded by the path pattern '*.tmp'")."""
    kind = reason.split(":", 1)[0].strip()
    if kind.count("(") > kind.count(")"):  # "… welcome board (admin setting: …)": the bracket goes too
        kind = kind[:kind.rfind("(")].strip()
    return kind or "unknown"


def state_counts(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """user -> source -> {indexed, pending, waiting_for_ocr, failed, skipped, skipped_by_reason, last_reconciliation}."""
    users: dict[str, dict[str, dict[str, Any]]] = {}

    def slot(user: str, doc_type: str) -> dict[str, Any]:
        return users.setdefault(user, {}).setdefault(doc_type, {
            "indexed": 0, "pending": 0, "waiting_for_ocr": 0, "failed": 0, "skipped": 0,
            "skipped_by_reason": {}, "last_reconciliation": None})

    if not path.exists():
        return users
    with closing(read_only(path)) as db:
        for table, key, where in (("documents", "indexed", ""), ("tasks", "pending", ""),
                                  ("tasks", "waiting_for_ocr", f"WHERE priority = {OCR_PRIORITY}"),
                                  ("dead_letters", "failed", "")):
            for row in db.execute(f"SELECT user, doc_type, COUNT(*) AS n FROM {table} {where} GROUP BY user, doc_type"):
                slot(row["user"], row["doc_type"])[key] = row["n"]
        for row in db.execute("SELECT user, doc_type, reason, COUNT(*) AS n FROM skipped GROUP BY user, doc_type, reason"):
            counts = slot(row["user"], row["doc_type"])
            counts["skipped"] += row["n"]
            kind = reason_kind(row["reason"])
            counts["skipped_by_reason"][kind] = counts["skipped_by_reason"].get(kind, 0) + row["n"]
        for row in db.execute("SELECT user, doc_type, last_reconcile FROM cursors"):
            slot(row["user"], row["doc_type"])["last_reconciliation"] = row["last_reconcile"]
    return users


def disk_bytes(root: Path) -> int:
    """What the app keeps on disk under its storage: the queue, both indexes, the embedding cache."""
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue  # removed while walking (a SQLite journal)
    return total


def _rss_bytes(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _children(pid: str) -> list[str]:
    found: list[str] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as children:
                found += children.read().split()
    except OSError:
        pass
    return found


def memory_bytes() -> dict[str, int]:
    """Resident memory of the app and of its parser workers (their own processes), from /proc (0 elsewhere)."""
    me = str(os.getpid())
    workers = sum(_rss_bytes(child) for child in _children(me))
    app = _rss_bytes(me)
    return {"app": app, "parser_workers": workers, "total": app + workers}


@dataclass
class FirstPassWatch:
    """The first indexing pass's pace, to say how long it still needs: the remaining items at the pace
    seen since the pass began (items done / time), updated whenever the overview or the notifier looks."""

    clock: Callable[[], float]
    started: tuple[float, int] | None = None  # (when, items pending) at the first look during the pass

    def observe(self, indexing: bool, pending: int) -> float | None:
        """Seconds still needed (None while unknown: the pass lists content, or nothing is done yet)."""
        if not indexing:
            return 0.0 if pending == 0 and self.started else None
        now = self.clock()
        if self.started is None or pending > self.started[1]:
            self.started = (now, pending)
            return None
        since, at_start = self.started
        done = at_start - pending
        if done <= 0 or now <= since:
            return None
        return pending * (now - since) / done


FINISHED_META = "first_pass_finished_at"


def first_pass(engine: Engine, watch: FirstPassWatch, counts: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """The first indexing pass: the engine's progress while it runs since this start; after a restart, from
    the state (every user listed and nothing queued: finished). Its end is kept in the state's meta."""
    progress = engine.backfill_progress
    pending = sum(c["pending"] for sources in counts.values() for c in sources.values())
    indexed = sum(c["indexed"] for sources in counts.values() for c in sources.values())
    listed = sum(1 for sources in counts.values() if any(c["last_reconciliation"] for c in sources.values()))
    finished_at = engine.state.get_meta(FINISHED_META)
    # The pass's task (the engine has no public word for it yet): running with no progress, it still lists users.
    backfill = getattr(engine, "_backfill", None)
    listing = progress is None and backfill is not None and not backfill.done()
    if listing or (progress is None and not listed):
        phase = "listing content" if engine.health.usable else "waiting for the app to be enabled"
    elif (progress is not None and progress >= 100) or (progress is None and (finished_at or not pending)):
        phase, progress = "finished", 100
    else:
        phase = "indexing"
        if progress is None:  # after a restart mid-pass: what is indexed of what is known
            progress = int(100 * indexed / max(indexed + pending, 1))
    remaining = watch.observe(phase == "indexing", pending)
    if phase == "finished" and not finished_at:
        finished_at = str(time.time())
        engine.state.set_meta(FINISHED_META, finished_at)
    return {"phase": phase, "progress_percent": progress, "users_listed": listed, "pending": pending,
            "seconds_left": None if remaining is None else round(remaining),
            "finished_at": iso(float(finished_at)) if finished_at else None}


def build_overview(engine: Engine, watch: FirstPassWatch) -> dict[str, Any]:
    """Every number of the overview, as JSON-ready values (times in ISO 8601 UTC)."""
    storage = engine.deployment.storage
    counts = state_counts(storage / "state.db")
    users = []
    for user in sorted(counts):
        sources = {doc_type: {**counts[user][doc_type], "last_reconciliation": iso(counts[user][doc_type]["last_reconciliation"])}
                   for doc_type in DOC_TYPES if doc_type in counts[user]}
        totals = {key: sum(c[key] for c in sources.values()) for key in ("indexed", "pending", "waiting_for_ocr", "failed", "skipped")}
        users.append({"user": user, "enabled": engine.is_user_enabled(user), **totals, "sources": sources})
    totals = {key: sum(u[key] for u in users) for key in ("indexed", "pending", "waiting_for_ocr", "failed", "skipped")}
    settings = engine.settings()
    health = engine.health.snapshot()
    last_reconcile = engine.state.get_meta("last_reconcile")
    return {
        "first_pass": first_pass(engine, watch, counts),
        "totals": {"users": len(users), **totals},
        "users": users,
        "last_reconciliation": iso(float(last_reconcile)) if last_reconcile else None,
        "nextcloud": {**health, "unreachable_since": iso(health["unreachable_since"]), "last_success": iso(health["last_success"])},
        "webhooks": {**engine.webhooks.as_dict(), "checked_at": iso(engine.webhooks.checked_at)},
        "embedding_model": engine._embedder.model_id if engine._embedder else settings.embedding_backend,
        "vector_store": f"chroma server {engine.deployment.chroma_host}" if engine.deployment.chroma_host else "embedded chroma",
        "index_bytes_on_disk": disk_bytes(storage),
        "memory_bytes": memory_bytes(),
    }
