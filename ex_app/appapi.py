"""AppAPI plumbing: who we are, how requests from Nextcloud are verified, how we call Nextcloud.

We verify AppAPI's signature ourselves rather than with nc_py_api's ``AppAPIAuthMiddleware``:
that one prints the expected app secret to stdout when a check fails, and compares with ``!=``.
Ours compares in constant time and logs only what failed. The proxied caller's own
``Authorization`` header (their app password) is never logged or stored.
"""

from __future__ import annotations

import base64
import hmac
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from starlette.datastructures import Headers
from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from semantic_mcp.core.config import DeploymentError

log = logging.getLogger(__name__)

OPEN_PATHS = frozenset({"/heartbeat"})

# Whoever knows the secret can act as any user, so a secret anyone can read must never be used:
# placeholders that shipped in this repository's Makefile or docs, and anything short.
MIN_SECRET_LENGTH = 32
KNOWN_PLACEHOLDERS = frozenset({
    "change-me-to-a-long-random-secret", "<long-random-secret>", "<same>", "secret", "changeme", "change-me",
})


# Every path and method the app answers; anything else is 404 before any handler or middleware runs.
# AppAPI calls the first six itself (the webhook is Nextcloud's, the search bar and access changes the
# companion app's), the rest arrive through AppAPI's proxy, which forwards whatever matches a route of
# appinfo/info.xml: this list is the app's half of that contract, so a route pattern wider than it
# reaches nothing.
SERVED_ROUTES: dict[str, frozenset[str]] = {
    "/heartbeat": frozenset({"GET"}),
    "/init": frozenset({"POST"}),
    "/enabled": frozenset({"PUT"}),
    "/webhooks/nextcloud": frozenset({"POST"}),
    "/search-bar": frozenset({"POST"}),  # the companion app's search provider, through exAppRequest
    "/access-changed": frozenset({"POST"}),  # the companion app: access to what others share may have ended
    "/mcp": frozenset({"GET", "POST", "DELETE"}),
    "/.well-known/oauth-protected-resource": frozenset({"GET"}),
    "/.well-known/oauth-protected-resource/mcp": frozenset({"GET"}),
    "/.well-known/oauth-authorization-server": frozenset({"GET"}),
    "/.well-known/openid-configuration": frozenset({"GET"}),
    "/.well-known/appapi-self-check": frozenset({"GET"}),
    "/oauth/authorize": frozenset({"GET"}),
    "/oauth/consent": frozenset({"POST"}),
    "/oauth/token": frozenset({"POST"}),
    "/oauth/register": frozenset({"POST"}),
    "/oauth/revoke": frozenset({"POST"}),
    "/oauth/clients": frozenset({"GET", "POST"}),
    "/occ/status": frozenset({"POST"}),  # occ semantic_mcp:status, through exAppRequest (ex_app/admin.py)
    "/occ/why": frozenset({"POST"}),  # occ semantic_mcp:why
    "/admin/status": frozenset({"GET"}),  # the admins' overview page, through the proxy (admins only)
}


class ServedRoutesOnly:
    """ASGI middleware, outermost: 404 for every path and method not in :data:`SERVED_ROUTES`."""

    def __init__(self, app: ASGIApp, routes: dict[str, frozenset[str]] = SERVED_ROUTES) -> None:
        self.app = app
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in self.routes.get(scope["path"], ()):
            await PlainTextResponse("Not Found", status_code=404)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class InsecureSecret(DeploymentError):
    """APP_SECRET is a published placeholder or too short: the app refuses to start with it."""


def check_secret(secret: str) -> None:
    if secret.strip().lower() in KNOWN_PLACEHOLDERS or "change-me" in secret.lower():
        raise InsecureSecret("APP_SECRET is a published placeholder: anyone could act as any user with it. "
                             "Generate one (python3 -c 'import secrets; print(secrets.token_urlsafe(32))'), "
                             "or let `make run` / `make register` generate it")
    if len(secret) < MIN_SECRET_LENGTH or len(set(secret)) < 8:
        raise InsecureSecret(f"APP_SECRET is too short or too simple: use at least {MIN_SECRET_LENGTH} random "
                             "characters (python3 -c 'import secrets; print(secrets.token_urlsafe(32))')")


@dataclass(frozen=True)
class AppIdentity:
    app_id: str
    version: str
    secret: str
    aa_version: str
    nextcloud_url: str

    @classmethod
    def from_env(cls) -> AppIdentity:
        missing = [name for name in ("APP_ID", "APP_VERSION", "APP_SECRET", "NEXTCLOUD_URL") if not os.environ.get(name)]
        if missing:
            raise RuntimeError(f"AppAPI environment variables missing: {', '.join(missing)}")
        check_secret(os.environ["APP_SECRET"])
        return cls(
            app_id=os.environ["APP_ID"],
            version=os.environ["APP_VERSION"],
            secret=os.environ["APP_SECRET"],
            aa_version=os.environ.get("AA_VERSION", "34.0.0"),
            nextcloud_url=os.environ["NEXTCLOUD_URL"].rstrip("/"),
        )

    def headers_for(self, user: str) -> dict[str, str]:
        """Headers that make Nextcloud treat a request from this ExApp as ``user`` ("" = the app itself)."""
        token = base64.b64encode(f"{user}:{self.secret}".encode()).decode()
        return {
            "AUTHORIZATION-APP-API": token,
            "EX-APP-ID": self.app_id,
            "EX-APP-VERSION": self.version,
            "AA-VERSION": self.aa_version,
        }


@cache
def identity() -> AppIdentity:
    return AppIdentity.from_env()


def verified_user(conn: HTTPConnection, app: AppIdentity) -> str | None:
    """The user of a correctly signed AppAPI request ("" for the app itself), None when not signed."""
    if conn.headers.get("ex-app-id", "") != app.app_id:
        return None
    try:
        decoded = base64.b64decode(conn.headers.get("authorization-app-api", ""), validate=True).decode()
    except ValueError:
        return None
    user, sep, secret = decoded.partition(":")
    if not sep or not hmac.compare_digest(secret.encode(), app.secret.encode()):
        return None
    return user


class AppAPIAuth:
    """ASGI middleware: every path but /heartbeat needs AppAPI's signature; sets ``scope["username"]``."""

    def __init__(self, app: ASGIApp, on_verified: Callable[[str], None] | None = None) -> None:
        self.app = app
        # Told the path of every correctly signed request: AppAPI knows our secret.
        self._on_verified = on_verified

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        user = verified_user(conn, identity())
        if user is None:
            log.warning("Rejected %s %s: missing or invalid AppAPI signature", scope["method"], scope["path"])
            await PlainTextResponse("Unauthorized", status_code=401)(scope, receive, send)
            return
        scope["username"] = user
        if self._on_verified is not None:
            self._on_verified(scope["path"])
        await self.app(scope, receive, send)


def harp_shared_key() -> str:
    """HaRP's key, which AppAPI puts in the environment of an ExApp it deploys behind HaRP (its FRP
    client's login) and sends as ``harp-shared-key`` on its own requests; empty without HaRP."""
    return os.environ.get("HP_SHARED_KEY", "")


def deployed_through_harp() -> bool:
    return bool(harp_shared_key())


def behind_buffering_proxy(headers: Headers) -> bool:
    """True for a request relayed by AppAPI's PHP proxy, which buffers whole responses.

    The PHP proxy marks what it forwards with ``X-Origin-IP``. Over it nothing reaches the client
    before the response ends, so a server-initiated request sent mid-call never arrives, and a
    chunked response arrives broken. Deployed through HaRP, the Nextcloud proxy URL still goes
    through PHP (then HaRP) and still buffers; only HaRP's own ``/exapps/`` path streams, and
    its requests carry no ``X-Origin-IP``.
    """
    return "x-origin-ip" in headers


class WholeResponsesForPHPProxy:
    """ASGI middleware: behind AppAPI's PHP proxy, answer with whole bodies and a Content-Length.

    AppAPI 32 removes the upstream ``Transfer-Encoding`` header only when spelled exactly so; our
    server sends it in lower case, so the proxy forwarded ``transfer-encoding: chunked`` with a body
    it had already de-chunked, and no client could read a streamed (SSE) answer. Collecting the
    body first costs nothing there: the proxy buffers it anyway. A GET on the MCP endpoint opens a
    server-to-client stream that would never end through that proxy while holding one of
    Nextcloud's PHP workers, so it is refused with 405, as the MCP transport allows.
    """

    def __init__(self, app: ASGIApp, stream_paths: frozenset[str] = frozenset({"/mcp"})) -> None:
        self.app = app
        self.stream_paths = stream_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not behind_buffering_proxy(Headers(scope=scope)):
            await self.app(scope, receive, send)
            return
        if scope["method"] == "GET" and scope["path"] in self.stream_paths:
            response = PlainTextResponse(
                "No server-to-client stream through AppAPI's buffering proxy", status_code=405,
                headers={"Allow": "POST, DELETE"},
            )
            await response(scope, receive, send)
            return
        start: Message = {}
        parts: list[bytes] = []

        async def collect(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body":
                return
            parts.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = b"".join(parts)
            headers = [
                (name, value) for name, value in start.get("headers", [])
                if name.lower() not in (b"content-length", b"transfer-encoding")
            ]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, collect)
