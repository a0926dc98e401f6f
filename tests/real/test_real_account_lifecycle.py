"""Threat: a departed account's OAuth client, on a real Nextcloud (issue 21). The official SDK client
connects as alice and as bob through the real AppAPI proxy; then ``occ user:disable`` (alice), and
``occ user:delete`` followed by ``occ user:add`` with the same uid for someone new (bob). The old
tokens and refresh tokens must fail, and the new bob's data must never be reachable through them;
what the old bob left in the app's storage is purged.

The app trusts an account check for ACCOUNT_CHECK_SECONDS (60 in production, 1 here).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from collections.abc import Iterator

import httpx
import pytest

from fake_nextcloud.exapp_process import APP_ID
from nextcloud_api import NextcloudUser
from oauth_support import ScriptedBrowser, connect_as
from realstack import RealStack

NEW_BOB_PASSWORD = "Another-Bob-Pass-2026!"
OLD_BOBS_NOTE = ("Kestrel survey", "The kestrel survey counts nesting boxes along the northern dyke.")


@pytest.fixture(scope="module")
def lifecycle(real: RealStack) -> Iterator[RealStack]:
    real.stop_exapp()
    real.env["ACCOUNT_CHECK_SECONDS"] = "1"
    try:
        real.start_exapp()
        yield real
    finally:
        real.stop_exapp()
        del real.env["ACCOUNT_CHECK_SECONDS"]
        real.start_exapp()


async def connected(real: RealStack, user: str, password: str) -> tuple[str, str, str]:
    return await connect_as(real.mcp_url, real.nextcloud_url, user, password)


def mcp_status(real: RealStack, access: str) -> int:
    return httpx.post(real.mcp_url, json={}, headers={"Authorization": f"Bearer {access}"}, timeout=60).status_code


def refresh_status(real: RealStack, client_id: str, refresh: str) -> tuple[int, str]:
    answer = httpx.post(f"{real.nextcloud_url}/index.php/apps/app_api/proxy/{APP_ID}/oauth/token", timeout=60,
                        data={"grant_type": "refresh_token", "refresh_token": refresh, "client_id": client_id})
    return answer.status_code, answer.json().get("error", "")


def account(real: RealStack, user: str) -> dict | None:
    out = real.nc.occ("user:info", user, "--output=json", check=False)
    return json.loads(out) if out.strip().startswith("{") else None


def occ_until(real: RealStack, done, *args: str, env: dict[str, str] | None = None) -> None:
    """Run an occ account command until its effect shows: on nc-kit's SQLite, ``user:disable`` may
    end with "database is locked" while the server is busy (seen on 34.0.1), its change made or not."""
    for _ in range(5):
        subprocess.run([real.nc.env["NC_OCC"], *args], capture_output=True, text=True, timeout=300,
                       env={**os.environ, **(env or {})})
        if done():
            return
        time.sleep(1)
    raise AssertionError(f"occ {' '.join(args)} did not take effect")


async def test_a_disabled_accounts_client_can_neither_use_nor_refresh_its_tokens(lifecycle: RealStack) -> None:
    client_id, access, refresh = await connected(lifecycle, "alice", lifecycle.nc.login_password("alice"))
    assert mcp_status(lifecycle, access) != 401
    occ_until(lifecycle, lambda: account(lifecycle, "alice")["enabled"] is False, "user:disable", "alice")
    try:
        await asyncio.sleep(2)  # past the app's account cache
        assert mcp_status(lifecycle, access) == 401
        assert refresh_status(lifecycle, client_id, refresh) == (400, "invalid_grant")
    finally:
        occ_until(lifecycle, lambda: account(lifecycle, "alice")["enabled"] is True, "user:enable", "alice")
    await asyncio.sleep(2)
    assert mcp_status(lifecycle, access) == 401  # enabled again: the grant stays revoked


async def test_a_uid_given_to_someone_new_is_never_reached_by_the_old_grant(lifecycle: RealStack) -> None:
    lifecycle.user("bob").create_note(*OLD_BOBS_NOTE)
    await lifecycle.eventually(lambda: _finds(lifecycle, "bob", OLD_BOBS_NOTE), timeout=90)
    client_id, access, refresh = await connected(lifecycle, "bob", lifecycle.nc.login_password("bob"))
    occ_until(lifecycle, lambda: account(lifecycle, "bob") is None, "user:delete", "bob")
    occ_until(lifecycle, lambda: account(lifecycle, "bob") is not None, "user:add", "--password-from-env",
              "--display-name", "Another Bob", "bob", env={"OC_PASS": NEW_BOB_PASSWORD})
    await first_login(lifecycle, "bob", NEW_BOB_PASSWORD)
    files = NextcloudUser(lifecycle.nextcloud_url, "bob", NEW_BOB_PASSWORD)
    try:
        files.put_file("Salary.md", "The new bob earns 7,300 euros a month.")
    finally:
        files.close()
    await asyncio.sleep(2)
    assert mcp_status(lifecycle, access) == 401
    assert refresh_status(lifecycle, client_id, refresh) == (400, "invalid_grant")
    lifecycle.set_admin_field("reconcile_interval_minutes", "0.05")
    try:  # the old bob's index is purged, though the uid was listed at every pass
        await lifecycle.eventually(lambda: not _indexed_title(lifecycle, "bob", OLD_BOBS_NOTE[0]), timeout=120)
    finally:
        lifecycle.set_admin_field("reconcile_interval_minutes", "15")
    assert mcp_status(lifecycle, access) == 401


async def first_login(real: RealStack, user: str, password: str) -> None:
    """A new account's first login sets it up (skeleton files, calendars); on nc-kit's SQLite it may
    answer 500 "database is locked" (seen on 34.0.1), or take longer than a minute on a busy machine;
    a second login then works."""
    for attempt in range(3):
        browser = ScriptedBrowser(real.nextcloud_url)
        try:
            await browser.login(user, password)
            return
        except (AssertionError, httpx.HTTPError):
            if attempt == 2:
                raise
            await asyncio.sleep(2)
        finally:
            await browser.aclose()


async def _finds(real: RealStack, user: str, note: tuple[str, str]) -> bool:
    return note[0] in await real.titles(user, note[1], doc_types=["note"])


def _indexed_title(real: RealStack, user: str, title: str) -> bool:
    return bool(real.db_rows("SELECT 1 FROM documents WHERE user = ? AND title = ?", (user, title)))
