"""What the index state keeps per user: their own choice and their account's identity."""

from __future__ import annotations

import sqlite3
import time
from contextlib import AbstractContextManager
from typing import Any

_INDEXED_PER_USER = ("tasks", "documents", "skipped", "dead_letters", "refused", "cursors", "team_folders")
_PER_USER = (*_INDEXED_PER_USER, "users")


class UserRecords:
    """Part of :class:`~.state.IndexState`, on its connection."""

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]: ...  # provided by IndexState

    def _rows(self, sql: str, *args: Any) -> list[sqlite3.Row]: ...  # provided by IndexState

    def set_user_enabled(self, user: str, enabled: bool) -> None:
        with self._tx() as db:
            db.execute(
                """INSERT INTO users (user, enabled, changed_at) VALUES (?, ?, ?)
                   ON CONFLICT (user) DO UPDATE SET enabled = excluded.enabled, changed_at = excluded.changed_at""",
                (user, int(enabled), time.time()),
            )
            if not enabled:
                for table in _INDEXED_PER_USER:
                    db.execute(f"DELETE FROM {table} WHERE user = ?", (user,))

    def user_choice(self, user: str) -> bool | None:
        """The user's own opt-in/out, or None when they never chose (the admin default applies)."""
        rows = self._rows("SELECT enabled FROM users WHERE user = ?", user)
        return bool(rows[0]["enabled"]) if rows and rows[0]["enabled"] is not None else None

    def users_with_data(self) -> set[str]:
        """Every user anything is kept for (queue, index, decisions, cursors, choices)."""
        return {row["user"] for row in self._rows(" UNION ".join(f"SELECT user FROM {t}" for t in _PER_USER))}

    def delete_user(self, user: str) -> None:
        """Forget an account that is gone, its own choices included."""
        with self._tx() as db:
            for table in _PER_USER:
                db.execute(f"DELETE FROM {table} WHERE user = ?", (user,))

    def account_id(self, user: str) -> str | None:
        rows = self._rows("SELECT account_id FROM users WHERE user = ?", user)
        return rows[0]["account_id"] if rows else None

    def set_account_id(self, user: str, account_id: str) -> None:
        with self._tx() as db:
            db.execute("""INSERT INTO users (user, changed_at, account_id) VALUES (?, ?, ?)
                          ON CONFLICT (user) DO UPDATE SET account_id = excluded.account_id""",
                       (user, time.time(), account_id))

    def known_users(self) -> list[str]:
        return [row["user"] for row in self._rows("SELECT user FROM users")]

    def note_event(self, user: str) -> None:
        with self._tx() as db:
            db.execute(
                """INSERT INTO users (user, enabled, changed_at, last_event) VALUES (?, NULL, ?, ?)
                   ON CONFLICT (user) DO UPDATE SET last_event = excluded.last_event""",
                (user, time.time(), time.time()),
            )
