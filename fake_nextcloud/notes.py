"""The Notes app's API (v1) as a view over the user's ``Notes`` folder.

A note *is* a Markdown file: ``/<user>/files/Notes/<Category>/<Title>.md``, note id == file id.
So notes change through WebDAV too, and every Notes API call emits the file events the real
app causes (creating a note: one NodeCreatedEvent and two NodeWrittenEvents).
"""

from __future__ import annotations

import hashlib
import re
import time
from email.utils import formatdate
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .auth import requires_user
from .files import Node
from .responses import JsonError, json_response, php_json, request_params

if TYPE_CHECKING:
    from .state import State

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

    def __init__(self, state: State) -> None:
        self._state = state

    def folder(self, uid: str) -> Node:
        return self._state.files.makedirs(uid, NOTES_DIR)

    def all(self, uid: str) -> list[Node]:
        return sorted(_note_files(self.folder(uid)), key=lambda n: n.id)

    def get(self, uid: str, note_id: int) -> Node:
        node = self._state.files.by_id.get(note_id)
        if node is None or node not in _note_files(self.folder(uid)):
            raise NOT_FOUND
        return node

    def _free_path(self, uid: str, category: str, title: str, current: Node | None = None) -> str:
        base = "/".join(p for p in (NOTES_DIR, category.strip("/")) if p)
        folder = self._state.files.makedirs(uid, base)
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
        files = self._state.files
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
        files = self._state.files
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
        self._state.files.delete(uid, node.rel_path())


def _answer(data: Any, uid: str, status: int = 200, etag: str | None = None, extra: dict | None = None) -> Response:
    headers = {"X-User-Id": uid, **API_VERSIONS, **(extra or {})}
    if etag:
        headers["ETag"] = f'"{etag}"'
    return json_response(data, status=status, headers=headers)


def _not_modified(request: Request, etag: str) -> bool:
    return request.headers.get("if-none-match", "").strip('"') == etag


def _favorite(value: Any) -> bool | None:
    return None if value is None else value in (True, 1, "1", "true")


@requires_user
async def notes_collection(request: Request) -> Response:
    nc, uid = request.app.state.nc, request.state.user
    params = await request_params(request)
    if request.method == "POST":
        with nc.lock:
            node = nc.notes.create(
                uid,
                content=params.get("content") or "",
                title=params.get("title"),
                category=params.get("category") or "",
                modified=int(params["modified"]) if params.get("modified") else None,
                favorite=bool(_favorite(params.get("favorite"))),
            )
            return _answer(note_json(node), uid)
    prune_before = int(params.get("pruneBefore") or 0)
    exclude = {f for f in str(params.get("exclude", "")).split(",") if f}
    category = params.get("category")
    with nc.lock:
        nodes = [n for n in nc.notes.all(uid) if category is None or note_json(n)["category"] == category]
        data = []
        for node in nodes:
            note = note_json(node)
            if prune_before and note["modified"] < prune_before:
                data.append({"id": note["id"]})
            else:
                data.append({k: v for k, v in note.items() if k not in exclude})
        newest = max((n.mtime for n in nodes), default=time.time())
    etag = hashlib.md5(php_json(data)).hexdigest()
    if _not_modified(request, etag):
        return Response(status_code=304, headers={"ETag": f'"{etag}"'})
    return _answer(data, uid, etag=etag, extra={"Last-Modified": formatdate(newest, usegmt=True)})


@requires_user
async def note_item(request: Request) -> Response:
    nc, uid = request.app.state.nc, request.state.user
    note_id = request.path_params["note_id"]
    params = await request_params(request) if request.method == "PUT" else {}
    with nc.lock:
        node = nc.notes.get(uid, note_id)
        if request.method == "DELETE":
            nc.notes.delete(uid, node)
            return _answer([], uid)
        if request.method == "PUT":
            expected = request.headers.get("if-match", "").strip().strip('"')
            if expected and expected != note_json(node)["etag"]:
                return _answer(note_json(node), uid, status=412)
            nc.notes.update(
                uid,
                node,
                content=params.get("content"),
                title=params.get("title"),
                category=params.get("category"),
                modified=int(params["modified"]) if params.get("modified") else None,
                favorite=_favorite(params.get("favorite")),
            )
        note = note_json(node)
    if request.method == "GET" and _not_modified(request, note["etag"]):
        return Response(status_code=304, headers={"ETag": f'"{note["etag"]}"'})
    return _answer(note, uid, etag=note["etag"])


@requires_user
async def settings(request: Request) -> Response:
    return _answer({"notesPath": NOTES_DIR, "fileSuffix": ".md", "noteMode": "edit"}, request.state.user)


ROUTES = [
    Route("/apps/notes/api/v1/notes", notes_collection, methods=["GET", "POST"]),
    Route("/apps/notes/api/v1/notes/{note_id:int}", note_item, methods=["GET", "PUT", "DELETE"]),
    Route("/apps/notes/api/v1/settings", settings, methods=["GET", "PUT"]),
]
