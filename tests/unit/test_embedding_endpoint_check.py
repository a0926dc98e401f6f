"""An embedding endpoint saved in the admin settings is tried before it is used (issue 40, ADR 0771):
real HTTP endpoints here, one that is down, one that gives vectors of the wrong size, one that works."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ex_app import settings_check
from ex_app.settings_check import SettingsCheck
from semantic_mcp.core.config import AdminSettings

BUILT_IN = AdminSettings()  # the built-in e5 model: what a fresh install runs with


class Embeddings(BaseHTTPRequestHandler):
    """An OpenAI-compatible ``/v1/embeddings`` that answers every input with a vector of ``dimension``."""

    dimension = 8

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        vectors = [{"index": i, "embedding": [1.0] + [0.0] * (self.server.dimension - 1)}  # type: ignore[attr-defined]
                   for i, _ in enumerate(body["input"])]
        payload = json.dumps({"data": vectors}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Embeddings)
    server.dimension = 8  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def url_of(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def openai(url: str, model: str = "embedder") -> AdminSettings:
    return replace(BUILT_IN, embedding_backend="openai", embedding_url=url, embedding_model=model)


class Admins:
    """Records what the administrators are told, and the index the check compares with."""

    def __init__(self, index: tuple[str, int] | None = None) -> None:
        self.told: list[str] = []
        self.index = index
        self.now = 0.0

    async def tell(self, sentence: str) -> None:
        self.told.append(sentence)

    async def index_shape(self) -> tuple[str, int] | None:
        return self.index

    def check(self) -> SettingsCheck:
        return SettingsCheck(self.index_shape, self.tell, clock=lambda: self.now, retry_seconds=60)


async def test_an_endpoint_that_does_not_answer_keeps_the_previous_settings_and_the_admins_are_told_once() -> None:
    admins = Admins()
    check = admins.check()
    saved = replace(openai(f"http://127.0.0.1:{closed_port()}/v1"), index_notes=False)
    used = await check.vet(BUILT_IN, saved)
    assert used.embedding_backend == "e5" and used.embedding_url == ""
    assert used.index_notes is False  # the other settings saved with it are used
    assert admins.told == []  # seen once: the admin may still be typing the model's name
    assert (await check.vet(BUILT_IN, saved)).embedding_backend == "e5"
    [sentence] = admins.told
    assert sentence.startswith("Semantic MCP keeps using the built-in e5 model because the embedding endpoint http://")
    assert "did not answer" in sentence and sentence.count(". ") == 0 and sentence.endswith("again.")
    assert check.problem == sentence
    admins.now = 30.0
    assert (await check.vet(BUILT_IN, saved)).embedding_backend == "e5"
    assert len(admins.told) == 1


async def test_an_endpoint_whose_vectors_do_not_fit_the_index_is_not_used(endpoint: ThreadingHTTPServer) -> None:
    admins = Admins(index=("openai-embedder", 16))  # the index holds this model's vectors of 16 numbers
    check = admins.check()
    previous = openai("http://old-service/v1")
    saved = openai(url_of(endpoint))  # the same model name at another service, which gives 8
    assert (await check.vet(previous, saved)).embedding_url == "http://old-service/v1"
    assert (await check.vet(previous, saved)).embedding_url == "http://old-service/v1"
    [sentence] = admins.told
    assert "gives vectors of 8 numbers for embedder, but the index holds vectors of 16" in sentence
    assert sentence.startswith("Semantic MCP keeps using the model embedder at http://old-service/v1 because")


async def test_a_working_endpoint_is_used_at_once_whatever_the_size_of_another_models_index(
        endpoint: ThreadingHTTPServer) -> None:
    admins = Admins(index=("e5-multilingual", 384))  # another model: switching re-indexes into a new collection
    saved = openai(url_of(endpoint))
    assert await admins.check().vet(BUILT_IN, saved) == saved
    assert admins.told == []


async def test_a_half_typed_endpoint_completed_before_the_next_read_never_reaches_the_admins(
        endpoint: ThreadingHTTPServer) -> None:
    admins = Admins()
    check = admins.check()
    half = openai(url_of(endpoint), model="")  # the URL saved, the model's name not yet
    assert (await check.vet(BUILT_IN, half)).embedding_backend == "e5"
    whole = openai(url_of(endpoint))
    assert await check.vet(BUILT_IN, whole) == whole
    assert admins.told == [] and check.problem == ""


async def test_an_endpoint_that_comes_up_later_is_used_at_the_next_try(endpoint: ThreadingHTTPServer) -> None:
    admins = Admins()
    check = admins.check()
    port = endpoint.server_address[1]
    endpoint.shutdown()
    endpoint.server_close()
    saved = openai(f"http://127.0.0.1:{port}/v1")
    for _ in range(2):
        assert (await check.vet(BUILT_IN, saved)).embedding_backend == "e5"
    assert len(admins.told) == 1
    server = ThreadingHTTPServer(("127.0.0.1", port), Embeddings)
    server.dimension = 8  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        admins.now = 30.0  # before the next try: still the previous settings
        assert (await check.vet(BUILT_IN, saved)).embedding_backend == "e5"
        admins.now = 61.0
        assert await check.vet(BUILT_IN, saved) == saved
        assert check.problem == "" and len(admins.told) == 1
    finally:
        server.shutdown()
        server.server_close()


async def test_ocr_languages_the_image_lacks_are_named_to_the_admins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings_check, "installed_languages", lambda: frozenset({"eng", "deu", "fra", "spa"}))
    admins = Admins()
    saved = replace(BUILT_IN, ocr_languages=("eng", "ita"))
    assert await admins.check().vet(BUILT_IN, saved) == saved  # OCR reads with the languages it has
    assert admins.told == ["Semantic MCP's image has no OCR language ita (it has deu, eng, fra, spa), "
                           "so OCR reads with the others."]
    assert await admins.check().vet(BUILT_IN, replace(BUILT_IN, ocr_languages=("deu", "eng"))) is not None
    assert len(admins.told) == 1
