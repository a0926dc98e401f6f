"""Nothing lost when Nextcloud or the app has a bad minute (issue 11), on a real Nextcloud 32.

Maintenance mode on and off (what an upgrade does), ``kill -9`` of the app while it indexes, and
a start before registration with a queue that has work. Each asserts nothing lost (every change
indexed and found), nothing duplicated, and ``occ security:bruteforce:attempts 127.0.0.1`` at 0.
Windows are short: the pause and resume logic does not depend on their length.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from realstack import RealStack

SUBJECTS = ["otter", "glacier", "violin", "lantern", "cactus", "harbour", "comet", "falcon", "meadow", "tunnel"]
PLACES = ["Lisbon", "Nairobi", "Osaka", "Quito", "Bergen", "Tbilisi", "Hobart", "Tromso", "Cusco", "Dakar"]


def db_rows(storage: Path, sql: str) -> list[tuple[Any, ...]]:
    """The app's durable state, read while it runs (SQLite WAL allows a concurrent reader)."""
    with closing(sqlite3.connect(f"file:{storage / 'state.db'}?mode=ro", uri=True)) as db:
        return db.execute(sql).fetchall()


def put(real: RealStack, folder: str, n: int, tag: str) -> dict[str, str]:
    """``n`` short text files over WebDAV as alice; returns path -> content."""
    alice = real.user("alice")
    files = {}
    for i in range(n):
        path = f"{folder}/{tag}-{i:02d}.txt"
        files[f"/{path}"] = f"The {SUBJECTS[i % 10]} report from {PLACES[(i // 10 + len(tag)) % 10]} ({tag} {i})."
        alice.put_file(path, files[f"/{path}"])
    return files


def indexed_under(real: RealStack, folder: str) -> list[str]:
    rows = db_rows(real.storage, "SELECT location FROM documents WHERE user = 'alice' AND doc_type = 'file' "
                                 f"AND location LIKE '/{folder}/%'")
    return [row[0] for row in rows]


async def all_indexed(real: RealStack, folder: str, expected: dict[str, str], timeout: float = 60.0) -> float:
    """Wait until exactly ``expected`` is indexed under ``folder`` (each once), then find a sample
    by content through the proxy; returns the seconds until indexed."""
    started = time.monotonic()
    while True:
        locations = indexed_under(real, folder)
        assert len(locations) == len(set(locations)), f"indexed twice: {locations}"
        if set(locations) == set(expected):
            break
        if time.monotonic() - started > timeout:
            raise AssertionError(f"not indexed within {timeout:.0f}s: missing {sorted(set(expected) - set(locations))}, "
                                 f"unexpected {sorted(set(locations) - set(expected))}")
        await asyncio.sleep(1.0)
    took = time.monotonic() - started
    for path, text in list(expected.items())[:: max(1, len(expected) // 3)]:
        hits = (await real.search("alice", text, use_reranking=False, limit=50, path_prefix=f"/{folder}/"))["results"]
        ids = [hit["id"] for hit in hits]
        assert len(ids) == len(set(ids)), f"duplicate hits: {ids}"
        assert path in [hit["location"] for hit in hits], (text, [hit["location"] for hit in hits])
    return took


def assert_no_failed_logins(real: RealStack) -> None:
    assert real.nc.bruteforce_attempts("127.0.0.1") == 0


async def assert_healthy(real: RealStack) -> None:
    status = await real.status("alice")
    assert status["failures"] == [], status["failures"]
    assert status["nextcloud"]["paused"] is False, status["nextcloud"]
    assert status["webhooks"]["missing"] == [], status["webhooks"]
    assert_no_failed_logins(real)


async def test_maintenance_window(real: RealStack) -> None:
    real.user("alice").mkdir("Upgrade")
    before = put(real, "Upgrade", 16, "before")
    real.nc.flush_webhooks()  # delivered into the app's queue; indexing under way
    real.nc.occ("maintenance:mode", "--on")
    try:
        await asyncio.sleep(20)  # the window: the queue waits, nothing dead-letters
        assert db_rows(real.storage, "SELECT COUNT(*) FROM dead_letters")[0][0] == 0
        assert db_rows(real.storage, "SELECT COALESCE(MAX(attempts), 0) FROM tasks")[0][0] == 0
    finally:
        real.nc.occ("maintenance:mode", "--off")
    back = time.monotonic()
    after = put(real, "Upgrade", 6, "after")
    await all_indexed(real, "Upgrade", {**before, **after})
    print(f"maintenance: everything indexed {time.monotonic() - back:.1f} s after maintenance mode ended")
    assert time.monotonic() - back < 60
    await assert_healthy(real)


async def test_kill_while_indexing_then_restart(real: RealStack) -> None:
    alice = real.user("alice")
    alice.mkdir("Crash")
    # Written while the test watches: the app is killed once some of them are indexed and some
    # not (a fast machine indexes each file within a second of its event, so waiting for the
    # writes to finish first could miss the moment).
    writing = asyncio.create_task(asyncio.to_thread(put, real, "Crash", 20, "first"))
    await real.eventually(lambda: 0 < len(indexed_under(real, "Crash")) < 20, timeout=60, interval=0.1)
    real.exapp.kill()  # SIGKILL while indexing
    first = await writing
    while_down = put(real, "Crash", 6, "down")  # deliveries fail ("Couldn't connect") and are not retried
    first["/Crash/first-00.txt"] = "The rewritten otter report from Reykjavik, edited while the app was down."
    alice.put_file("Crash/first-00.txt", first["/Crash/first-00.txt"])
    alice.delete("Crash/first-05.txt")
    del first["/Crash/first-05.txt"]
    real.nc.flush_webhooks()

    real.start_exapp()  # same port and secret
    restarted = time.monotonic()
    await all_indexed(real, "Crash", {**first, **while_down})
    print(f"kill -9: everything indexed {time.monotonic() - restarted:.1f} s after the restart")
    assert time.monotonic() - restarted < 60
    await assert_healthy(real)


async def test_start_before_registration_with_a_queue(real: RealStack) -> None:
    real.user("alice").mkdir("Rereg")
    queued = put(real, "Rereg", 30, "queued")
    real.nc.flush_webhooks()
    real.unregister()  # AppAPI calls PUT /enabled?enabled=0, then forgets the app and its secret
    pending = db_rows(real.storage, "SELECT COUNT(*) FROM tasks")[0][0]
    real.exapp.kill()
    real.start_exapp()  # `make run` before `make register`: AppAPI does not know the app
    await asyncio.sleep(8)
    assert_no_failed_logins(real)
    assert db_rows(real.storage, "SELECT COUNT(*) FROM tasks")[0][0] == pending  # nothing dropped
    registering = time.monotonic()
    real.register()
    await all_indexed(real, "Rereg", queued, timeout=120)
    print(f"start before registration: everything indexed {time.monotonic() - registering:.1f} s after register")
    await assert_healthy(real)


async def test_unregistered_while_stopped_then_started_with_the_old_secret(real: RealStack) -> None:
    """AppAPI forgot the app while it was stopped; the app remembers its secret worked. It asks
    through the proxy (anonymous, public route) instead of sending the secret: no failed login."""
    real.exapp.kill()
    real.unregister()  # the PUT /enabled?enabled=0 cannot reach the app
    real.user("alice").mkdir("Forgot")
    queued = put(real, "Forgot", 5, "forgot")  # no webhooks registered now: only the catch-up finds them
    real.start_exapp()
    await asyncio.sleep(8)
    assert_no_failed_logins(real)
    real.register()
    await all_indexed(real, "Forgot", queued, timeout=120)
    await assert_healthy(real)
