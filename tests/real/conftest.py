"""The real-Nextcloud tier: fixtures for tests that run against an unmodified Nextcloud 34.0.1.

One instance per test run (nc-kit, reset from its pristine copy), the app registered once, and
both brought back to the state right after the first indexing pass before every test module.
The tier runs whenever ``../shared/nextcloud-34-server/nc-kit`` is present (it is in CI).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import RealNextcloud  # noqa: E402
from realstack import RealStack  # noqa: E402

from directory_scope import DirectoryScope  # noqa: E402

SCOPE = DirectoryScope(Path(__file__).resolve().parent)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    SCOPE.leave(item, nextitem)  # Nextcloud and the app stop before the fast tier starts


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.real)
            if not RealNextcloud.available():
                item.add_marker(pytest.mark.skip(reason="../shared/nextcloud-34-server/nc-kit not found"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A failed real-tier test reports what the app and Nextcloud said meanwhile: CI keeps only
    the test output, and timing failures there are otherwise impossible to explain."""
    outcome = yield
    report = outcome.get_result()
    stack = getattr(item, "funcargs", {}).get("real")
    if report.failed and isinstance(stack, RealStack):
        report.sections.extend(stack.diagnostics())


@pytest.fixture(scope="session")
def real_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealStack]:
    nc = RealNextcloud().prepare()
    stop_nc = SCOPE.add(nc.stop)
    stack = RealStack(nc, tmp_path_factory.mktemp("real")).start()
    stop_stack = SCOPE.add(stack.stop)
    try:
        yield stack
    finally:
        stop_stack()
        stop_nc()


@pytest.fixture(scope="module")
def real(real_session: RealStack) -> Iterator[RealStack]:
    """The registered app on a real Nextcloud, reset for this module (content as after the first pass)."""
    real_session.reset()
    real_session.dirty = True  # whatever the module does, the next one starts from the saved state
    yield real_session


@pytest.fixture
def frequent_reconciliation(real: RealStack) -> Iterator[None]:
    """Reconciliation every 3 s, for what no event reports (contacts, shares for their recipient)."""
    real.set_admin_field("reconcile_interval_minutes", 0.05)
    yield
    real.set_admin_field("reconcile_interval_minutes", 15)


@pytest.fixture
def rechecks_time_out(real: RealStack) -> Iterator[None]:
    """Re-checks of search hits time out, which is what a saturated Nextcloud does to them (ADR 0010)."""
    real.stop_exapp()
    real.env["RECHECK_TIMEOUT_SECONDS"] = "0.000001"
    real.start_exapp()
    try:
        yield
    finally:
        real.stop_exapp()
        del real.env["RECHECK_TIMEOUT_SECONDS"]
        real.start_exapp()
