"""The shared spaces' bookkeeping (ADR 0352) on the real stores: a user's purge takes their rows only, a
document leaves its space with its last reader, an emptied space is dropped; and the migration from the
layout before queues exactly the members' copies of team-folder files."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np

from semantic_mcp.core.documents import ChunkRecord, DocRef
from semantic_mcp.indexing.shared_spaces import SharedSpaces, SpaceDoc
from semantic_mcp.indexing.state import IndexState
from semantic_mcp.stores.keyword import KeywordIndex
from semantic_mcp.stores.vectors import VectorStore

SPACE = "team-folder:7"


def _stores(tmp_path: Path) -> tuple[IndexState, VectorStore, KeywordIndex]:
    keyword = KeywordIndex(tmp_path / "keyword.db")
    store = VectorStore.embedded(tmp_path / "chroma", "test-model", 4, texts=keyword.texts)
    return IndexState(tmp_path / "state.db"), store, keyword


def _in_space(state: IndexState, store: VectorStore, keyword: KeywordIndex, source_id: str, readers: list[str]) -> None:
    ref = DocRef(readers[0], "file", source_id)
    recs = [ChunkRecord(f"{ref.key}#{i}", ref.key, f"Quillomber part {i} of {source_id}", {"title": source_id})
            for i in range(2)]
    keyword.upsert(SPACE, recs)
    store.upsert(SPACE, recs, np.eye(4, dtype=np.float32)[:2])
    state.record_space_doc(SPACE, ref, SpaceDoc("v1", f"/Team/{source_id}.md", source_id, 2))
    for reader in readers:
        state.record_indexed(DocRef(reader, "file", source_id), "v1", f"/Team/{source_id}.md", source_id, 2, 0, SPACE)


def test_a_purge_takes_the_users_rows_only_and_the_last_reader_empties_the_space(tmp_path: Path) -> None:
    state, store, keyword = _stores(tmp_path)
    spaces = SharedSpaces(state, store, keyword)
    _in_space(state, store, keyword, "10", ["alice", "bob"])
    _in_space(state, store, keyword, "11", ["alice"])  # bob's ACL denies this one: no row of his
    assert state.user_spaces("bob") == {SPACE: (1, 2)}
    assert state.readable_in("bob", SPACE, {"file:10", "file:11", "file:12"}) == {"file:10"}

    state.delete_user("alice")
    assert spaces.sweep() == 1  # file:11 had alice alone
    assert store.count(SPACE) == keyword.count(SPACE) == 2  # file:10 stays for bob
    assert state.user_spaces("bob") == {SPACE: (1, 1)}

    spaces.release_row(SPACE, DocRef("bob", "file", "10"))  # bob's last row goes (a delete, a removal)
    assert store.count(SPACE) == keyword.count(SPACE) == 0
    assert state.user_spaces("bob") == {} and state.space_is_empty(SPACE)
    assert not [c for c in store.client.list_collections() if c.name.startswith(VectorStore._user_prefix(SPACE))]


def test_the_migration_queues_the_members_copies_of_team_folder_files_only(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    IndexState(path).close()
    with closing(sqlite3.connect(path)) as db, db:  # the layout before ADR 0352: no documents.space
        db.execute("DROP INDEX documents_space")
        db.execute("DROP INDEX documents_user_space")
        db.execute("ALTER TABLE documents DROP COLUMN space")
        db.execute("PRAGMA user_version = 4")
        db.executemany("INSERT INTO documents (user, doc_type, source_id, version, location, title, chunk_count,"
                       " indexed_at) VALUES (?, 'file', ?, 'v', ?, 't', 1, 0)",
                       [("bob", "1", "/Team/a.md"), ("bob", "2", "/Team 2/b.md"), ("bob", "3", "/Team"),
                        ("carol", "1", "/Team/a.md")])
        db.execute("INSERT INTO team_folders VALUES ('bob', '7', '/Team')")
    state = IndexState(path)
    assert {(row[0], row[1]) for row in state._rows("SELECT user, source_id FROM tasks")} == {("bob", "1"), ("bob", "3")}
    assert state.indexed(DocRef("bob", "file", "1")).space is None  # kept, and served, until the space has it
