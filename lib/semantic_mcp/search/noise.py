"""The noise floor: how similar a query is to text that means nothing.

An embedding model puts every string without meaning in one corner of its space: with e5,
"zzqx frobnicate" is at cosine 0.84 to a note holding only a random code word, which the
calibration reads as a likely answer (0.39). That cosine is not evidence that the note answers,
only that both are gibberish. So each query is also compared with :data:`MEANINGLESS`, fixed strings
that mean nothing (letter salad, key mashes, codes); its best cosine with them is its noise floor,
what "nothing in common but being noise" scores for this query and model. A candidate must clear
the floor by the calibration's ``noise_margin`` (``Calibration.keeps``) unless it is an exact match.

A meaningful query sits far from the floor (0.05-0.12 below its answers on the demo), a gibberish
one right at it, whatever the wording, language or length: no list of bad words, and a code that
matches a note exactly still finds it through the keyword leg. Measured by ``bench/noise_queries.py``.
"""

from __future__ import annotations

import threading

import numpy as np

from ..embedding.backends import Embedder

# Written by hand, not drawn from the generator bench/noise_queries.py and tests/unit/test_noise_queries.py
# use: a floor built from the test's own distribution would pass its test and nothing else.
MEANINGLESS = (
    "asdfgh jkl",
    "qwertz uiop",
    "zxcvbnm",
    "xyzzy plugh",
    "blorft snigglewump",
    "grmpf tktktk",
    "vvxq ooaoa",
    "lorem ipsum dolor",
    "fnord",
    "hjkl yuio",
    "mnbvc lkjhg poiuy",
    "qqq zzz",
    "A8F3-K29D",
    "ZX-4471-QV",
    "k7r9 p2m4 x0",
    "bzzt wubba",
    "ploof gnarr skeeb",
    "ughh mmph",
    "trqlz vrenk",
    "oiuytre",
    "dsfkjh sdlkfj",
    "wqxz",
    "brrr flibbit",
    "yarp zonk quux",
)


class NoiseFloor:
    """Each query's noise floor, for whatever embedding model is current (an admin may switch)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._lock = threading.Lock()
        self._anchors: dict[str, np.ndarray] = {}  # model_id -> unit vectors of MEANINGLESS

    def _unit_anchors(self) -> np.ndarray:
        model_id = self.embedder.model_id
        with self._lock:
            if model_id not in self._anchors:
                # As passages: they stand for stored items that mean nothing. Past the passage cache
                # (CachedEmbedder.inner): it holds the stored chunks' vectors and nothing else.
                model = getattr(self.embedder, "inner", self.embedder)
                vectors = np.asarray(model.embed_passages(list(MEANINGLESS)), dtype=np.float32)
                self._anchors[model_id] = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
            return self._anchors[model_id]

    def of(self, query_vector: np.ndarray) -> float:
        """The highest cosine between the query and any meaningless string."""
        query = np.asarray(query_vector, dtype=np.float32)
        return float(np.max(self._unit_anchors() @ (query / (np.linalg.norm(query) or 1.0))))
