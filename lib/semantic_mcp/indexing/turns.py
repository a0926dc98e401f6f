"""Whose catching-up tasks the queue hands out next (ADR 0015): users take turns, a few tasks each."""

from __future__ import annotations

import itertools
import sqlite3

_USERS_WAITING = """
WITH RECURSIVE waiting(user) AS (
    SELECT MIN(user) FROM tasks WHERE priority = :priority AND running = 0
    UNION ALL
    SELECT (SELECT MIN(user) FROM tasks WHERE priority = :priority AND running = 0 AND user > waiting.user)
    FROM waiting WHERE waiting.user IS NOT NULL
)
SELECT user FROM waiting WHERE user IS NOT NULL
ORDER BY (SELECT MIN(enqueued_at) FROM tasks WHERE priority = :priority AND running = 0 AND user = waiting.user)"""


MIN_TURN = 4  # tasks a user waiting gets at least in their turn


class Turns:
    """Whose catching-up tasks come next: the users waiting take turns, the one served longest
    ago (or never) first, then the one whose oldest task waited longest. In memory: after a
    restart the order starts again from the oldest task."""

    def __init__(self, priority: int) -> None:
        self.priority = priority
        self._served: dict[str, int] = {}
        self._round = 0

    def take(self, db: sqlite3.Connection, now: float, limit: int) -> list[sqlite3.Row]:
        """Up to ``limit`` ready tasks. Each waiting user is found by one index seek (a GROUP BY
        would read the whole queue: 0.5 s a claim at 100,000 tasks), then the chosen users'
        oldest tasks."""
        waiting = [row[0] for row in db.execute(_USERS_WAITING, {"priority": self.priority})]  # oldest task first
        self._served = {user: self._served[user] for user in waiting if user in self._served}
        # A turn is a few tasks, so that a user's documents are written together (one Chroma write
        # for all of them costs about what one document's does); stable sort: keeps the age order.
        users = sorted(waiting, key=lambda user: self._served.get(user, -1))[: max(1, limit // MIN_TURN)]
        each = -(-limit // len(users)) if users else 0
        queues = [db.execute(
            "SELECT * FROM tasks INDEXED BY tasks_turns WHERE priority = ? AND running = 0 AND not_before <= ?"
            " AND user = ? ORDER BY enqueued_at LIMIT ?", (self.priority, now, user, each)).fetchall() for user in users]
        rows = [row for turn in itertools.zip_longest(*queues) for row in turn if row is not None][:limit]
        self._round += 1
        for row in rows:
            self._served[row["user"]] = self._round
        return rows
