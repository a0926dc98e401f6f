"""Nextcloud's recent answers to "can this user open this item?", kept for the re-check window (ADR 0780).

Behind AppAPI's PHP proxy a search holds one of Nextcloud's PHP workers while its re-check needs
another; with every worker held by searches, no re-check is answered (ADR 0010). So a verdict
Nextcloud gave *as the user* is kept for ``window`` seconds. While Nextcloud is busy, hits are
served on it, and the user's known items are asked again, in one request and outside any search,
once their verdict is half the window old (search/verify.py). Every hit served was confirmed as the
caller at most ``window`` seconds before. The time kept is when the question was *sent*, so the age
is never under-stated.

A user's known items are the ones their searches returned in the last ``forget_after`` seconds;
they are what is asked again ahead of time (at most ``limit`` per request, the companion's limit).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable


class RecentVerdicts:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic, forget_after: float = 600.0,
                 max_users: int = 10_000, max_items: int = 2_000) -> None:
        self.clock = clock
        self.forget_after = forget_after
        self.max_users = max_users
        self.max_items = max_items  # per user; the least recently used go first
        # user -> doc key -> (readable, asked at, last used)
        self._verdicts: dict[str, dict[str, tuple[bool, float, float]]] = {}
        # doc key -> when Nextcloud said it moved or went: no verdict asked before then is served, for anyone
        self._changed: dict[str, float] = {}
        self._pruned_at = clock()

    def fresh(self, user: str, keys: Iterable[str], window: float,
              since: float = float("-inf")) -> dict[str, tuple[bool, float]]:
        """The verdicts at most ``window`` seconds old and asked after ``since``, with their age; marks
        them used."""
        now = self.clock()
        known = self._verdicts.get(user, {})
        found: dict[str, tuple[bool, float]] = {}
        for key in keys:
            entry = known.get(key)
            if entry is not None and now - entry[1] <= window and entry[1] > max(since, self._changed.get(key, since)):
                found[key] = (entry[0], now - entry[1])
                known[key] = (entry[0], entry[1], now)
        return found

    def due(self, user: str, window: float, limit: int) -> list[str]:
        """The user's known items whose verdict is older than half the window (asked again ahead of
        time), most recently used first, at most ``limit``."""
        now = self.clock()
        known = self._verdicts.get(user, {})
        stale = [(used, key) for key, (_, asked, used) in known.items()
                 if now - asked > window / 2 and now - used <= self.forget_after]
        return [key for _, key in sorted(stale, reverse=True)[:limit]]

    def record(self, user: str, verdicts: dict[str, bool | None], asked_at: float) -> None:
        """Nextcloud's answers to a question sent at ``asked_at``; "could not say" (None) is not kept."""
        known = self._verdicts.setdefault(user, {})
        now = self.clock()
        for key, verdict in verdicts.items():
            if verdict is None:
                continue
            previous = known.get(key)
            if previous is None or previous[1] <= asked_at:  # an older answer never overwrites a newer one
                known[key] = (verdict, asked_at, previous[2] if previous else now)
        if len(known) > self.max_items:
            for key in sorted(known, key=lambda k: known[k][2])[: len(known) - self.max_items]:
                del known[key]
        if len(self._verdicts) > self.max_users or len(self._changed) > 100_000 or now - self._pruned_at > 60:
            self.prune()

    def forget(self, user: str, keys: Iterable[str] | None = None) -> None:
        """Drop a user's verdicts (all, or these items'): the next search asks Nextcloud again."""
        if keys is None:
            self._verdicts.pop(user, None)
            return
        known = self._verdicts.get(user, {})
        for key in keys:
            known.pop(key, None)

    def changed(self, keys: Iterable[str]) -> None:
        """These items moved or went just now: no verdict about them asked before now is served, for anyone
        (a question already under way answers after this, with a verdict it asked before)."""
        now = self.clock()
        self._changed.update(dict.fromkeys(keys, now))

    def expire(self) -> None:
        """Every verdict too old to serve; the items stay known (they are asked again ahead of time)."""
        for known in self._verdicts.values():
            for key, (verdict, _, used) in known.items():
                known[key] = (verdict, float("-inf"), used)

    def prune(self) -> None:
        """Forget items no search returned for ``forget_after`` seconds, and users left with none."""
        now = self._pruned_at = self.clock()
        # A change older than any verdict still served (none outlives forget_after) no longer matters.
        self._changed = {key: at for key, at in self._changed.items() if now - at <= self.forget_after}
        for user in list(self._verdicts):
            known = self._verdicts[user]
            for key in [k for k, (_, _, used) in known.items() if now - used > self.forget_after]:
                del known[key]
            if not known:
                del self._verdicts[user]
