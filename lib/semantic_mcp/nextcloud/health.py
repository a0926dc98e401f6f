"""One shared view of "can we talk to Nextcloud right now?", so nothing hammers it while it refuses us.

Two independent questions, each with its own pause:

* **Reachability.** A 503 (maintenance mode, an upgrade), 429, another 5xx or no answer at all
  pauses every caller at once. While paused, requests fail at once without being sent
  (:class:`~semantic_mcp.nextcloud.client.Unavailable`); one prober asks Nextcloud's anonymous
  ``status.php`` (answered even in maintenance mode, and no login, so it cannot count as a failed
  login) with growing intervals, honouring ``Retry-After``, and traffic resumes when it says the
  server is up.
* **The app's own credentials.** Requests signed with a secret AppAPI does not know count as
  failed logins for our address; a burst locks the app out for hours. So a secret is used only
  once it is known to be good: AppAPI itself signed a request to us with it (``/enabled``, a
  webhook delivery, a user's call). The shell installs a *free* credential check (one that never
  sends the secret: ``ex_app/upkeep.py``), run at start and every ``credential_retry_seconds``
  while not confirmed. Without it (the core alone) a secret that worked in an earlier run
  (remembered by a fingerprint file) is checked with one signed request, and a refused one is
  retried slowly. After a refusal everything stops until one of these says otherwise.

Callers never sleep in :meth:`admit`: a paused request raises at once, and background work waits
in :meth:`wait_usable`. Listeners added with :meth:`on_resume` run after every pause ends
(the engine catches up on what was missed then).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

log = logging.getLogger(__name__)

Credentials = Literal["unknown", "remembered", "confirmed", "refused", "disabled"]
ProbeResult = Literal["up", "maintenance", "down"]
CredentialCheck = Literal["ok", "disabled", "refused", "unavailable"]


class Paused(Exception):
    """Raised by :meth:`NextcloudHealth.admit`; the client turns it into its own error class."""

    def __init__(self, reason: str, *, credentials: bool) -> None:
        super().__init__(reason)
        self.credentials = credentials


@dataclass
class _Outage:
    since: float
    reason: str
    maintenance: bool = False
    failures: int = 1
    next_probe: float = 0.0


class NextcloudHealth:
    """Shared by the HTTP client, the indexing worker, reconciliation, search verification and
    the shell's own calls (settings, users, webhooks)."""

    first_probe_interval = 2.0
    max_probe_interval = 15.0  # so a change made right after a maintenance window is indexed within a minute
    max_retry_after = 600.0

    def __init__(
        self,
        *,
        memory: Path | None = None,
        fingerprint: str = "",
        credential_retry_seconds: float = 1800.0,
    ) -> None:
        self._memory = memory
        self._fingerprint = hashlib.sha256(fingerprint.encode()).hexdigest()[:32] if fingerprint else ""
        remembered = bool(memory and self._fingerprint and _read(memory) == self._fingerprint)
        self.credentials: Credentials = "remembered" if remembered else "unknown"
        self.credentials_since = time.time()
        self.credential_retry_seconds = credential_retry_seconds
        self.outage: _Outage | None = None
        self.last_ok: float | None = None
        self.pauses = 0  # how many times traffic stopped; listeners compare it to catch up once per pause
        self._changed = asyncio.Event()
        self._probe_lock = asyncio.Lock()
        self._status_probe: Callable[[], Awaitable[tuple[ProbeResult, float | None]]] | None = None
        self._credential_probe: Callable[[], Awaitable[CredentialCheck]] | None = None
        self._resume_listeners: list[Callable[[], None]] = []
        self._user_check_at = float("-inf")
        self.in_flight = 0  # requests sent and not yet answered (see :meth:`drained`)
        self._free_checks = False
        self._next_credential_check = 0.0
        self._until_enabled = False  # AppAPI disabled us: only its /enabled (or /init) lifts that
        # Failed answers since the last success. Kept across outages, so an outage that keeps coming
        # back (status.php up, everything else 5xx) is probed less and less often, not afresh each time.
        self._streak = 0

    # --- wiring ---------------------------------------------------------------------------------

    def set_probes(
        self,
        status: Callable[[], Awaitable[tuple[ProbeResult, float | None]]],
        credentials: Callable[[], Awaitable[CredentialCheck]],
    ) -> None:
        self._status_probe, self._credential_probe = status, credentials

    def set_credential_probe(self, probe: Callable[[], Awaitable[CredentialCheck]], *, free: bool) -> None:
        """Replace the credential check. A ``free`` one cannot count as a failed login (see
        ``ex_app/upkeep.py``), so it is also used to notice registration without waiting for AppAPI."""
        self._credential_probe, self._free_checks = probe, free

    def on_resume(self, listener: Callable[[], None]) -> None:
        self._resume_listeners.append(listener)

    # --- state ----------------------------------------------------------------------------------

    @property
    def usable(self) -> bool:
        return self.outage is None and self.credentials == "confirmed"

    def pause_reason(self) -> str | None:
        if self.credentials == "unknown":
            return "waiting for AppAPI to confirm the app's secret (/init or /enabled)"
        if self.credentials == "refused":
            return "Nextcloud refused the app's own credentials; waiting for AppAPI (/init or /enabled)"
        if self.credentials == "disabled":
            return "AppAPI has not enabled the app (or does not know it); waiting for /enabled"
        if self.outage is not None:
            return f"Nextcloud unavailable: {self.outage.reason}"
        return None

    def public_pause_reason(self) -> str | None:
        """:meth:`pause_reason` without the request that met the outage: that names a user and a
        path (``GET /remote.php/dav/files/alice/… as 'alice': HTTP 503``), and every user sees this."""
        reason = self.pause_reason()
        if self.outage is not None and reason is not None:
            return f"Nextcloud unavailable: {self.outage.reason.rpartition(': ')[2]}"
        return reason

    def snapshot(self) -> dict[str, Any]:
        """For the status tool and logs."""
        return {
            "reachable": self.outage is None,
            "unreachable_since": self.outage.since if self.outage else None,
            "maintenance": bool(self.outage and self.outage.maintenance),
            "credentials": self.credentials,
            "paused": not self.usable,
            "pause_reason": self.public_pause_reason(),
            "last_success": self.last_ok,
        }

    def _set_credentials(self, value: Credentials) -> None:
        if value == self.credentials:
            return
        was_usable = self.usable
        self.credentials, self.credentials_since = value, time.time()
        if value == "confirmed":
            self._streak = 0
            self._remember(True)
        elif value in ("refused", "disabled"):
            self._remember(False)
        self._after_change(was_usable)

    def _after_change(self, was_usable: bool) -> None:
        if was_usable and not self.usable:
            self.pauses += 1
            log.warning("Pausing all work with Nextcloud: %s", self.pause_reason())
        elif not was_usable and self.usable:
            log.info("Nextcloud is usable again; resuming")
            for listener in self._resume_listeners:
                listener()
        self._changed.set()
        self._changed = asyncio.Event()

    def _remember(self, good: bool) -> None:
        if self._memory is None or not self._fingerprint:
            return
        with contextlib.suppress(OSError):
            if good:
                self._memory.parent.mkdir(parents=True, exist_ok=True)
                self._memory.write_text(self._fingerprint)
            else:
                self._memory.unlink(missing_ok=True)

    # --- what callers report -----------------------------------------------------------------------

    def confirmed_by_appapi(self) -> None:
        """AppAPI signed a request to us with our secret: it knows the secret, so using it is safe.
        Not after AppAPI disabled us, though: it keeps the app enabled until our answer to
        ``/enabled?enabled=0`` (which waits for :meth:`drained`), so a request it proxies meanwhile
        (the self-check, a user's) says nothing, and an unregister forgets the app right after."""
        if self._until_enabled:
            return
        if self.credentials != "confirmed":
            log.info("AppAPI confirmed the app's secret")
        self._set_credentials("confirmed")

    def enabled_by_appapi(self) -> None:
        """``/enabled?enabled=1`` (or ``/init``): AppAPI enables us now."""
        self._until_enabled = False
        self.confirmed_by_appapi()

    def app_disabled(self, *, until_enabled: bool = False) -> None:
        """AppAPI says the app is disabled (or not enabled yet, during /init): it would refuse
        every request, so none is sent until ``/enabled`` (which confirms). ``until_enabled`` (its
        ``/enabled?enabled=0``): nothing but AppAPI's next ``/enabled`` or ``/init`` lifts it, and no
        free check runs meanwhile (see :meth:`confirmed_by_appapi`)."""
        self._until_enabled = until_enabled
        self._set_credentials("disabled")

    def credentials_refused(self, detail: str) -> None:
        if self.credentials != "refused":
            log.error("Nextcloud refused the app's own credentials (%s): stopping every request until AppAPI "
                      "calls the app again (/init or /enabled), to stay clear of brute-force protection", detail)
        self._set_credentials("refused")

    def succeeded(self) -> None:
        self.last_ok = time.time()
        self._streak = 0

    def unavailable(self, reason: str, *, retry_after: float | None = None, maintenance: bool = False) -> None:
        """Nextcloud answered 503/429/5xx or not at all: pause everyone until a probe says it is back."""
        now = time.time()
        was_usable = self.usable
        if self.outage is not None:  # already paused: nobody needs waking (waking them made them ask again)
            self.outage.reason, self.outage.maintenance = reason, maintenance or self.outage.maintenance
            self._schedule_probe(retry_after)
            return
        self._streak += 1
        self.outage = _Outage(since=now, reason=reason, maintenance=maintenance, failures=self._streak)
        log.warning("Nextcloud unavailable (%s): pausing all work and probing status.php", reason)
        self._schedule_probe(retry_after)
        self._after_change(was_usable)

    def _schedule_probe(self, retry_after: float | None) -> None:
        assert self.outage is not None
        interval = self._backoff(self.outage.failures)
        if retry_after is not None and not self.outage.maintenance:
            # Maintenance answers carry a fixed Retry-After (120 s); status.php says when it really ends.
            interval = max(interval, min(retry_after, self.max_retry_after))
        self.outage.next_probe = max(self.outage.next_probe, time.time() + interval)

    def _backoff(self, failures: int) -> float:
        """2, 4, 8, 15, 15 … s after 1, 2, 3, 4, 5 … failed answers in a row."""
        return min(self.first_probe_interval * 2.0 ** max(failures - 1, 0), self.max_probe_interval)

    def _recovered(self) -> None:
        if self.outage is None:
            return
        was_usable = self.usable
        log.info("Nextcloud answers again after %.0f s unavailable", time.time() - self.outage.since)
        self._streak = self.outage.failures  # status.php answers; whether the rest does is not known yet
        self.outage = None
        self._after_change(was_usable)

    # --- admission and waiting -------------------------------------------------------------------

    async def admit(self) -> None:
        """Return if a request may be sent now, else raise :class:`Paused` at once (never sleeps long).

        With remembered credentials the first caller checks them with one request; others wait
        for that answer, so a secret AppAPI forgot costs one failed login, not a burst. No check is
        made during an outage or before the last one's back-off ends (see :meth:`_check_credentials`).
        """
        if self.credentials == "remembered":
            await self._check_credentials()
        if self.outage is not None:
            raise Paused(self.pause_reason() or "", credentials=False)
        if self.credentials != "confirmed":
            raise Paused(self.pause_reason() or "", credentials=True)

    @contextlib.contextmanager
    def sending(self) -> Iterator[None]:
        """Count a request while it is on the wire (after :meth:`admit`)."""
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1

    async def drained(self, timeout: float = 10.0) -> None:
        """Wait until no request is on the wire. AppAPI forgets an app right after its
        ``/enabled?enabled=0`` answer (unregister); a request still travelling then would arrive
        signed for an unknown app, a failed login. So disabling stops admissions, then waits here."""
        deadline = time.monotonic() + timeout
        while self.in_flight and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    def _credential_check_due(self) -> bool:
        return self.outage is None and time.time() >= self._next_credential_check

    async def _check_credentials(self, *, retry: bool = False) -> None:
        """One credential check; callers that queued behind it use its answer.

        Never during an outage (the status prober alone asks then), and after a check that got no
        usable answer only once its back-off (2, 4, 8, 15 s, …) has passed: every caller and
        waiter comes here, and a check each made a flood of requests while Nextcloud answered 5xx.
        """
        async with self._probe_lock:
            allowed = ("remembered", "refused", "unknown", "disabled") if retry else ("remembered",)
            if (self.credentials not in allowed or self._credential_probe is None or self._until_enabled
                    or not self._credential_check_due()):
                return
            self._next_credential_check = time.time() + self.credential_retry_seconds
            result = await self._credential_probe()
            if result == "unavailable":
                if self.outage is None:  # no pause to back off with (e.g. a 404 page): count it here
                    self._streak += 1
                self._next_credential_check = time.time() + self._backoff(self._streak)
            elif result == "ok":
                self._set_credentials("confirmed")
            elif result == "disabled":
                if self.credentials != "disabled":
                    log.warning("AppAPI does not know this app or has not enabled it: waiting for /init or /enabled")
                self._set_credentials("disabled")
            elif result == "refused":
                self.credentials_refused("checked with one request")

    async def check_user_refusal(self) -> bool:
        """A request as some user got 401: were the app's own credentials refused (True), or only
        that user (False: gone or disabled)? One app-level request answers, made once however many
        requests got the 401 together."""
        async with self._probe_lock:
            if self.credentials != "confirmed":
                return True
            if self._credential_probe is None:
                return False
            if time.monotonic() - self._user_check_at < 5.0:
                return False  # checked a moment ago and the app's credentials worked
            result = await self._credential_probe()
            if result == "ok":
                self._user_check_at = time.monotonic()
        if result == "refused":
            self.credentials_refused("a request as a user got 401 and so did the app itself")
            return True
        if result == "disabled":
            self.app_disabled()
            return True
        return False

    async def wait_usable(self) -> None:
        """Wait until requests may be sent; probes reachability meanwhile (one prober at a time)."""
        while True:
            if self.credentials == "remembered":
                with contextlib.suppress(Exception):
                    await self._check_credentials()
            if self.usable:
                return
            changed = self._changed
            if self.outage is not None:
                delay = self.outage.next_probe - time.time()
                if delay <= 0:
                    await self._probe_status()
                    continue
            elif self.credentials == "remembered" and self._credential_probe is not None:
                delay = self._next_credential_check - time.time()  # the remembered check's back-off
                if delay <= 0:
                    continue
            elif (self.credentials == "refused" or self._free_checks) and not self._until_enabled:
                # A free check may run whenever; a signed one only as the slow retry after a refusal.
                due = self._next_credential_check if self._free_checks else max(
                    self._next_credential_check, self.credentials_since + self.credential_retry_seconds)
                delay = due - time.time()
                if delay <= 0:
                    self.credentials_since = time.time()
                    with contextlib.suppress(Exception):
                        await self._check_credentials(retry=True)
                    continue
            else:
                delay = 60.0  # unknown or disabled: only AppAPI calling us changes this
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), timeout=max(min(delay, 60.0), 0.05))

    async def _probe_status(self) -> None:
        async with self._probe_lock:
            if self.outage is None or self.outage.next_probe > time.time() or self._status_probe is None:
                return
            try:
                result, retry_after = await self._status_probe()
            except Exception as exc:  # noqa: BLE001 - any failure of the probe means "not yet"
                result, retry_after = "down", None
                log.debug("Nextcloud status probe failed: %s", exc)
            if result == "up":
                self._recovered()
                return
            self.outage.failures += 1
            self.outage.maintenance = result == "maintenance"
            self._schedule_probe(retry_after)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""
