"""Deck 1.16's REST API (``/apps/deck/api/v{version}/boards…``) over the model in :mod:`fake_nextcloud.deck`."""

from __future__ import annotations

import hashlib
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .auth import requires_user
from .deck import DENIED, deck_date, etag_of
from .responses import JsonError, json_response, php_json, random_request_id, request_params


def _answer(data: Any, uid: str, etag: str | None = None) -> Response:
    headers = {"X-User-Id": uid}
    if etag:
        headers["ETag"] = f'"{etag}"'
    return json_response(data, headers=headers)


def _flag(value: Any) -> bool:
    return value in (True, 1, "1", "true", "True")


@requires_user
async def boards(request: Request) -> Response:
    nc, uid = request.app.state.nc, request.state.user
    if request.method == "POST":
        params = await request_params(request)
        if not params.get("title"):
            raise JsonError(400, {"status": 400, "message": "title must be provided"})
        with nc.lock:
            board = nc.deck.create_board(uid, params["title"], params.get("color", "0082c9"))
            return _answer(nc.deck.board_json(board, uid), uid)
    if "if-modified-since" in request.headers:
        request_id = random_request_id()
        raise JsonError(
            500,
            {
                "status": 500,
                "message": "Internal server error: Please contact the server administrator if this error "
                f'reappears multiple times, please include the request ID "{request_id}" below in your report.',
                "requestId": request_id,
            },
        )
    details = _flag(request.query_params.get("details"))
    with nc.lock:
        data = [nc.deck.board_json(b, uid, details) for b in nc.deck.visible_boards(uid)]
    return _answer(data, uid, hashlib.md5(php_json(data)).hexdigest())


@requires_user
async def board(request: Request) -> Response:
    nc, uid = request.app.state.nc, request.state.user
    board_id = request.path_params["board_id"]
    with nc.lock:
        if request.method == "GET":
            b = nc.deck.board_for(uid, board_id)
            return _answer(nc.deck.board_json(b, uid), uid, etag_of(b.last_modified))
        b = nc.deck.board_for(uid, board_id, "PERMISSION_MANAGE")
    params = await request_params(request)
    with nc.lock:
        if request.method == "DELETE":
            nc.deck.update_board(b, deleted_at=int(nc.clock.time()))
        else:
            fields = {k: params[k] for k in ("title", "color") if k in params}
            nc.deck.update_board(b, archived=_flag(params.get("archived", b.archived)), **fields)
        return _answer(nc.deck.board_json(b, uid), uid)


@requires_user
async def acl(request: Request) -> Response:
    nc, uid = request.app.state.nc, request.state.user
    params = await request_params(request)
    with nc.lock:
        b = nc.deck.board_for(uid, request.path_params["board_id"], "PERMISSION_SHARE")
        if request.method == "DELETE":
            entry = next((a for a in b.acl if a.id == request.path_params["acl_id"]), None)
            if entry is None:
                raise DENIED
            b.acl.remove(entry)
            return _answer(nc.deck.acl_json(entry), uid)
        participant = params.get("participant", "")
        if participant not in nc.users:
            raise JsonError(400, {"status": 400, "message": "participant must be provided"})
        entry = nc.deck.add_acl(
            b,
            participant,
            _flag(params.get("permissionEdit")),
            _flag(params.get("permissionShare")),
            _flag(params.get("permissionManage")),
        )
        return _answer(nc.deck.acl_json(entry), uid)


@requires_user
async def stacks(request: Request) -> Response:
    nc, uid = request.app.state.nc, request.state.user
    params = await request_params(request)
    with nc.lock:
        if request.method == "POST":
            b = nc.deck.board_for(uid, request.path_params["board_id"], "PERMISSION_MANAGE")
            if not params.get("title"):
                raise JsonError(400, {"status": 400, "message": "title must be provided"})
            stack = nc.deck.create_stack(b, params["title"], int(params.get("order", 0)))
            return _answer(nc.deck.stack_json(stack, with_cards=False), uid)
        b = nc.deck.board_for(uid, request.path_params["board_id"])
        return _answer([nc.deck.stack_json(s, with_cards=True) for s in nc.deck.board_stacks(b)], uid)


@requires_user
async def stack(request: Request) -> Response:
    nc, uid = request.app.state.nc, request.state.user
    with nc.lock:
        s = nc.deck.stack_for(uid, request.path_params["stack_id"])
        return _answer(nc.deck.stack_json(s, with_cards=True), uid)


@requires_user
async def cards(request: Request) -> Response:
    nc, uid = request.app.state.nc, request.state.user
    params = await request_params(request)
    if not params.get("title"):
        raise JsonError(400, {"status": 400, "message": "title must be provided"})
    with nc.lock:
        s = nc.deck.stack_for(uid, request.path_params["stack_id"], "PERMISSION_EDIT")
        c = nc.deck.create_card(
            uid,
            s,
            params["title"],
            type=params.get("type", "plain"),
            order=int(params.get("order", 999)),
            description=params.get("description") or "",
            duedate=params.get("duedate"),
        )
        return _answer(nc.deck.card_json(c, attachments=[]), uid)


@requires_user
async def card(request: Request) -> Response:
    nc, uid = request.app.state.nc, request.state.user
    card_id = request.path_params["card_id"]
    if request.method == "GET":
        with nc.lock:
            c = nc.deck.card_for(uid, card_id, allow_deleted=True)
            return _answer(nc.deck.card_json(c, attachments=[]), uid, etag_of(c.last_modified))
    params = await request_params(request)
    with nc.lock:
        c = nc.deck.card_for(uid, card_id, "PERMISSION_EDIT")
        if request.method == "DELETE":
            nc.deck.delete_card(uid, c)
        else:
            for required in ("title", "type", "owner"):
                if not params.get(required):
                    raise JsonError(400, {"status": 400, "message": f"{required} must be provided"})
            nc.deck.update_card(
                uid,
                c,
                title=params["title"],
                type=params["type"],
                owner=params["owner"],
                description=params.get("description") or "",
                order=int(params.get("order", 0)),
                duedate=params.get("duedate"),
                archived=_flag(params.get("archived", c.archived)),
                done=deck_date(params.get("done")),
            )
        return _answer(nc.deck.card_json(c, attachments=[]), uid)


@requires_user
async def card_label(request: Request) -> Response:
    nc, uid = request.app.state.nc, request.state.user
    params = await request_params(request)
    with nc.lock:
        c = nc.deck.card_for(uid, request.path_params["card_id"], "PERMISSION_EDIT")
        nc.deck.set_label(uid, c, int(params.get("labelId", 0)), request.url.path.endswith("/assignLabel"))
        return _answer(nc.deck.card_json(c, attachments=[]), uid)


_BASE = "/apps/deck/api/v{version}/boards"
_CARDS = _BASE + "/{board_id:int}/stacks/{stack_id:int}/cards"
ROUTES = [
    Route(_BASE, boards, methods=["GET", "POST"]),
    Route(_BASE + "/{board_id:int}", board, methods=["GET", "PUT", "DELETE"]),
    Route(_BASE + "/{board_id:int}/acl", acl, methods=["POST"]),
    Route(_BASE + "/{board_id:int}/acl/{acl_id:int}", acl, methods=["DELETE"]),
    Route(_BASE + "/{board_id:int}/stacks", stacks, methods=["GET", "POST"]),
    Route(_BASE + "/{board_id:int}/stacks/{stack_id:int}", stack, methods=["GET"]),
    Route(_CARDS, cards, methods=["POST"]),
    Route(_CARDS + "/{card_id:int}", card, methods=["GET", "PUT", "DELETE"]),
    Route(_CARDS + "/{card_id:int}/assignLabel", card_label, methods=["PUT"]),
    Route(_CARDS + "/{card_id:int}/removeLabel", card_label, methods=["PUT"]),
]
