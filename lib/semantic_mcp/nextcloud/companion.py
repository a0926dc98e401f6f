"""The PHP companion app ``semantic_search``, seen from the ExApp: is it there, and re-check through it.

When it is enabled, every re-check of a search's hits is one PHP request (its OCS endpoint opens
each item as the user, in process) instead of one request per source; without it the sources'
own checks (search/verify.py) stay. Its presence is read from Nextcloud's capabilities, which the
companion publishes, at most every ``interval`` seconds; a 404 from its endpoint (disabled since)
says the same at once. From version 0.2 it also tells the ExApp at once when access to what others
share may have ended (``access_changes`` in its capabilities; ADR 0781).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Sequence

from .client import NextcloudClient, NextcloudError, NotFound, Transient, Unavailable

log = logging.getLogger(__name__)

COMPANION_APP_ID = "semantic_search"
CHECK_PATH = f"/ocs/v2.php/apps/{COMPANION_APP_ID}/api/v1/check"
MAX_ITEMS = 200  # the companion refuses longer lists (CheckController::MAX_ITEMS)


def changed_items(body: bytes) -> list[str] | None:
    """The items (doc keys) a notice to ``/access-changed`` names, or None for any of what others share:
    the notice names none, or cannot be read, and the widest change is the safe reading (ADR 0781)."""
    try:
        items = json.loads(body or b"null").get("items")
    except (ValueError, AttributeError):
        return None
    if isinstance(items, list) and 0 < len(items) <= MAX_ITEMS and all(
            isinstance(item, str) and ":" in item for item in items):
        return items
    return None


class Companion:
    def __init__(self, interval: float = 60.0) -> None:
        self.interval = interval
        self.present: bool | None = None  # None: not asked yet
        self.version: str | None = None
        # It tells the app at once when access to what others share may have ended (POST /access-changed).
        self.forwards_access_changes = False
        self._asked_at = float("-inf")

    def status(self) -> dict[str, object]:
        """For the sync-status tool: whether re-checks and the search bar go through the companion."""
        state = {None: "not checked yet", True: "installed", False: "not installed"}[self.present]
        return {"app_id": COMPANION_APP_ID, "state": state, "version": self.version,
                "re_checks": "one request through the companion" if self.present else "per source (WebDAV, CalDAV, "
                "CardDAV, Deck)",
                "access_changes": "heard at once" if self.forwards_access_changes else "not heard"}

    async def refresh(self, nc: NextcloudClient, *, force: bool = False) -> None:
        """Ask Nextcloud's capabilities (as the app) whether the companion is enabled, if it is time."""
        if not force and time.monotonic() - self._asked_at < self.interval:
            return
        self._asked_at = time.monotonic()
        try:
            data = await nc.ocs("", "GET", "/ocs/v2.php/cloud/capabilities")
        except (NextcloudError, Transient, Unavailable) as exc:  # unknown for now: keep what we knew
            log.debug("Could not read Nextcloud's capabilities: %s", exc)
            return
        found = (data.get("capabilities") or {}).get(COMPANION_APP_ID) if isinstance(data, dict) else None
        present = isinstance(found, dict)
        if present != self.present:
            log.info("The companion app %s is %s", COMPANION_APP_ID, "enabled" if present else "not enabled")
        self.present, self.version = present, (str(found.get("version")) if present and found.get("version") else None)
        self.forwards_access_changes = present and found.get("access_changes") is True

    async def readable(
        self, nc: NextcloudClient, user: str, keys: Sequence[str], timeout: float
    ) -> dict[str, bool | None] | None:
        """Verdicts by doc key from the companion, as :meth:`Source.readable` gives them (None: it could not
        say in time); None as a whole when the companion is not there (then the sources check)."""
        if not self.present:
            return None
        verdicts: dict[str, bool | None] = {}
        for start in range(0, len(keys), MAX_ITEMS):
            part = list(keys[start:start + MAX_ITEMS])
            try:
                data = await asyncio.wait_for(nc.ocs(user, "POST", CHECK_PATH, json={"items": part}), timeout)
                readable = data.get("readable") or {}
                verdicts.update({key: bool(readable.get(key, False)) for key in part})
            except NotFound as exc:
                if exc.status == 404:  # disabled since we last asked: the sources check from now on
                    log.info("The companion app %s is gone; re-checking per source", COMPANION_APP_ID)
                    self.present = self.forwards_access_changes = False
                    return None
                log.warning("The companion app %s refused a re-check for %s (%s)", COMPANION_APP_ID, user, exc)
                verdicts.update(dict.fromkeys(part))
            except (Transient, Unavailable, TimeoutError, NextcloudError):
                verdicts.update(dict.fromkeys(part))
        return verdicts
