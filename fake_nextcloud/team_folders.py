"""Team folders (the groupfolders app, "Team folders" since Nextcloud 32), as Nextcloud 34 with
groupfolders 22 behaves (checked on the kit, see tests/real/test_real_team_folders.py):

- a team folder is one storage mounted at the same name in every member's files; every member sees
  the same nodes (the same file ids) there, and ``oc:owner-id`` names the viewer, not a shared owner;
  ``nc:group-folder-id`` (and ``nc:mount-type`` ``group``) mark everything inside it;
- a write sends one set of file events, for the writer alone, with the writer's path
  (``/alice/files/Team Projects/q2.md``): the other members get none;
- an ACL that takes ``read`` from a member hides the folder (and everything below) from them: not
  listed, not found by SEARCH, 404 on GET; giving or taking ACLs, membership or the folder itself
  sends no file event.

Members are users (the fake has no groups): giving a folder to a group is giving it to its members.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from .clock import Clock
from .files import Emit, FileStore, Node

TEAM_OWNER = "__groupfolders"  # the storage's owner in this fake; never shown (owner-id is the viewer's)


@dataclass
class TeamFolder:
    id: int
    name: str
    root: Node
    members: set[str] = field(default_factory=set)
    denied: set[tuple[int, str]] = field(default_factory=set)  # (node id, user) without read


class TeamFolderFiles(FileStore):
    """All users' files, with team folders mounted as shares that carry ``team_folder``."""

    def __init__(self, emit: Emit, new_id: Callable[[], int], clock: Clock) -> None:
        super().__init__(emit, new_id, clock)
        self.team_folders: dict[int, TeamFolder] = {}
        self._team_folder_ids = itertools.count(1)

    def create_team_folder(self, name: str) -> TeamFolder:
        """``groupfolders:create NAME``: an empty folder no one has yet."""
        self.ensure_home(TEAM_OWNER)
        folder_id = next(self._team_folder_ids)
        folder = TeamFolder(folder_id, name, self.mkdir(TEAM_OWNER, f"/{folder_id}"))
        self.team_folders[folder.id] = folder
        return folder

    def set_team_folder_members(self, folder_id: int, members: set[str]) -> None:
        """``groupfolders:group`` / ``group:adduser`` / ``group:removeuser``: who has the folder now."""
        folder = self.team_folders[folder_id]
        leaving = [s.id for s in self.shares.values() if s.team_folder == folder_id and s.recipient not in members]
        for share_id in leaving:
            self.unshare(share_id)
        for user in sorted(members - folder.members):
            share = self.share(TEAM_OWNER, folder.root.rel_path(), user)
            share.team_folder, share.target = folder_id, folder.name
        folder.members = set(members)

    def deny_read(self, folder_id: int, path: str, user: str) -> None:
        """``groupfolders:permissions ID PATH --user USER -- -read`` (``path`` inside the folder)."""
        folder = self.team_folders[folder_id]
        node = folder.root
        for seg in (s for s in path.split("/") if s):
            node = node.children[seg]
        folder.denied.add((node.id, user))
        self._changed(self.ensure_home(user), content_changed=False)

    def delete_team_folder(self, folder_id: int) -> None:
        """``groupfolders:delete``: the folder and its files go, with no file event."""
        self.set_team_folder_members(folder_id, set())
        folder = self.team_folders.pop(folder_id)
        parent = folder.root.parent
        assert parent is not None
        del parent.children[folder.root.name]
        for node in folder.root.walk():
            self.by_id.pop(node.id, None)

    # --- what the rest of the fake asks ------------------------------------------------------------

    def team_folder_of(self, node: Node) -> TeamFolder | None:
        """The team folder ``node`` lies in (or is), or None."""
        if node.owner != TEAM_OWNER:
            return None
        chain = [node, *node.ancestors()]
        return next((f for f in self.team_folders.values() if f.root in chain), None)

    def denied_to(self, user: str, node: Node) -> bool:
        """Whether an ACL of ``node``'s team folder takes read from ``user`` there (or above)."""
        folder = self.team_folder_of(node)
        if folder is None or not folder.denied:
            return False
        return any((n.id, user) in folder.denied for n in (node, *node.ancestors()))
