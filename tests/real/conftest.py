"""The real-Nextcloud tier: fixtures for tests that run against an unmodified Nextcloud 32.0.1.

One instance per test run (nc-kit, reset from its pristine copy), the app registered once, and
both brought back to the state right after the first indexing pass before every test module.
The tier runs whenever ``../shared/nextcloud-32-server/nc-kit`` is present (it is in CI).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import RealNextcloud  # noqa: E402
from realstack import RealStack  # noqa: E402


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.real)
            if not RealNextcloud.available():
                item.add_marker(pytest.mark.skip(reason="../shared/nextcloud-32-server/nc-kit not found"))


@pytest.fixture(scope="session")
def real_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealStack]:
    nc = RealNextcloud().prepare()
    stack = RealStack(nc, tmp_path_factory.mktemp("real")).start()
    try:
        yield stack
    finally:
        stack.stop()
        nc.stop()


@pytest.fixture(scope="module")
def real(real_session: RealStack) -> Iterator[RealStack]:
    """The registered app on a real Nextcloud, reset for this module (content as after the first pass)."""
    real_session.reset()
    real_session.dirty = True  # whatever the module does, the next one starts from the saved state
    yield real_session
