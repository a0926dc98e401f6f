"""Another account on the machine or in the container that runs the app.

May: nothing with the app's data. May not: read any user's full text, vectors, queue, the OAuth
database or the secret's fingerprint from the app's storage (nor the secret ``make run`` generated,
see test_an_anonymous_caller).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from stack import Stack

from semantic_mcp.core.storage_modes import keep_private


def wider_than_owner(root: Path) -> list[str]:
    found = []
    for path in [root, *root.rglob("*")]:
        mode = path.lstat().st_mode
        if not stat.S_ISLNK(mode) and mode & 0o077:
            found.append(f"{oct(mode & 0o777)} {path.relative_to(root)}")
    return found


def test_everything_the_app_stored_is_its_alone(stack: Stack) -> None:
    assert (stack.storage / "oauth.db").exists() or list(stack.storage.glob("*.db"))  # it did store things
    assert wider_than_owner(stack.storage) == []


def test_a_storage_made_with_wider_modes_is_tightened(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    (storage / "chroma").mkdir(parents=True)
    (storage / "chroma" / "data.bin").write_bytes(b"vectors")
    (storage / "state.db").write_text("full text")
    for path in (storage, storage / "chroma"):
        path.chmod(0o755)
    for path in (storage / "chroma" / "data.bin", storage / "state.db"):
        path.chmod(0o644)
    previous = os.umask(0o022)
    try:
        keep_private(storage)
        (storage / "new.db").write_text("created after the start")
        assert wider_than_owner(storage) == []
    finally:
        os.umask(previous)
