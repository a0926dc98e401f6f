"""The HaRP tier: our image deployed by AppAPI through HaRP on a real Nextcloud 34.0.1.

Runs as root where ``../shared/harp`` and the 34 kit exist (CI); ``make test`` installs Docker,
debootstrap and haproxy first. One Nextcloud instance (its own directory and port:
``HARP_NC_DIR``, ``HARP_NC_PORT``), reset from its pristine copy, and one install for the session;
the life-cycle module reinstalls as it goes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "real"))

from harpstack import KIT, REPO, Dockerd, HarpStack, build_images, missing  # noqa: E402
from kit import RealNextcloud  # noqa: E402

from directory_scope import DirectoryScope  # noqa: E402

SCOPE = DirectoryScope(HERE)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    SCOPE.leave(item, nextitem)  # HaRP, the app container, Nextcloud and dockerd stop after the tier


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reason = missing()
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.harp)
            # The first test also waits for the images (a fresh machine builds them: minutes).
            item.add_marker(pytest.mark.timeout(1500))
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"HaRP tier: {reason}"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A failed test reports the app container's and HaRP's log lines (CI keeps only the test output):
    HaRP's say which hop held a request (haproxy's timers and termination state, the agent's verdicts)."""
    outcome = yield
    report = outcome.get_result()
    stack = getattr(item, "funcargs", {}).get("harp")
    if report.failed and isinstance(stack, HarpStack):
        lines = [line for line in stack.log().splitlines() if " INFO httpx:" not in line][-60:]
        report.sections.append(("app container log (last 60 lines)", "\n".join(lines)))
        since = f"{call.start - 1:.0f}"  # this phase's lines only; the agent's per-frame chatter left out
        harp = [line for line in stack.harp_log(since).splitlines()
                if "/heartbeat" not in line and "matching handlers" not in line and "combined payload" not in line]
        report.sections.append((f"HaRP log during the failed {call.when} (last 120 lines)", "\n".join(harp[-120:])))


@pytest.fixture(scope="session")
def harp_image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Docker running and the images built (or taken from the machine's cache)."""
    logs = tmp_path_factory.mktemp("harp-logs")
    daemon = Dockerd(logs / "dockerd.log").start()
    stop = SCOPE.add(daemon.stop)
    try:
        yield build_images(logs / "build.log")
    finally:
        stop()


@pytest.fixture(scope="session")
def harp_nc() -> Iterator[RealNextcloud]:
    directory = Path(os.environ.get("HARP_NC_DIR") or REPO / ".nextcloud-harp")
    nc = RealNextcloud(directory, int(os.environ.get("HARP_NC_PORT") or 8102), kit=KIT).prepare()
    stop = SCOPE.add(nc.stop)
    try:
        yield nc
    finally:
        stop()


@pytest.fixture(scope="session")
def harp(harp_image: str, harp_nc: RealNextcloud, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HarpStack]:
    """HaRP registered as a deploy daemon, our app installed from info.xml and its first pass done."""
    stack = HarpStack(harp_nc, tmp_path_factory.mktemp("harp"), harp_image).start()
    stop = SCOPE.add(stack.stop)
    try:
        stack.install_seconds = stack.install()
        yield stack
    finally:
        stop()
