"""The app's storage readable by the app's account alone.

The storage holds every user's full text (keyword index, embedding cache, queue payloads), their
vectors, the OAuth database (client secrets, token hashes) and the secret's fingerprint. With the
default umask (022) all of it was readable by every local account of the host or container. So
the process creates files 0600 and directories 0700 (umask 077), and on start a storage made
earlier with wider modes is tightened.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def keep_private(storage: Path) -> None:
    """Set the umask to 077 and take group and other permissions off everything under ``storage``."""
    os.umask(0o077)
    storage.mkdir(parents=True, exist_ok=True)
    _tighten(storage)
    for root, dirs, files in os.walk(storage):
        for name in (*dirs, *files):
            _tighten(Path(root) / name)


def _tighten(path: Path) -> None:
    with contextlib.suppress(OSError):  # a file removed meanwhile, or one we do not own
        mode = path.lstat().st_mode
        if not path.is_symlink() and mode & 0o077:
            path.chmod(mode & 0o700)
