"""Reads never delay indexing or another user (issue 36, item 1): one user hammers the reading tool with
the slowest files he can make while another edits a note and reads a small file.

The stack of tests/support/stack.py (the fake Nextcloud and the real ExApp process, its parser workers bounded
at ``--bound`` seconds, two of them as deployed). Bob owns ``--files`` DOCX files of 400,000 paragraphs
each (tests/security/hostile.py: each costs a parser its whole bound) and calls ``nc_get_document`` on
them from ``--callers`` concurrent clients, without pause, far above the twice a minute of the review.
His clients run in a process of their own, as on his own machine (in the bench's process they took
the CPU of her client and of the fake Nextcloud, which that process also runs).
Alice, meanwhile, edits a note (a new unique word each round) and reads a new small text file. Measured
per round: the note's indexing delay (from the edit until a search for the word finds it, polled every
0.05 s after each search; a search itself takes about 0.1 s) and her read's time (the tool call), idle
first, then under the hammering.

Two kinds of hammering: ``same`` (bob reads his files again and again, the review's case) and
``new-versions`` (he writes a new version of a file through WebDAV before each read, so that no read
can be refused from memory: every read costs the bound, until his parse budget refuses him; his uploads also reach indexing, whose own turns between
users (ADR 0015) then decide her delay), and ``uploads-only`` (the same uploads, one every 15 s from
each client, and no read: what indexing his uploads costs her without the reading tool).

    PYTHONPATH=lib:. python bench/read_starvation.py [--rounds 5] [--bound 15] [--files 3] [--callers 4]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "lib", ROOT, ROOT / "tests" / "support", ROOT / "tests" / "security"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import hostile  # noqa: E402
from harness import McpHarness  # noqa: E402
from stack import Stack  # noqa: E402

ALICE, BOB = "alice", "bob"


async def note_delay(stack: Stack, note_id: int) -> float:
    word = "zq" + secrets.token_hex(4)
    stack.fake.update_note(ALICE, note_id, content=f"# Kestrel rota\n\nThe rota code word is {word}.\n")
    edited = time.monotonic()
    while True:
        hits = (await stack.search(ALICE, word, score_threshold=0))["results"]
        if any(word in hit.get("excerpt", "") for hit in hits):
            return time.monotonic() - edited
        if time.monotonic() - edited > 600:
            return float("inf")
        await asyncio.sleep(0.05)


async def read_time(stack: Stack) -> float:
    file_id = stack.fake.put_file(ALICE, f"/Small/{secrets.token_hex(4)}.txt", "The heron counts: 41 on Monday.")
    started = time.monotonic()
    result = await stack.call(ALICE, "nc_get_document", {"id": f"file:{file_id}"})
    assert not result.is_error, stack.failure(result)
    return time.monotonic() - started


async def measure(stack: Stack, note_id: int, rounds: int) -> tuple[list[float], list[float]]:
    delays, reads = [], []
    for _ in range(rounds):
        delays.append(await note_delay(stack, note_id))
        reads.append(await read_time(stack))
    return delays, reads


class Attacker(McpHarness):
    """Bob's own clients, in a process of their own as on his own machine: their CPU is not the
    victim's client's (the bench's process also runs alice's client and the fake Nextcloud)."""

    def __init__(self, url: str, password: str) -> None:
        self.url, self.password, self.exapp = url, password, None

    @property
    def nextcloud_url(self) -> str:  # type: ignore[override]
        return self.url

    def app_password(self, user: str) -> str:
        return self.password


async def _hammer(attacker: Attacker, ids: list[int], paths: list[str], kind: str, stop: Any,
                  calls: list[float], first: int) -> None:
    n, body = first, hostile.slow_docx()
    async with httpx.AsyncClient(auth=(BOB, attacker.password), timeout=60) as dav:
        while not stop.is_set():
            index = n % len(ids)
            if kind != "same":  # a new version through WebDAV, as his sync client writes it
                await dav.put(f"{attacker.url}/remote.php/dav/files/{BOB}{paths[index]}",
                              content=body + secrets.token_bytes(8))
            if kind == "uploads-only":  # no read at all: what his uploads alone cost her
                n += 1
                await asyncio.sleep(15)
                continue
            started = time.monotonic()
            try:
                await attacker.call(BOB, "nc_get_document", {"id": f"file:{ids[index]}"})  # refused or not: a call
            except Exception:  # noqa: BLE001 - his request quota (429): he keeps trying
                await asyncio.sleep(0.1)
            calls.append(time.monotonic() - started)
            n += 1


def attack(url: str, password: str, ids: list[int], paths: list[str], kind: str, callers: int, stop: Any,
           results: Any) -> None:
    """The attacker's process: ``callers`` clients until ``stop``; his call times go to ``results``."""
    calls: list[float] = []

    async def all_callers() -> None:
        attacker = Attacker(url, password)
        await asyncio.gather(*(_hammer(attacker, ids, paths, kind, stop, calls, first) for first in range(callers)))

    asyncio.run(all_callers())
    results.put(calls)


def summary(values: list[float]) -> str:
    return f"median {statistics.median(values):6.2f} s, max {max(values):6.2f} s"


async def run(stack: Stack, args: argparse.Namespace) -> None:
    note_id = stack.fake.create_note(ALICE, "Kestrel rota", "# Kestrel rota\n\nThe rota.\n")
    paths = [f"/Slow/slow-{n}.docx" for n in range(args.files)]
    ids = [stack.fake.put_file(BOB, path, hostile.slow_docx()) for path in paths]
    for user in (ALICE, BOB):
        await stack.wait_idle(user, timeout=900)  # bob's files tried by indexing and given up
    idle = await measure(stack, note_id, args.rounds)
    print(f"idle          note indexed: {summary(idle[0])}; her read: {summary(idle[1])}", flush=True)
    for kind in args.kinds.split(","):
        spawn = multiprocessing.get_context("spawn")
        stop, results = spawn.Event(), spawn.Queue()
        bob = spawn.Process(target=attack, args=(stack.fake.url, stack.app_password(BOB), ids, paths, kind,
                                                 args.callers, stop, results))
        bob.start()
        await asyncio.sleep(5)  # his process started and calling
        loaded = await measure(stack, note_id, args.rounds)
        stop.set()
        calls = await asyncio.to_thread(results.get)
        bob.join()
        ratio = (statistics.median(loaded[0]) / statistics.median(idle[0]),
                 statistics.median(loaded[1]) / statistics.median(idle[1]))
        print(f"{kind:<13} note indexed: {summary(loaded[0])}; her read: {summary(loaded[1])}; "
              f"{len(calls)} reads by bob ({summary(calls or [0.0])}); median ratios to idle: note {ratio[0]:.2f}x, "
              f"read {ratio[1]:.2f}x", flush=True)
        await stack.wait_idle(BOB, timeout=900)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bound", type=float, default=15.0, help="the parsers' time bound, seconds")
    parser.add_argument("--files", type=int, default=3)
    parser.add_argument("--callers", type=int, default=4)
    parser.add_argument("--kinds", default="same,new-versions,uploads-only")
    args = parser.parse_args()
    env = {"PARSER_TIMEOUT_SECONDS": str(args.bound), "PARSER_WORKERS": "2", "RETRY_SECONDS": "0.25"}
    with tempfile.TemporaryDirectory() as workdir:
        stack = Stack(Path(workdir), profile="minimal", env=env).start()  # runs its own event loop
        try:
            asyncio.run(run(stack, args))
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
