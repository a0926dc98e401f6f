"""OAuth over HTTP, as it reaches us through AppAPI's proxy (ADR 0100).

Everything here is served under ``/index.php/apps/app_api/proxy/semantic_mcp/`` on public
routes (``.well-known/…``, ``oauth/…``, ``mcp``: appinfo/info.xml): AppAPI hands us anonymous requests with
an empty user, a logged-in browser with its user, and forwards the caller's ``Authorization``
header when Nextcloud does not know the token. Nextcloud checks no CSRF token on proxied POSTs,
so both forms here carry their own.

* discovery: protected resource metadata and authorization server metadata under the issuer path
  (Nextcloud's web-root ``/.well-known`` is not ours to serve);
* ``oauth/authorize``: an anonymous browser goes to Nextcloud's login and comes back; a
  logged-in one sees the consent page; ``oauth/consent`` takes the decision;
* ``oauth/token``, ``oauth/register``, ``oauth/revoke``: for clients;
* ``oauth/clients``: the user's connected clients, each revocable;
* :class:`BearerGuard`: ``/mcp`` without a Nextcloud user needs one of our access tokens.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import logging
from typing import Any
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from semantic_mcp.config import READ_SCOPE, WRITE_SCOPE
from semantic_mcp.oauth import AccountUnconfirmed, AuthorizationServer, OAuthError, RedirectableError

from .appapi import behind_buffering_proxy, deployed_through_harp

log = logging.getLogger(__name__)

SCOPE_DESCRIPTIONS = {
    READ_SCOPE: "Search your notes, files, Deck cards, calendar events and contacts, and see indexing status",
    WRITE_SCOPE: "Switch the indexing of your content on and off",
}
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
PAGE_HEADERS = {
    **NO_STORE,
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
MAX_FORM_BYTES = 16 * 1024


def _user(request: Request) -> str:
    """The Nextcloud user AppAPI vouched for (session cookie or app password); "" when anonymous."""
    return str(request.scope.get("username") or "")


def caller_address(request: Request) -> str:
    """The caller's address as Nextcloud saw it, for the quotas on anonymous work. AppAPI's PHP proxy
    sets ``X-Origin-IP`` and drops any the caller sent; HaRP (0.4.4) sets none and passes the
    caller's through, so there only the connecting peer counts (HaRP's own: one address for all).
    (Behind HaRP, X-Origin-IP still tells the PHP proxy's requests apart for buffering, where a
    forged one costs the caller only streaming; here it would buy him a fresh quota.)"""
    if not deployed_through_harp() and behind_buffering_proxy(request.headers):
        return request.headers["x-origin-ip"]
    return request.client.host if request.client else ""


def _error_json(exc: OAuthError) -> JSONResponse:
    headers = dict(NO_STORE)
    if exc.status == 401:
        headers["WWW-Authenticate"] = 'Bearer error="invalid_client"'
    if exc.status in (429, 503):
        headers["Retry-After"] = "60"
    return JSONResponse(exc.as_json(), status_code=exc.status, headers=headers)


async def _form(request: Request) -> dict[str, str]:
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise OAuthError("invalid_request", "request too large")
    form = await request.form()
    return {key: value for key, value in form.items() if isinstance(value, str)}


def _page(title: str, body: str, status: int = 200, head: str = "") -> HTMLResponse:
    document = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">{head}
<title>{html.escape(title)} - Nextcloud</title>
<style>
body {{ font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: #0082c9; margin: 0;
       min-height: 100vh; display: flex; align-items: center; justify-content: center; color: #222; }}
main {{ background: #fff; border-radius: 12px; padding: 28px 32px; max-width: 520px; width: 90%;
       box-shadow: 0 4px 24px rgba(0,0,0,.2); }}
h1 {{ font-size: 1.35em; margin: 0 0 12px; }}
.muted {{ color: #555; font-size: .92em; }}
ul {{ padding-left: 20px; }} li {{ margin: 6px 0; }}
code {{ background: #f1f1f1; padding: 1px 4px; border-radius: 4px; word-break: break-all; }}
.actions {{ display: flex; gap: 12px; margin-top: 20px; }}
button {{ font-size: 1em; padding: 10px 18px; border-radius: 8px; border: 1px solid #ccc; background: #f5f5f5;
         cursor: pointer; }}
button.primary {{ background: #0082c9; color: #fff; border-color: #0082c9; }}
table {{ border-collapse: collapse; width: 100%; }} td, th {{ text-align: left; padding: 6px 4px;
         border-bottom: 1px solid #eee; vertical-align: top; }}
</style></head><body><main>{body}</main></body></html>"""
    return HTMLResponse(document, status_code=status, headers=PAGE_HEADERS)


def _navigate(url: str) -> HTMLResponse:
    """Send the browser on with a page, never an HTTP redirect: AppAPI's proxy (Guzzle) follows an
    ExApp's redirects itself, server-side, so a 302 would make Nextcloud fetch the client's redirect
    URI (with the code) instead of the browser, and answer 500 when that fails."""
    target = html.escape(url, quote=True)
    return _page("Continue", f'<h1>One moment…</h1><p><a id="continue" href="{target}">Continue</a></p>',
                 head=f'<meta http-equiv="refresh" content="0;url={target}">')


def _error_page(message: str, status: int = 400) -> HTMLResponse:
    return _page("Cannot connect", f"<h1>This connection request cannot be completed</h1>"
                                   f"<p>{html.escape(message)}</p>", status)


class OAuthHTTP:
    """The routes, bound to one :class:`AuthorizationServer`."""

    def __init__(self, server: AuthorizationServer, form_key: bytes) -> None:
        self.server = server
        self._form_key = form_key
        self._issuer_path = urlsplit(server.issuer).path  # where the browser comes back to after login
        self._login_url = f"{server.public_url}/index.php/login"

    def routes(self) -> list[Route]:
        return [
            Route("/.well-known/oauth-protected-resource", self.resource_metadata, methods=["GET"]),
            Route("/.well-known/oauth-protected-resource/mcp", self.resource_metadata, methods=["GET"]),
            Route("/.well-known/oauth-authorization-server", self.server_metadata, methods=["GET"]),
            Route("/.well-known/openid-configuration", self.server_metadata, methods=["GET"]),
            Route("/oauth/authorize", self.authorize, methods=["GET"]),
            Route("/oauth/consent", self.consent, methods=["POST"]),
            Route("/oauth/token", self.token, methods=["POST"]),
            Route("/oauth/register", self.register, methods=["POST"]),
            Route("/oauth/revoke", self.revoke, methods=["POST"]),
            Route("/oauth/clients", self.clients_page, methods=["GET", "POST"]),
        ]

    # --- discovery

    async def resource_metadata(self, request: Request) -> Response:
        if not self.server.enabled:
            return JSONResponse({"error": "OAuth is switched off"}, status_code=404)
        return JSONResponse(self.server.resource_metadata())

    async def server_metadata(self, request: Request) -> Response:
        if not self.server.enabled:
            return JSONResponse({"error": "OAuth is switched off"}, status_code=404)
        return JSONResponse(self.server.server_metadata())

    # --- the browser side

    async def authorize(self, request: Request) -> Response:
        params = {key: value for key, value in request.query_params.items()}
        try:
            authorization, client = await self.server.validate_authorization(params, caller_address(request))
        except RedirectableError as exc:
            return _navigate(self.server.error_redirect(exc))
        except OAuthError as exc:
            return _error_page(exc.description, exc.status if exc.status in (403, 429) else 400)
        user = _user(request)
        if not user:
            back = f"{self._issuer_path}/oauth/authorize?{request.url.query}"
            return _navigate(f"{self._login_url}?{urlencode({'redirect_url': back})}")
        request_id, csrf = self.server.begin_consent(user, authorization)
        scopes = "".join(
            f"<li><strong>{html.escape(scope)}</strong>: {html.escape(SCOPE_DESCRIPTIONS.get(scope, scope))}</li>"
            for scope in authorization.scope.split()
        )
        identity = (
            f"identified by its metadata document <code>{html.escape(client.client_id)}</code>"
            if client.from_metadata_document
            else "registered itself with this server (its name is not verified)"
        )
        body = f"""<h1>Connect {html.escape(client.name)} to your Nextcloud?</h1>
<p><strong id="client-name">{html.escape(client.name)}</strong> wants to use Semantic MCP as
<strong>{html.escape(user)}</strong>. It {identity}.</p>
<p>It will be allowed to:</p><ul id="scopes">{scopes}</ul>
<p class="muted">After you decide, you will be sent to <strong id="redirect-host">{html.escape(authorization.redirect_host)}</strong>.
Only approve if you started this connection yourself. You can disconnect it any time under
<code>{html.escape(self._issuer_path)}/oauth/clients</code>.</p>
<form method="post" action="{html.escape(self._issuer_path)}/oauth/consent">
<input type="hidden" name="request_id" value="{html.escape(request_id)}">
<input type="hidden" name="csrf_token" value="{html.escape(csrf)}">
<div class="actions"><button class="primary" type="submit" name="decision" value="approve" id="approve">Allow</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button></div></form>"""
        return _page(f"Connect {client.name}", body)

    async def consent(self, request: Request) -> Response:
        user = _user(request)
        if not user:
            return _error_page("You are not logged in to Nextcloud.", 401)
        try:
            form = await _form(request)
            target = await self.server.decide(user, form.get("request_id", ""), form.get("csrf_token", ""),
                                        approve=form.get("decision") == "approve")
        except OAuthError as exc:
            return _error_page(exc.description, 400)
        log.info("%s %s an OAuth client", user, "approved" if form.get("decision") == "approve" else "declined")
        return _navigate(target)

    # --- the client side

    async def token(self, request: Request) -> Response:
        try:
            answer = await self.server.token(await _form(request), caller_address(request))
        except OAuthError as exc:
            log.info("Token request refused: %s", exc.error)
            return _error_json(exc)
        return JSONResponse(answer, headers=NO_STORE)

    async def register(self, request: Request) -> Response:
        try:
            answer = self.server.register(await request.body(), caller_address(request))
        except OAuthError as exc:
            return _error_json(exc)
        log.info("Registered OAuth client %r", answer["client_name"])
        return JSONResponse(answer, status_code=201, headers=NO_STORE)

    async def revoke(self, request: Request) -> Response:
        try:
            await self.server.revoke(await _form(request), caller_address(request))
        except OAuthError as exc:
            return _error_json(exc)
        return Response(status_code=200, headers=NO_STORE)

    # --- connected clients

    def _clients_csrf(self, user: str) -> str:
        return hmac.new(self._form_key, f"connected-clients/{user}".encode(), hashlib.sha256).hexdigest()

    async def clients_page(self, request: Request) -> Response:
        user = _user(request)
        if not user:
            back = f"{self._issuer_path}/oauth/clients"
            return _navigate(f"{self._login_url}?{urlencode({'redirect_url': back})}")
        notice = ""
        if request.method == "POST":
            form = await _form(request)
            if not hmac.compare_digest(form.get("csrf_token", ""), self._clients_csrf(user)):
                return _error_page("This form has expired; reload the page.", 400)
            if self.server.disconnect(user, form.get("grant_id", "")):
                notice = "<p><strong>Disconnected.</strong> Its tokens stopped working at once.</p>"
        rows = "".join(
            f"""<tr><td><strong>{html.escape(c['client_name'])}</strong><br><span class="muted">{html.escape(c['redirect_host'])}</span></td>
<td>{html.escape(' '.join(c['scopes']))}</td><td class="muted">{html.escape(c['last_used_at'] or c['connected_at'] or '')}</td>
<td><form method="post" action="{html.escape(self._issuer_path)}/oauth/clients"><input type="hidden" name="csrf_token" value="{self._clients_csrf(user)}">
<input type="hidden" name="grant_id" value="{html.escape(c['id'])}"><button type="submit">Disconnect</button></form></td></tr>"""
            for c in self.server.connected_clients(user)
        )
        table = (f"<table><tr><th>Client</th><th>Scopes</th><th>Last used</th><th></th></tr>{rows}</table>"
                 if rows else "<p>No client is connected.</p>")
        return _page("Connected clients", f"<h1>Clients connected to Semantic MCP as {html.escape(user)}</h1>"
                                          f"{notice}{table}")


class BearerGuard:
    """ASGI middleware for ``/mcp``: a request without a Nextcloud user needs a valid access token of ours,
    which makes it that user's with the token's scopes (``scope["oauth_scopes"]``); otherwise 401 with
    the challenge that starts OAuth discovery (RFC 9728). Runs inside :class:`ex_app.appapi.AppAPIAuth`."""

    def __init__(self, app: ASGIApp, server: AuthorizationServer) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/mcp" or scope.get("username"):
            await self.app(scope, receive, send)
            return
        token = _bearer(scope)
        try:
            grant = await self.server.verify(token) if token else None
        except AccountUnconfirmed as exc:  # not a 401: the client would drop its tokens and start over
            await JSONResponse(exc.as_json(), status_code=503, headers={"Retry-After": "30"})(scope, receive, send)
            return
        if grant is not None:
            scope["username"] = grant.user
            scope["oauth_scopes"] = grant.scopes
            await self.app(scope, receive, send)
            return
        await self._challenge(scope, receive, send, invalid=token is not None)

    async def _challenge(self, scope: Scope, receive: Receive, send: Send, *, invalid: bool) -> None:
        if self.server.enabled:
            params = [f'resource_metadata="{self.server.resource_metadata_url()}"',
                      f'scope="{" ".join(self.server.allowed_scopes())}"']
        else:
            params = ['realm="Nextcloud"']
        if invalid:
            params.append('error="invalid_token"')
        body: dict[str, Any] = {"error": "invalid_token" if invalid else "unauthorized",
                                "error_description": "an access token or a Nextcloud app password is required"
                                if not invalid else ("The password or token was not accepted; make a new app password in Nextcloud under "
                                     "Personal settings → Security → Devices & sessions, or reconnect the client.")}
        response = JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer " + ", ".join(params)})
        await response(scope, receive, send)


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None
