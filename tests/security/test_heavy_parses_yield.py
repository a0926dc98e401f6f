"""A user whose indexing parse ran out of its whole time bound (issue 36: new versions of his slowest
file, uploaded again and again) parses in the ``heavy`` lane afterwards: one worker at a lower CPU
priority, so that another user's edited note keeps the main lane's workers and the CPU
(lib/semantic_mcp/workers/parser_process.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from semantic_mcp.workers import parser_process
from semantic_mcp.workers.parser_process import HeavyOwners, ParserFailed, parse_owner, run_parser


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def heavy(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    clock = Clock()
    monkeypatch.setattr(parser_process, "HEAVY", HeavyOwners(seconds=600, clock=clock))
    parser_process.configure(size=2, timeout=5, memory_mb=300)
    try:
        yield clock
    finally:
        parser_process.shutdown()


async def niceness(owner: str) -> int:
    """The CPU niceness of the worker an indexing parse of ``owner``'s runs in."""
    parse_owner.set(owner)
    return await run_parser("os:nice", 0)


async def test_after_an_overrun_his_parses_yield_the_cpu_and_hers_do_not(heavy: Clock) -> None:
    assert await niceness("bob") == await niceness("alice")
    parse_owner.set("bob")
    with pytest.raises(ParserFailed, match="took longer than 0.5 s"):
        await run_parser("time:sleep", 3, timeout=0.5)
    assert await niceness("bob") > await niceness("alice")  # 10 more, up to the highest (19)
    heavy.now += 601  # a while without overruns: back in the main lane
    assert await niceness("bob") == await niceness("alice")


async def test_a_parse_that_fails_otherwise_does_not_make_him_heavy(heavy: Clock) -> None:
    parse_owner.set("bob")
    with pytest.raises(ValueError):
        await run_parser("builtins:int", "not a number")
    assert await niceness("bob") == await niceness("alice")


async def test_a_heavy_users_reads_yield_too_and_everyone_elses_read_at_full_priority(heavy: Clock) -> None:
    """Reads run at indexing's priority (a nice read worker waited behind the attacker's requests);
    a heavy user's read parses go to the heavy lane."""
    async def read_niceness(owner: str) -> int:
        parse_owner.set(owner)
        return await run_parser("os:nice", 0, lane="read")

    assert await read_niceness("alice") == await niceness("alice")
    parser_process.HEAVY.mark("bob")
    assert await read_niceness("bob") > await read_niceness("alice")
