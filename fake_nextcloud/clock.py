"""The fake server's wall clock: every timestamp it hands out (mtimes, Last-Modified, Deck's
dates, webhook times) and the seed's "next week" read it, nothing else.

Tests start it at another instant (a month end, a year end, a leap day) and give the app the same
shift (``APP_CLOCK_SHIFT_SECONDS``, see :mod:`semantic_mcp.core.clock`), so the seed, the server and the
app agree on what "now" is. It keeps ticking from there, as a real server's clock does.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime


class Clock:
    def __init__(self, start: datetime | None = None) -> None:
        self.shift_seconds = 0.0 if start is None else start.timestamp() - time.time()

    def time(self) -> float:
        return time.time() + self.shift_seconds

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.time(), UTC)
