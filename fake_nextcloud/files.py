"""Users' file trees: nodes with stable file ids, shares, trash bin and system tags.

Everything a real server keeps consistent is kept consistent here, because the app relies on it:
a file id survives renames, moves, sharing and restore from trash; every change propagates a new
ETag and mtime up to the root (and to the roots of users a folder is shared with); and each
operation emits the file events Nextcloud emits, in the same order and shape.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .clock import Clock
from .davxml import DavError, not_found
from .mime import mimetype_for

NODE_EVENT = "OCP\\Files\\Events\\Node\\"
Emit = Callable[[str, str, dict], None]


@dataclass(eq=False)
class Generated:
    """File content produced on demand from a repeating pattern, so a test can have a file of
    hundreds of megabytes without holding it in memory."""

    size: int
    pattern: bytes = b"The quick brown fox jumps over the lazy dog.\n"

    def read(self, start: int = 0, end: int | None = None) -> bytes:
        end = self.size if end is None else min(end, self.size)
        if start >= end:
            return b""
        n = len(self.pattern)
        offset = start % n
        repeats = (end - start + offset) // n + 1
        return (self.pattern * repeats)[offset : offset + end - start]

    def chunks(self, start: int, end: int, chunk: int = 1 << 20) -> Iterator[bytes]:
        for pos in range(start, end, chunk):
            yield self.read(pos, min(pos + chunk, end))


Content = bytes | Generated


@dataclass(eq=False)
class Node:
    id: int
    owner: str
    name: str
    is_dir: bool
    parent: Node | None = None
    children: dict[str, Node] = field(default_factory=dict)
    content: Content = b""
    mtime: float = 0.0
    etag: str = ""
    mimetype: str = ""
    favorite: bool = False

    @property
    def size(self) -> int:
        if self.is_dir:
            return sum(c.size for c in self.children.values())
        return self.content.size if isinstance(self.content, Generated) else len(self.content)

    def rel_path(self) -> str:
        """Path below the owner's home, ``""`` for the home itself."""
        parts = []
        node: Node | None = self
        while node is not None and node.parent is not None:
            parts.append(node.name)
            node = node.parent
        return "/".join(reversed(parts))

    def ancestors(self) -> Iterator[Node]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def walk(self) -> Iterator[Node]:
        yield self
        for child in list(self.children.values()):
            yield from child.walk()

    def read(self, start: int = 0, end: int | None = None) -> bytes:
        if isinstance(self.content, Generated):
            return self.content.read(start, end)
        return self.content[start:end]


@dataclass
class Share:
    id: int
    node: Node
    owner: str
    recipient: str
    permissions: int
    stime: int
    target: str
    team_folder: int = 0  # a team folder's mount (team_folders.py), not a share


@dataclass
class TrashItem:
    node: Node
    location: str
    deleted_at: int

    @property
    def trash_name(self) -> str:
        return f"{self.node.name}.d{self.deleted_at}"


@dataclass
class Tag:
    id: int
    name: str
    user_visible: bool = True
    user_assignable: bool = True


class FileStore:
    """All users' files. Callers hold the state lock; methods raise Sabre errors (DavError)."""

    def __init__(self, emit: Emit, new_id: Callable[[], int], clock: Clock) -> None:
        self._emit = emit
        self.clock = clock
        self._new_id = new_id
        self._seq = itertools.count(1)
        self.homes: dict[str, Node] = {}
        self.by_id: dict[int, Node] = {}
        self.shares: dict[int, Share] = {}
        self.trash: dict[str, list[TrashItem]] = {}
        self.tags: dict[int, Tag] = {}
        self.tag_map: dict[int, set[int]] = {}
        self._share_ids = itertools.count(1)
        self._tag_ids = itertools.count(1)

    # ---- identity and paths -------------------------------------------------------------

    def _file_etag(self, node: Node) -> str:
        return hashlib.md5(f"{node.id}:{node.mtime}:{next(self._seq)}".encode()).hexdigest()

    def _dir_etag(self) -> str:
        return f"{int(time.time() * 1_000_000) + next(self._seq):013x}"[-13:]

    def _new_node(self, owner: str, name: str, is_dir: bool, content: Content = b"") -> Node:
        node = Node(self._new_id(), owner, name, is_dir, content=content, mtime=self.clock.time())
        node.mimetype = mimetype_for(name, is_dir)
        node.etag = self._dir_etag() if is_dir else self._file_etag(node)
        self.by_id[node.id] = node
        return node

    def ensure_home(self, uid: str) -> Node:
        if uid not in self.homes:
            self.homes[uid] = self._new_node(uid, "", True)
            self.trash[uid] = []
        return self.homes[uid]

    def drop_home(self, uid: str) -> None:
        """A deleted account: its files (with their ids), its shares either way and its trash go."""
        home = self.homes.pop(uid, None)
        self.trash.pop(uid, None)
        for share_id in [i for i, s in self.shares.items() if uid in (s.owner, s.recipient)]:
            del self.shares[share_id]
        for node_id in [i for i, n in self.by_id.items() if n.owner == uid or n is home]:
            del self.by_id[node_id]

    # ---- team folders: none here; team_folders.TeamFolderFiles adds them -------------------------

    def team_folder_of(self, node: Node) -> Any:
        """The team folder ``node`` lies in (or is), or None."""
        return None

    def denied_to(self, uid: str, node: Node) -> bool:
        """Whether an ACL takes read of ``node`` from ``uid``."""
        return False

    def event_path(self, node: Node, actor: str | None = None) -> str:
        """The node's path in events: its owner's, or in a team folder the writer's (``actor``)."""
        if actor and self.team_folder_of(node) is not None and (seen := self.user_path(actor, node)) is not None:
            return f"/{actor}/files/{seen}"
        rel = node.rel_path()
        return f"/{node.owner}/files" + (f"/{rel}" if rel else "")

    def mounts(self, uid: str) -> dict[str, Share]:
        return {s.target: s for s in self.shares.values() if s.recipient == uid}

    def user_path(self, uid: str, node: Node) -> str | None:
        """Where ``uid`` sees ``node`` (relative to their home), or None if they cannot see it."""
        if node.owner == uid and (node is self.homes.get(uid) or self.homes.get(uid) in node.ancestors()):
            return node.rel_path()
        if self.denied_to(uid, node):
            return None
        for share in self.mounts(uid).values():
            if share.node is node:
                return share.target
            if share.node in node.ancestors():
                return share.target + "/" + node.rel_path()[len(share.node.rel_path()) + 1 :]
        return None

    def resolve(self, uid: str, path: str) -> Node:
        node = self.ensure_home(uid)
        walked: list[str] = []
        for i, seg in enumerate(s for s in path.split("/") if s):
            child = node.children.get(seg) if node.is_dir else None
            if child is None and i == 0 and seg in self.mounts(uid):
                child = self.mounts(uid)[seg].node
            if child is None or self.denied_to(uid, child):
                raise not_found(f"File with name /{'/'.join(walked)}/{seg} could not be located")
            walked.append(seg)
            node = child
        return node

    def find(self, uid: str, path: str) -> Node | None:
        try:
            return self.resolve(uid, path)
        except DavError:
            return None

    def _parent_and_name(self, uid: str, path: str, conflict_if_missing: bool) -> tuple[Node, str]:
        """The folder an operation creates into; Sabre answers 409 (MKCOL, MOVE) or 404 (PUT)."""
        parent_path, _, name = path.strip("/").rpartition("/")
        try:
            parent = self.resolve(uid, parent_path)
        except DavError:
            if conflict_if_missing:
                raise DavError(409, "Sabre\\DAV\\Exception\\Conflict", "Parent node does not exist") from None
            raise
        if not parent.is_dir:
            raise DavError(409, "Sabre\\DAV\\Exception\\Conflict", "Parent node is not a collection")
        return parent, name

    # ---- change propagation and events --------------------------------------------------

    def _changed(self, node: Node, content_changed: bool = True) -> None:
        """New ETag and mtime for the node (if its content changed) and all its ancestors,
        and for the homes of users who see the node through a share."""
        now = self.clock.time()
        if content_changed:
            node.mtime = now
            node.etag = self._dir_etag() if node.is_dir else self._file_etag(node)
        chain = [node, *node.ancestors()]
        for ancestor in chain[1:]:
            ancestor.mtime = max(ancestor.mtime, now)
            ancestor.etag = self._dir_etag()
        for share in self.shares.values():
            if share.node in chain:
                home = self.ensure_home(share.recipient)
                home.mtime = max(home.mtime, now)
                home.etag = self._dir_etag()

    def _ref(self, node: Node | None, path: str | None = None, actor: str | None = None) -> dict:
        """Serialize a node as webhook_listeners does: no id for a node that does not exist."""
        if node is None:
            return {"path": path}
        return {"id": node.id, "path": self.event_path(node, actor)}

    def _node_event(self, name: str, actor: str, node: Node | None, path: str | None = None) -> None:
        self._emit(NODE_EVENT + name, actor, {"node": self._ref(node, path, actor)})

    def _pair_event(self, name: str, actor: str, source: dict, target: dict) -> None:
        self._emit(NODE_EVENT + name, actor, {"source": source, "target": target})

    # ---- operations -----------------------------------------------------------------------

    def write(self, uid: str, path: str, content: Content, actor: str | None = None) -> tuple[Node, bool]:
        """Create or overwrite a file (WebDAV PUT). Returns the node and whether it was created."""
        actor = actor or uid
        parent, name = self._parent_and_name(uid, path, conflict_if_missing=False)
        existing = parent.children.get(name) if parent.is_dir else None
        if existing is None and parent is self.homes.get(uid) and name in self.mounts(uid):
            existing = self.mounts(uid)[name].node
        if existing is not None and existing.is_dir:
            raise DavError(405, "Sabre\\DAV\\Exception\\MethodNotAllowed", "PUT is not allowed on non-files.")
        if existing is not None:
            self._node_event("BeforeNodeWrittenEvent", actor, existing)
            existing.content = content
            self._changed(existing)
            self._node_event("NodeWrittenEvent", actor, existing)
            return existing, False
        new_path = f"{self.event_path(parent, actor)}/{name}"
        self._node_event("BeforeNodeCreatedEvent", actor, None, new_path)
        self._node_event("BeforeNodeWrittenEvent", actor, None, new_path)
        node = self._attach(parent, self._new_node(parent.owner, name, False, content))
        self._node_event("NodeCreatedEvent", actor, node)
        self._node_event("NodeWrittenEvent", actor, node)
        return node, True

    def _attach(self, parent: Node, node: Node) -> Node:
        node.parent = parent
        parent.children[node.name] = node
        self._changed(node, content_changed=False)
        return node

    def _detach(self, node: Node) -> None:
        parent = node.parent
        assert parent is not None
        del parent.children[node.name]
        node.parent = None
        self._changed(parent, content_changed=False)

    def mkdir(self, uid: str, path: str, actor: str | None = None) -> Node:
        actor = actor or uid
        parent, name = self._parent_and_name(uid, path, conflict_if_missing=True)
        if name in parent.children or (parent is self.homes[uid] and name in self.mounts(uid)):
            raise DavError(
                405, "Sabre\\DAV\\Exception\\MethodNotAllowed", "The resource you tried to create already exists"
            )
        self._node_event("BeforeNodeCreatedEvent", actor, None, f"{self.event_path(parent, actor)}/{name}")
        node = self._attach(parent, self._new_node(parent.owner, name, True))
        self._node_event("NodeCreatedEvent", actor, node)
        return node

    def makedirs(self, uid: str, path: str, actor: str | None = None) -> Node:
        node = self.ensure_home(uid)
        walked = ""
        for seg in (s for s in path.split("/") if s):
            walked = f"{walked}/{seg}"
            node = self.find(uid, walked) or self.mkdir(uid, walked, actor)  # a received mount counts
        return node

    def delete(self, uid: str, path: str, actor: str | None = None) -> None:
        """Move to the owner's trash bin; deleting a received share's root only unshares it."""
        actor = actor or uid
        node = self.resolve(uid, path)
        if node.parent is None:
            raise DavError(403, "Sabre\\DAV\\Exception\\Forbidden", "Permission denied to delete home folder")
        mount = next((s for s in self.mounts(uid).values() if s.node is node), None)
        if mount is not None:
            del self.shares[mount.id]
            self._changed(self.homes[uid], content_changed=False)
            return
        event_path = self.event_path(node, actor)
        self._node_event("BeforeNodeDeletedEvent", actor, node)
        location = node.parent.rel_path()
        self._detach(node)
        self._drop_shares_of(node)
        for n in node.walk():
            self.by_id.pop(n.id, None)
        self.trash[node.owner].append(TrashItem(node, location, int(self.clock.time())))
        self._node_event("NodeDeletedEvent", actor, None, event_path)

    def _drop_shares_of(self, node: Node) -> None:
        inside = {n.id for n in node.walk()}
        for share_id in [s.id for s in self.shares.values() if s.node.id in inside]:
            del self.shares[share_id]

    def _prepare_target(self, uid: str, dest: str, overwrite: bool, actor: str) -> tuple[Node, str, bool]:
        parent, name = self._parent_and_name(uid, dest, conflict_if_missing=True)
        existing = parent.children.get(name)
        if existing is not None:
            if not overwrite:
                raise DavError(
                    412,
                    "Sabre\\DAV\\Exception\\PreconditionFailed",
                    "The destination node already exists, and the overwrite header is set to false",
                )
            self.delete(uid, dest, actor)
        return parent, name, existing is None

    def move(
        self, uid: str, src: str, dest: str, overwrite: bool = True, actor: str | None = None
    ) -> tuple[Node, bool]:
        actor = actor or uid
        node = self.resolve(uid, src)
        if node.parent is None:
            raise DavError(403, "Sabre\\DAV\\Exception\\Forbidden", "Cannot move the home folder")
        parent, name, created = self._prepare_target(uid, dest, overwrite, actor)
        if parent is node or node in parent.ancestors():
            raise DavError(409, "Sabre\\DAV\\Exception\\Conflict", "Cannot move a node into itself")
        source = {"path": self.event_path(node, actor)}
        self._pair_event(
            "BeforeNodeRenamedEvent", actor, self._ref(node, actor=actor),
            {"path": f"{self.event_path(parent, actor)}/{name}"},
        )
        self._detach(node)
        node.name = name
        node.mimetype = mimetype_for(name, node.is_dir)
        for n in node.walk():
            n.owner = parent.owner
        self._attach(parent, node)
        self._pair_event("NodeRenamedEvent", actor, source, self._ref(node, actor=actor))
        return node, created

    def copy(
        self, uid: str, src: str, dest: str, overwrite: bool = True, actor: str | None = None
    ) -> tuple[Node, bool]:
        actor = actor or uid
        node = self.resolve(uid, src)
        parent, name, created = self._prepare_target(uid, dest, overwrite, actor)
        target_path = f"{self.event_path(parent, actor)}/{name}"
        self._pair_event("BeforeNodeCopiedEvent", actor, self._ref(node, actor=actor), {"path": target_path})
        self._node_event("BeforeNodeCreatedEvent", actor, None, target_path)
        self._node_event("BeforeNodeWrittenEvent", actor, None, target_path)
        clone = self._attach(parent, self._clone(node, parent.owner, name))
        self._pair_event("NodeCopiedEvent", actor, self._ref(node, actor=actor), self._ref(clone, actor=actor))
        self._node_event("NodeCreatedEvent", actor, clone)
        self._node_event("NodeWrittenEvent", actor, clone)
        return clone, created

    def _clone(self, node: Node, owner: str, name: str) -> Node:
        clone = self._new_node(owner, name, node.is_dir, node.content)
        for child in node.children.values():
            sub = self._clone(child, owner, child.name)
            sub.parent = clone
            clone.children[sub.name] = sub
        return clone

    # ---- listing and search -------------------------------------------------------------

    def children(self, uid: str, node: Node) -> list[tuple[str, Node]]:
        """(name, node) pairs as ``uid`` sees the folder: the home also lists received shares."""
        items = [(name, child) for name, child in node.children.items() if not self.denied_to(uid, child)]
        if node is self.homes.get(uid):
            items += [(name, share.node) for name, share in self.mounts(uid).items()]
        return sorted(items, key=lambda item: item[0])

    def walk_view(self, uid: str, node: Node, path: str, depth: int) -> Iterator[tuple[str, Node]]:
        """(user path, node) for the node and its descendants down to ``depth`` (-1: all)."""
        yield path, node
        if node.is_dir and depth != 0:
            for name, child in self.children(uid, node):
                yield from self.walk_view(uid, child, f"{path}/{name}".lstrip("/"), depth - 1)

    # ---- trash bin ----------------------------------------------------------------------

    def trash_item(self, uid: str, trash_name: str) -> TrashItem:
        for item in self.trash.get(uid, []):
            if item.trash_name == trash_name:
                return item
        raise not_found(f"File not found: {trash_name} in 'trash'")

    def restore(self, uid: str, trash_name: str) -> Node:
        """Put a trashed node back where it was, with its file id. Real servers fire no file
        event for a restore (the move starts outside the user's files), so neither does this."""
        item = self.trash_item(uid, trash_name)
        self.trash[uid].remove(item)
        parent = self.find(uid, item.location) or self.homes[uid]
        name = item.node.name
        if name in parent.children:
            stem, dot, ext = name.rpartition(".")
            name = f"{stem} (restored).{ext}" if dot and stem else f"{name} (restored)"
        item.node.name = name
        for n in item.node.walk():
            self.by_id[n.id] = n
        return self._attach(parent, item.node)

    def purge(self, uid: str, trash_name: str | None = None) -> None:
        if trash_name is None:
            self.trash[uid] = []
        else:
            self.trash[uid].remove(self.trash_item(uid, trash_name))

    # ---- sharing --------------------------------------------------------------------------

    def share(self, owner: str, path: str, recipient: str, permissions: int = 19) -> Share:
        node = self.resolve(owner, path)
        self.ensure_home(recipient)
        taken = set(self.homes[recipient].children) | set(self.mounts(recipient))
        target, n = node.name, 1
        while target in taken:
            n += 1
            stem, dot, ext = node.name.rpartition(".")
            target = f"{stem} ({n}).{ext}" if dot and stem and not node.is_dir else f"{node.name} ({n})"
        share = Share(next(self._share_ids), node, owner, recipient, permissions, int(self.clock.time()), target)
        self.shares[share.id] = share
        self._changed(self.homes[recipient], content_changed=False)
        return share

    def unshare(self, share_id: int) -> Share:
        share = self.shares.pop(share_id)
        self._changed(self.ensure_home(share.recipient), content_changed=False)
        return share

    # ---- system tags ----------------------------------------------------------------------

    def create_tag(self, name: str, user_visible: bool = True, user_assignable: bool = True) -> Tag:
        if any(t.name == name for t in self.tags.values()):
            raise DavError(409, "Sabre\\DAV\\Exception\\Conflict", f'Tag with name "{name}" already exists')
        tag = Tag(next(self._tag_ids), name, user_visible, user_assignable)
        self.tags[tag.id] = tag
        return tag

    def file_tags(self, file_id: int) -> list[Tag]:
        return [self.tags[t] for t in sorted(self.tag_map.get(file_id, ())) if t in self.tags]

    def set_tag(self, actor: str, file_id: int, tag_id: int, assigned: bool) -> bool:
        """Assign or unassign; returns False if nothing changed. Emits the system-tag events."""
        node = self.by_id.get(file_id)
        if node is None or self.user_path(actor, node) is None:
            raise not_found(f"File with id {file_id} not found")
        if tag_id not in self.tags:
            raise not_found(f"Tag with id {tag_id} not found")
        current = self.tag_map.setdefault(file_id, set())
        if (tag_id in current) == assigned:
            return False
        (current.add if assigned else current.discard)(tag_id)
        node.etag = self._file_etag(node) if not node.is_dir else self._dir_etag()
        verb = "assignTags" if assigned else "unassignTags"
        self._emit("OCP\\SystemTag\\MapperEvent", actor, {
            "eventType": f"OCP\\SystemTag\\ISystemTagObjectMapper::{verb}", "objectType": "files",
            "objectId": str(file_id), "tagIds": [tag_id],
        })
        self._emit(
            "OCP\\SystemTag\\TagAssignedEvent" if assigned else "OCP\\SystemTag\\TagUnassignedEvent",
            actor,
            {"objectType": "files", "objectIds": [str(file_id)], "tagIds": [tag_id]},
        )
        return True
