"""The keyword index's tables, one pair per user, and the migrations of its file (migrations.py)."""

from __future__ import annotations

import sqlite3

from .keyword_terms import TOKENIZER
from .migrations import add_column

FILTER_COLUMNS = ("doc_type", "modified", "event_start", "location")  # what SearchFilters.to_sql reads


# A search reads its candidates' languages from this index alone, not from their rows (ADR 0568).
LANGUAGE_INDEX = "CREATE INDEX IF NOT EXISTS {content}_lang ON {content}(chunk_id, lang)"


def filter_indexes(content: str) -> str:
    """Indexes on the filter columns: the dense leg's filtered searches select chunk ids here."""
    return "".join(
        f"CREATE INDEX IF NOT EXISTS {content}_{column} ON {content}({column});" for column in FILTER_COLUMNS
    )


def _content_tables(db: sqlite3.Connection) -> list[str]:
    """Every user's content table (their FTS tables are named ``<content>_fts``)."""
    rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'kw_*_fts'").fetchall()
    return [name[: -len("_fts")] for (name,) in rows]


def _add_filter_indexes(db: sqlite3.Connection) -> None:
    """Users' tables from before the filter-column indexes get them."""
    for content in _content_tables(db):
        for statement in filter(str.strip, filter_indexes(content).split(";")):
            db.execute(statement)


def _add_text_and_language(db: sqlite3.Connection) -> None:
    """Users' tables from before texts (ADR 0566) or languages (ADR 0568) were kept here get the
    columns, empty (NULL: not recorded): the vector store still holds those chunks' texts and
    metadata, and a chunk written again fills them. Not the language index: built at start-up it
    took 463 s at a million chunks, and the old rows have no language to index."""
    for content in _content_tables(db):
        for column in ("text", "lang"):
            add_column(content, column, "TEXT")(db)


# The layouts since the first, in order (migrations.py); append, never change or reorder.
MIGRATIONS = (_add_filter_indexes, _add_text_and_language)


def user_tables(content: str, fts: str) -> str:
    """The script creating one user's content table, its FTS5 index and the triggers keeping them in step."""
    return f"""
BEGIN;
CREATE TABLE IF NOT EXISTS {content} (
    rowid INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL UNIQUE, doc_key TEXT NOT NULL,
    doc_type TEXT, modified INTEGER, event_start INTEGER, location TEXT,
    body TEXT NOT NULL, text TEXT, lang TEXT);
CREATE INDEX IF NOT EXISTS {content}_doc ON {content}(doc_key);
{LANGUAGE_INDEX.format(content=content)};
{filter_indexes(content)}
CREATE VIRTUAL TABLE {fts} USING fts5(body, content='{content}', content_rowid='rowid',
    tokenize="{TOKENIZER}");
CREATE TRIGGER {content}_ai AFTER INSERT ON {content} BEGIN
    INSERT INTO {fts}(rowid, body) VALUES (new.rowid, new.body); END;
CREATE TRIGGER {content}_ad AFTER DELETE ON {content} BEGIN
    INSERT INTO {fts}({fts}, rowid, body) VALUES ('delete', old.rowid, old.body); END;
COMMIT;
"""
