"""Session fixtures that end when the run leaves their directory.

pytest's "package" scope ends with a directory only where it has an ``__init__.py``. The real and
HaRP tiers run first; with session scope their Nextcloud, HaRP and the app (model loaded, reconciling)
kept running, and taking CPU, through the whole fast tier after them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


class DirectoryScope:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._teardowns: list[Callable[[], None]] = []

    def add(self, teardown: Callable[[], None]) -> Callable[[], None]:
        """``teardown``, run once: when the run leaves the directory or by the fixture, whichever is first."""
        done = False

        def once() -> None:
            nonlocal done
            if not done:
                done = True
                teardown()

        self._teardowns.append(once)
        return once

    def _inside(self, item: pytest.Item | None) -> bool:
        return item is not None and self.directory in Path(str(item.fspath)).resolve().parents

    def leave(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        """Call from ``pytest_runtest_teardown`` (trylast): after the directory's last test, in reverse."""
        if self._inside(item) and not self._inside(nextitem):
            while self._teardowns:
                self._teardowns.pop()()
