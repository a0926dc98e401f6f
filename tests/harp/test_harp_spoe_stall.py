"""The HaRP tier's one tolerated failure (ADR 0523): a request haproxy 2.6's SPOE never handed to HaRP's
agent, answered 503 by haproxy after ``timeout processing``. Recognised from HaRP's own log line (the
line below is one a run of bench/load.py --harp logged), made once more, and nothing else is.

These need no Docker: HaRP's log is given, not read from a container.
"""

from __future__ import annotations

import pytest

from harpstack import HarpStack

STALL = ('2026-11-28T12:15:16.406152679Z <134>Nov 28 12:15:16 haproxy[92]: 127.0.0.1:49888 '
         '[28/Nov/2026:12:14:46.385] ex_apps ex_apps/<NOSRV> 30019/-1/-1/-1/30019 503 119 - - LR-- '
         '2/2/0/0/0 0/0 "POST /exapps/semantic_mcp/mcp HTTP/1.1"')
# HaRP's own quick 503s (an ExApp not running, no verdict var at once) and a served request are no stall.
QUICK_503 = STALL.replace("30019/-1/-1/-1/30019", "12/-1/-1/-1/12")
SERVED = ('2026-11-28T12:14:45.615110641Z <134>Nov 28 12:14:45 haproxy[92]: 127.0.0.1:49728 '
          '[28/Nov/2026:12:14:45.426] ex_apps ex_apps_backend/frp_server 151/0/0/3/186 200 1725 - - ---- '
          '18/18/10/10/0 0/0 "POST /exapps/semantic_mcp/mcp HTTP/1.1"')


class LoggedHarp(HarpStack):
    """A HarpStack whose HaRP log is a given text (no Nextcloud, no containers)."""

    def __init__(self, log: str) -> None:  # noqa: D107 - nothing of the real stack is started
        self.text = log

    def harp_log(self, since: str | None = None) -> str:
        return self.text


class Flaky:
    """Fails the first ``failures`` times it is awaited, then answers."""

    def __init__(self, failures: int) -> None:
        self.failures, self.calls = failures, 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise RuntimeError("Server returned an error response")
        return "tools"


def test_only_haproxys_30_s_no_server_503_counts_as_a_stall() -> None:
    stack = LoggedHarp("\n".join([SERVED, QUICK_503, STALL]))
    assert stack.spoe_stalls(since=0) == [STALL]


async def test_a_failure_while_harp_logged_a_stall_is_made_once_more() -> None:
    attempt = Flaky(failures=1)
    with pytest.warns(UserWarning, match="SPOE stalled"):
        assert await LoggedHarp(STALL).despite_a_spoe_stall(attempt) == "tools"
    assert attempt.calls == 2


async def test_a_failure_without_a_stall_is_raised_at_once() -> None:
    attempt = Flaky(failures=1)
    with pytest.raises(RuntimeError, match="error response"):
        await LoggedHarp("\n".join([SERVED, QUICK_503])).despite_a_spoe_stall(attempt)
    assert attempt.calls == 1


async def test_a_second_failure_is_raised() -> None:
    attempt = Flaky(failures=2)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError):
        await LoggedHarp(STALL).despite_a_spoe_stall(attempt)
    assert attempt.calls == 2


async def test_the_tiers_tool_calls_are_made_once_more_after_a_stall(monkeypatch: pytest.MonkeyPatch) -> None:
    """``harp.search``/``titles``/``status`` (the life-cycle module's checks) go through ``call``."""
    from realstack import RealStack

    attempt = Flaky(failures=1)
    monkeypatch.setattr(RealStack, "call", lambda self, user, tool, args=None, **options: attempt())
    with pytest.warns(UserWarning, match="SPOE stalled"):
        assert await LoggedHarp(STALL).call("alice", "nc_get_vector_sync_status") == "tools"
    assert attempt.calls == 2
