"""Anti-CSRF tokens for a logged-in user's forms on our own pages: one per page shown, used once.

Nextcloud checks no CSRF token on the requests it proxies to an ExApp, so our forms carry their own.
A token is ``issued.nonce.mac``: the MAC (HMAC-SHA256 under the app's state key) binds the form's
purpose, the user, the time and a random nonce, so no one can make one up and another user's does
not fit. It expires after an hour and is refused once used (the nonces seen are remembered until
they would have expired anyway), so one copied from a page, a log or a browser's history is worth
nothing later (second review, issue 36: the token used to be a fixed value per user).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable

LIFETIME_SECONDS = 3600.0


class FormTokens:
    def __init__(self, key: bytes, purpose: str, clock: Callable[[], float] = time.time,
                 lifetime: float = LIFETIME_SECONDS) -> None:
        self._key = key
        self._purpose = purpose
        self._clock = clock
        self._lifetime = lifetime
        self._used: dict[str, float] = {}  # nonce -> when it would have expired

    def issue(self, user: str) -> str:
        issued, nonce = int(self._clock()), secrets.token_urlsafe(12)
        return f"{issued}.{nonce}.{self._mac(user, issued, nonce)}"

    def redeem(self, user: str, token: str) -> bool:
        """True once for a token issued to ``user`` within the lifetime; False ever after."""
        issued_text, _, rest = token.partition(".")
        nonce, _, mac = rest.partition(".")
        if not issued_text.isdigit() or not nonce or not hmac.compare_digest(mac, self._mac(user, int(issued_text), nonce)):
            return False
        now, issued = self._clock(), int(issued_text)
        self._used = {n: until for n, until in self._used.items() if until >= now}
        if not issued - 60 <= now <= issued + self._lifetime or nonce in self._used:
            return False
        self._used[nonce] = issued + self._lifetime
        return True

    def _mac(self, user: str, issued: int, nonce: str) -> str:
        message = f"{self._purpose}/{user}/{issued}/{nonce}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()
