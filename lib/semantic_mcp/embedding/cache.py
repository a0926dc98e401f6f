"""A cache on disk so identical text is embedded once, and the embedder that uses it.

The key is sha256(model_id, text): two backends share cached vectors only when they share a
vector space (``model_id``), as they share an index.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .protocol import Embedder


class EmbeddingCache:
    """Passage vectors on disk, keyed by sha256(model_id, text).

    A file shared with many users, an unchanged chunk of an edited document and a re-run
    after a crash all cost one embedding. Each write is committed at once so a crash loses
    nothing already computed. Safe to share between threads.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS embeddings (key BLOB PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID"
        )
        self._lock = threading.Lock()

    @staticmethod
    def key(model_id: str, text: str) -> bytes:
        # The NUL separator keeps ("ab", "c") and ("a", "bc") apart.
        return hashlib.sha256(f"{model_id}\0{text}".encode()).digest()

    def get_many(self, model_id: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``texts``, by text."""
        keys = {self.key(model_id, t): t for t in texts}
        found: dict[str, np.ndarray] = {}
        key_list = list(keys)
        with self._lock:
            for i in range(0, len(key_list), 500):  # SQLite's bound-parameter limit
                batch = key_list[i : i + 500]
                rows = self._db.execute(
                    f"SELECT key, vector FROM embeddings WHERE key IN ({','.join('?' * len(batch))})", batch
                ).fetchall()
                for key, blob in rows:
                    found[keys[key]] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model_id: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        rows = [
            (self.key(model_id, t), np.asarray(v, dtype=np.float32).tobytes())
            for t, v in zip(texts, vectors, strict=True)
        ]
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO embeddings (key, vector) VALUES (?, ?)", rows)
            self._db.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT count(*) FROM embeddings").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedEmbedder:
    """An :class:`Embedder` that embeds only passages the cache has not seen (queries pass through)."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.model_id = inner.model_id
        self.computed = 0  # passages embedded by the model (not found in the cache) since start

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        known = self.cache.get_many(self.model_id, texts)
        missing = list(dict.fromkeys(t for t in texts if t not in known))  # unique, in order
        if missing:
            vectors = self.inner.embed_passages(missing)
            self.cache.put_many(self.model_id, missing, vectors)
            self.computed += len(missing)
            known.update(zip(missing, vectors, strict=True))
        return np.stack([known[t] for t in texts]).astype(np.float32, copy=False)

    def embed_query(self, query: str) -> np.ndarray:
        return self.inner.embed_query(query)
