"""A file that takes its parser's whole bound must not hold another user's edited note behind it in
the same indexing batch (issue 36: the batch used to wait for its slowest fetch)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import hostile
import pytest
from stack import Stack

BOUND = 40  # seconds: the slow file is still parsing long after the note could be indexed


@pytest.fixture(scope="module")
def slow_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    env = {"PARSER_TIMEOUT_SECONDS": str(BOUND), "PARSER_WORKERS": "2", "RETRY_SECONDS": "600"}
    stack = Stack(tmp_path_factory.mktemp("slow"), profile="minimal", env=env).start()
    try:
        yield stack
    finally:
        stack.stop()


async def test_her_note_is_indexed_while_his_slow_file_still_parses(slow_stack: Stack) -> None:
    stack = slow_stack
    file_ids = [stack.fake.put_file("bob", f"/Slow/slow-{n}.docx", hostile.slow_docx()) for n in range(2)]
    await asyncio.sleep(0.5)  # his events first: his files are claimed ahead of her note
    note = stack.fake.create_note("alice", "Osprey rota", "# Osprey rota\n\nThe osprey watch starts at dawn.\n")
    await stack.eventually(lambda: _found(stack), timeout=BOUND * 2)
    failures = (await stack.status("bob"))["failures"]
    assert not [f for f in failures if f["id"] in {f"file:{i}" for i in file_ids}], failures  # still parsing
    assert note


async def _found(stack: Stack) -> bool:
    return "Osprey rota" in await stack.titles("alice", "osprey watch dawn")
