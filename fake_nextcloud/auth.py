"""Who is calling: a user with an app password (Basic or Bearer), or an ExApp through AppAPI headers.

The single entry point :func:`identify` is used by every API family; a wrong secret raises
:class:`AuthFailed`, which the app renders in the family's own 401 format.
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

if TYPE_CHECKING:
    from .state import State

# Endpoints AppAPI lets a not-yet-enabled ExApp call (it reports init progress before /enabled).
INIT_ALLOWED = ("/apps/app_api/ex-app/status", "/apps/app_api/ex-app/state", "/apps/app_api/api/v1/log")


class AuthFailed(Exception):
    """Credentials were sent but are wrong."""


class NotLoggedIn(Exception):
    """The endpoint needs a user and the request carries none."""


@dataclass(frozen=True)
class Caller:
    """``user`` is None for anonymous calls and ``""`` for app-level AppAPI calls."""

    user: str | None
    app_id: str | None = None
    # A disabled account AppAPI still acts as: WebDAV answers it, OCS and app routes do not
    # (Nextcloud's isLoggedIn() checks isEnabled(); AppAPI's DAV login does not).
    disabled: bool = False


ANONYMOUS = Caller(None)


def decode_pair(value: str) -> tuple[str, str]:
    try:
        text = base64.b64decode(value.strip(), validate=False).decode()
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise AuthFailed("undecodable credentials") from exc
    user, sep, secret = text.partition(":")
    if not sep:
        raise AuthFailed("malformed credentials")
    return user, secret


def identify(conn: HTTPConnection, state: State) -> Caller:
    """Authenticate the request against the fake's users and registered ExApps."""
    headers = conn.headers
    if "authorization-app-api" in headers:
        # As AppAPI's validateExAppRequestToNC: an unknown app or a wrong secret is a failed login
        # for the caller's address (brute-force protection); a disabled app or unknown user is not.
        ip = conn.client.host if conn.client else ""
        state.throttler.check(ip)
        user, secret = decode_pair(headers["authorization-app-api"])
        app = state.apps.get(headers.get("ex-app-id", ""))
        if app is None or secret != app.secret:
            state.throttler.register_attempt(ip, f"{conn.url.path} as {user!r} for {headers.get('ex-app-id', '')!r}")
            raise AuthFailed("AppAPI authentication failed")
        if headers.get("ex-app-version", "") != app.version:
            raise AuthFailed("AppAPI authentication failed")
        if not app.enabled and not any(p in conn.url.path for p in INIT_ALLOWED):
            raise AuthFailed("ExApp is disabled")
        if user and user not in state.users:
            return ANONYMOUS  # AppAPI logs "Requested user does not exists" and sets no user: 401 downstream
        return Caller(user, app.app_id, disabled=bool(user) and not state.users[user].enabled)
    authorization = headers.get("authorization", "")
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "basic":
        user, password = decode_pair(value)
        account = state.users.get(user)
        if account is None or password != account.password or not account.enabled:
            raise AuthFailed("wrong password or account disabled")
        return Caller(user)
    if scheme.lower() == "bearer":
        account = next((u for u in state.users.values() if u.password == value.strip()), None)
        if account is None or not account.enabled:
            raise AuthFailed("unknown token")
        return Caller(account.uid)
    return ANONYMOUS


Endpoint = Callable[[Request], Awaitable[Response]]


def logged_in(caller: Caller) -> bool:
    """What Nextcloud's OCS and app routes accept: a user whose account is enabled."""
    return bool(caller.user) and not caller.disabled


def requires_user(endpoint: Endpoint, *, dav: bool = False) -> Endpoint:
    """Run ``endpoint`` only for a logged-in user, available as ``request.state.user``; ``dav``
    endpoints also serve a disabled account AppAPI acts as."""

    @functools.wraps(endpoint)
    async def wrapper(request: Request) -> Response:
        caller = identify(request, request.app.state.nc)
        if not (caller.user if dav else logged_in(caller)):
            raise NotLoggedIn()
        request.state.user = caller.user
        request.state.caller = caller
        return await endpoint(request)

    return wrapper
