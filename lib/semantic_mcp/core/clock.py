"""The app's wall clock: the one place that says what "now" is (ADR 0014).

Everything that gives a date a meaning reads it here: "next week" in a question, which occurrence
of a recurring event comes next, how old an OAuth token is, a listing cursor compared with
Nextcloud's modification times. Our own delays and schedules (retries, health probes, the
reconciliation interval) only compare two readings of the system clock, so no day changes them;
they read ``time`` directly.

Tests start the clock at another instant (``APP_CLOCK_SHIFT_SECONDS``, seconds added to the system
clock) so the app and the fake Nextcloud agree on a month end, a year end or a leap day; it keeps
ticking from there. Real deployments leave it unset.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

SHIFT_VARIABLE = "APP_CLOCK_SHIFT_SECONDS"


class Clock:
    def __init__(self, shift_seconds: float = 0.0) -> None:
        self.shift_seconds = shift_seconds

    @classmethod
    def from_env(cls, env: dict[str, str]) -> Clock:
        return cls(float(env.get(SHIFT_VARIABLE) or 0.0))

    def time(self) -> float:
        """Unix seconds, like ``time.time()``."""
        return time.time() + self.shift_seconds

    def now(self) -> datetime:
        """The current instant in UTC."""
        return datetime.fromtimestamp(self.time(), UTC)
