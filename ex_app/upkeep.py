"""The shell's own calls to Nextcloud (through nc_py_api) under the shared health, and the webhook
registrations kept in place.

nc_py_api has its own HTTP session, so its calls do not pass through
:class:`~semantic_mcp.nextcloud.client.NextcloudClient`; :func:`guarded` gives them the same rules: nothing
is sent while Nextcloud is unavailable or refuses the app, and a 401, 429, 5xx or no answer pauses
everyone. Webhook deliveries that fail are never retried by Nextcloud, and a registration that
failed (or was removed) leaves the app deaf without a word, so :func:`ensure_webhooks` checks the
list after enabling and periodically, re-registers what is missing and reports it in the status.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import httpx
import niquests
from nc_py_api import AsyncNextcloudApp, NextcloudException

from semantic_mcp.engine import Engine
from semantic_mcp.nextcloud.health import CredentialCheck, NextcloudHealth, Paused
from semantic_mcp.nextcloud.client import CredentialsRefused, Unavailable

log = logging.getLogger("semantic_mcp")

T = TypeVar("T")

WEBHOOK_PATH = "/webhooks/nextcloud"
FILE_EVENTS = [
    f"OCP\\Files\\Events\\Node\\{name}"
    for name in ("NodeCreatedEvent", "NodeWrittenEvent", "NodeRenamedEvent", "NodeCopiedEvent",
                 "BeforeNodeDeletedEvent", "NodeDeletedEvent")
]
CALENDAR_EVENTS = [
    f"OCP\\Calendar\\Events\\CalendarObject{name}Event"
    for name in ("Created", "Updated", "Deleted", "Moved", "MovedToTrash", "Restored")
]
# Webhook-compatible from Deck 1.18 (Nextcloud 34, checked on 34.0.1); an older Deck answers 400 and is polled.
DECK_EVENTS = [f"OCA\\Deck\\Event\\{name}" for name in ("CardCreatedEvent", "CardUpdatedEvent", "CardDeletedEvent")]
REQUIRED_EVENTS = FILE_EVENTS + CALENDAR_EVENTS

WEBHOOK_CHECK_SECONDS = float(os.environ.get("WEBHOOK_CHECK_SECONDS", "600"))
# Enabling and the periodic check may run at once; each must see what the other registered.
_registering = asyncio.Lock()


SELF_CHECK_PATH = "/.well-known/appapi-self-check"


def appapi_self_check(nextcloud_url: str, app_id: str, health: NextcloudHealth) -> Callable[[], Awaitable[CredentialCheck]]:
    """Does AppAPI know our secret, asked without ever sending it?

    An anonymous GET through AppAPI's proxy to our public ``.well-known`` route reaches us only
    if AppAPI knows the app and it is enabled, and then arrives signed with the secret AppAPI holds:
    our own middleware checks it (and confirms the health) like any signed request. Nextcloud
    answers 404 for an app it does not know or has disabled, and counts no failed login for either
    (``ExAppProxyController``: the route has no ``bruteforce_protection``). A signed request to
    Nextcloud would count one for a forgotten secret; this check never does.
    """
    url = f"{nextcloud_url.rstrip('/')}/index.php/apps/app_api/proxy/{app_id}{SELF_CHECK_PATH}"

    async def check() -> CredentialCheck:
        try:
            async with httpx.AsyncClient(timeout=15.0) as http:
                response = await http.get(url)
        except httpx.TransportError as exc:
            health.unavailable(f"AppAPI self-check: no answer ({type(exc).__name__})")
            return "unavailable"
        if health.credentials == "confirmed":  # our middleware saw AppAPI sign it with our secret
            return "ok"
        status = response.status_code
        if status == 401:  # it reached us signed with another secret
            return "refused"
        if status >= 500 or status == 429:
            health.unavailable(f"AppAPI self-check: HTTP {status}",
                               maintenance=response.headers.get("X-Nextcloud-Maintenance-Mode") == "1")
            return "unavailable"
        return "disabled"  # 404: AppAPI does not know the app, or it is not enabled

    return check


async def guarded(health: NextcloudHealth, what: str, call: Callable[[], Awaitable[T]]) -> T:
    """Run one nc_py_api call as :class:`NextcloudClient` runs its requests: refused at once while
    paused (raising the same :class:`Unavailable` / :class:`CredentialsRefused`), outcome reported."""
    try:
        await health.admit()
    except Paused as paused:
        raise (CredentialsRefused if paused.credentials else Unavailable)(f"{what}: {paused}") from None
    try:
        with health.sending():
            result = await call()
    except NextcloudException as exc:
        status = exc.status_code
        if status == 401:
            health.credentials_refused(f"{what}: HTTP 401")
            raise CredentialsRefused(f"{what}: HTTP 401", status) from exc
        if status >= 500 or status == 429:
            health.unavailable(f"{what}: HTTP {status}")
            raise Unavailable(f"{what}: HTTP {status}", status) from exc
        raise
    except niquests.exceptions.ConnectionError as exc:
        health.unavailable(f"{what}: no answer ({type(exc).__name__})")
        raise Unavailable(f"{what}: no answer") from exc
    health.succeeded()
    return result


async def ensure_webhooks(nc: AsyncNextcloudApp, engine: Engine, *, replace: bool = False) -> list[str]:
    """Make sure every event we rely on has our webhook; returns problems the admin should read.

    ``replace`` (on enable) removes ours first, so a changed app URL or event list takes effect.
    Nextcloud unavailable meanwhile (a 5xx, e.g. SQLite's "database is locked", or no answer) is
    not such a problem: it is in the status, and :func:`keep_webhooks_registered` tries again
    once Nextcloud answers.
    """
    async with _registering:
        return await _ensure_webhooks(nc, engine, replace=replace)


async def _ensure_webhooks(nc: AsyncNextcloudApp, engine: Engine, *, replace: bool) -> list[str]:
    health = engine.health
    report = engine.webhooks
    problems: list[str] = []
    try:
        if replace:
            for hook in await guarded(health, "list webhooks", lambda: nc.webhooks.get_list(uri_filter=WEBHOOK_PATH)):
                await guarded(health, "remove a webhook", lambda hook=hook: nc.webhooks.unregister(hook.webhook_id))
        hooks = await guarded(health, "list webhooks", lambda: nc.webhooks.get_list(uri_filter=WEBHOOK_PATH))
        present = {hook.event for hook in hooks}
        missing = [event for event in REQUIRED_EVENTS if event not in present]
        if missing and not replace and (present or report.registered):
            log.warning("%d webhook registration(s) missing: re-registering them", len(missing))
        elif missing and not replace:  # none yet, none before: the app's first start, or enabling under way
            log.info("Registering the app's %d webhooks", len(missing))
        still_missing = []
        for event in missing:
            try:
                await guarded(health, "register a webhook",
                              lambda event=event: nc.webhooks.register("POST", WEBHOOK_PATH, event))
            except (Unavailable, CredentialsRefused):
                raise
            except NextcloudException as exc:
                problems.append(f"webhook {event}: {exc}")
                still_missing.append(event)
        # A Deck older than 1.18 refuses them: asked again on enable or with others missing, not every
        # check; where some are registered the server takes them, so the rest is completed.
        deck_missing = [event for event in DECK_EVENTS if event not in present]
        if deck_missing and (replace or missing or len(deck_missing) < len(DECK_EVENTS)):
            await _try_deck_events(nc, health, deck_missing)
        report.missing, report.error = still_missing, None
        report.registered = len(REQUIRED_EVENTS) - len(still_missing)
    except (Unavailable, CredentialsRefused, NextcloudException) as exc:
        # Unknown now: keep polling often until a check succeeds.
        report.missing = report.missing or list(REQUIRED_EVENTS)
        report.error = str(exc)
        if not isinstance(exc, (Unavailable, CredentialsRefused)):
            problems.append(f"webhooks: {exc}")
    report.checked_at = time.time()
    if report.missing:
        log.warning("Webhooks missing (%s): reconciling every minute meanwhile", report.error or ", ".join(report.missing))
    return problems


async def _try_deck_events(nc: AsyncNextcloudApp, health: NextcloudHealth, events: list[str]) -> None:
    for event in events:
        try:
            await guarded(health, "register a webhook", lambda event=event: nc.webhooks.register("POST", WEBHOOK_PATH, event))
        except NextcloudException:
            log.info("Deck card events are not webhook-compatible on this server (Deck < 1.18): polling Deck instead")
            return


async def keep_webhooks_registered(engine: Engine) -> None:
    """Check the registrations every ``WEBHOOK_CHECK_SECONDS``, and after every pause (the app may
    have been re-registered, or Nextcloud restored from a backup, meanwhile)."""
    health = engine.health
    last_check, pauses = float("-inf"), health.pauses
    while True:
        await health.wait_usable()
        due = time.monotonic() - last_check >= (60.0 if engine.webhooks.missing else WEBHOOK_CHECK_SECONDS)
        if due or health.pauses != pauses:
            pauses = health.pauses
            last_check = time.monotonic()
            try:
                await ensure_webhooks(AsyncNextcloudApp(), engine)
            except Exception:  # e.g. a timeout: the next check tries again; this loop must not end
                log.exception("Checking the webhook registrations failed")
        await asyncio.sleep(5.0)
