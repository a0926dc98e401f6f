"""A chunker that kills its parser worker on a document titled "bomb": what any bound tripping does
to a batch (memory, time, a crash), without the minutes a real one would take. Imported by the
worker process, so it lives in a module of its own (tests/unit/test_chunking_in_a_worker.py)."""

from __future__ import annotations

import os
from typing import Any

from semantic_mcp.indexing.records import chunk_batch as real_chunk_batch


def chunk_batch(items: list[Any]) -> Any:
    if any(doc.title == "bomb" for doc, _ in items):
        os.abort()
    return real_chunk_batch(items)
