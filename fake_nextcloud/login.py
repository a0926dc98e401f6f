"""Browser sessions: Nextcloud's login page, CSRF token endpoint and login POST, as recorded on 32.

* ``GET /index.php/login`` answers the login page and starts an (anonymous) session cookie;
* ``GET /index.php/csrftoken`` answers ``{"token": …}`` for that session;
* ``POST /index.php/login`` with ``user``, ``password``, ``requesttoken`` and an ``Origin`` header
  logs the session in and answers 303 to a local ``redirect_url`` (a proxy path works), or back to
  the login page on a wrong password.

A logged-in session reaches ExApps through the proxy with its user set (see :func:`session_user`);
Nextcloud does not check CSRF tokens on proxied requests.
"""

from __future__ import annotations

import html
import secrets
from pathlib import Path
from urllib.parse import urlencode

from starlette.requests import HTTPConnection, Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from .state import Session, State

SESSION_COOKIE = "oc_session"
DEFAULT_PAGE = "/index.php/apps/dashboard/"


def session_user(conn: HTTPConnection, state: State) -> str | None:
    """The user a browser session cookie is logged in as, if any."""
    session = state.sessions.get(conn.cookies.get(SESSION_COOKIE, ""))
    account = state.users.get(session.user or "") if session else None
    return session.user if session and account and account.enabled else None  # disabled or deleted: logged out


def _session(request: Request, state: State) -> tuple[str, Session]:
    session_id = request.cookies.get(SESSION_COOKIE, "")
    with state.lock:
        if session_id not in state.sessions:
            session_id = secrets.token_urlsafe(24)
            state.sessions[session_id] = Session(csrf=secrets.token_urlsafe(32))
        return session_id, state.sessions[session_id]


def _with_cookie(response: Response, session_id: str) -> Response:
    response.set_cookie(SESSION_COOKIE, session_id, httponly=True, samesite="lax", path="/")
    return response


def _local(redirect_url: str) -> str:
    """Only local paths, as Nextcloud's login accepts them (no scheme, no ``//host``)."""
    return redirect_url if redirect_url.startswith("/") and not redirect_url.startswith("//") else DEFAULT_PAGE


async def login_page(request: Request) -> Response:
    state: State = request.app.state.nc
    session_id, session = _session(request, state)
    redirect_url = request.query_params.get("redirect_url", "")
    if session.user:
        return _with_cookie(RedirectResponse(_local(redirect_url) if redirect_url else DEFAULT_PAGE, 303), session_id)
    error = "<p class='warning'>Wrong login or password.</p>" if request.query_params.get("error") else ""
    page = f"""<!DOCTYPE html><html><head><title>Login - Nextcloud</title></head><body>
<form method="post" action="/index.php/login" name="login">{error}
<input type="text" name="user" id="user"><input type="password" name="password" id="password">
<input type="hidden" name="requesttoken" value="{html.escape(session.csrf)}">
<input type="hidden" name="redirect_url" value="{html.escape(redirect_url)}">
<button type="submit" id="submit-form">Log in</button></form></body></html>"""
    return _with_cookie(HTMLResponse(page), session_id)


async def csrf_token(request: Request) -> Response:
    state: State = request.app.state.nc
    session_id, session = _session(request, state)
    return _with_cookie(JSONResponse({"token": session.csrf}), session_id)


async def login(request: Request) -> Response:
    state: State = request.app.state.nc
    form = await request.form()
    session = state.sessions.get(request.cookies.get(SESSION_COOKIE, ""))
    token = str(form.get("requesttoken", ""))
    if session is None or not request.headers.get("origin") or not secrets.compare_digest(token, session.csrf):
        return HTMLResponse("<h2>Access forbidden</h2><p>CSRF check failed</p>", status_code=403)
    user, password = str(form.get("user", "")), str(form.get("password", ""))
    redirect_url = str(form.get("redirect_url", ""))
    with state.lock:
        account = state.users.get(user)
        # Login passwords and app passwords are one secret per user in the fake.
        if account is None or not account.enabled or not secrets.compare_digest(password, account.password):
            query = urlencode({"error": "1", "user": user, "redirect_url": redirect_url})
            return RedirectResponse(f"/index.php/login?{query}", status_code=303)
        del state.sessions[request.cookies[SESSION_COOKIE]]  # a new session id after login
        session_id = secrets.token_urlsafe(24)
        state.sessions[session_id] = Session(csrf=secrets.token_urlsafe(32), user=account.uid)
        state.logged_in(account.uid)
    return _with_cookie(RedirectResponse(_local(redirect_url), status_code=303), session_id)


async def logo(request: Request) -> Response:
    """The instance logo the theming capability names (``core/img/logo/logo.svg``): white rings, as
    Nextcloud's own is white on the primary colour; public, as on a real server."""
    return Response(_LOGO, media_type="image/svg+xml", headers={"Cache-Control": "max-age=15778463"})


_LOGO = (Path(__file__).resolve().parent / "data" / "logo.svg").read_bytes()

ROUTES = [
    Route("/core/img/logo/logo.svg", logo, methods=["GET"]),
    Route("/index.php/login", login_page, methods=["GET"]),
    Route("/index.php/login", login, methods=["POST"]),
    Route("/index.php/csrftoken", csrf_token, methods=["GET"]),
    Route("/login", login_page, methods=["GET"]),
    Route("/csrftoken", csrf_token, methods=["GET"]),
]
