"""A grant holds only while the account that made it does (ADR 0500).

Every token use and refresh asks (through :class:`~semantic_mcp.nextcloud.accounts.AccountDirectory`, which
caches an answer a minute) whether the grant's account is still enabled and still the same person:
grants keep the account's identity (its first-login time) from the consent, so a uid deleted and
given to someone new never inherits one. A disabled or deleted account's grants are all revoked;
re-enabling the account does not bring them back. A grant also ends 30 days after consent however
often it is refreshed.
"""

from __future__ import annotations

import logging
from typing import Protocol

from ..nextcloud.accounts import Account
from ..operating import audit
from .errors import OAuthError
from .store import Grant, OAuthStore

log = logging.getLogger(__name__)

GRANT_SECONDS = 30 * 86400  # absolute: after it, the user consents again


class Accounts(Protocol):
    async def account(self, user: str) -> Account: ...


class AccountUnconfirmed(OAuthError):
    """Nextcloud could not say now whether the account still holds: try again, nothing is revoked."""

    def __init__(self) -> None:
        super().__init__("temporarily_unavailable", "Nextcloud cannot confirm the account right now; try again",
                         status=503)


def grant_end(grant: Grant) -> float:
    return grant.expires_at or grant.created_at + GRANT_SECONDS


def _made_by(identity: str | None, granted_at: float) -> bool:
    """Whether an account with this first-login time can have made a grant at ``granted_at`` (for grants
    from before identities were kept): it logged in before then, or before Nextcloud 31 (-1)."""
    try:
        first_login = int(identity or "")
    except ValueError:
        return False
    return first_login == -1 or 0 < first_login <= granted_at


class AccountBinding:
    def __init__(self, store: OAuthStore, accounts: Accounts | None) -> None:
        self.store = store
        self.accounts = accounts  # None only in tests of the OAuth flows alone

    async def account(self, user: str) -> Account:
        """The account as Nextcloud now says; raises :class:`AccountUnconfirmed` when it cannot say."""
        if self.accounts is None:
            return Account(user, "active", "unchecked")
        account = await self.accounts.account(user)
        if account.state == "unknown":
            raise AccountUnconfirmed()
        return account

    async def holds(self, grant: Grant, now: float) -> bool:
        """The grant's account is enabled and is the one that consented; otherwise its grants end now."""
        account = await self.account(grant.user)
        if account.state == "active" and grant.account_id is None and _made_by(account.identity, grant.created_at):
            self.store.bind_grant(grant.id, account.identity or "", grant_end(grant))
            return True
        if account.state == "active" and account.identity == grant.account_id:
            return True
        if account.state == "active":  # the uid now belongs to someone else: only this grant is known stale
            self.store.revoke_grant(grant.id, now)
            log.warning("Revoked an OAuth grant of %r: the account was deleted and its id given anew", grant.user)
        else:
            count = self.store.revoke_grants_of(grant.user, now)
            log.warning("Revoked %d OAuth grant(s) of %r: the account is %s", count, grant.user, account.state)
            audit.record(audit.tool_call_line(user=grant.user, client=grant.client_name, client_id=grant.client_id,
                                              tool="", outcome="refused", reason="account"), refused=True)
        return False
