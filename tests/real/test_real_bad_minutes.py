"""Nothing lost when Nextcloud or the app has a bad minute (issue 11), on a real Nextcloud 34.

Maintenance mode on and off (what an upgrade does), ``kill -9`` of the app while it indexes, and
a start before registration with a queue that has work. Each asserts nothing lost (every change
indexed and found), nothing duplicated, and ``occ security:bruteforce:attempts 127.0.0.1`` at 0.
Windows are short: the pause and resume logic does not depend on their length.
"""

from __future__ import annotations

import asyncio
import time

from harness import report_text
from realstack import RealStack


def put(real: RealStack, folder: str, n: int, tag: str) -> dict[str, str]:
    """``n`` short text files over WebDAV as alice; returns location -> content."""
    alice, files = real.user("alice"), {}
    for i in range(n):
        location = f"/{folder}/{tag}-{i:02d}.txt"
        files[location] = report_text(tag, i)
        alice.put_file(location, files[location])
    return files


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
        assert real.db_rows("SELECT COUNT(*) FROM dead_letters")[0][0] == 0
        assert real.db_rows("SELECT COALESCE(MAX(attempts), 0) FROM tasks")[0][0] == 0
    finally:
        real.nc.occ("maintenance:mode", "--off")
    back = time.monotonic()
    after = put(real, "Upgrade", 6, "after")
    await real.all_indexed("alice", "/Upgrade/", {**before, **after})
    print(f"maintenance: everything indexed {time.monotonic() - back:.1f} s after maintenance mode ended")
    assert time.monotonic() - back < 60
    await assert_healthy(real)


async def test_kill_while_indexing_then_restart(real: RealStack) -> None:
    alice = real.user("alice")
    alice.mkdir("Crash")
    # Written while the test watches: the app is killed with tasks queued once some files are
    # indexed and some not (a fast machine indexes each file within a second of its event, so
    # waiting for the writes to finish first could miss the moment).
    writing = asyncio.create_task(asyncio.to_thread(put, real, "Crash", 20, "first"))

    def under_way() -> bool:
        indexed = len(real.indexed_files("alice", "/Crash/"))
        return 0 < indexed < 20 and real.db_rows("SELECT COUNT(*) FROM tasks")[0][0] > 0

    await real.eventually(under_way, timeout=60, interval=0.1)
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
    await real.all_indexed("alice", "/Crash/", {**first, **while_down})
    print(f"kill -9: everything indexed {time.monotonic() - restarted:.1f} s after the restart")
    assert time.monotonic() - restarted < 60
    await assert_healthy(real)


async def test_start_before_registration_with_a_queue(real: RealStack) -> None:
    real.user("alice").mkdir("Rereg")
    queued = put(real, "Rereg", 30, "queued")
    real.nc.flush_webhooks()
    real.unregister()  # AppAPI calls PUT /enabled?enabled=0, then forgets the app and its secret
    pending = real.db_rows("SELECT COUNT(*) FROM tasks")[0][0]
    real.exapp.kill()
    real.start_exapp()  # `make run` before `make register`: AppAPI does not know the app
    await asyncio.sleep(8)
    assert_no_failed_logins(real)
    assert real.db_rows("SELECT COUNT(*) FROM tasks")[0][0] == pending  # nothing dropped
    registering = time.monotonic()
    real.register()
    await real.all_indexed("alice", "/Rereg/", queued, timeout=120)
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
    await real.all_indexed("alice", "/Forgot/", queued, timeout=120)
    await assert_healthy(real)
