"""What Chroma (1.5.9) needs from outside: at this app's sizes (docs/adr/0560, 0561, 0562), and around a race."""

from __future__ import annotations

import ctypes
import logging
import os
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from chromadb.errors import InternalError

log = logging.getLogger(__name__)

# Save a collection's vector index every 100 writes, not Chroma's 1,000 (ADR 0562): what is not
# saved is replayed into the index by the next process's first search (most of its cost), and
# writing was faster, not slower, measured at 400 to 16,000 chunks a collection.
SAVE_INDEX = {"sync_threshold": 100, "batch_size": 100}


def save_index_often(collection: Any) -> None:
    """Switch a collection made before ADR 0562 to :data:`SAVE_INDEX` (embedded or server). An
    optimisation: a Chroma that refuses it (a server of another version) only logs it."""
    try:
        if (collection.configuration.get("hnsw") or {}).get("sync_threshold", 0) > SAVE_INDEX["sync_threshold"]:
            collection.modify(configuration={"hnsw": SAVE_INDEX})
    except Exception as exc:  # noqa: BLE001 - any refusal leaves Chroma's own threshold, which works
        log.warning("Chroma kept its index-saving threshold for %s: %s", collection.name, exc)


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


def query_index(collection: Any, **query: Any) -> Any:
    """``collection.query(...)``, asked again when Chroma could not yet read the vector index of a
    collection being written for the first time: it then raises "Error creating hnsw segment reader:
    Nothing found on disk" (a new user's first search while their first chunks were written: 1 search
    in 4 CI runs; chroma-core/chroma#4212). A moment later the index is there."""
    for attempt in range(3):
        try:
            return collection.query(**query)
        except InternalError as exc:
            if "Nothing found on disk" not in str(exc) or attempt == 2:
                raise
            time.sleep(0.1 * (attempt + 1))
    raise AssertionError("unreachable")


def get_by_ids(collection: Any, ids: Sequence[str], include: list[str]) -> Any:
    """``collection.get(ids=...)``, asked again when a delete of some of those ids was half done: Chroma
    then raises "Error finding id" instead of leaving them out (seen with a search's re-check removing
    a hit it had just found, while another search read it)."""
    for _ in range(2):
        try:
            return collection.get(ids=list(ids), include=include)  # type: ignore[arg-type]
        except InternalError as exc:
            if "Error finding id" not in str(exc):
                raise
            time.sleep(0.05)
    return collection.get(ids=list(ids), include=include)  # type: ignore[arg-type]  # a third time, or its error
