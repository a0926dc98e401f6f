"""What the pipeline, the retriever and the embedding cache need from an embedding model.

Its own module so that the backends (``embedding``) and the cache that wraps them (``embedding_cache``)
both stand on it, rather than on each other."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """What the pipeline and the retriever need from an embedding model."""

    model_id: str  # stable name of the vector space; collection names derive from it

    @property
    def dim(self) -> int: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, L2-normalised; texts are documents (chunks)."""
        ...

    def embed_query(self, query: str) -> np.ndarray:
        """(dim,) float32, L2-normalised: the vector of a search query."""
        ...
