"""The shared Nextcloud health on its own: admission, credential checks, probe scheduling.

The scenarios end to end (the real ExApp against the fake Nextcloud) are in test_bad_minutes.py;
these pin the rules that are hard to observe from outside: one credential check however many
callers wait, Retry-After honoured except for maintenance answers, nothing sent while unknown.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import pytest

from semantic_mcp.nextcloud.health import NextcloudHealth, Paused


def probes(health: NextcloudHealth, credential_results: list[str], status_results: list[str] | None = None) -> list[str]:
    calls: list[str] = []

    async def credentials() -> str:
        calls.append("credentials")
        await asyncio.sleep(0.05)  # others arrive meanwhile
        return credential_results.pop(0)

    async def status() -> tuple[str, float | None]:
        calls.append("status")
        return (status_results or ["up"]).pop(0), None

    health.set_probes(status, credentials)  # type: ignore[arg-type]
    return calls


async def test_nothing_is_sent_before_appapi_confirms_the_secret(tmp_path: Path) -> None:
    health = NextcloudHealth(memory=tmp_path / "ok", fingerprint="app:secret")
    calls = probes(health, [])
    with pytest.raises(Paused) as refused:
        await health.admit()
    assert refused.value.credentials and calls == []
    health.confirmed_by_appapi()
    await health.admit()
    assert (tmp_path / "ok").exists()


async def test_remembered_credentials_are_checked_once_for_all_callers(tmp_path: Path) -> None:
    NextcloudHealth(memory=tmp_path / "ok", fingerprint="app:secret").confirmed_by_appapi()
    health = NextcloudHealth(memory=tmp_path / "ok", fingerprint="app:secret")
    assert health.credentials == "remembered"
    calls = probes(health, ["refused"])
    outcomes = await asyncio.gather(*(health.admit() for _ in range(8)), return_exceptions=True)
    assert calls == ["credentials"]  # one failed login at most, not eight
    assert all(isinstance(outcome, Paused) for outcome in outcomes)
    assert health.credentials == "refused" and not (tmp_path / "ok").exists()
    # Another secret is not taken for a remembered one.
    assert NextcloudHealth(memory=tmp_path / "ok", fingerprint="app:other").credentials == "unknown"


async def test_a_user_refused_while_the_app_is_accepted_is_that_user_only() -> None:
    health = NextcloudHealth()
    health.confirmed_by_appapi()
    calls = probes(health, ["ok", "refused"])
    results = await asyncio.gather(*(health.check_user_refusal() for _ in range(5)))
    assert results == [False] * 5 and calls == ["credentials"]  # checked once for the burst
    health._user_check_at = float("-inf")  # a later 401, after the app itself was refused
    assert await health.check_user_refusal() is True
    assert health.credentials == "refused"


async def test_retry_after_is_honoured_but_maintenance_is_probed_on_status() -> None:
    health = NextcloudHealth()
    health.confirmed_by_appapi()
    health.unavailable("HTTP 429", retry_after=120)
    assert health.outage is not None and health.outage.next_probe - time.time() > 100
    other = NextcloudHealth()
    other.confirmed_by_appapi()
    other.unavailable("HTTP 503", retry_after=120, maintenance=True)
    assert other.outage is not None and other.outage.next_probe - time.time() <= NextcloudHealth.max_probe_interval


async def test_an_outage_pauses_everyone_and_ends_when_status_says_up() -> None:
    health = NextcloudHealth()
    health.confirmed_by_appapi()
    resumed: list[bool] = []
    health.on_resume(lambda: resumed.append(True))
    calls = probes(health, [], ["maintenance", "up"])
    health.unavailable("HTTP 503", maintenance=True)
    with pytest.raises(Paused):
        await health.admit()
    assert health.outage is not None
    health.outage.next_probe = time.time()  # skip the wait in this test
    waiter = asyncio.create_task(health.wait_usable())
    await asyncio.sleep(0.05)
    assert not waiter.done() and calls == ["status"]  # still in maintenance
    health.outage.next_probe = time.time()
    await asyncio.wait_for(waiter, 5)
    assert calls == ["status", "status"] and resumed == [True] and health.pauses == 1
    await health.admit()


async def test_a_free_check_notices_registration_without_waiting_for_appapi() -> None:
    health = NextcloudHealth(credential_retry_seconds=0.1)
    answers = ["disabled", "ok"]
    calls: list[str] = []

    async def self_check() -> str:
        calls.append("self-check")
        return answers.pop(0)

    health.set_credential_probe(self_check, free=True)  # type: ignore[arg-type]
    await asyncio.wait_for(health.wait_usable(), 5)
    assert calls == ["self-check", "self-check"] and health.credentials == "confirmed"


async def test_after_appapi_disables_the_app_only_its_next_enable_resumes() -> None:
    """Seen on a real 34.0.1: AppAPI keeps the app enabled until our answer to /enabled?enabled=0,
    so a self-check proxied meanwhile arrived signed; taken as "enabled", it resumed the webhook
    check, which met the unregistered app: two failed logins. Nothing but /enabled or /init lifts it."""
    health = NextcloudHealth(credential_retry_seconds=0.05)
    calls: list[str] = []

    async def self_check() -> str:
        calls.append("self-check")
        return "ok"  # what the proxy answers while AppAPI still has the app enabled

    health.set_credential_probe(self_check, free=True)  # type: ignore[arg-type]
    health.confirmed_by_appapi()
    health.app_disabled(until_enabled=True)
    health.confirmed_by_appapi()  # a request AppAPI signed before it stored the app as disabled
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(health.wait_usable(), 0.5)
    assert calls == [] and health.credentials == "disabled"
    health.enabled_by_appapi()
    await asyncio.wait_for(health.wait_usable(), 1)
    health.app_disabled(until_enabled=True)
    health.app_disabled()  # /init of a new registration: free checks may notice the enable again
    await asyncio.wait_for(health.wait_usable(), 1)
    assert calls == ["self-check"]


def answering_5xx(health: NextcloudHealth, *, status_php: str = "down") -> dict[str, int]:
    """Probes that behave like the real ones while Nextcloud answers 5xx: the credential check (the
    self-check through AppAPI's proxy) gets a 503 and reports it to the health, as upkeep.py does;
    status.php says ``status_php``. Returns the count of requests each made."""
    sent = {"credentials": 0, "status": 0}

    async def credentials() -> str:
        sent["credentials"] += 1
        await asyncio.sleep(0.002)  # on the wire
        health.unavailable("AppAPI self-check: HTTP 503")
        return "unavailable"

    async def status() -> tuple[str, float | None]:
        sent["status"] += 1
        await asyncio.sleep(0.002)
        return status_php, None  # type: ignore[return-value]

    health.set_probes(status, credentials)  # type: ignore[arg-type]
    return sent


async def busy_app(health: NextcloudHealth, seconds: float) -> None:
    """What the app does after a start: background loops wait until usable, searches keep trying."""

    async def search_every_10_ms() -> None:
        while True:
            with contextlib.suppress(Paused):
                await health.admit()
            await asyncio.sleep(0.01)

    tasks = [asyncio.create_task(health.wait_usable()) for _ in range(6)]
    tasks.append(asyncio.create_task(search_every_10_ms()))
    await asyncio.sleep(seconds)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_restart_while_nextcloud_answers_5xx_sends_one_request_not_a_flood(tmp_path: Path) -> None:
    """Issue 21: restarted with remembered credentials while every answer was 503, the app sent
    20-40 self-checks a second: each waiter and each caller checked again, and each failed check
    woke the others. Now one check, then status.php on its back-off (the first probe after 2 s)."""
    NextcloudHealth(memory=tmp_path / "ok", fingerprint="app:secret").confirmed_by_appapi()
    health = NextcloudHealth(memory=tmp_path / "ok", fingerprint="app:secret")
    sent = answering_5xx(health)
    await busy_app(health, 1.5)
    assert sent == {"credentials": 1, "status": 0}


async def test_a_first_start_while_nextcloud_answers_5xx_backs_off_too() -> None:
    health = NextcloudHealth(credential_retry_seconds=60)
    sent = answering_5xx(health)
    health.set_credential_probe(health._credential_probe, free=True)  # type: ignore[arg-type]
    await busy_app(health, 1.5)
    assert sent == {"credentials": 1, "status": 0}


async def test_an_outage_that_keeps_coming_back_is_probed_less_and_less_often(tmp_path: Path) -> None:
    """status.php answers, the self-check keeps getting 503: the pauses grow to the longest probe
    interval instead of starting again at the shortest after every "up" (scaled: 20 ms to 160 ms)."""
    NextcloudHealth(memory=tmp_path / "ok", fingerprint="app:secret").confirmed_by_appapi()
    health = NextcloudHealth(memory=tmp_path / "ok", fingerprint="app:secret")
    health.first_probe_interval, health.max_probe_interval = 0.02, 0.16
    sent = answering_5xx(health, status_php="up")
    await busy_app(health, 1.2)
    # 20+40+80+160+160… ms between checks (plus one status.php each): about 9 checks in 1.2 s, not 60.
    assert 4 <= sent["credentials"] <= 12, sent
    assert sent["status"] <= sent["credentials"]


async def test_a_kept_alive_connection_closed_under_a_read_pauses_nobody() -> None:
    """A server closes an idle connection (Apache and uvicorn after 5 s) just as the client reuses it:
    httpx says the server disconnected without an answer. Nextcloud never saw that request, so a read
    is sent again once; a write is not (it may have been applied), and a second failure is an outage."""
    import httpx

    from semantic_mcp.nextcloud.client import NextcloudClient, Unavailable

    failures: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if failures and failures[0] > 0:
            failures[0] -= 1
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
        return httpx.Response(207 if request.method == "PROPFIND" else 200, text="ok")

    def client() -> NextcloudClient:
        return NextcloudClient("https://cloud.test", lambda user: {}, transport=httpx.MockTransport(handler))

    for method in ("GET", "PROPFIND", "SEARCH"):
        failures[:] = [1]
        nc = client()
        assert (await nc.request("alice", method, "/remote.php/dav/files/alice/")).text == "ok"
        assert nc.health.usable and failures == [0]

    failures[:] = [1]  # a write is not repeated: the server may have applied it
    nc = client()
    with pytest.raises(Unavailable):
        await nc.request("alice", "POST", "/ocs/v2.php/apps/whatever")
    assert not nc.health.usable

    failures[:] = [2]  # the same read failing twice is Nextcloud gone, as before
    nc = client()
    with pytest.raises(Unavailable):
        await nc.request("alice", "GET", "/index.php/apps/notes/api/v1/notes")
    assert not nc.health.usable
