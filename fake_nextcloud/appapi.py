"""AppAPI 34: ExApp registry and lifecycle, the user-facing proxy, and the OCS API ExApps call.

The lifecycle replays ``occ app_api:app:register`` on a ``manual_install`` daemon (heartbeat,
init, wait for progress 100, heartbeat, enable). The proxy matches routes as AppAPI 34 does
(:func:`fake_nextcloud.appinfo.match_route`: ``/`` + path first, the first route whose path and
verb match decides), and either buffers the whole upstream answer like the PHP proxy or streams
it like HaRP. The ExApp record and the headers AppAPI signs requests with are in
:mod:`fake_nextcloud.exapps`.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Route

from .appinfo import match_route
from .auth import ANONYMOUS, AuthFailed, Caller, NotLoggedIn, identify
from .exapps import ExApp, crawler_client, signed_headers
from .login import session_user
from .outages import MaxDelayReached, max_delay_response
from .responses import OcsError, ocs_response, random_request_id, request_params

if TYPE_CHECKING:
    from .state import State

HOP_BY_HOP = frozenset(
    [
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    ]
)
NOT_FOUND_PAGE = (
    "<!DOCTYPE html>\n<html><head><title>Nextcloud</title></head><body><h2>Page not found</h2></body></html>\n"
)


class ExAppError(RuntimeError):
    """Registration or enabling of an ExApp failed."""


class ExAppManager:
    """Blocking lifecycle calls, made from the test (or CLI) thread, never from the server loop."""

    def __init__(self, state: State, init_timeout: float = 60.0) -> None:
        self._state = state
        self.init_timeout = init_timeout

    def _app(self, app_id: str) -> ExApp:
        with self._state.lock:
            if app_id not in self._state.apps:
                raise KeyError(f"ExApp {app_id!r} is not registered")
            return self._state.apps[app_id]

    def register(
        self,
        app_id: str,
        exapp_url: str,
        secret: str,
        version: str = "1.0.0",
        routes: list[dict] | None = None,
        exapp_host: str | None = None,
        proxy_mode: str = "buffered",
    ) -> ExApp:
        """Raises ExAppError if a step fails; the app then stays registered but disabled, as with
        AppAPI (unregister it before registering it again)."""
        port = urlsplit(exapp_url).port or 80
        app = ExApp(
            app_id,
            exapp_url.rstrip("/"),
            secret,
            version,
            list(routes or []),
            exapp_host or f"nc_app_{app_id}:{port}",
            proxy_mode,
        )
        with self._state.lock:
            if app_id in self._state.apps:
                raise ExAppError(f"ExApp {app_id!r} is already registered")
            self._state.apps[app_id] = app
        deadline = time.monotonic() + self.init_timeout
        with crawler_client() as client:
            self._heartbeat(client, app, deadline)
            init = client.post(f"{app.url}/init", headers=signed_headers(app, "", language=False))
            if init.status_code in (404, 501):  # no /init: AppAPI counts the app as initialized
                app.init_progress.append(100)
            elif init.status_code >= 400:
                raise ExAppError(f"POST /init answered {init.status_code}: {init.text[:200]}")
            self._wait_for_init(app, deadline)
            self._heartbeat(client, app, deadline)
        self.enable(app_id)
        return app

    @staticmethod
    def _heartbeat(client: httpx.Client, app: ExApp, deadline: float) -> None:
        while True:
            try:
                if client.get(f"{app.url}/heartbeat").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise ExAppError(f"ExApp {app.app_id} at {app.url} did not answer GET /heartbeat")
            time.sleep(0.1)

    @staticmethod
    def _wait_for_init(app: ExApp, deadline: float) -> None:
        while True:
            if app.init_error:
                raise ExAppError(f"ExApp {app.app_id} reported an init error: {app.init_error}")
            if app.init_progress and app.init_progress[-1] >= 100:
                return
            if time.monotonic() > deadline:
                raise ExAppError(
                    f"ExApp {app.app_id} did not report init progress 100 in time (got {app.init_progress})"
                )
            time.sleep(0.05)

    def enable(self, app_id: str) -> None:
        """Enable first (the ExApp may call Nextcloud from its handler), roll back on error."""
        app = self._app(app_id)
        app.enabled = True
        with crawler_client() as client:
            response = client.put(f"{app.url}/enabled", params={"enabled": "1"}, headers=signed_headers(app, ""))
        error = self._enabled_error(response)
        if error:
            app.enabled = False
            raise ExAppError(f"ExApp {app_id} refused to enable: {error}")

    def disable(self, app_id: str) -> None:
        app = self._app(app_id)
        with crawler_client() as client:
            response = client.put(f"{app.url}/enabled", params={"enabled": "0"}, headers=signed_headers(app, ""))
        app.enabled = False
        error = self._enabled_error(response)
        if error:
            raise ExAppError(f"ExApp {app_id} reported an error while disabling: {error}")

    @staticmethod
    def _enabled_error(response: httpx.Response) -> str:
        if response.status_code >= 400:
            return f"HTTP {response.status_code}: {response.text[:200]}"
        try:
            return str(response.json().get("error") or "")
        except ValueError:
            return ""

    def unregister(self, app_id: str) -> None:
        """Disable (PUT /enabled?enabled=0) and drop everything the app registered."""
        app = self._app(app_id)
        try:
            if app.enabled:
                self.disable(app_id)
        finally:
            with self._state.lock:
                self._state.apps.pop(app_id, None)
                self._state.webhooks.unregister_app(app_id)


# ---- proxy ------------------------------------------------------------------------------------


def _allowed(route: dict, caller: Caller, state: State) -> bool:
    level = int(route.get("access_level", 1))
    if level == 0:
        return True
    if not caller.user:
        return False
    return level == 1 or state.users[caller.user].admin


def _bruteforce_statuses(route: dict) -> list[int]:
    """``bruteforce_protection``: the ExApp statuses that count as failed attempts (stored as JSON text)."""
    value = route.get("bruteforce_protection") or []
    return [int(status) for status in (json.loads(value) if isinstance(value, str) else value)]


def _count_attempt(nc: State, remote: str, status: int, protected: list[int]) -> None:
    """AppAPI's ``processBruteforce``: a listed status is a failed attempt (action ``app_api``, the same
    counter as failed app authentication); a success after attempts resets them."""
    if status in protected:
        nc.throttler.register_attempt(remote)
    elif 200 <= status < 300 and nc.throttler.attempts(remote):
        nc.throttler.reset(remote)


def _excluded_headers(route: dict) -> list[str]:
    """The headers a route keeps from the ExApp. AppAPI 32.0.0 and 34.0.0 honour only a JSON *array* given at
    registration; a string (as info.xml's ``<headers_to_exclude>["cookie"]</headers_to_exclude>``
    arrives, and as ``--json-info`` may pass it) is stored as ``[]`` (``ExAppMapper::registerExAppRoutes``)."""
    value = route.get("headers_to_exclude") or []
    return [] if isinstance(value, str) else list(value)


def _response_headers(upstream: httpx.Response, drop: frozenset[str]) -> list[tuple[bytes, bytes]]:
    return [(k, v) for k, v in upstream.headers.raw if k.decode().lower() not in drop]


async def proxy(request: Request) -> Response:
    nc: State = request.app.state.nc
    app_id, path = request.path_params["app_id"], request.path_params["path"]
    try:
        caller = identify(request, nc)
    except AuthFailed:
        if request.headers.get("authorization", "").lower().startswith("basic "):
            raise  # a wrong password: Nextcloud answers 401 itself, before the proxy
        caller = ANONYMOUS  # a bearer token Nextcloud does not know: anonymous, Authorization forwarded
    if caller.user is None:
        caller = Caller(session_user(request, nc))  # a logged-in browser
    remote = request.client.host if request.client else "127.0.0.1"
    with nc.lock:
        app = nc.apps.get(app_id)
        route = None
        if app and app.enabled:
            route = match_route(app.routes, path, request.method, lambda route: _allowed(route, caller, nc))
        if app is None or route is None:
            return HTMLResponse(NOT_FOUND_PAGE, status_code=404)
        protected = _bruteforce_statuses(route)
        if protected:
            try:
                nc.throttler.check(remote)  # sleepDelayOrThrowOnMax, before the app is asked
            except MaxDelayReached:
                return max_delay_response()
        app.proxied[path] += 1
    excluded = {h.lower() for h in _excluded_headers(route)} | {"x-origin-ip", "authorization-app-api"}
    headers = [("host", app.host)]
    headers += [(k, v) for k, v in request.headers.items() if k not in excluded and k not in HOP_BY_HOP]
    headers.append(("x-origin-ip", request.client.host if request.client else "127.0.0.1"))
    headers += list(signed_headers(app, caller.user or "", random_request_id()).items())
    if "accept-encoding" not in request.headers:
        headers.append(("accept-encoding", "gzip"))
    client: httpx.AsyncClient = request.app.state.proxy_client
    raw_path = request.scope.get("raw_path", request.url.path.encode()).decode()
    upstream_request = client.build_request(
        request.method,
        app.url + "/" + raw_path.split(f"/proxy/{app_id}/", 1)[1],
        params=request.url.query,
        headers=headers,
        content=await request.body(),
    )
    try:
        # The PHP proxy (Guzzle's defaults) follows the ExApp's redirects itself, server-side (seen on a
        # real Nextcloud 32: it fetched an OAuth client's callback); HaRP, a reverse proxy, passes them on.
        upstream = await client.send(upstream_request, stream=True, follow_redirects=app.proxy_mode == "buffered")
    except httpx.HTTPError:
        return Response(status_code=500)  # AppAPI: "Error during request to ExApp", an empty 500
    if protected:
        _count_attempt(nc, remote, upstream.status_code, protected)
    if app.proxy_mode == "streaming":
        response = StreamingResponse(
            upstream.aiter_raw(), status_code=upstream.status_code, background=BackgroundTask(upstream.aclose)
        )
        response.raw_headers = _response_headers(upstream, HOP_BY_HOP)
        return response
    try:
        body = await upstream.aread()
    finally:
        await upstream.aclose()
    response = Response(body, status_code=upstream.status_code)
    response.raw_headers = [(b"content-length", str(len(body)).encode())]
    response.raw_headers += _response_headers(upstream, HOP_BY_HOP | {"content-encoding"})
    response.raw_headers += _mangled_transfer_encoding(upstream)
    return response


def _mangled_transfer_encoding(upstream: httpx.Response) -> list[tuple[bytes, bytes]]:
    """AppAPI 32's PHP proxy drops the upstream ``Transfer-Encoding`` header only when it is spelled
    exactly so; uvicorn sends ``transfer-encoding: chunked`` in lower case, which is forwarded with
    the body the proxy has already de-chunked (recorded: ``proxy_sse_initialize``), and clients
    fail to read it. Reproduced here: the trailing space keeps our own server (uvicorn) from
    chunking the body itself, and clients strip it, so they see a chunked header on a plain body."""
    return [
        (b"transfer-encoding", value + b" ")
        for key, value in upstream.headers.raw
        if key == b"transfer-encoding" and value.strip().lower() == b"chunked"
    ]


# ---- OCS endpoints for ExApps -----------------------------------------------------------------


def _exapp(request: Request, need_user: bool = False) -> tuple[State, ExApp, Caller]:
    nc: State = request.app.state.nc
    caller = identify(request, nc)
    if not caller.app_id or (need_user and not caller.user):
        raise NotLoggedIn()
    return nc, nc.apps[caller.app_id], caller


async def init_status(request: Request) -> Response:
    nc, app, _ = _exapp(request)
    params = await request_params(request)
    with nc.lock:
        app.init_progress.append(int(params.get("progress", 0)))
        app.init_error = str(params.get("error") or "")
    return ocs_response(request, [])


async def enabled_state(request: Request) -> Response:
    _, app, _ = _exapp(request)
    return ocs_response(request, int(app.enabled))


async def log(request: Request) -> Response:
    nc, app, _ = _exapp(request)
    params = await request_params(request)
    with nc.lock:
        app.logs.append((int(params.get("level", 0)), str(params.get("message", ""))))
    return ocs_response(request, [])


async def users(request: Request) -> Response:
    nc, _, _ = _exapp(request)
    with nc.lock:
        return ocs_response(request, sorted(nc.users))


async def settings_form(request: Request) -> Response:
    nc, app, _ = _exapp(request)
    params = await request_params(request)
    with nc.lock:
        if request.method == "POST":
            form = params.get("formScheme") or {}
            if not form.get("id"):
                raise OcsError(400, "Invalid form scheme")
            app.forms[form["id"]] = form
            return ocs_response(request, [])
        form_id = str(params.get("formId", ""))
        if form_id not in app.forms:
            raise OcsError(404, "Settings form not found")
        if request.method == "DELETE":
            del app.forms[form_id]
            return ocs_response(request, [])
        return ocs_response(request, app.forms[form_id])


async def config_values(request: Request) -> Response:
    """appconfig_ex (``ex-app/config``) and preferences_ex (``ex-app/preference``, per user)."""
    preference = "/ex-app/preference" in request.url.path
    nc, app, caller = _exapp(request, need_user=preference)
    params = await request_params(request)
    keys = [str(k) for k in params.get("configKeys") or []]
    with nc.lock:
        store = app.preferences.setdefault(caller.user or "", {}) if preference else app.config
        if request.url.path.endswith("/get-values"):
            return ocs_response(request, [{"configkey": k, "configvalue": store[k]} for k in keys if k in store])
        if request.method == "DELETE":
            found = [k for k in keys if k in store]
            if not found:
                raise OcsError(404, "No keys found")
            for key in found:
                del store[key]
            return ocs_response(request, len(found))
        key, value = str(params.get("configKey", "")), str(params.get("configValue", ""))
        if not key:
            raise OcsError(400, "Config key can not be empty")
        store[key] = value
        return ocs_response(request, {"appid": app.app_id, "configkey": key, "configvalue": value})


_OCS = "/ocs/v{v:int}.php/apps/app_api"
PROXY_ROUTE = Route(
    "/apps/app_api/proxy/{app_id}/{path:path}",
    proxy,
    methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
)
ROUTES = [
    Route(_OCS + "/ex-app/status", init_status, methods=["PUT"]),
    Route(_OCS + "/ex-app/state", enabled_state, methods=["GET"]),
    Route(_OCS + "/api/v1/log", log, methods=["POST"]),
    Route(_OCS + "/api/v1/users", users, methods=["GET"]),
    Route(_OCS + "/api/v1/ui/settings", settings_form, methods=["GET", "POST", "DELETE"]),
    *(
        Route(f"{_OCS}/api/v1/ex-app/{kind}", config_values, methods=["POST", "DELETE"])
        for kind in ("config", "preference")
    ),
    *(
        Route(f"{_OCS}/api/v1/ex-app/{kind}/get-values", config_values, methods=["POST"])
        for kind in ("config", "preference")
    ),
]
