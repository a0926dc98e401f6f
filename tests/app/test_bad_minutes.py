"""Nothing lost when Nextcloud or the app has a bad minute (issue 11), on the fake Nextcloud with the
real ExApp process: a maintenance window, ``kill -9`` while indexing, a start before registration.

Each scenario asserts the same three things: every change is searchable afterwards (nothing lost),
each document once (nothing duplicated), and Nextcloud recorded no failed login for the app's
address (brute-force protection never saw it). Windows are short: the pause and resume logic does
not depend on how long Nextcloud is away (the queue waits instead of spending attempts).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import report_text
from stack import APP_ID, PUBLIC_HOST, Stack, on_own_stack

from ex_app.settings_form import ADMIN_FORMS
from fake_nextcloud.appinfo import app_version, routes_from_info_xml

ALICE = "alice"
APP_ADDRESS = "127.0.0.1"


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    own = Stack(tmp_path, profile="minimal").start()
    try:
        yield own
    finally:
        own.stop()


def put(stack: Stack, folder: str, n: int, tag: str) -> dict[str, str]:
    """``n`` short text files with distinct content; returns location -> content."""
    files = {}
    for i in range(n):
        location = f"{folder}/{tag}-{i:02d}.txt"
        files[location] = report_text(tag, i)
        stack.fake.put_file(ALICE, location, files[location])
    return files


def no_failed_logins(stack: Stack) -> None:
    assert stack.fake.bruteforce_attempts(APP_ADDRESS) == 0, f"failed logins: {stack.fake.state.throttler.log}"


async def assert_clean(stack: Stack) -> None:
    status = await stack.status(ALICE)
    assert status["failures"] == [], status["failures"]
    assert status["nextcloud"]["paused"] is False, status["nextcloud"]
    assert status["webhooks"]["missing"] == [], status["webhooks"]
    no_failed_logins(stack)


async def test_maintenance_window_loses_nothing_and_spends_no_attempt(stack: Stack) -> None:
    fake = stack.fake
    fake.webhooks.pause()
    before = put(stack, "/Upgrade", 24, "kappa")
    fake.webhooks.resume()
    fake.webhooks.flush(30)  # in the app's queue
    fake.set_maintenance(True)  # as `occ maintenance:mode --on` during an upgrade, mid-indexing
    refused_at_start = fake.refused_in_maintenance()
    during = put(stack, "/Upgrade", 8, "sigma")  # changed server-side: delivered after the window
    await asyncio.sleep(1.5)

    # The whole queue pauses: a handful of requests got 503, then only status.php is asked.
    async def paused() -> Any:
        rows = stack.db_rows("SELECT COUNT(*), COALESCE(MAX(attempts), 0) FROM tasks")
        return rows[0] if "Pausing all work with Nextcloud" in stack.log() else None

    await stack.eventually(paused, timeout=20)
    refused_early = fake.refused_in_maintenance()
    await asyncio.sleep(8.0)  # the window; nothing depends on its length
    pending, max_attempts = stack.db_rows("SELECT COUNT(*), COALESCE(MAX(attempts), 0) FROM tasks")[0]
    assert pending > 0 and max_attempts == 0, (pending, max_attempts)  # waiting, no attempt spent
    assert stack.db_rows("SELECT COUNT(*) FROM dead_letters")[0][0] == 0
    assert fake.refused_in_maintenance() - refused_early <= 2, "kept calling Nextcloud during maintenance"
    assert refused_early - refused_at_start < 40

    fake.set_maintenance(False)
    after = put(stack, "/Upgrade", 6, "omega")
    took = await stack.all_indexed(ALICE, "/Upgrade/", {**before, **during, **after})
    print(f"maintenance: everything indexed {took:.1f} s after maintenance mode ended")
    assert took < 60
    assert "Nextcloud answers again after" in stack.log()
    await assert_clean(stack)


async def test_kill_while_indexing_then_restart_catches_up(stack: Stack) -> None:
    fake = stack.fake
    first = put(stack, "/Crash", 20, "first")

    async def mid_batch() -> Any:
        files = (await stack.status(ALICE))["sources"]["file"]
        return files if files["pending"] > 0 else None

    await stack.eventually(mid_batch, timeout=30, interval=0.1)
    stack.exapp.kill()  # SIGKILL: no shutdown handler runs

    # Meanwhile: new files, an edit and a deletion. Their webhook deliveries fail and are never retried.
    delivered = len(fake.webhooks.events())
    while_down = put(stack, "/Crash", 8, "down")
    first["/Crash/first-00.txt"] = "The rewritten otter report from Reykjavik, edited while the app was down."
    fake.put_file(ALICE, "/Crash/first-00.txt", first["/Crash/first-00.txt"])
    fake.delete(ALICE, "/Crash/first-05.txt")
    del first["/Crash/first-05.txt"]
    fake.webhooks.flush(30)
    lost = [d for d in fake.webhooks.events()[delivered:] if d.error]
    assert lost, "expected failed deliveries while the app was down"

    stack.start_exapp()  # same storage and secret
    fake.exapp(APP_ID).url = stack.exapp.url  # the daemon knows the app by its (new) port
    restarted = time.monotonic()
    await stack.all_indexed(ALICE, "/Crash/", {**first, **while_down})
    assert time.monotonic() - restarted < 60
    assert "Catching up on changes made while the app was not running" in stack.log()
    await assert_clean(stack)


async def test_start_before_registration_keeps_the_queue_and_never_guesses(stack: Stack) -> None:
    fake = stack.fake
    secret = stack.exapp.secret
    fake.webhooks.pause()
    queued = put(stack, "/Rereg", 40, "queued")
    fake.webhooks.resume()
    fake.webhooks.flush(30)  # every change is in the app's durable queue
    # An admin re-registers the app while it has work: AppAPI disables it (PUT /enabled?enabled=0)...
    fake.unregister_exapp(APP_ID)
    pending = stack.db_rows("SELECT COUNT(*) FROM tasks")[0][0]
    stack.exapp.kill()
    assert pending > 0, "the queue was drained before the re-registration; nothing left to prove"

    # ...and the app starts again before `app_api:app:register`: AppAPI does not know it now.
    log_start = len(stack.log())
    stack.start_exapp()
    await asyncio.sleep(6.0)
    no_failed_logins(stack)
    assert stack.db_rows("SELECT COUNT(*) FROM tasks")[0][0] == pending  # nothing dropped, nothing tried
    assert "Dropping" not in stack.log()[log_start:]

    fake.register_exapp(APP_ID, stack.exapp.url, secret, app_version(), routes_from_info_xml(), exapp_host=PUBLIC_HOST)
    await stack.all_indexed(ALICE, "/Rereg/", queued)
    await assert_clean(stack)
    assert fake.webhooks.hooks, "webhooks were not registered again"


async def test_a_secret_appapi_never_confirmed_is_never_tried(stack: Stack) -> None:
    """The app restarts with a secret AppAPI does not know (a typo in its environment) and a queue
    with work: it sends no request signed with it, so brute-force protection records nothing."""
    fake = stack.fake
    fake.webhooks.pause()
    queued = put(stack, "/Typo", 20, "typo")
    fake.webhooks.resume()
    fake.webhooks.flush(30)
    stack.exapp.kill()
    pending = stack.db_rows("SELECT COUNT(*) FROM tasks")[0][0]
    stack.exapp.env["APP_SECRET"] = "a-secret-appapi-does-not-know-0123"
    stack.exapp.start()
    fake.exapp(APP_ID).url = stack.exapp.url
    put(stack, "/Typo", 1, "late")  # its delivery is signed with the registered secret: refused (401)
    fake.webhooks.flush(30)
    await asyncio.sleep(5.0)
    no_failed_logins(stack)
    assert stack.db_rows("SELECT COUNT(*) FROM tasks")[0][0] == pending > 0
    assert len(queued) == 20


def test_missing_webhooks_are_registered_again_and_shown_meanwhile(tmp_path: Path) -> None:
    on_own_stack(tmp_path, _webhooks_come_back, profile="minimal", env={"WEBHOOK_CHECK_SECONDS": "3"})


async def _webhooks_come_back(stack: Stack) -> None:
    fake = stack.fake
    with fake.state.lock:
        registered = {hook.event for hook in fake.webhooks.hooks.values()}
        fake.webhooks.hooks.clear()  # e.g. removed by an admin, or lost in a restore
    assert registered

    def back() -> bool:
        with fake.state.lock:
            return {hook.event for hook in fake.webhooks.hooks.values()} >= registered

    await stack.eventually(back, timeout=30)
    assert "webhook registration(s) missing: re-registering them" in stack.log()
    card_updated = "OCA\\Deck\\Event\\CardUpdatedEvent"
    assert card_updated in registered  # Deck 1.18: the card events are ours too
    with fake.state.lock:
        (hook_id,) = [hook.id for hook in fake.webhooks.hooks.values() if hook.event == card_updated]
        del fake.webhooks.hooks[hook_id]  # only this one gone: the Deck events are completed
    await stack.eventually(back, timeout=30)
    files = put(stack, "/Hooks", 3, "hooked")  # delivered by the new registrations
    await stack.all_indexed(ALICE, "/Hooks/", files, timeout=30)
    status = await stack.status(ALICE)
    assert status["webhooks"]["missing"] == [] and status["webhooks"]["checked_at"]
    no_failed_logins(stack)


@pytest.mark.parametrize("locked", ["/ocs/v1.php/apps/webhook_listeners/", "/ocs/v1.php/apps/app_api/api/v1/ui/settings"])
async def test_a_locked_database_while_enabling_leaves_the_app_enabled(stack: Stack, locked: str) -> None:
    """Seen on the real tier (SQLite): one 500 while the app registered its webhooks made /enabled
    answer an error, AppAPI disabled the app again, and every later call was refused (401)."""
    fake = stack.fake
    fake.disable_exapp(APP_ID)
    fake.lock_database(locked, times=2)
    fake.enable_exapp(APP_ID)  # raised "refused to enable" before
    assert fake.state.locked_database.failed, "the lock was never met"
    assert fake.exapp(APP_ID).enabled

    def registered() -> bool:
        with fake.state.lock:
            hooks = {hook.event for hook in fake.webhooks.hooks.values() if hook.app_id == APP_ID}
        return len(hooks) >= 12 and len(fake.settings_forms(APP_ID)) == len(ADMIN_FORMS) + 2  # and the overview link, the personal form

    await stack.eventually(registered, timeout=90)
    files = put(stack, "/Locked", 2, "locked")  # delivered by the registrations made after the lock
    await stack.all_indexed(ALICE, "/Locked/", files, timeout=30)
    await assert_clean(stack)


async def test_unregistered_while_stopped_then_started_with_the_old_secret(stack: Stack) -> None:
    """The secret worked before (remembered), but AppAPI forgot the app while it was stopped: the
    app asks AppAPI through its proxy (anonymous, a public route), never with the secret, so no
    failed login; it waits, and resumes once registered again."""
    fake = stack.fake
    secret = stack.exapp.secret
    stack.exapp.kill()
    try:
        fake.unregister_exapp(APP_ID)  # AppAPI's PUT /enabled?enabled=0 cannot reach the app
    except Exception:  # noqa: BLE001 - the fake reports the failed call, as occ would; the app is gone anyway
        pass
    assert (stack.storage / "credentials-confirmed").exists()  # the old secret is remembered
    queued = put(stack, "/Forgot", 5, "forgot")  # no webhooks any more: only the catch-up finds them
    stack.start_exapp()
    await asyncio.sleep(5.0)
    no_failed_logins(stack)
    assert "AppAPI does not know this app or has not enabled it" in stack.log()
    fake.register_exapp(APP_ID, stack.exapp.url, secret, app_version(), routes_from_info_xml(), exapp_host=PUBLIC_HOST)
    await stack.all_indexed(ALICE, "/Forgot/", queued)
    await assert_clean(stack)


async def test_a_restart_during_maintenance_does_not_flood_nextcloud(stack: Stack) -> None:
    """Issue 21: restarted while every answer was 503, the app sent 20-40 self-checks a second
    (each waiting loop and each caller checked its remembered secret again). Now one check, then
    status.php alone on its back-off until Nextcloud answers."""
    fake = stack.fake
    stack.exapp.kill()
    fake.set_maintenance(True)
    try:
        refused_before = fake.refused_in_maintenance()
        stack.start_exapp()
        fake.exapp(APP_ID).url = stack.exapp.url
        await asyncio.sleep(8.0)
        assert fake.refused_in_maintenance() - refused_before <= 3, fake.state.maintenance.refused
    finally:
        fake.set_maintenance(False)
    await stack.eventually(lambda: _usable(stack), timeout=60)
    no_failed_logins(stack)


async def _usable(stack: Stack) -> bool:
    return (await stack.status(ALICE))["nextcloud"]["paused"] is False
