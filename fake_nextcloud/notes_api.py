"""The Notes app's API (v1) over the model in :mod:`fake_nextcloud.notes`."""

from __future__ import annotations

import hashlib
from email.utils import formatdate
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .auth import requires_user
from .notes import API_VERSIONS, NOTES_DIR, note_json
from .responses import json_response, php_json, request_params


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
        newest = max((n.mtime for n in nodes), default=nc.clock.time())
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
