"""Pytest fixture ``fake_nc``: a running fake Nextcloud seeded with the demo content, on ``clock_start``'s clock.

The main ``conftest.py`` imports it (``from fixtures_fake_nextcloud import fake_nc``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from fake_nextcloud import FakeNextcloud, seed
from fake_nextcloud.clock import Clock

# Where the clock of a ``clock_sensitive`` test starts (None: today). The shifted ones are instants
# whose next day is in another month, year or leap year; the leap day in the past also catches a
# stray read of the system clock where the injected one is meant (today is after it, not before).
CLOCK_STARTS: list[datetime | None] = [
    None,
    datetime(2027, 1, 31, 23, 30, tzinfo=UTC),  # a month end, half an hour before the next month
    datetime(2027, 12, 31, 23, 59, tzinfo=UTC),  # a year end, a minute before the next year
    datetime(2028, 2, 29, 12, 0, tzinfo=UTC),  # a leap day
    datetime(2024, 2, 29, 12, 0, tzinfo=UTC),  # a leap day before today
]
# Tests on a fake Nextcloud alone (cheap) also run on each of the next six days: a date written into
# a test, or a weekday it assumes, fails within a week of the day it was written (issue 14's did).
WEEK_AHEAD = [timedelta(days=days) for days in range(1, 7)]


def clock_id(start: datetime | timedelta | None) -> str:
    if start is None:
        return "today"
    return f"today+{start.days}d" if isinstance(start, timedelta) else start.strftime("%Y-%m-%dT%H:%M")


@pytest.fixture
def clock_start(request: pytest.FixtureRequest) -> datetime | None:
    """The instant the test's clocks start at; today unless the test is ``clock_sensitive`` (conftest.py)."""
    start = getattr(request, "param", None)
    return datetime.now(UTC) + start if isinstance(start, timedelta) else start


@pytest.fixture
def fake_nc(clock_start: datetime | None) -> Iterator[FakeNextcloud]:
    """A fresh server per test (about 0.2 s), so tests cannot see each other's changes."""
    with FakeNextcloud(webhook_delay=0.01, clock=Clock(clock_start)) as nc:
        seed(nc, "demo")
        yield nc
