"""What the index state keeps about team folders: which each user has, and where it is mounted for them
(see :mod:`semantic_mcp.sources.team_folders`, which learns it)."""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from typing import Any

TEAM_FOLDERS_SCHEMA = """
CREATE TABLE IF NOT EXISTS team_folders (  -- a user's team folders (groupfolders), learned at reconciliation
    user TEXT NOT NULL, folder_id TEXT NOT NULL, mount_point TEXT NOT NULL,
    PRIMARY KEY (user, folder_id)
);
CREATE INDEX IF NOT EXISTS team_folders_members ON team_folders (folder_id);
"""


class TeamFolderRecords:
    """Part of :class:`~.state.IndexState`, on its connection."""

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]: ...  # provided by IndexState

    def _rows(self, sql: str, *args: Any) -> list[sqlite3.Row]: ...  # provided by IndexState

    def team_folders(self, user: str) -> dict[str, str]:
        """``user``'s team folders as last seen: folder id -> mount point (``/Team Projects``)."""
        rows = self._rows("SELECT folder_id, mount_point FROM team_folders WHERE user = ?", user)
        return {row["folder_id"]: row["mount_point"] for row in rows}

    def set_team_folders(self, user: str, mounts: dict[str, str]) -> bool:
        """Record ``user``'s team folders; True when they differ from what was recorded (one gained,
        lost or moved: the user's files then need a full listing)."""
        if mounts == self.team_folders(user):
            return False
        with self._tx() as db:
            db.execute("DELETE FROM team_folders WHERE user = ?", (user,))
            db.executemany("INSERT INTO team_folders (user, folder_id, mount_point) VALUES (?, ?, ?)",
                           [(user, folder_id, mount) for folder_id, mount in mounts.items()])
        return True

    def team_folder_members(self, folder_id: str) -> list[str]:
        """The users known to have this team folder (members the app indexes)."""
        return [row["user"] for row in self._rows("SELECT user FROM team_folders WHERE folder_id = ?", folder_id)]
