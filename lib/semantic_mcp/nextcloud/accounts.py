"""Is a Nextcloud account still the one we knew? Asked on every OAuth token use and refresh, and by
reconciliation, which purges what a deleted account left behind (ADR 0500).

Nextcloud offers an ExApp no user events (webhook_listeners refuses ``OCP\\User\\Events\\*`` with 400
on 32 and 34), so the app asks. What a real server answers (34.0.1, checked with ``occ``):

* ``GET /ocs/v2.php/cloud/user`` as the user (AppAPI headers): 200 for an enabled account, with
  ``firstLoginTimestamp``; **401** ("Current user is not logged in") for a disabled account and for
  a deleted one. WebDAV as a *disabled* user still answers (AppAPI's DAV login does not check it).
* AppAPI's user list (``/ocs/v2.php/apps/app_api/api/v1/users``, as the app) names disabled
  accounts and omits deleted ones: after a 401 it tells the two apart.
* ``firstLoginTimestamp`` is the account's identity beside its uid: set once at the first login
  (``-1`` for accounts older than Nextcloud 31), ``0`` for an account that never logged in. A uid
  deleted and given to someone new gets ``0``, then a later time, never the old value.

Only an authoritative answer counts: a timeout, a 5xx or refused app credentials give ``unknown``,
which never purges or revokes anything.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from .client import NextcloudClient, NextcloudError, UserRefused

log = logging.getLogger(__name__)

AccountState = Literal["active", "disabled", "gone", "unknown"]
CACHE_SECONDS = 60.0
USERS_PATH = "/ocs/v2.php/apps/app_api/api/v1/users"


@dataclass(frozen=True)
class Account:
    user: str
    state: AccountState
    identity: str | None = None  # firstLoginTimestamp, as text; only for an active account


@dataclass(frozen=True)
class DataHolder:
    """A store that keeps something per account (the index, OAuth grants): purged with the account."""

    users_with_data: Callable[[], set[str]]
    purge_user: Callable[[str], None]


class IdentityRecord(Protocol):
    """Who each user was when last seen (the index state keeps it), so a uid given anew is noticed."""

    def account_id(self, user: str) -> str | None: ...

    def set_account_id(self, user: str, account_id: str) -> None: ...


class AccountDirectory:
    def __init__(self, nc: NextcloudClient, *, identities: IdentityRecord | None = None, ttl: float = CACHE_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.nc = nc
        self.identities = identities
        self.ttl = ttl
        self.clock = clock
        self._cache: dict[str, tuple[float, Account]] = {}
        self.holders: list[DataHolder] = []

    async def account(self, user: str, *, fresh: bool = False) -> Account:
        """The account's state, asked at most once per ``ttl`` (unknown answers are not kept)."""
        cached = self._cache.get(user)
        if cached and not fresh and self.clock() - cached[0] < self.ttl:
            return cached[1]
        account = await self._ask(user)
        if account.state != "unknown":
            self._cache[user] = (self.clock(), account)
        return account

    async def _ask(self, user: str) -> Account:
        if not user:
            return Account(user, "gone")
        try:
            data = await self.nc.ocs(user, "GET", "/ocs/v2.php/cloud/user")
        except UserRefused:  # the app's own credentials work (checked): disabled or deleted
            try:
                listed = await self.listed_users()
            except Exception as exc:  # noqa: BLE001 - anything but an answer is not one
                log.info("Could not tell whether %r is disabled or deleted: %s", user, exc)
                return Account(user, "unknown")
            return Account(user, "disabled" if user in listed else "gone")
        except (NextcloudError, OSError) as exc:
            log.info("Could not check the account of %r: %s", user, exc)
            return Account(user, "unknown")
        if not isinstance(data, dict) or data.get("id") != user:
            return Account(user, "unknown")
        if data.get("enabled") is False:
            return Account(user, "disabled")
        return Account(user, "active", str(data.get("firstLoginTimestamp", "")))

    async def listed_users(self) -> set[str]:
        """Every account Nextcloud has, disabled ones included (AppAPI's list, asked as the app)."""
        data = await self.nc.ocs("", "GET", USERS_PATH)
        if not isinstance(data, list):
            raise NextcloudError(f"unexpected user list: {type(data).__name__}")
        return {str(uid) for uid in data}

    def forget(self, user: str) -> None:
        self._cache.pop(user, None)

    async def sweep(self, listed: Iterable[str]) -> list[str]:
        """Purge everything kept for accounts Nextcloud no longer has, or that now belong to someone
        else. ``listed`` is a user list Nextcloud just answered; an account missing from it is
        confirmed gone on its own before anything is deleted, so an incomplete list or a transient
        error purges nothing. Returns the users purged."""
        present = set(listed)
        purged = []
        for user in sorted(set().union(*(holder.users_with_data() for holder in self.holders))):
            if user not in present:
                if (await self.account(user, fresh=True)).state == "gone":
                    self.purge(user, "is gone from Nextcloud")
                    purged.append(user)
            elif self.identities is not None and await self._replaced(user, self.identities):
                purged.append(user)
        return purged

    async def _replaced(self, user: str, identities: IdentityRecord) -> bool:
        """Whether ``user`` is now someone else than when last seen (then purged); records who it is."""
        account = await self.account(user)
        if account.state != "active" or account.identity is None:
            return False
        known = identities.account_id(user)
        replaced = known is not None and known != account.identity
        if replaced:
            self.purge(user, "was deleted and its id given to a new account")
        if known != account.identity:
            identities.set_account_id(user, account.identity)
        return replaced

    async def confirm_same_person(self, user: str, timeout: float) -> None:
        """Before ``user`` is served from the index: a uid given to someone new since it was indexed
        is purged first, not at the next reconciliation pass (until then the new person could be
        served the old one's items, e.g. as unverifiable "own" hits, ADR 0010). Asked at most once
        per ``ttl`` and for at most ``timeout`` seconds, as the re-checks are (a saturated Nextcloud
        must not hold searches); an unknown or late answer changes nothing."""
        if self.identities is None:
            return
        try:
            await asyncio.wait_for(self._replaced(user, self.identities), timeout)
        except TimeoutError:
            log.info("The account check of %r took over %.1f s; searching without it", user, timeout)

    def purge(self, user: str, why: str) -> None:
        log.info("Account %r %s: purging its index, state and OAuth grants", user, why)
        for holder in self.holders:
            holder.purge_user(user)
        self.forget(user)
