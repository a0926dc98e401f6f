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


MIN_TURN = 16  # tasks a user waiting gets in their turn, or all they have (fewer while the batches are small)


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
        # A turn is several tasks, so that a user's documents are written together: each Chroma write
        # costs ~13 ms however few chunks it holds (ADR 0569). Users with fewer tasks leave room, for
        # the next in line and then for whoever has more, so a batch is full while anyone waits.
        order = sorted(waiting, key=lambda user: self._served.get(user, -1))  # stable: keeps the age order
        each = max(MIN_TURN, -(-limit // len(waiting))) if waiting else 0
        queues: dict[str, list[sqlite3.Row]] = {}
        taken = 0
        for room_left in (False, True):  # a turn each, then the room left to those who have more
            for user in order:
                have = queues.get(user, [])
                if taken >= limit or (room_left and len(have) < each):
                    continue
                share = limit if room_left else each
                taken_ids = ",".join(str(row["rowid"]) for row in have)  # not OFFSET: tasks enqueued together tie
                rows = db.execute(
                    "SELECT rowid, * FROM tasks INDEXED BY tasks_turns WHERE priority = ? AND running = 0"
                    f" AND not_before <= ? AND user = ? AND rowid NOT IN ({taken_ids}) ORDER BY enqueued_at LIMIT ?",
                    (self.priority, now, user, min(share, limit - taken))).fetchall()
                queues[user] = have + rows
                taken += len(rows)
        rows = [row for turn in itertools.zip_longest(*queues.values()) for row in turn if row is not None]
        self._round += 1
        for row in rows:
            self._served[row["user"]] = self._round
        return rows
