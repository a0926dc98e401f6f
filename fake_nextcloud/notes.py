"""The Notes app as a view over the user's ``Notes`` folder (its API v1 is in :mod:`fake_nextcloud.notes_api`).

A note *is* a Markdown file: ``/<user>/files/Notes/<Category>/<Title>.md``, note id == file id.
So notes change through WebDAV too, and every Notes API call emits the file events the real
app causes (creating a note: one NodeCreatedEvent and two NodeWrittenEvents).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from .files import FileStore, Node
from .responses import JsonError, php_json

NOTES_DIR = "Notes"
API_VERSIONS = {"X-Notes-API-Versions": "0.2, 1.3, 1.4"}
NOT_FOUND = JsonError(404, {"errorType": "OCA\\Notes\\Service\\NoteDoesNotExistException"}, API_VERSIONS)
_FORBIDDEN_CHARS = re.compile(r'[*|/\\:"<>?]')


def _note_files(folder: Node) -> list[Node]:
    return [n for n in folder.walk() if not n.is_dir and n.name.rsplit(".", 1)[-1] in ("md", "txt")]


def note_json(node: Node) -> dict[str, Any]:
    rel = node.rel_path()
    folder = rel.rpartition("/")[0]
    data: dict[str, Any] = {
        "id": node.id,
        "title": node.name.rsplit(".", 1)[0],
        "modified": int(node.mtime),
        "category": folder[len(NOTES_DIR) + 1 :] if folder != NOTES_DIR else "",
        "favorite": node.favorite,
        "readonly": False,
        "internalPath": "/" + rel,
        "shareTypes": [],
        "isShared": False,
        "error": False,
        "errorType": "",
        "content": node.read().decode("utf-8", errors="replace"),
    }
    data["etag"] = hashlib.md5(php_json(data)).hexdigest()
    return data


def title_from(title: str | None, content: str) -> str:
    """Notes derives a missing title from the first line and strips characters files cannot have."""
    if not title:
        first = next((line for line in content.splitlines() if line.strip()), "")
        title = first.lstrip("#*-> \t")[:100]
    title = _FORBIDDEN_CHARS.sub("", title).strip()
    return title or "New note"


class Notes:
    """Operations of the Notes API; callers hold the state lock."""

    def __init__(self, files: FileStore) -> None:
        self._files = files

    def folder(self, uid: str) -> Node:
        return self._files.makedirs(uid, NOTES_DIR)

    def all(self, uid: str) -> list[Node]:
        return sorted(_note_files(self.folder(uid)), key=lambda n: n.id)

    def get(self, uid: str, note_id: int) -> Node:
        node = self._files.by_id.get(note_id)
        if node is None or node not in _note_files(self.folder(uid)):
            raise NOT_FOUND
        return node

    def _free_path(self, uid: str, category: str, title: str, current: Node | None = None) -> str:
        base = "/".join(p for p in (NOTES_DIR, category.strip("/")) if p)
        folder = self._files.makedirs(uid, base)
        name, n = f"{title}.md", 1
        while name in folder.children and folder.children[name] is not current:
            n += 1
            name = f"{title} ({n}).md"
        return f"{base}/{name}"

    def create(
        self,
        uid: str,
        content: str = "",
        title: str | None = None,
        category: str = "",
        modified: int | None = None,
        favorite: bool = False,
    ) -> Node:
        path = self._free_path(uid, category, title_from(title, content))
        files = self._files
        node, _ = files.write(uid, path, b"")
        files.write(uid, path, content.encode())
        node.favorite = favorite
        if modified:
            node.mtime = float(modified)
        return node

    def update(
        self,
        uid: str,
        node: Node,
        content: str | None = None,
        title: str | None = None,
        category: str | None = None,
        modified: int | None = None,
        favorite: bool | None = None,
    ) -> Node:
        """As the Notes app: new content is a write (NodeWrittenEvent), then a new title or
        category moves the file (NodeRenamedEvent); the note keeps its id."""
        files = self._files
        current = note_json(node)
        if content is not None:
            files.write(uid, node.rel_path(), content.encode())
        if title is not None or category is not None:
            new_title = title_from(title, "") if title is not None else current["title"]
            new_category = category if category is not None else current["category"]
            if (new_title, new_category) != (current["title"], current["category"]):
                files.move(uid, node.rel_path(), self._free_path(uid, new_category, new_title, node))
        if modified:
            node.mtime = float(modified)
        if favorite is not None:
            node.favorite = favorite
        return node

    def delete(self, uid: str, node: Node) -> None:
        self._files.delete(uid, node.rel_path())
