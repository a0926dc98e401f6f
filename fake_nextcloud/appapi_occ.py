"""AppAPI 34's occ commands and notifications for ExApps, as ``ExAppOccService`` and
``NotificationsController`` behave (read from AppAPI 34.0.1's source, run on the real kit).

* ``POST|GET|DELETE api/v1/occ_command``: register (or replace) one command, read it, remove it.
* :func:`run_occ` is ``occ <name> ...``: AppAPI POSTs ``{"occ": {"arguments": ..., "options": ...}}``
  to the command's ``execute_handler``, signed as the app itself (no user), and copies the body to
  the terminal. Any status but 200 prints only ``[<name>] command executeHandler failed`` and exits 1:
  the app's own words are lost, so an app answers 200 with its sentence.
* ``POST api/v1/notification``: one notification for the user the request is signed as (no user:
  ``Notification::setUser('')`` throws, an error 500).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .appapi import _OCS, _exapp
from .exapps import signed_headers
from .responses import OcsError, ocs_response, request_params

if TYPE_CHECKING:
    from .state import State

async def occ_command(request: Request) -> Response:
    nc, app, _ = _exapp(request)
    params = await request_params(request)
    name = str(params.get("name") or "")
    with nc.lock:
        if request.method == "POST":
            handler = str(params.get("execute_handler") or "")
            if not name or not handler:  # both are required parameters of registerCommand
                raise OcsError(400, "")
            known = app.occ_commands.get(name)  # registering again updates the row, keeping its id
            app.occ_commands[name] = {
                "id": known["id"] if known else sum(len(a.occ_commands) for a in nc.apps.values()) + 1,
                "appid": app.app_id, "name": name, "description": str(params.get("description") or ""),
                "hidden": int(params.get("hidden") or 0), "arguments": list(params.get("arguments") or []),
                "options": list(params.get("options") or []), "usages": list(params.get("usages") or []),
                "execute_handler": handler.lstrip("/"),
            }
            return ocs_response(request, [])
        if name not in app.occ_commands:
            raise OcsError(404, "")
        if request.method == "DELETE":
            del app.occ_commands[name]
            return ocs_response(request, [])
        return ocs_response(request, app.occ_commands[name])


async def notification(request: Request) -> Response:
    nc, app, caller = _exapp(request)
    params = (await request_params(request)).get("params")
    if not isinstance(params, dict):
        raise OcsError(400, "")
    if not caller.user:
        return Response("Internal Server Error", status_code=500)  # setUser(''): InvalidArgumentException
    with nc.lock:
        app.notifications.append((caller.user, params))
    subject = params.get("subject_params") or {}
    return ocs_response(request, {"app": app.app_id, "user": caller.user, "object_type": params.get("object"),
                                  "object_id": params.get("object_id"), "subject": subject.get("rich_subject", "")})


def run_occ(state: State, app_id: str, name: str, arguments: dict[str, Any] | None = None,
            options: dict[str, Any] | None = None, timeout: float = 120.0) -> tuple[int, str]:
    """``occ <name>`` for a command an ExApp registered: (exit code, what the terminal shows).
    Arguments and options the command declares and the caller left out arrive as their defaults."""
    with state.lock:
        app = state.apps[app_id]
        command = app.occ_commands.get(name) if app.enabled else None  # only enabled ExApps' commands exist
        if command is None:
            return 1, f'Command "{name}" is not defined.\n'
    given_args, given_opts = arguments or {}, options or {}
    args = {a["name"]: given_args.get(a["name"], a.get("default")) for a in command["arguments"]} or None
    opts = {o["name"]: given_opts.get(o["name"], False if o["mode"] == "none" else o.get("default"))
            for o in command["options"]} or None
    response = httpx.post(f"{app.url}/{command['execute_handler']}", json={"occ": {"arguments": args, "options": opts}},
                          headers=signed_headers(app, "", language=False), timeout=timeout)
    if response.status_code != 200:
        return 1, f"[{name}] command executeHandler failed\n"
    return 0, response.text


ROUTES = [
    Route(_OCS + "/api/v1/occ_command", occ_command, methods=["GET", "POST", "DELETE"]),
    Route(_OCS + "/api/v1/notification", notification, methods=["POST"]),
]
