"""Threat: a departed account's OAuth client, end to end through the fake AppAPI proxy and the real
ExApp process (issue 21). The official SDK client connects as the user; then the account is
disabled, or deleted (and its uid given to someone new), as ``occ user:disable`` / ``user:delete`` /
``user:add`` do. Also: what a deleted account left in the app's storage is purged by reconciliation.

The app trusts an account check for ACCOUNT_CHECK_SECONDS (60 in production, 0.2 here).
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from oauth_support import connect_as
from stack import APP_ID, Stack

BOBS_NOTE = "Plant tomatoes in May"


@pytest.fixture(scope="module")
def departed_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    stack = Stack(tmp_path_factory.mktemp("departed"), profile="minimal", env={"ACCOUNT_CHECK_SECONDS": "0.2"})
    try:
        yield stack.start()
    finally:
        stack.stop()


def token_url(stack: Stack) -> str:
    return f"{stack.nextcloud_url}/index.php/apps/app_api/proxy/{APP_ID}/oauth/token"


async def connected(stack: Stack, user: str) -> tuple[str, str, str]:
    return await connect_as(stack.mcp_url, stack.nextcloud_url, user, stack.app_password(user))


def mcp_status(stack: Stack, access: str) -> int:
    return httpx.post(stack.mcp_url, json={}, headers={"Authorization": f"Bearer {access}"}).status_code


def refreshed(stack: Stack, client_id: str, refresh: str) -> httpx.Response:
    return httpx.post(token_url(stack), data={"grant_type": "refresh_token", "refresh_token": refresh,
                                              "client_id": client_id})


def rows(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return conn.execute(sql, params).fetchall()


def kept_for(stack: Stack, user: str) -> dict[str, int]:
    """What the app's storage holds for ``user``: state rows, keyword tables, Chroma collections, grants."""
    tag = hashlib.sha256(user.encode()).hexdigest()[:32]
    state = stack.storage / "state.db"
    return {
        "state": sum(rows(state, f"SELECT COUNT(*) FROM {t} WHERE user = ?", (user,))[0][0]
                     for t in ("tasks", "documents", "skipped", "dead_letters", "cursors", "users")),
        "keyword": len(rows(stack.storage / "keyword.db", "SELECT name FROM sqlite_master WHERE name GLOB ?",
                            (f"kw_{tag}*",))),
        "vectors": len(rows(stack.storage / "chroma" / "chroma.sqlite3",
                            "SELECT name FROM collections WHERE name GLOB ?", (f"u{tag}-*",))),
        "grants": len(rows(stack.storage / "oauth.db", "SELECT id FROM grants WHERE user = ?", (user,))),
    }


async def test_a_disabled_accounts_client_is_refused_at_once(departed_stack: Stack) -> None:
    client_id, access, refresh = await connected(departed_stack, "alice")
    departed_stack.fake.set_user_enabled("alice", False)
    try:
        await asyncio.sleep(0.5)  # past the app's account cache
        challenge = httpx.post(departed_stack.mcp_url, json={}, headers={"Authorization": f"Bearer {access}"})
        assert challenge.status_code == 401 and 'error="invalid_token"' in challenge.headers["www-authenticate"]
        answer = refreshed(departed_stack, client_id, refresh)
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_grant"
    finally:
        departed_stack.fake.set_user_enabled("alice", True)
    await asyncio.sleep(0.5)
    assert mcp_status(departed_stack, access) == 401  # enabled again: the grant stays revoked


async def test_a_deleted_account_is_purged_and_its_uid_given_anew_inherits_nothing(departed_stack: Stack) -> None:
    client_id, access, refresh = await connected(departed_stack, "bob")
    assert BOBS_NOTE.split()[0] in str(await departed_stack.search("bob", BOBS_NOTE))
    before = kept_for(departed_stack, "bob")
    assert all(before.values()), before  # indexed, with a grant: there is something to purge
    departed_stack.fake.delete_user("bob")
    departed_stack.set_admin_field("reconcile_interval_minutes", "0.025")
    try:
        await departed_stack.eventually(lambda: not any(kept_for(departed_stack, "bob").values()), timeout=60)
        assert mcp_status(departed_stack, access) == 401
        departed_stack.fake.add_user("bob", "Another Bob", password="another-bob-password")
        departed_stack.fake.put_file("bob", "Salary.md", "The new bob earns 7,300 euros a month.")
        await asyncio.sleep(0.5)
        assert mcp_status(departed_stack, access) == 401
        assert refreshed(departed_stack, client_id, refresh).status_code == 400
        hits = (await departed_stack.search("bob", BOBS_NOTE))["results"]
        assert not [hit for hit in hits if "Garden plans" in hit["title"]]  # the old bob's note is gone
    finally:
        departed_stack.set_admin_field("reconcile_interval_minutes", "15")



async def test_a_uid_given_anew_is_purged_before_the_new_persons_first_search(departed_stack: Stack) -> None:
    """Deleted and created again between two reconciliation passes (15 minutes apart here): the new
    person's first search purges what the old one left before anything is served from it, even as an
    unverifiable "own" hit (ADR 0010)."""
    stack = departed_stack
    stack.fake.put_file("alice", "Heron.md", "The heron nests by the old mill pond every spring.")
    await stack.eventually(lambda: _found(stack, "alice", "heron nests mill pond"), timeout=60)
    assert kept_for(stack, "alice")["keyword"], "alice's file is indexed"
    stack.fake.delete_user("alice")
    stack.fake.add_user("alice", "Another Alice", password="another-alice-password")
    await asyncio.sleep(0.5)  # past the app's account cache (ACCOUNT_CHECK_SECONDS=0.2); no reconciliation
    assert not await _found(stack, "alice", "heron nests mill pond")
    kept = kept_for(stack, "alice")
    assert not kept["keyword"] and not kept["vectors"], kept


async def _found(stack: Stack, user: str, query: str) -> bool:
    return "Heron" in str(await stack.search(user, query))
