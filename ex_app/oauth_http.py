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

import calendar
import hmac
import html
import logging
import time
from typing import Any
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from semantic_mcp.core.config import READ_SCOPE, WRITE_SCOPE
from semantic_mcp.nextcloud.client import NextcloudClient
from semantic_mcp.oauth import AccountUnconfirmed, AuthorizationServer, OAuthError, RedirectableError
from semantic_mcp.oauth.binding import GRANT_SECONDS

from .appapi import behind_buffering_proxy, harp_shared_key
from .form_tokens import FormTokens
from .page_text import TEXTS, format_date
from .pages import Look, Speech, Theming, Words, render

log = logging.getLogger(__name__)

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
PAGE_HEADERS = {**NO_STORE, "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}  # CSP: ex_app.pages
MAX_FORM_BYTES = 16 * 1024


def _user(request: Request) -> str:
    """The Nextcloud user AppAPI vouched for (session cookie or app password); "" when anonymous."""
    return str(request.scope.get("username") or "")


def caller_address(request: Request) -> str:
    """The caller's address as Nextcloud saw it, for the quotas on anonymous work (counted by network).

    AppAPI's PHP proxy sets ``X-Origin-IP`` and drops any the caller sent. Deployed through HaRP (0.4.4),
    HaRP passes the caller's headers through, so there ``X-Origin-IP`` is believed only on a request that
    also carries HaRP's shared key, which AppAPI sends and no caller knows (AppAPICommonService::
    buildAppAPIAuthHeaders); on HaRP's own ``/exapps/`` path the address is the one the front proxy
    appended last to ``X-Forwarded-For`` (a caller can only put his own before it); without either, the
    connecting peer: HaRP's own, one address for all (issue 36: 30 requests then closed registration)."""
    headers = request.headers
    harp_key = harp_shared_key()
    if not harp_key:
        if behind_buffering_proxy(headers):
            return headers["x-origin-ip"]
    elif behind_buffering_proxy(headers) and hmac.compare_digest(headers.get("harp-shared-key", ""), harp_key):
        return headers["x-origin-ip"]
    elif forwarded := headers.get("x-forwarded-for", "").split(",")[-1].strip():
        return forwarded
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


def _next_step(exc: OAuthError) -> str:
    """Which next step an error page offers (a key of ex_app.page_text)."""
    if exc.status == 429 or exc.error == "temporarily_unavailable":
        return "step_too_many"
    if "switched off" in exc.description:
        return "step_switched_off"
    if exc.description == "unknown client_id":
        return "step_unknown_client"
    if exc.error == "invalid_client":
        return "step_client_document"
    if "expired" in exc.description:
        return "step_expired"
    if exc.error == "access_denied":
        return "step_account"
    return "step_default"


class OAuthHTTP:
    """The routes, bound to one :class:`AuthorizationServer`."""

    def __init__(self, server: AuthorizationServer, form_key: bytes, nc: NextcloudClient | None = None) -> None:
        self.server = server
        self.theming = Theming(nc, server.public_url)
        self.speech = Speech(nc)
        self._issuer_path = urlsplit(server.issuer).path  # where the browser comes back to after login
        self._login_url = f"{server.public_url}/index.php/login"
        self._clients_tokens = FormTokens(form_key, "connected-clients", clock=server.clock)

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

    async def _dress(self, request: Request, user: str = "") -> tuple[Look, Words]:
        """The instance's look and the words the user reads (their Nextcloud language, else their browser's)."""
        return await self.theming.look(), await self.speech.words(user, request.headers.get("accept-language", ""))

    async def _navigate(self, request: Request, url: str) -> HTMLResponse:
        """Send the browser on with a page, never an HTTP redirect: AppAPI's proxy (Guzzle) follows an
        ExApp's redirects itself, server-side, so a 302 would make Nextcloud fetch the client's redirect
        URI (with the code) instead of the browser, and answer 500 when that fails."""
        look, words = await self._dress(request)
        target = html.escape(url, quote=True)
        return render(look, words, words("continue"),
                      f'<h1>{words("one_moment")}</h1><p><a id="continue" href="{target}">{words("continue")}</a></p>',
                      head=f'<meta http-equiv="refresh" content="0;url={target}">', headers=PAGE_HEADERS)

    async def _error_page(self, request: Request, reason: str, step: str, status: int = 400,
                          user: str = "") -> HTMLResponse:
        """What went wrong, in the server's words, and what the person can do next, in theirs."""
        look, words = await self._dress(request, user)
        body = (f'<h1>{words("error_title")}</h1><p id="reason">{words("error_reason", reason=reason)}</p>'
                f'<p id="next-step" class="notice">{words("next_step", step=words(step, instance=look.name))}</p>')
        return render(look, words, words("error_title"), body, status=status, headers=PAGE_HEADERS)

    async def authorize(self, request: Request) -> Response:
        params = {key: value for key, value in request.query_params.items()}
        try:
            authorization, client = await self.server.validate_authorization(params, caller_address(request))
        except RedirectableError as exc:
            return await self._navigate(request, self.server.error_redirect(exc))
        except OAuthError as exc:
            return await self._error_page(request, exc.description, _next_step(exc),
                                          exc.status if exc.status in (403, 429) else 400, _user(request))
        user = _user(request)
        if not user:
            back = f"{self._issuer_path}/oauth/authorize?{request.url.query}"
            return await self._navigate(request, f"{self._login_url}?{urlencode({'redirect_url': back})}")
        request_id, csrf = self.server.begin_consent(user, authorization)
        look, words = await self._dress(request, user)
        scopes = "".join(f'<li>{words("scope:" + scope)} <code class="muted">{html.escape(scope)}</code></li>'
                         for scope in authorization.scope.split() if "scope:" + scope in TEXTS["en"])
        name = f'<strong id="client-name">{html.escape(client.name)}</strong>'
        identity = (words("identity_document", client_id=client.client_id) if client.from_metadata_document
                    else words("identity_registered"))
        ends = format_date(self.server.clock() + GRANT_SECONDS, words.language, words.locale)
        body = f"""<h1>{words("consent_title", client=client.name, instance=look.name)}</h1>
<p id="lead">{words.raw("consent_lead", client=name, instance=html.escape(look.name), user=html.escape(user))}</p>
<ul id="scopes">{scopes}</ul>
<p id="lifetime">{words("lifetime", date=ends, clients_url=f"{self._issuer_path}/oauth/clients")}</p>
<p class="muted">{identity}
{words.raw("redirect", host=f'<strong id="redirect-host">{html.escape(authorization.redirect_host)}</strong>')}</p>
<form method="post" action="{html.escape(self._issuer_path)}/oauth/consent">
<input type="hidden" name="request_id" value="{html.escape(request_id)}">
<input type="hidden" name="csrf_token" value="{html.escape(csrf)}">
<div class="actions"><button class="primary" type="submit" name="decision" value="approve" id="approve">{words("allow")}</button>
<button type="submit" name="decision" value="deny" id="deny">{words("deny")}</button></div></form>"""
        return render(look, words, words("consent_title", client=client.name, instance=look.name), body,
                      headers=PAGE_HEADERS)

    async def consent(self, request: Request) -> Response:
        user = _user(request)
        if not user:
            _, words = await self._dress(request)
            return await self._error_page(request, words("reason_not_logged_in"), "step_login", 401)
        try:
            form = await _form(request)
            target = await self.server.decide(user, form.get("request_id", ""), form.get("csrf_token", ""),
                                        approve=form.get("decision") == "approve")
        except OAuthError as exc:
            return await self._error_page(request, exc.description, _next_step(exc), 400, user)
        log.info("%s %s an OAuth client", user, "approved" if form.get("decision") == "approve" else "declined")
        return await self._navigate(request, target)

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
        return self._clients_tokens.issue(user)

    async def clients_page(self, request: Request) -> Response:
        user = _user(request)
        if not user:
            back = f"{self._issuer_path}/oauth/clients"
            return await self._navigate(request, f"{self._login_url}?{urlencode({'redirect_url': back})}")
        look, words = await self._dress(request, user)
        notice = ""
        if request.method == "POST":
            form = await _form(request)
            if not self._clients_tokens.redeem(user, form.get("csrf_token", "")):
                return await self._error_page(request, words("reason_form_expired"), "step_reload", 400, user)
            if self.server.disconnect(user, form.get("grant_id", "")):
                notice = f'<p class="notice" id="notice">{words("disconnected")}</p>'

        def day(iso: str | None) -> str:
            return format_date(_timestamp(iso), words.language, words.locale) if iso else words("never")

        def may(scopes: list[str]) -> str:
            return ", ".join(words("may_read" if scope == READ_SCOPE else "may_write") for scope in scopes
                             if scope in (READ_SCOPE, WRITE_SCOPE))

        rows = "".join(
            f"""<tr><td><strong>{html.escape(c['client_name'])}</strong><br><span class="muted">{html.escape(c['redirect_host'])}</span></td>
<td>{may(c['scopes'])}</td><td>{day(c['connected_at'])}</td><td>{day(c['last_used_at'])}</td><td>{day(c['ends_at'])}</td>
<td><form method="post" action="{html.escape(self._issuer_path)}/oauth/clients"><input type="hidden" name="csrf_token" value="{self._clients_csrf(user)}">
<input type="hidden" name="grant_id" value="{html.escape(c['id'])}"><button type="submit">{words("disconnect")}</button></form></td></tr>"""
            for c in self.server.connected_clients(user)
        )
        address = f"<code>{html.escape(self.server.resource)}</code>"
        table = (f'<table id="clients"><tr><th>{words("col_client")}</th><th>{words("col_may")}</th>'
                 f'<th>{words("col_connected")}</th><th>{words("col_used")}</th><th>{words("col_ends")}</th><th></th></tr>'
                 f'{rows}</table><p class="muted">{words.raw("clients_address", mcp_url=address)}</p>'
                 if rows else f'<p id="none">{words.raw("clients_none", mcp_url=address)}</p>')
        lead = words.raw("clients_lead", instance=html.escape(look.name), user=html.escape(user))
        return render(look, words, words("clients_title"),
                      f'<h1>{words("clients_title")}</h1><p>{lead}</p>{notice}{table}', headers=PAGE_HEADERS)


def _timestamp(iso: str) -> float:
    return float(calendar.timegm(time.strptime(iso, "%Y-%m-%dT%H:%M:%SZ")))


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
            scope["oauth_client"] = (grant.client_name, grant.client_id)  # for the audit record
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
