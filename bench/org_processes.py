"""The other processes of ``bench/org_scale.py``: the fake Nextcloud and the embedding stub, each in a
process of its own, as a real Nextcloud (PHP workers) and a real embedding service are.

In the bench's own process they competed with the app for one interpreter: every request the app
sent cost the app's process the fake's or the stub's work too, so the figure measured was the
fake's ceiling as much as the app's. Each is driven here through a pipe: a few named commands,
answered in order. ``item_counts`` is the organisation's shape, which the fake is filled with and
``org_search.py`` writes the index of.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import random
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

APP_ID = "semantic_mcp"
DIM = 384


def item_counts(users: int, items: int, seed: int = 16) -> list[int]:
    """Items per user, Zipf-skewed (s = 1.1), at least 5 each, summing to ``items``."""
    weights = np.array([1 / (rank**1.1) for rank in range(1, users + 1)])
    counts = np.maximum(5, np.floor(weights / weights.sum() * items)).astype(int)
    random.Random(seed).shuffle(counts)  # the big users are not all first in the user list
    return counts.tolist()


class Child:
    """A process serving ``target(conn, *args)``; :meth:`call` sends it one command and waits for its answer."""

    def __init__(self, target: Callable[..., None], *args: Any) -> None:
        self._conn, theirs = multiprocessing.get_context("spawn").Pipe()
        self._process = multiprocessing.get_context("spawn").Process(target=target, args=(theirs, *args), daemon=True)
        self._process.start()
        self._lock = threading.Lock()
        self.ready: Any = self._answer()  # what the child says once it serves

    def call(self, name: str, *args: Any) -> Any:
        with self._lock:
            self._conn.send((name, args))
            return self._answer()

    def _answer(self) -> Any:
        answer = self._conn.recv()
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def stop(self) -> None:
        if self._process.is_alive():
            self.call("stop")
        self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.kill()


def _serve(conn: Any, commands: dict[str, Callable[..., Any]], ready: Any, on_stop: Callable[[], None]) -> None:
    conn.send(ready)
    while True:
        name, args = conn.recv()
        if name == "stop":
            on_stop()
            conn.send(None)
            return
        try:
            conn.send(commands[name](*args))
        except Exception as exc:  # noqa: BLE001 - raised again in the bench's process
            conn.send(exc)


# --- the fake Nextcloud ---------------------------------------------------------------------------


# Of every 20 items: 13 files, 4 notes, a Deck card, an event and a contact (every type the app indexes).
KINDS = ("file",) * 13 + ("note",) * 4 + ("deck_card", "calendar_event", "contact")
SHORT = 300  # an event's description and a contact's note: a few sentences, not a document


def organisation_items(user: str, count: int, texts: list[str], first: int) -> list[tuple[str, str, str]]:
    """A user's ``count`` items, (kind, name, text), of every kind in :data:`KINDS`' proportions; their
    texts ``texts`` round-robin from ``first`` (the organisation's item number), each headed by its user
    and number (an event's and a contact's cut to their first :data:`SHORT` characters)."""
    items = []
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        text = f"{user} item {i}. " + texts[(first + i) % len(texts)]
        name = {"file": f"/Documents/item-{i:05d}.txt", "note": f"Note {i} of {user}", "deck_card": f"Card {i} of {user}",
                "calendar_event": f"Meeting {i} of {user}", "contact": f"Person{i} Of{user}"}[kind]
        items.append((kind, name, text[:SHORT].rsplit(" ", 1)[0] if kind in ("calendar_event", "contact") else text))
    return items


def _add_item(fake: Any, user: str, i: int, kind: str, name: str, text: str, stacks: dict[str, int]) -> None:
    """One item written as its app's API would: a file, a note, a card on the user's board, an event in
    the personal calendar, a contact in the default address book."""
    from fake_nextcloud.groupware import text_value
    from fake_nextcloud.seed import days_from, event_ics, vcard

    escaped = text_value(text)
    if kind == "file":
        fake.put_file(user, name, text)
    elif kind == "note":
        fake.create_note(user, name, text, "Work")
    elif kind == "deck_card":
        if user not in stacks:
            stacks[user] = fake.create_stack(user, fake.create_board(user, "Work"), "To do")
        fake.create_card(user, stacks[user], name, description=text)
    elif kind == "calendar_event":
        start = days_from(fake.clock.now(), i % 90 - 45, 9 + i % 8)
        fake.put_calendar_object(user, "personal", f"item-{i}.ics", event_ics(f"item-{i}@{user}", name, start, 60, escaped))
    else:
        fake.put_contact(user, "contacts", f"item-{i}.vcf", vcard(f"item-{i}-{user}", name, f"p{i}@{user}.example", note=escaped))


def fake_nextcloud(conn: Any, secret: str, accounts: list[tuple[str, int]], texts: list[str]) -> None:
    """Serve the fake with the app registered and enabled (without an ExApp process, as
    bench/indexing.py does) and the organisation: ``accounts`` (user, number of items), whose items
    :func:`organisation_items` makes here from ``texts`` (at a million chunks they are ~1 GB: made
    in this process, not sent to it)."""
    from fake_nextcloud import FakeNextcloud
    from fake_nextcloud.exapps import ExApp

    fake = FakeNextcloud(webhook_delay=0)
    fake.start()
    with fake.state.lock:
        fake.state.apps[APP_ID] = ExApp(APP_ID, "http://127.0.0.1:9", secret, "1.0.0", [],
                                        "nc_app_semantic_mcp:23000", enabled=True)
    first, stacks = 0, {}
    for user, count in accounts:
        fake.add_user(user)
        for i, (kind, name, text) in enumerate(organisation_items(user, count, texts, first)):
            _add_item(fake, user, i, kind, name, text, stacks)
        first += count

    def requests_since(mark: int) -> list[tuple[str, str, str]]:
        return [(r.method, r.path, r.user) for r in fake.state.access_log.since(mark)]

    commands = {
        "add_user": fake.add_user,
        "put_file": fake.put_file,
        "create_note": fake.create_note,
        "mark": fake.state.access_log.mark,
        "requests_since": requests_since,
    }
    _serve(conn, commands, fake.url, fake.stop)


# --- the embedding stub ---------------------------------------------------------------------------


def vector(text: str) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    values = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return (values / np.linalg.norm(values)).round(5).tolist()


def embedding_stub(conn: Any, latency: float) -> None:
    """An OpenAI-compatible ``/v1/embeddings`` answering deterministic unit vectors (a hash of the
    text seeds them), after ``latency`` seconds per request, one request at a time (a small
    embedding service: requests beyond the one it serves wait for it)."""
    counts = {"requests": 0, "inputs": 0, "most_waiting": 0}
    waiting = [0]
    one_at_a_time, tally = threading.Lock(), threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as any real service: no TCP handshake a request
        # Headers and body go out in two writes: with Nagle's algorithm the body waited for the
        # client's delayed ACK, 40 ms on one request in ten (search's p95); servers set TCP_NODELAY.
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            texts = body["input"]
            with tally:
                waiting[0] += 1
                counts["most_waiting"] = max(counts["most_waiting"], waiting[0])
            with one_at_a_time:
                if latency:
                    time.sleep(latency)
                with tally:
                    waiting[0] -= 1
                    counts["requests"] += 1
                    counts["inputs"] += len(texts)
            data = [{"index": i, "embedding": vector(text)} for i, text in enumerate(texts)]
            answer = json.dumps({"data": data, "model": body.get("model")}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def read() -> dict[str, int]:
        with tally:
            return dict(counts)

    _serve(conn, {"counts": read}, f"http://127.0.0.1:{server.server_address[1]}/v1", server.shutdown)


class EmbeddingStub:
    """The stub in its own process: ``url``, and how many requests and texts it answered."""

    def __init__(self, latency: float = 0.0) -> None:
        self.latency = latency
        self._child = Child(embedding_stub, latency)
        self.url: str = self._child.ready

    def counts(self) -> dict[str, int]:
        return self._child.call("counts")

    def stop(self) -> None:
        self._child.stop()
