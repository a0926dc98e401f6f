"""The dense leg under search filters: one of three plans, by how many chunks pass them."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.filters import SearchFilters
from ..stores.keyword import KeywordIndex
from ..stores.vectors import Hit, VectorStore


@dataclass(frozen=True)
class FilteredDense:
    """How the dense leg searches under filters, by how many chunks pass them (measured at 100k
    chunks, bench/RESULTS-search.md). The keyword index selects the passing chunk ids with SQL;
    then

    * up to ``exact_max`` chunks: exact cosine over their stored vectors (``rank_among``);
    * up to ``restrict_share`` of the user's chunks: HNSW restricted to those ids (35-55 ms);
    * more: an unrestricted HNSW search deep enough to keep ``depth`` chunks after the filter is
      applied to its hits (``fetch x total / passing x 1.5``, at most ``max_fetch``).

    A Chroma metadata ``where`` is never used: 100-700 ms at 100k chunks, however selective.
    """

    exact_max: int = 500
    restrict_share: float = 0.3
    max_fetch: int = 1000

    def hits(self, store: VectorStore, keyword: KeywordIndex, user: str, vector: np.ndarray, depth: int,
             filters: SearchFilters) -> list[Hit]:
        """The dense leg's hits, best first: ``depth`` of them, filtered as this plan says (the caller
        still applies ``filters.matches`` to every hit), their texts not read (``read_texts`` False:
        the caller reads those of the few it keeps); unfiltered, their metadata neither (``ids_only``)."""
        if filters.is_empty:
            return store.query(user, vector, depth, ids_only=True)
        total = keyword.count(user)
        passing, ids = keyword.matching_chunks(user, filters, max(self.exact_max, int(self.restrict_share * total)))
        if passing == 0:
            return []
        if ids is not None and len(ids) <= self.exact_max:
            return store.rank_among(user, vector, ids, depth, read_texts=False)
        if ids is not None:
            return store.query(user, vector, depth, among=ids, read_texts=False)
        fetch = min(self.max_fetch, math.ceil(depth * total / passing * 1.5))
        return store.query(user, vector, fetch, read_texts=False)
