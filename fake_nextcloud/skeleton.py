"""Nextcloud's example files, as a real server copies them into a new account at its first login.

``data/skeleton`` holds the text files of Nextcloud 32.0.1's ``core/skeleton`` byte for byte (the
Readme files, the Markdown templates and "Templates credits.md"); the office templates, PDFs,
photos and video are left out for size. Off by default in the seeds, so tests and the demo see
only their own content unless they ask for these.
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .server import FakeNextcloud

_SKELETON = resources.files(__package__) / "data" / "skeleton"


def skeleton_files() -> dict[str, bytes]:
    """Path under the user's home (no leading slash) -> content."""
    found: dict[str, bytes] = {}

    def walk(folder, prefix: str) -> None:
        for entry in folder.iterdir():
            if entry.is_dir():
                walk(entry, f"{prefix}{entry.name}/")
            else:
                found[f"{prefix}{entry.name}"] = entry.read_bytes()

    walk(_SKELETON, "")
    return dict(sorted(found.items()))


def put_skeleton(fake: FakeNextcloud, user: str) -> dict[str, int]:
    """Copy the example files into ``user``'s home; returns their file ids by path."""
    return {path: fake.put_file(user, path, content) for path, content in skeleton_files().items()}
