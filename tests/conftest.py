"""Shared fixtures. ``stack`` (one per test session) is the real ExApp registered with a seeded fake Nextcloud.

``clock_start`` is the instant the fake Nextcloud's clock (and so the seed's "now") starts at: today,
unless a test is marked ``clock_sensitive``; such a test runs once for each of ``CLOCK_STARTS`` and
``WEEK_AHEAD`` (fixtures_fake_nextcloud.py). ``dated_stack`` is the same for a whole stack, on
``CLOCK_STARTS`` only (each is a stack of its own): the app runs on the fake's clock.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import pytest

# Helpers (support/) and the few test modules that others import, by bare name from any tier.
_HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(_HERE / folder) for folder in ('support', 'unit', 'app', 'security', 'real', 'harp')]
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from fixtures_fake_nextcloud import (  # noqa: E402,F401  (re-exported fixtures)
    CLOCK_STARTS, WEEK_AHEAD, clock_id, clock_start, fake_nc,
)
from fake_nextcloud.clock import Clock  # noqa: E402
from stack import Stack  # noqa: E402


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Registered and fully backfilled: AppAPI's init reached 100 only after the first indexing pass."""
    running = Stack(tmp_path_factory.mktemp("stack")).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="session")
def shifted_stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[datetime, Stack]]:
    """A small stack (seed profile ``calendar``) on each shifted clock. Starting the app dominates their
    cost (its imports and model, about 6 s of CPU), so they start side by side, one per CPU."""
    stacks = {start: Stack(tmp_path_factory.mktemp(f"clock-{start:%Y%m%d%H%M}"), profile="calendar",
                           clock=Clock(start)) for start in CLOCK_STARTS if start is not None}
    try:
        with ThreadPoolExecutor(min(len(stacks), os.cpu_count() or 1)) as pool:
            list(pool.map(Stack.start, stacks.values()))
        yield stacks
    finally:
        for running in stacks.values():
            running.stop()


@pytest.fixture(scope="session")
def dated_stack(request: pytest.FixtureRequest) -> Stack:
    """The shared ``stack`` on today's clock, or the small stack on a shifted one (``clock_sensitive``)."""
    start = getattr(request, "param", None)
    if start is None:
        return request.getfixturevalue("stack")
    return request.getfixturevalue("shifted_stacks")[start]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests marked ``clock_sensitive`` run on today's clock and on each shifted one (issue 14)."""
    if not metafunc.definition.get_closest_marker("clock_sensitive"):
        return
    if "dated_stack" in metafunc.fixturenames:  # a stack per clock: the fixed instants only
        metafunc.parametrize("dated_stack", CLOCK_STARTS, indirect=True, ids=clock_id, scope="session")
    elif "clock_start" in metafunc.fixturenames:
        metafunc.parametrize("clock_start", CLOCK_STARTS + WEEK_AHEAD, indirect=True, ids=clock_id)
    else:
        raise pytest.UsageError(f"{metafunc.definition.nodeid} is clock_sensitive but uses no clock: "
                                "take dated_stack, or clock_start (fake_nc does)")


TIERS = ("harp", "real")  # the directories whose tests need a Nextcloud of their own (PHP, Docker)


@pytest.hookimpl(optionalhook=True)  # without xdist (-p no:xdist) the hook does not exist
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``make test`` runs two xdist workers, each tier whole on one of them: the fast tier on one (its
    session stacks built once), the HaRP and the real tier one after the other on the other (each
    tier's tests in order, as they are written; each tier's Nextcloud once). By path, as pytest 9's
    node ids no longer take xdist's ``loadgroup`` suffix."""
    from xdist.scheduler import LoadScopeScheduling

    class TierScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            parts = nodeid.split("/")
            return parts[1] if len(parts) > 2 and parts[1] in TIERS else "fast"

    return TierScheduling(config, log)
