"""The Starlette application: all routes, and errors rendered in each API family's own format."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from . import appapi, appapi_occ, dav, deck_api, declarative, login, notes_api, ocs, taskprocessing, webhooks_api
from .access_log import AccessLogging
from .auth import AuthFailed, NotLoggedIn
from .davxml import DavError
from .outages import MaintenanceMode, MaxDelayReached, max_delay_response
from .responses import JsonError, OcsError, json_response, ocs_response
from .state import State

NOT_AUTHENTICATED = "Sabre\\DAV\\Exception\\NotAuthenticated"
WWW_AUTHENTICATE = {"WWW-Authenticate": 'Basic realm="Nextcloud", charset="UTF-8"'}


def _family(request: Request) -> str:
    path = request.url.path
    return "dav" if path.startswith("/remote.php/") else "ocs" if path.startswith("/ocs/") else "app"


async def _auth_failed(request: Request, exc: Exception) -> Response:
    """Wrong credentials: Nextcloud's login layer answers before any controller runs."""
    if _family(request) == "dav":
        return DavError(
            401, NOT_AUTHENTICATED, "Username or password was incorrect", headers=WWW_AUTHENTICATE
        ).response()
    return json_response({"message": ""}, status=401)


async def _max_delay(request: Request, exc: Exception) -> Response:
    return max_delay_response()


async def _not_logged_in(request: Request, exc: Exception) -> Response:
    family = _family(request)
    if family == "dav":
        message = "No public access to this resource., No 'Authorization: Basic' header found."
        return DavError(401, NOT_AUTHENTICATED, message, headers=WWW_AUTHENTICATE).response()
    if family == "ocs":
        return ocs_response(request, None, 401, "Current user is not logged in")
    return json_response({"message": "Current user is not logged in"}, status=401)


async def _json_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, JsonError)
    user = getattr(request.state, "user", None)
    headers = {**({"X-User-Id": user} if user else {}), **exc.headers}
    return json_response(exc.body, status=exc.status, headers=headers)


async def _ocs_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, OcsError)
    return ocs_response(request, None, exc.status, exc.message)


async def _dav_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, DavError)
    return exc.response()


def _with_index_php(routes: list[Route]) -> list[BaseRoute]:
    """App routes answer both with and without ``/index.php`` (pretty URLs are enabled)."""
    return [*routes, *(Route("/index.php" + r.path, r.endpoint, methods=list(r.methods or [])) for r in routes)]


def create_app(state: State, proxy_timeout: float = 300.0) -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        timeout = httpx.Timeout(proxy_timeout, connect=10.0)
        async with httpx.AsyncClient(timeout=timeout) as client:
            app.state.proxy_client = client
            yield

    routes: list[BaseRoute] = [
        *ocs.ROUTES,
        *taskprocessing.ROUTES,
        *webhooks_api.ROUTES,
        *appapi.ROUTES,
        *appapi_occ.ROUTES,
        *declarative.ROUTES,
        *login.ROUTES,
        *dav.ROUTES,
        *_with_index_php([appapi.PROXY_ROUTE, *notes_api.ROUTES, *deck_api.ROUTES]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[Middleware(AccessLogging), Middleware(MaintenanceMode)],
        exception_handlers={
            AuthFailed: _auth_failed,
            MaxDelayReached: _max_delay,
            NotLoggedIn: _not_logged_in,
            JsonError: _json_error,
            OcsError: _ocs_error,
            DavError: _dav_error,
        },
    )
    app.state.nc = state
    return app
