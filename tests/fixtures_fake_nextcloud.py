"""Pytest fixture ``fake_nc``: a running fake Nextcloud seeded with the demo content, on ``clock_start``'s clock.

The main ``conftest.py`` imports it (``from tests.fixtures_fake_nextcloud import fake_nc``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from fake_nextcloud import FakeNextcloud, seed
from fake_nextcloud.clock import Clock

# Where the clock of a ``clock_sensitive`` test starts (None: today). The shifted ones are days whose
# neighbours differ in month, year or length; the first leap day is in the past, so a stray read of
# the system clock (today, after it) cannot pass for the injected one.
CLOCK_STARTS = [
    None,
    datetime(2027, 1, 31, 23, 30, tzinfo=UTC),  # a month end, half an hour before the next month
    datetime(2027, 12, 31, 23, 59, tzinfo=UTC),  # a year end, a minute before the next year
    datetime(2028, 2, 29, 12, 0, tzinfo=UTC),  # a leap day
    datetime(2024, 2, 29, 12, 0, tzinfo=UTC),  # a leap day before today
]


@pytest.fixture
def clock_start(request: pytest.FixtureRequest) -> datetime | None:
    return getattr(request, "param", None)


@pytest.fixture
def fake_nc(clock_start: datetime | None) -> Iterator[FakeNextcloud]:
    """A fresh server per test (about 0.2 s), so tests cannot see each other's changes."""
    with FakeNextcloud(webhook_delay=0.01, clock=Clock(clock_start)) as nc:
        seed(nc, "demo")
        yield nc
