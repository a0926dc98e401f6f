"""Versioned migrations for the app's SQLite databases (ADR 0742): the index state, the keyword index
and the OAuth store each keep an ordered list of steps, and ``PRAGMA user_version`` says how many of
them the file has had.

Each database's schema script creates the newest layout (``CREATE ... IF NOT EXISTS``), then
:func:`migrate` runs the steps past the file's version, each in its own transaction with its number,
so a crash mid-way resumes at the step that did not commit. Steps only add (columns, indexes, a
one-time clean-up): an older app still opens a newer file.

The databases written before versioning all read version 0, whatever columns they already had;
the steps of that era therefore check before they add (:func:`add_column`). A step added from now on
may rely on the version alone.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence

log = logging.getLogger(__name__)

Step = Callable[[sqlite3.Connection], None]


def version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def is_new(db: sqlite3.Connection) -> bool:
    """A file with no tables yet (asked before its schema script runs)."""
    return db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0


def migrate(db: sqlite3.Connection, steps: Sequence[Step], *, name: str, new: bool = False) -> int:
    """Bring ``db`` (an autocommit connection) up to ``len(steps)``; returns the version it is at.
    ``new``: the file was just created (a fresh install): its steps run all the same (some add what
    the schema script does not, such as indexes), but are not logged as an upgrade would be."""
    at = version(db)
    if at > len(steps):
        log.warning("The %s was written by a newer version of the app (layout %d, this one knows %d); "
                    "opening it as it is", name, at, len(steps))
        return at
    for number, step in enumerate(steps[at:], start=at + 1):
        db.execute("BEGIN IMMEDIATE")
        try:
            step(db)
            db.execute(f"PRAGMA user_version = {number}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        log.log(logging.DEBUG if new else logging.INFO, "The %s was migrated to layout %d (%s)", name, number,
                getattr(step, "__doc__", None) or step.__name__)
    return len(steps)


def columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def add_column(table: str, column: str, declaration: str) -> Step:
    """A step adding ``column`` to ``table`` unless a database from before versioning has it already."""

    def step(db: sqlite3.Connection) -> None:
        if column not in columns(db, table):
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")

    step.__name__ = f"add_{table}_{column}"
    step.__doc__ = f"{table}.{column} added"
    return step


def run_sql(description: str, sql: str) -> Step:
    """A step of plain SQL statements (idempotent ones, for the steps of the unversioned era)."""

    def step(db: sqlite3.Connection) -> None:
        for statement in filter(str.strip, sql.split(";")):
            db.execute(statement)

    step.__name__ = description.replace(" ", "_")
    step.__doc__ = description
    return step
