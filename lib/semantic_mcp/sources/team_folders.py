"""Team folders (the groupfolders app): which a user has, and where they are mounted in their files.

A write into a team folder sends one webhook event, for the writer alone (``/alice/files/Team
Projects/q2.md``); the other members, who see the same node (the same file id) at their own mount
point, get none, and an ACL change sends nothing at all. So the app learns each member's team
folders itself, as that member: a depth-1 PROPFIND of their files root names each mount whose
``nc:group-folder-id`` is set (one request a reconciliation pass). Events are then fanned out to
every member of the folder (:mod:`semantic_mcp.indexing.events`), and each member's copy is fetched
as that member, so an ACL that denies them finds nothing to index.

Team folders are mounted at the top of a member's files (a mount point with a ``/`` in it, which the
app allows but its UI does not offer, is found by full reconciliation only).
"""

from __future__ import annotations

from ..nextcloud.client import NextcloudClient, dav_body, prop_xml

_MOUNT_PROPS = ("oc:fileid", "nc:group-folder-id")


async def team_folder_mounts(nc: NextcloudClient, user: str) -> dict[str, str]:
    """``user``'s team folders: folder id -> mount point (user-relative, ``/Team Projects``)."""
    body = dav_body("d:propfind", prop_xml(_MOUNT_PROPS))
    entries, _ = await nc.dav(user, "PROPFIND", nc.files_root(user) + "/", body, depth="1")
    mounts: dict[str, str] = {}
    for entry in entries:
        folder_id = entry.prop("nc:group-folder-id")
        _, _, below = entry.href.partition(f"/remote.php/dav/files/{user}")
        path = below.rstrip("/")  # hrefs come decoded
        if entry.status == 200 and folder_id and entry.is_collection and path.count("/") == 1:
            mounts[folder_id] = path
    return mounts


def mount_at(mounts: dict[str, str], rel_path: str) -> str | None:
    """The id of the team folder ``rel_path`` (user-relative) lies in, or None."""
    for folder_id, mount in mounts.items():
        if rel_path == mount or rel_path.startswith(mount + "/"):
            return folder_id
    return None
