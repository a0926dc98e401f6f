"""webhook_listeners' OCS API: register, list, replace and delete webhooks (admins and ExApps only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .auth import Caller, NotLoggedIn, identify
from .responses import OcsError, ocs_response, request_params

if TYPE_CHECKING:
    from .state import State


def _manager(request: Request) -> tuple[State, Caller]:
    """webhook_listeners is for admins and ExApps only."""
    nc = request.app.state.nc
    caller = identify(request, nc)
    if caller.app_id:
        return nc, caller
    if not caller.user:
        raise NotLoggedIn()
    if not nc.users[caller.user].admin:
        raise OcsError(403, "Logged in account must be an admin")
    return nc, caller


async def webhooks_collection(request: Request) -> Response:
    nc, caller = _manager(request)
    if request.method == "GET":
        uri = request.query_params.get("uri")
        with nc.lock:
            data = [h.json() for h in nc.webhooks.hooks.values() if uri is None or h.uri == uri]
        return ocs_response(request, data)
    params = await request_params(request)
    with nc.lock:
        hook = nc.webhooks.register(app_id=caller.app_id, user_id=None if caller.app_id else caller.user, params=params)
        return ocs_response(request, hook.json())


async def webhook_item(request: Request) -> Response:
    nc, _caller = _manager(request)
    hook_id = request.path_params["hook_id"]
    params = await request_params(request) if request.method == "POST" else {}
    with nc.lock:
        hook = nc.webhooks.hooks.get(hook_id)
        if hook is None:
            raise OcsError(404, "Webhook not found")
        if request.method == "GET":
            return ocs_response(request, hook.json())
        if request.method == "DELETE":
            del nc.webhooks.hooks[hook_id]
            return ocs_response(request, True)
        updated = nc.webhooks.register(app_id=hook.app_id, user_id=hook.user_id, params=params, hook_id=hook_id)
        return ocs_response(request, updated.json())


async def webhooks_by_app(request: Request) -> Response:
    nc, _ = _manager(request)
    with nc.lock:
        return ocs_response(request, nc.webhooks.unregister_app(request.path_params["app_id"]))


_BASE = "/ocs/v{v:int}.php/apps/webhook_listeners/api/v1/webhooks"
ROUTES = [
    Route(_BASE, webhooks_collection, methods=["GET", "POST"]),
    Route(_BASE + "/byappid/{app_id}", webhooks_by_app, methods=["DELETE"]),
    Route(_BASE + "/{hook_id:int}", webhook_item, methods=["GET", "POST", "DELETE"]),
]
