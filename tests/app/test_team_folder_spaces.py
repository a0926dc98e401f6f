"""Shared content stored once (ADR 0352), through the real app on the fake Nextcloud (one event, for the writer
alone, as Nextcloud 34 sends): a team folder's file is chunked into its folder's shared space once, whoever of
its members reads it, and each member who may open it has a row for it; the stores are counted here, not
inferred from search results. A non-member and a member an ACL denies have no row and never get the hit; a
member removed loses their rows; a folder deleted leaves no chunk, row or table; members' copies from before
the spaces move into the space without the member losing the file in between.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing

import chromadb
import pytest
from stack import APP_ID, Stack

from fake_nextcloud import FakeNextcloud
from semantic_mcp.core.documents import ChunkRecord, chunk_doc_key
from semantic_mcp.stores import vectors
from semantic_mcp.stores.keyword import KeywordIndex
from semantic_mcp.stores.vectors import VectorStore

ALICE, BOB, OUTSIDER = "alice", "bob", "admin"  # admin is in no team here: the non-member
FOLDER = "Team Projects"
CHARTER = "Quillomber charter: the team meets on Thursdays and keeps the harbour log."


@pytest.fixture(scope="module")
def spaced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, int]]:
    made: dict[str, int] = {}

    def make_folder(fake: FakeNextcloud) -> None:
        made["id"] = fake.create_team_folder(FOLDER, {ALICE, BOB})
        fake.put_file(ALICE, f"{FOLDER}/charter.md", CHARTER)

    own = Stack(tmp_path_factory.mktemp("spaced"), profile="minimal").start(before_app=make_folder)
    try:
        yield own, made["id"]
    finally:
        own.stop()


def space(folder_id: int) -> str:
    return f"team-folder:{folder_id}"


def keyword_chunks(stack: Stack, owner: str, doc_key: str | None = None) -> int:
    """Chunks the keyword index holds for ``owner`` (a user or a space), of one document if given."""
    table = f"kw_{hashlib.sha256(owner.encode()).hexdigest()[:32]}"
    with closing(sqlite3.connect(f"file:{stack.storage / 'keyword.db'}?mode=ro", uri=True)) as db:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
            return 0
        if doc_key is None:
            return db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        return db.execute(f"SELECT COUNT(*) FROM {table} WHERE doc_key = ?", (doc_key,)).fetchone()[0]


def rows(stack: Stack, source_id: str) -> dict[str, str | None]:
    """Who has a row for the file, and the space each row names."""
    return dict(stack.db_rows("SELECT user, space FROM documents WHERE doc_type = 'file' AND source_id = ?",
                              (source_id,)))


async def ids(stack: Stack, user: str, query: str) -> list[str]:
    found = (await stack.search(user, query, limit=10, use_reranking=False))["results"]
    return [hit["id"] for hit in found]


async def found_by(stack: Stack, user: str, query: str, doc_id: str, timeout: float = 30.0) -> None:
    async def has() -> bool:
        return doc_id in await ids(stack, user, query)

    await stack.eventually(has, timeout=timeout)


async def test_a_team_folders_file_is_stored_once_and_every_member_finds_it(spaced: tuple[Stack, int]) -> None:
    stack, folder_id = spaced
    charter_id = str(stack.fake.file_id(ALICE, f"{FOLDER}/charter.md"))
    key = f"file:{charter_id}"
    assert rows(stack, charter_id) == {ALICE: space(folder_id), BOB: space(folder_id)}
    held = stack.db_rows("SELECT chunk_count FROM space_docs WHERE space = ? AND source_id = ?",
                         (space(folder_id), charter_id))
    assert len(held) == 1 and held[0][0] >= 1
    assert keyword_chunks(stack, space(folder_id), key) == held[0][0]  # one copy, in the space
    assert keyword_chunks(stack, ALICE, key) == keyword_chunks(stack, BOB, key) == 0  # none in a member's own
    for member in (ALICE, BOB):
        assert key in await ids(stack, member, "quillomber charter Thursdays")
    assert key not in await ids(stack, OUTSIDER, "quillomber charter Thursdays")
    assert OUTSIDER not in rows(stack, charter_id)

    # A write sends one event, for the writer: bob's row comes from the fan-out, the chunks are not doubled.
    file_id = stack.fake.put_file(ALICE, f"{FOLDER}/q2.md", "Brindlewort quarterly plan: ship the harbour sensors.")
    await found_by(stack, BOB, "brindlewort quarterly plan", f"file:{file_id}")
    await stack.eventually(lambda: _async(rows(stack, str(file_id)) == {ALICE: space(folder_id), BOB: space(folder_id)}))
    count = stack.db_rows("SELECT chunk_count FROM space_docs WHERE source_id = ?", (str(file_id),))[0][0]
    assert keyword_chunks(stack, space(folder_id), f"file:{file_id}") == count
    assert keyword_chunks(stack, BOB, f"file:{file_id}") == 0


async def _async(value: bool) -> bool:
    return value


async def test_an_acl_denied_member_has_no_row_and_never_gets_the_spaces_hit(spaced: tuple[Stack, int]) -> None:
    stack, folder_id = spaced
    fake = stack.fake
    fake.mkdir(ALICE, f"{FOLDER}/HR")
    fake.deny_team_folder_read(folder_id, "HR", BOB)
    secret = fake.put_file(ALICE, f"{FOLDER}/HR/salaries.md", "Ferndapple salaries: the pay bands for next year.")
    await found_by(stack, ALICE, "ferndapple salaries pay bands", f"file:{secret}")
    stack.flush_events(10)
    await asyncio.sleep(3)  # bob's fanned-out task has run: it found nothing as bob
    assert rows(stack, str(secret)) == {ALICE: space(folder_id)}  # in the space bob searches, but no row of his
    assert keyword_chunks(stack, space(folder_id), f"file:{secret}") >= 1
    for outsider in (BOB, OUTSIDER):
        assert f"file:{secret}" not in await ids(stack, outsider, "ferndapple salaries pay bands")


async def test_members_copies_from_before_move_into_the_space_without_a_gap(spaced: tuple[Stack, int]) -> None:
    """The layout before ADR 0352: each member's own copy, no space. The app, restarted on it, queues the
    copies; each member keeps finding the file until the space has it, and their copy goes then."""
    stack, folder_id = spaced
    charter_id = str(stack.fake.file_id(ALICE, f"{FOLDER}/charter.md"))
    key = f"file:{charter_id}"
    stack.exapp.stop()
    _back_to_copies_per_member(stack, space(folder_id), (ALICE, BOB))
    assert keyword_chunks(stack, space(folder_id)) == 0 and keyword_chunks(stack, BOB, key) >= 1
    assert set(rows(stack, charter_id).values()) == {None}

    stack.start_exapp()
    stack.fake.exapp(APP_ID).url = stack.exapp.url  # the daemon knows the app by its (new) port
    deadline = time.monotonic() + 60
    while True:  # every search in between finds it, from the copy or from the space
        for member in (ALICE, BOB):
            assert await _in_index(stack, member, "quillomber charter Thursdays", key), f"{member} lost it"
        if (rows(stack, charter_id) == {ALICE: space(folder_id), BOB: space(folder_id)}
                and keyword_chunks(stack, ALICE, key) == keyword_chunks(stack, BOB, key) == 0):
            break
        assert time.monotonic() < deadline, f"not moved into the space: {rows(stack, charter_id)}"
        await asyncio.sleep(0.5)
    assert keyword_chunks(stack, space(folder_id), key) >= 1
    assert "members' copies of team-folder files queued for their space" in stack.log()


async def _in_index(stack: Stack, user: str, query: str, doc_id: str) -> bool:
    """Found, or found and withheld: a restarted app meets Nextcloud busy for a moment, and a team folder's
    hit whose re-check times out is withheld (ADR 0350), which says the index had it."""
    result = await stack.search(user, query, limit=10, use_reranking=False)
    return doc_id in [hit["id"] for hit in result["results"]] or any("withheld" in note for note in result["notes"])


def _back_to_copies_per_member(stack: Stack, shared: str, members: tuple[str, ...]) -> None:
    """Rewrite the stopped app's storage as the app before ADR 0352 left it: the space's chunks copied into
    each member's own collection and keyword tables, the rows naming no space, the layout version before."""
    keyword = KeywordIndex(stack.storage / "keyword.db")
    client = chromadb.PersistentClient(path=str(stack.storage / "chroma"), settings=vectors._settings())
    (collection,) = [c for c in client.list_collections() if c.name.startswith(VectorStore._user_prefix(shared))]
    held = collection.get(include=["embeddings", "metadatas"])
    texts = keyword.texts(shared, held["ids"])
    recs = [ChunkRecord(chunk_id, chunk_doc_key(chunk_id), texts[chunk_id], dict(metadata))
            for chunk_id, metadata in zip(held["ids"], held["metadatas"], strict=True)]
    suffix = collection.name.removeprefix(VectorStore._user_prefix(shared))
    for member in members:  # the documents the member has a row for (alice's HR file is not bob's)
        theirs = {f"file:{source_id}" for (source_id,) in stack.db_rows(
            "SELECT source_id FROM documents WHERE user = ? AND space = ?", (member, shared))}
        mine = [i for i, rec in enumerate(recs) if rec.doc_key in theirs]
        keyword.upsert(member, [recs[i] for i in mine])
        own = client.get_or_create_collection(VectorStore._user_prefix(member) + suffix, metadata=collection.metadata)
        own.upsert(ids=[held["ids"][i] for i in mine], embeddings=[held["embeddings"][i] for i in mine],
                   metadatas=[held["metadatas"][i] for i in mine])
    client.delete_collection(collection.name)
    keyword.delete_user(shared)
    keyword.close()
    with closing(sqlite3.connect(stack.storage / "state.db")) as db, db:
        db.execute("UPDATE documents SET space = NULL")
        db.execute("DELETE FROM space_docs")
        db.execute("PRAGMA user_version = 4")  # before documents.space: the migration runs again


async def test_a_removed_member_loses_their_rows_and_a_deleted_folder_leaves_nothing(spaced: tuple[Stack, int]) -> None:
    """Last in the module: it removes bob, then the folder, and reconciles every 1.5 s."""
    stack, folder_id = spaced
    fake = stack.fake
    kept = str(fake.put_file(ALICE, f"{FOLDER}/roster.md", "Thistlecomb roster: who is on call in June."))
    await found_by(stack, BOB, "thistlecomb roster on call", f"file:{kept}")

    fake.set_team_folder_members(folder_id, {ALICE})  # bob leaves the group: no event
    stack.fake.set_admin_setting(APP_ID, "reconcile_interval_minutes", "0.025")

    async def bob_has_no_rows() -> bool:
        return not stack.db_rows("SELECT 1 FROM documents WHERE user = ? AND space IS NOT NULL", (BOB,))

    await stack.eventually(bob_has_no_rows, timeout=60)
    assert rows(stack, kept) == {ALICE: space(folder_id)}
    assert keyword_chunks(stack, space(folder_id), f"file:{kept}") >= 1  # alice still reads it from the space
    assert f"file:{kept}" not in await ids(stack, BOB, "thistlecomb roster on call")
    assert f"file:{kept}" in await ids(stack, ALICE, "thistlecomb roster on call")

    fake.delete_team_folder(folder_id)

    async def nothing_left() -> bool:
        return not stack.db_rows("SELECT 1 FROM documents WHERE space IS NOT NULL UNION ALL "
                                 "SELECT 1 FROM space_docs")

    await stack.eventually(nothing_left, timeout=60)
    assert keyword_chunks(stack, space(folder_id)) == 0  # its tables dropped with its last document
    chroma = chromadb.PersistentClient(path=str(stack.storage / "chroma"), settings=vectors._settings())
    assert not [c for c in chroma.list_collections() if c.name.startswith(VectorStore._user_prefix(space(folder_id)))]
    assert f"file:{kept}" not in await ids(stack, ALICE, "thistlecomb roster on call")
