"""Two things embedded Chroma (1.5.9) needs from outside at this app's sizes (docs/adr/0560, 0561)."""

from __future__ import annotations

import ctypes
import os
import sqlite3


def index_write_log(sqlite_path: str) -> None:
    """Index embedded Chroma's write log by collection (docs/adr/0560).

    Chroma keeps each collection's writes since its vector index was last saved (up to
    ``sync_threshold`` per collection: 100 here, ADR 0562) in one ``embeddings_queue`` table, and a collection's
    first query after start-up reads its share of it with no index on the collection: a scan of every
    collection's tail. With 1,000 users that was 160k rows and 400-700 ms for each user's first search
    whatever the user's size; with this index 40-140 ms (bench/RESULTS-scale.md). Chroma's own
    statements are unchanged; a Chroma that drops or renames the table only loses the index.
    """
    if not os.path.exists(sqlite_path):
        return
    db = sqlite3.connect(sqlite_path, timeout=30)
    try:
        if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'embeddings_queue'").fetchone():
            db.execute("CREATE INDEX IF NOT EXISTS semantic_mcp_queue_topic ON embeddings_queue(topic, seq_id)")
    finally:
        db.close()


def return_freed_memory() -> None:
    """Give the heap's free pages back to the system: the indexes of small collections are freed
    into glibc's heap, which keeps them (measured: 885 MB resident after closing, 533 MB after this)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass
