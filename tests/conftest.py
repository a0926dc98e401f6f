"""Shared fixtures. ``stack`` (one per test session) is the real ExApp registered with a seeded fake Nextcloud."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from fixtures_fake_nextcloud import fake_nc  # noqa: E402,F401  (re-exported fixture)
from stack import Stack  # noqa: E402


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Registered and fully backfilled: AppAPI's init reached 100 only after the first indexing pass."""
    running = Stack(tmp_path_factory.mktemp("stack")).start()
    try:
        yield running
    finally:
        running.stop()
