"""Issue 16 on a small organisation, in one process: the real ``Engine`` (queue, sources,
``NextcloudClient`` with AppAPI-signed requests, the default model, Chroma, FTS5, ledger) against the
fake Nextcloud, as ``bench/org_scale.py`` runs it. Several users backfill at once; a newcomer's
first items are indexed while most of their backlog still waits (the queue's turns, kept by the
overlapping stages of the main lane), and reconciling idle users costs each the same few requests a
pass whatever they hold. tests/app/test_fairness.py covers one big user, an edit and search meanwhile,
through the ExApp process."""

from __future__ import annotations

import asyncio
import importlib.abc
import secrets
import sys
import time
from collections import Counter
from pathlib import Path

from fake_nextcloud import FakeNextcloud
from fake_nextcloud.exapps import ExApp

APP_ID = "semantic_mcp"
MEMBERS = {f"member{n}": 10 + 6 * n for n in range(5)}  # 10 to 34 files each, 110 in all
NEWCOMER = "newcomer"


def _text(user: str, i: int) -> str:
    return f"{user}'s memo {i}: the quarterly figures for region {i % 7} and the plan for the next visit."


async def _eventually(check, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_an_organisation_backfilling_holds_up_no_newcomer_and_idle_users_cost_a_few_requests(
    tmp_path: Path,
) -> None:
    from semantic_mcp.core.config import AdminSettings, Deployment
    from semantic_mcp.engine import Engine
    from semantic_mcp.nextcloud.client import NextcloudClient

    from ex_app.appapi import AppIdentity

    with FakeNextcloud(webhook_delay=0) as fake:
        identity = AppIdentity(APP_ID, "1.0.0", secrets.token_hex(16), "34.0.0", fake.url)
        with fake.state.lock:  # registered and enabled, without an ExApp process (as the bench)
            fake.state.apps[APP_ID] = ExApp(APP_ID, "http://127.0.0.1:9", identity.secret, "1.0.0", [],
                                            "nc_app_semantic_mcp:23000", enabled=True)
        for user, count in MEMBERS.items():
            fake.add_user(user)
            for i in range(count):
                fake.put_file(user, f"/Memos/memo-{i:03d}.txt", _text(user, i))
        accounts = list(MEMBERS)

        async def list_users() -> list[str]:
            return list(accounts)

        nc = NextcloudClient(fake.url, identity.headers_for)
        engine = Engine(Deployment(storage=tmp_path), nc, lambda: AdminSettings(), list_users)
        engine.start()
        try:
            engine.start_backfill()
            indexed = lambda user: len(engine.state.indexed_versions(user, "file"))
            await _eventually(lambda: sum(indexed(user) for user in MEMBERS) >= 10, timeout=120)

            fake.add_user(NEWCOMER)
            accounts.append(NEWCOMER)
            for i in range(8):
                fake.put_file(NEWCOMER, f"/Welcome/memo-{i:03d}.txt", _text(NEWCOMER, i))
            await engine.reconcile_user(NEWCOMER)  # what the next pass finds (no event covers a new account)
            await _eventually(lambda: indexed(NEWCOMER) == 8, timeout=120)
            waiting = {user: engine.state.pending_count(user) for user in MEMBERS}
            # The newcomer waited for the members' turns, not for their backlogs.
            assert sum(waiting.values()) >= sum(MEMBERS.values()) // 3, waiting
            assert waiting["member4"] >= 10, waiting  # the biggest backlog is still there

            await _eventually(lambda: engine.state.pending_count() == 0, timeout=300)
            assert all(indexed(user) == count for user, count in MEMBERS.items())

            await engine.reconcile_all()  # a pass that finds what the backfill left (cursors)
            mark = fake.state.access_log.mark()
            await engine.reconcile_all()  # nothing changed since
            per_user = Counter(access.user for access in fake.state.access_log.since(mark) if access.user)
        finally:
            await engine.stop()
    assert set(per_user) == {*MEMBERS, NEWCOMER}, per_user
    # Each user costs the same few requests whatever they hold (10 files or 34): listings only.
    assert len(set(per_user.values())) == 1 and max(per_user.values()) <= 7, per_user


async def test_a_request_to_nextcloud_searches_for_no_module(fake_nc: FakeNextcloud) -> None:
    """httpcore asks which async library runs (``import sniffio``) on every request. Without
    sniffio installed that import failed every time, after searching every directory on
    ``sys.path``: 12 % of the app's time while the organisation backfilled (py-spy, issue 16)."""
    import httpx

    looked: list[str] = []

    class Spy(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            looked.append(name)

    async with httpx.AsyncClient() as client:
        await client.get(f"{fake_nc.url}/status.php")  # warm: what the first request imports is fine
        spy = Spy()
        sys.meta_path.insert(0, spy)
        try:
            for _ in range(3):
                assert (await client.get(f"{fake_nc.url}/status.php")).status_code == 200
        finally:
            sys.meta_path.remove(spy)
    assert looked == [], f"each request searched for {sorted(set(looked))}"
