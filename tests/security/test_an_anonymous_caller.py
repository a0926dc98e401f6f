"""An anonymous caller: anyone who can reach Nextcloud (or the app's port), with no account, or a user
who sends more than their share.

May: reach the app's public routes (the 401 that starts OAuth, discovery, the token endpoint). May
not: act as anyone with a secret that was published (the Makefile's placeholder), reach a path or
method the app does not serve, or starve other users by opening sessions or sending requests
without end.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from stack import APP_ID, Stack

from ex_app.appapi import InsecureSecret, check_secret
from ex_app.quotas import McpQuota
from fake_nextcloud.exapp_process import REPO, ExAppProcess, app_version

# --- no published secret ----------------------------------------------------------------------------


def make(workdir: Path, *goals: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "APP_SECRET"}
    result = subprocess.run(["make", "-n", f"PY={sys.executable}", *goals], cwd=workdir, env=env,
                            capture_output=True, text=True, check=True)
    return result.stdout


def test_make_run_and_register_generate_one_private_secret_and_share_it(tmp_path: Path) -> None:
    """``make run`` / ``make register`` without APP_SECRET registered the Makefile's placeholder, with
    which anyone could sign requests as any user (an admin account was created with it)."""
    for checkout in (tmp_path / "a", tmp_path / "b"):
        (checkout / "appinfo").mkdir(parents=True)
        for name in ("Makefile", "requirements.txt", "requirements-dev.txt", "requirements-rerank.txt"):
            shutil.copy(REPO / name, checkout)
        (checkout / "fake_nextcloud").symlink_to(REPO / "fake_nextcloud")  # the registration's JSON comes from it
        shutil.copy(REPO / "appinfo" / "info.xml", checkout / "appinfo")
    run, register = make(tmp_path / "a", "run"), make(tmp_path / "a", "register")
    secret = (tmp_path / "a" / ".app-secret").read_text().strip()
    check_secret(secret)  # long and random enough for the app to start with
    assert f"APP_SECRET={secret} " in run and f'"secret": "{secret}"' in register  # both use the same one
    assert (tmp_path / "a" / ".app-secret").stat().st_mode & 0o777 == 0o600
    make(tmp_path / "b", "run")
    assert (tmp_path / "b" / ".app-secret").read_text().strip() != secret  # generated, not shipped
    assert "change-me" not in (REPO / "Makefile").read_text()
    assert ".app-secret" in (REPO / ".gitignore").read_text()


@pytest.mark.parametrize("secret", [
    "change-me-to-a-long-random-secret", "CHANGE-ME-to-a-long-random-secret", "<long-random-secret>", "secret",
    "12345", "short-but-random-Xq9", "a" * 64, "abababababababababababababababab",
])
def test_a_published_short_or_simple_secret_is_refused(secret: str) -> None:
    with pytest.raises(InsecureSecret):
        check_secret(secret)


def test_the_app_refuses_to_start_with_the_placeholder(tmp_path: Path) -> None:
    env = ExAppProcess("http://127.0.0.1:9", tmp_path / "storage", secret="change-me-to-a-long-random-secret").env
    done = subprocess.run([sys.executable, "-m", "ex_app.main"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    assert "cannot start" in done.stderr and "placeholder" in done.stderr


# --- nothing but the routes the app serves ------------------------------------------------------------


def signed(stack: Stack, user: str = "alice") -> dict[str, str]:
    """What AppAPI adds to what it forwards (any path that matches one of the app's route patterns)."""
    assert stack.exapp is not None
    token = base64.b64encode(f"{user}:{stack.exapp.secret}".encode()).decode()
    return {"authorization-app-api": token, "ex-app-id": APP_ID, "ex-app-version": app_version(), "aa-version": "32.0.0"}


@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/trigger"),  # nc_py_api's task-processing hook: not ours to serve
    ("GET", "/oauth/token"), ("DELETE", "/oauth/register"), ("PUT", "/mcp"), ("HEAD", "/mcp"),
    ("GET", "/mcp/"), ("GET", "/.well-known/other"), ("GET", "/.well-known/appapi-self-check/x"),
    ("GET", "/docs"), ("GET", "/openapi.json"), ("GET", "/init"),
])
def test_paths_and_methods_the_app_does_not_serve_are_404(stack: Stack, method: str, path: str) -> None:
    assert stack.exapp is not None
    response = httpx.request(method, stack.exapp.url + path, headers=signed(stack))
    assert response.status_code == 404, (method, path, response.status_code)


def test_the_routes_it_serves_are_reached(stack: Stack) -> None:
    assert stack.exapp is not None
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server"):
        assert httpx.get(stack.exapp.url + path, headers=signed(stack, "")).status_code == 200
    assert httpx.get(stack.exapp.url + "/heartbeat").status_code == 200


# --- quotas -------------------------------------------------------------------------------------------

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-11-25"}


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    own = Stack(tmp_path_factory.mktemp("quota"), profile="minimal",
                env={"MCP_SESSIONS_PER_USER": "3", "MCP_REQUESTS_PER_MINUTE": "300"})
    try:  # stopped even when the start fails half-way (its ExApp process is running by then)
        yield own.start()
    finally:
        own.stop()


def open_session(stack: Stack, user: str) -> httpx.Response:
    return httpx.post(stack.mcp_url, json=INITIALIZE, headers={**MCP_HEADERS, **stack.auth_headers(user)}, timeout=30)


def test_sessions_per_user_are_capped_and_others_are_not_affected(tight: Stack) -> None:
    opened = [open_session(tight, "admin") for _ in range(3)]
    assert all(r.status_code == 200 and r.headers.get("mcp-session-id") for r in opened), [r.text for r in opened]
    refused = open_session(tight, "admin")
    assert refused.status_code == 429 and "Too many open MCP sessions" in refused.json()["error"]["message"]
    assert open_session(tight, "alice").status_code == 200  # alice is not admin's victim
    ended = httpx.delete(tight.mcp_url, headers={**MCP_HEADERS, **tight.auth_headers("admin"),
                                                 "mcp-session-id": opened[0].headers["mcp-session-id"]})
    assert ended.status_code < 300
    assert open_session(tight, "admin").status_code == 200  # ending one makes room


def test_requests_per_minute_are_capped_with_a_clear_error(tight: Stack) -> None:
    with httpx.Client(headers={**MCP_HEADERS, **tight.auth_headers("bob")}) as http:
        answers = [http.post(tight.mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}) for _ in range(305)]
    limited = [r for r in answers if r.status_code == 429]
    assert limited and int(limited[0].headers["retry-after"]) >= 1
    assert "at most 300 a minute" in limited[0].json()["error"]["message"]
    assert open_session(tight, "alice").status_code == 200  # others still get through


async def test_idle_sessions_stop_counting(tmp_path: Path) -> None:
    now = [0.0]

    async def app(scope, receive, send) -> None:  # noqa: ANN001 - a bare ASGI app opening a session per POST
        await send({"type": "http.response.start", "status": 200, "headers": [(b"mcp-session-id", str(now[0]).encode())]})
        await send({"type": "http.response.body", "body": b"{}"})

    quota = McpQuota(app, sessions=1, per_minute=100, idle_seconds=60, clock=lambda: now[0])

    async def post() -> int:
        transport = httpx.ASGITransport(app=_as_user(quota, "alice"))
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as http:
            return (await http.post("/mcp")).status_code

    assert await post() == 200 and await post() == 429
    now[0] = 61.0
    assert await post() == 200


def _as_user(app, user: str):  # noqa: ANN001, ANN202
    async def with_user(scope, receive, send) -> None:  # noqa: ANN001
        await app({**scope, "username": user}, receive, send)
    return with_user
