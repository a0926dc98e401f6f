"""The app's SQLite files migrate by version (stores/migrations.py, ADR 0742): a file written by the
first layouts (made here by hand, as the app wrote them before any column was added) opens, is
migrated, and keeps its data; a failed step leaves the file at its last good version."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from semantic_mcp.core.documents import DocRef
from semantic_mcp.indexing.state import IndexState
from semantic_mcp.oauth.store import OAuthStore
from semantic_mcp.stores.keyword import KeywordIndex
from semantic_mcp.stores.keyword_terms import TOKENIZER
from semantic_mcp.stores.migrations import add_column, columns, migrate, version
from semantic_mcp.stores.vectors import ChunkRecord

# The index state as first written: no account identity per user, no task priority (ADR 0015).
FIRST_STATE = """
CREATE TABLE tasks (
    user TEXT NOT NULL, doc_type TEXT NOT NULL, source_id TEXT NOT NULL, action TEXT NOT NULL, payload TEXT,
    generation INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, not_before REAL NOT NULL DEFAULT 0,
    running INTEGER NOT NULL DEFAULT 0, enqueued_at REAL NOT NULL, last_error TEXT,
    PRIMARY KEY (user, doc_type, source_id));
CREATE TABLE documents (
    user TEXT NOT NULL, doc_type TEXT NOT NULL, source_id TEXT NOT NULL,
    version TEXT NOT NULL, location TEXT NOT NULL DEFAULT '', title TEXT NOT NULL DEFAULT '',
    chunk_count INTEGER NOT NULL, modified INTEGER NOT NULL DEFAULT 0, indexed_at REAL NOT NULL,
    PRIMARY KEY (user, doc_type, source_id));
CREATE TABLE skipped (
    user TEXT NOT NULL, doc_type TEXT NOT NULL, source_id TEXT NOT NULL,
    version TEXT NOT NULL, reason TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (user, doc_type, source_id));
CREATE TABLE users (user TEXT PRIMARY KEY, enabled INTEGER, changed_at REAL NOT NULL, last_event REAL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO tasks (user, doc_type, source_id, action, enqueued_at) VALUES ('alice', 'note', '7', 'upsert', 1);
INSERT INTO documents (user, doc_type, source_id, version, location, title, chunk_count, indexed_at)
    VALUES ('alice', 'note', '3', 'v3', 'Notes/Tea.md', 'Tea', 2, 1);
INSERT INTO skipped VALUES ('alice', 'file', '40', 'v', 'folder', 1), ('alice', 'file', '41', 'v', 'too large', 1);
INSERT INTO users (user, enabled, changed_at) VALUES ('alice', 1, 1);
INSERT INTO meta VALUES ('model_id', 'e5-small');
"""

# A user's keyword tables as first written: no filter-column indexes, no text or language column.
FIRST_KEYWORD = """
CREATE TABLE kw_a (rowid INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL UNIQUE, doc_key TEXT NOT NULL,
    doc_type TEXT, modified INTEGER, event_start INTEGER, location TEXT, body TEXT NOT NULL);
CREATE INDEX kw_a_doc ON kw_a(doc_key);
CREATE VIRTUAL TABLE kw_a_fts USING fts5(body, content='kw_a', content_rowid='rowid', tokenize="{tokenizer}");
CREATE TRIGGER kw_a_ai AFTER INSERT ON kw_a BEGIN INSERT INTO kw_a_fts(rowid, body) VALUES (new.rowid, new.body); END;
CREATE TRIGGER kw_a_ad AFTER DELETE ON kw_a BEGIN
    INSERT INTO kw_a_fts(kw_a_fts, rowid, body) VALUES ('delete', old.rowid, old.body); END;
INSERT INTO kw_a (chunk_id, doc_key, doc_type, modified, location, body)
    VALUES ('note:3#0', 'note:3', 'note', 5, 'Notes/Tea.md', 'fennimore steeping guide');
"""

# The OAuth store's grants before accounts were bound to them and grants had an absolute end.
FIRST_OAUTH = """
CREATE TABLE grants (
    id TEXT PRIMARY KEY, user TEXT NOT NULL, client_id TEXT NOT NULL, client_name TEXT NOT NULL,
    redirect_uri TEXT NOT NULL, scope TEXT NOT NULL, resource TEXT NOT NULL,
    created_at REAL NOT NULL, last_used_at REAL, revoked_at REAL);
INSERT INTO grants VALUES ('g1', 'alice', 'c1', 'Claude', 'https://x/cb', 'search', 'https://nc/mcp', 1, NULL, NULL);
"""


def write(path: Path, script: str) -> None:
    db = sqlite3.connect(path)
    db.executescript(script)
    db.close()


def test_the_first_index_state_is_migrated_and_keeps_its_queue_index_and_choices(tmp_path: Path) -> None:
    write(tmp_path / "state.db", FIRST_STATE)
    state = IndexState(tmp_path / "state.db")
    assert version(state._db) == 6
    assert {"account_id"} <= columns(state._db, "users") and {"priority"} <= columns(state._db, "tasks")
    assert "location" in columns(state._db, "skipped")
    assert "space" in columns(state._db, "documents")  # ADR 0352: where each row's chunks are
    assert state.indexed(DocRef("alice", "note", "3")).title == "Tea"
    assert state.user_choice("alice") is True and state.get_meta("model_id") == "e5-small"
    assert state.skipped_versions("alice", "file") == {"41": "v"}  # a folder is no skipped file
    [task] = state.claim(5)  # the old task is catching-up work, claimed as such
    assert task.ref == DocRef("alice", "note", "7")
    state.close()
    reopened = IndexState(tmp_path / "state.db")  # nothing left to run
    assert version(reopened._db) == 6 and reopened.pending_count() == 1
    reopened.close()


def test_the_first_keyword_tables_are_migrated_and_still_found(tmp_path: Path) -> None:
    content, _ = KeywordIndex._tables("alice")
    write(tmp_path / "keyword.db", FIRST_KEYWORD.replace("kw_a", content).format(tokenizer=TOKENIZER))
    keyword = KeywordIndex(tmp_path / "keyword.db")
    assert version(keyword._db) == 2
    assert {"text", "lang"} <= columns(keyword._db, content)
    indexes = {row[1] for row in keyword._db.execute(f"PRAGMA index_list({content})")}
    assert {f"{content}_{column}" for column in ("doc_type", "modified", "location")} <= indexes
    assert [chunk for chunk, _ in keyword.search("alice", "steeping", 5)] == ["note:3#0"]
    assert keyword.texts("alice", ["note:3#0"]) == {}  # not recorded then: the vector store has it
    keyword.upsert("alice", [ChunkRecord("note:3#0", "note:3", "Fennimore steeping guide", {"doc_type": "note"})])
    assert keyword.texts("alice", ["note:3#0"]) == {"note:3#0": "Fennimore steeping guide"}
    keyword.close()


def test_the_first_oauth_grants_are_migrated_and_still_hold(tmp_path: Path) -> None:
    write(tmp_path / "oauth.db", FIRST_OAUTH)
    store = OAuthStore(tmp_path / "oauth.db")
    assert version(store._db) == 2
    grant = store.grant("g1")
    assert grant is not None and (grant.user, grant.scope, grant.account_id, grant.expires_at) == (
        "alice", "search", None, None)
    store.bind_grant("g1", "acct-1", 99.0)
    assert store.grant("g1").account_id == "acct-1"  # type: ignore[union-attr]
    store.close()


def test_a_new_file_starts_at_the_last_version(tmp_path: Path) -> None:
    state, keyword, oauth = (IndexState(tmp_path / "s.db"), KeywordIndex(tmp_path / "k.db"),
                             OAuthStore(tmp_path / "o.db"))
    assert (version(state._db), version(keyword._db), version(oauth._db)) == (6, 2, 2)


def test_a_step_that_fails_leaves_the_file_at_its_last_good_version(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    db.execute("CREATE TABLE t (a TEXT)")

    def broken(db: sqlite3.Connection) -> None:
        db.execute("ALTER TABLE t ADD COLUMN c TEXT")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        migrate(db, [add_column("t", "b", "TEXT"), broken], name="test file")
    assert version(db) == 1 and columns(db, "t") == {"a", "b"}  # the second step's column rolled back
    assert migrate(db, [add_column("t", "b", "TEXT"), add_column("t", "c", "TEXT")], name="test file") == 2
    assert columns(db, "t") == {"a", "b", "c"}


def test_a_fresh_install_starts_at_the_newest_layout_and_logs_no_migration(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="semantic_mcp.stores.migrations")
    stores = [IndexState(tmp_path / "state.db"), KeywordIndex(tmp_path / "keyword.db"), OAuthStore(tmp_path / "oauth.db")]
    for store in stores:
        assert version(store._db) > 0
        store.close()
    assert caplog.records == []  # "migrated" lines on a fresh install would read like an upgrade to an admin
