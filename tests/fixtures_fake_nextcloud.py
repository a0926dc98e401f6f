"""Pytest fixture ``fake_nc``: a running fake Nextcloud seeded with the demo content.

The main ``conftest.py`` imports it (``from tests.fixtures_fake_nextcloud import fake_nc``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fake_nextcloud import FakeNextcloud, seed


@pytest.fixture
def fake_nc() -> Iterator[FakeNextcloud]:
    """A fresh server per test (about 0.2 s), so tests cannot see each other's changes."""
    with FakeNextcloud(webhook_delay=0.01) as nc:
        seed(nc, "demo")
        yield nc
