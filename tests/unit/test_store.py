"""Vector store on real Chroma: embedded, and as a server started from the ``chroma`` CLI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from chroma_server import CHROMA_CLI, chroma_server as running_chroma_server
from semantic_mcp.stores.keyword import KeywordIndex
from semantic_mcp.stores.vectors import CHUNK_BYTES, COLLECTION_BYTES, ChunkRecord, DimensionMismatch, VectorStore

DIM = 8


def vec(*hot: int) -> np.ndarray:
    v = np.full(DIM, 0.01, dtype=np.float32)
    v[list(hot)] = 1.0
    return v / np.linalg.norm(v)


def record(doc: str, i: int, text: str = "", **meta: object) -> ChunkRecord:
    doc_type, source_id = doc.split(":", 1)
    base = {
        "doc_type": doc_type,
        "source_id": source_id,
        "title": doc,
        "location": "",
        "modified": 100,
        "link": "/x",
        "version": "v1",
        "chunk_index": i,
    }
    return ChunkRecord(f"{doc}#{i}", doc, text or f"{doc} chunk {i}", {**base, **meta})


def fill(store: VectorStore, keyword: KeywordIndex | None = None) -> None:
    """alice's five chunks and bob's two; into ``keyword`` as well when given (first, as the pipeline writes)."""
    alice = [
        record("note:1", 0),
        record("note:1", 1),
        record("note:1", 2),
        record("file:2", 0, location="/Work/a.md", modified=500),
        record("calendar_event:cal/3", 0, event_start=1000, event_end=2000),
    ]
    bobs = [record("note:1", 0, "bob's secret"), record("file:9", 0)]
    if keyword:
        keyword.upsert("alice", alice)
        keyword.upsert("bob", bobs)
    store.upsert("alice", alice, np.stack([vec(0), vec(0, 1), vec(1), vec(2), vec(3)]))
    store.upsert("bob", bobs, np.stack([vec(0), vec(2)]))


def assert_isolated(store: VectorStore) -> None:
    alices = ["note:1#0", "note:1#1", "note:1#2", "file:2#0", "calendar_event:cal/3#0"]
    for among in (None, alices, ["note:1#0"], ["note:1#0", "file:9#0"]):
        for probe in (vec(0), vec(1), vec(2), vec(3)):
            hits = store.query("bob", probe, 50, among=among)
            hits += store.rank_among("bob", probe, among or alices, 50)
            assert {h.chunk_id for h in hits} <= {"note:1#0", "file:9#0"}
            assert all(h.text != "note:1 chunk 0" for h in hits)
    assert store.count("bob") == 2 and store.count("alice") == 5 and store.count("carol") == 0
    assert store.query("carol", vec(0), 10) == []
    assert store.get_chunks("bob", ["note:1#1", "note:1#2"]) == []  # alice's ids, asked as bob


@pytest.fixture
def store(tmp_path: Path) -> VectorStore:
    s = VectorStore.embedded(tmp_path / "chroma", "test-model", DIM)
    fill(s)
    return s


def test_user_isolation_embedded(store: VectorStore) -> None:
    assert_isolated(store)


def test_query_scores_and_records(store: VectorStore) -> None:
    hits = store.query("alice", vec(0), 3)
    assert [h.chunk_id for h in hits][:2] == ["note:1#0", "note:1#1"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-4) and hits[0].score > hits[1].score > hits[2].score
    assert hits[0].doc_key == "note:1" and hits[0].metadata["chunk_index"] == 0
    got = store.get_chunks("alice", ["file:2#0", "missing#0", "note:1#2"])
    assert [c.chunk_id for c in got] == ["file:2#0", "note:1#2"] and got[0].metadata["location"] == "/Work/a.md"


def test_delete_doc_removes_every_chunk(store: VectorStore) -> None:
    store.delete_doc("alice", "note:1")
    assert store.count("alice") == 2
    assert all(h.doc_key != "note:1" for h in store.query("alice", vec(0, 1), 10))
    assert store.count("bob") == 2  # bob's note:1 is another document
    store.delete_chunks("alice", ["file:2#0"])
    assert [h.chunk_id for h in store.query("alice", vec(3), 10)] == ["calendar_event:cal/3#0"]
    store.delete_user("alice")
    assert store.count("alice") == 0 and store.count("bob") == 2


def test_query_restricted_to_chunk_ids_and_exact_ranking(store: VectorStore) -> None:
    """Filters reach the store as chunk ids: HNSW restricted to them, or exact cosine over them."""
    among = ["note:1#2", "file:2#0", "calendar_event:cal/3#0", "note:404#0"]
    restricted = store.query("alice", vec(0), 10, among=among)
    assert {h.chunk_id for h in restricted} == {"note:1#2", "file:2#0", "calendar_event:cal/3#0"}
    exact = store.rank_among("alice", vec(0), among, 10)
    assert [h.chunk_id for h in exact] == [h.chunk_id for h in restricted]
    assert [round(h.score, 5) for h in exact] == [round(h.score, 5) for h in restricted]
    assert exact[0].metadata["doc_key"] == exact[0].doc_key and exact[0].text == restricted[0].text
    assert store.rank_among("alice", vec(0), among, 1) == exact[:1]
    assert store.query("alice", vec(0), 10, among=[]) == [] and store.rank_among("alice", vec(0), [], 10) == []
    assert store.query("bob", vec(0), 10, among=["file:2#0"]) == []  # alice's chunk id, bob's collection


def failing_once(store: VectorStore, monkeypatch: pytest.MonkeyPatch, method: str, message: str) -> None:
    """Each collection the store opens raises Chroma's ``message`` on its first call of ``method``."""
    from chromadb.errors import InternalError

    real_collection = store._collection

    class FailingOnce:
        def __init__(self, inner: object) -> None:
            self.inner, self.failures = inner, 1

        def __getattr__(self, name: str) -> object:
            if name != method:
                return getattr(self.inner, name)

            def call(**kwargs: object) -> object:
                if self.failures:
                    self.failures -= 1
                    raise InternalError(message)
                return getattr(self.inner, name)(**kwargs)
            return call

    monkeypatch.setattr(store, "_collection", lambda *a, **k: FailingOnce(real_collection(*a, **k)))


def test_reading_chunks_while_a_delete_of_them_is_half_done_asks_again(
    store: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chroma raises "Error finding id" for ids a concurrent delete has half removed (a search's re-check
    dropping a hit while another search ranked it: 1 of 30 concurrent searches failed in CI). The store
    asks again; the delete done, the ids are simply left out."""
    failing_once(store, monkeypatch, "get", "Error executing plan: Internal error: Error finding id")
    among = ["note:1#2", "file:2#0"]
    assert {h.chunk_id for h in store.rank_among("alice", vec(0), among, 10)} == set(among)
    assert {c.chunk_id for c in store.get_chunks("alice", among)} == set(among)


def test_a_first_search_while_the_index_is_first_written_asks_again(
    store: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chroma raises "Nothing found on disk" when a new user's first search reads their collection while
    its first chunks are written (seen once in CI); the store asks again instead of failing the search."""
    failing_once(store, monkeypatch, "query", "Error executing plan: Internal error: Error creating hnsw segment "
                 "reader: Nothing found on disk")
    assert len(store.query("alice", vec(0), 3)) == 3
    assert len(store.query("alice", vec(0), 3, ids_only=True)) == 3


def test_model_switch_uses_new_collections_and_mismatch_is_refused(store: VectorStore, tmp_path: Path) -> None:
    other = VectorStore(store.client, "other-model", 16)
    assert other.collection_name("alice") != store.collection_name("alice")
    assert other.count("alice") == 0  # a new, empty collection: re-index, no crash
    other.upsert("alice", [record("note:1", 0)], np.ones((1, 16), dtype=np.float32))
    assert other.count("alice") == 1 and store.count("alice") == 5
    with pytest.raises(DimensionMismatch):
        store.upsert("alice", [record("note:1", 0)], np.ones((1, 16), dtype=np.float32))
    liar = VectorStore(store.client, "test-model", 16)  # same model id, another size: refused clearly
    with pytest.raises(DimensionMismatch, match="dimension 8"):
        liar.count("alice")
    store.delete_user("alice")  # every model's collection of the user goes
    assert VectorStore(store.client, "other-model", 16).count("alice") == 0


def test_collection_names_follow_chroma_rules(store: VectorStore) -> None:
    for user in ["alice", "ü ser@example.com", "x" * 300, "../../etc"]:
        name = store.collection_name(user)
        assert 3 <= len(name) <= 512 and name[0].isalnum() and name[-1].isalnum()
        assert set(name) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")


# --- the same, through a Chroma server -------------------------------------------------------


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    if not Path(CHROMA_CLI).exists():
        pytest.skip("the chroma CLI (shipped with chromadb) is not installed, so no server can be started")
    with running_chroma_server(tmp_path_factory.mktemp("chroma-server")) as address:
        yield address


def test_user_isolation_through_server(chroma_server: tuple[str, int]) -> None:
    store = VectorStore.remote(*chroma_server, "test-model", DIM)
    fill(store)
    assert_isolated(store)
    store.delete_doc("alice", "note:1")
    assert store.count("alice") == 2


# --- texts kept in the keyword index, not in Chroma (ADR 0566) --------------------------------------


def documents_in_chroma(store: VectorStore, user: str) -> list[str | None]:
    collection = store.client.get_collection(store.collection_name(user))
    return collection.get(include=["documents"])["documents"]


def test_chroma_keeps_no_text_and_every_read_gets_it_from_the_keyword_index(tmp_path: Path) -> None:
    keyword = KeywordIndex(tmp_path / "keyword.db")
    store = VectorStore.embedded(tmp_path / "chroma", "test-model", DIM, texts=keyword.texts)
    fill(store, keyword)
    assert documents_in_chroma(store, "alice") == [None] * 5
    assert [h.text for h in store.query("alice", vec(0), 2)] == ["note:1 chunk 0", "note:1 chunk 1"]
    assert store.query("bob", vec(0), 1)[0].text == "bob's secret"
    assert [h.text for h in store.query("alice", vec(2), 1, among=["file:2#0", "note:1#0"])] == ["file:2 chunk 0"]
    assert [h.text for h in store.rank_among("alice", vec(3), ["calendar_event:cal/3#0"], 5)] == [
        "calendar_event:cal/3 chunk 0"]
    assert [c.text for c in store.get_chunks("alice", ["note:1#2"])] == ["note:1 chunk 2"]
    assert_isolated(store)  # bob asking for alice's chunk ids gets neither her vectors nor her texts
    # Read with texts unread, as the search does before reading its results' (ADR 0567).
    assert [(h.chunk_id, h.text) for h in store.query("alice", vec(0), 2, read_texts=False)] == [
        ("note:1#0", None), ("note:1#1", None)]
    assert [(h.chunk_id, h.doc_key, h.text, h.metadata) for h in store.query("alice", vec(0), 2, ids_only=True)] == [
        ("note:1#0", "note:1", None, {}), ("note:1#1", "note:1", None, {})]  # ids and distances alone (ADR 0568)
    assert [c.text for c in store.get_chunks("alice", ["note:1#2"], read_texts=False)] == [None]
    assert store.texts_of("alice", ["note:1#2", "x#0"], [None, "kept by Chroma"]) == ["note:1 chunk 2", "kept by Chroma"]

    # A chunk whose text is not written yet is not served (the pipeline writes the text first).
    store.upsert("alice", [record("note:7", 0, "not in the keyword index")], np.stack([vec(5)]))
    assert "note:7#0" not in {h.chunk_id for h in store.query("alice", vec(5), 10)}
    assert store.get_chunks("alice", ["note:7#0"]) == []


def test_chunks_written_before_keep_chromas_text_until_written_again(tmp_path: Path) -> None:
    """An index from before ADR 0566: Chroma holds the texts, the keyword tables have no text column."""
    old_keyword = KeywordIndex(tmp_path / "keyword.db")
    fill(VectorStore.embedded(tmp_path / "chroma", "test-model", DIM), old_keyword)
    content, _ = old_keyword._tables("alice")
    old_keyword._db.execute(f"ALTER TABLE {content} DROP COLUMN text")
    old_keyword._db.execute("PRAGMA user_version = 0")  # as a file from before versioned migrations
    old_keyword.close()

    keyword = KeywordIndex(tmp_path / "keyword.db")  # the column is added, empty
    store = VectorStore.embedded(tmp_path / "chroma", "test-model", DIM, texts=keyword.texts)
    assert [h.text for h in store.query("alice", vec(0), 2)] == ["note:1 chunk 0", "note:1 chunk 1"]
    assert keyword.search("alice", "chunk", 10)  # the keyword leg still works on the old rows

    edited = [record("note:1", 0, "edited text")]
    keyword.upsert("alice", edited)
    store.upsert("alice", edited, np.stack([vec(0)]))
    assert store.query("alice", vec(0), 1)[0].text == "edited text"
    assert [c.text for c in store.get_chunks("alice", ["note:1#1"])] == ["note:1 chunk 1"]


def test_embedded_chromas_write_log_is_indexed_by_collection(store: VectorStore, tmp_path: Path) -> None:
    """A user's first search reads that collection's tail of Chroma's write log (docs/adr/0560): by
    the index, not a scan of every collection's tail; the store works as before on reopening."""
    import sqlite3

    db = sqlite3.connect(tmp_path / "chroma" / "chroma.sqlite3")
    plan = " ".join(row[-1] for row in db.execute(
        "EXPLAIN QUERY PLAN SELECT id, vector FROM embeddings_queue WHERE topic = ? AND seq_id > ? ORDER BY seq_id",
        ("persistent://default/default/x", 0)))
    assert "semantic_mcp_queue_topic" in plan, plan
    assert db.execute("SELECT count(*) FROM embeddings_queue").fetchone()[0] > 0  # the tails the index serves
    db.close()
    reopened = VectorStore.embedded(tmp_path / "chroma", "test-model", DIM)
    assert [h.chunk_id for h in reopened.query("alice", vec(3), 1)] == ["calendar_event:cal/3#0"]


def saved_in_index_files(chroma: Path) -> int:
    """How many vectors Chroma has saved to its index files, over every collection (one int32 each
    in length.bin; an index's first file is written with room for 100)."""
    return sum(path.stat().st_size // 4 for path in chroma.glob("*/length.bin"))


def test_each_collection_saves_its_vector_index_every_100_writes(tmp_path: Path) -> None:
    """ADR 0562: what is not saved is replayed by the next process's first search. A collection
    made before (with Chroma's 1,000) is switched to 100 when the store opens it."""
    import chromadb

    rng = np.random.default_rng(5)
    records = [record(f"note:{i}", 0) for i in range(320)]
    older = chromadb.PersistentClient(path=str(tmp_path / "old"), settings=chromadb.Settings(anonymized_telemetry=False))
    name = VectorStore.embedded(tmp_path / "old", "test-model", DIM).collection_name("alice")
    older.create_collection(name, configuration={"hnsw": {"space": "cosine"}},
                            metadata={"model_id": "test-model", "dim": DIM}, embedding_function=None)
    for path in ("new", "old"):
        opened = VectorStore.embedded(tmp_path / path, "test-model", DIM)
        vectors = rng.standard_normal((len(records), DIM)).astype(np.float32)
        for first in range(0, len(records), 8):  # as the pipeline writes: a batch of items at a time
            opened.upsert("alice", records[first:first + 8], vectors[first:first + 8])
        assert saved_in_index_files(tmp_path / path) >= 200, path  # Chroma's own threshold saves none
        assert [h.chunk_id for h in opened.query("alice", vectors[317], 1)] == ["note:317#0"]  # unsaved: found


def test_past_its_memory_limit_the_store_reopens_chroma_and_keeps_every_write(tmp_path: Path) -> None:
    """The memory bound (ADR 0561): once the collections opened take more than ``memory_limit``
    (estimated), embedded Chroma is closed (freeing their indexes) and opened again; each collection reloads on
    its next use with the writes Chroma had not yet saved to its index files (under its sync
    threshold, 100 (ADR 0562): here the last 50 of each user), which an index evicted by Chroma's own
    cache would come back without."""
    # Room for about one user's 1,100 chunks: each user's writes and searches go past it.
    s = VectorStore.embedded(tmp_path / "chroma", "test-model", DIM, memory_limit=COLLECTION_BYTES + 1500 * CHUNK_BYTES)
    rng = np.random.default_rng(3)
    users = [f"user{n}" for n in range(4)]
    vectors = {user: rng.standard_normal((1050, DIM)).astype(np.float32) for user in users}
    records = [record(f"note:{i}", 0) for i in range(1050)]
    for user in users:
        s.upsert(user, records[:1000], vectors[user][:1000])  # saved to the index files by Chroma
        s.upsert(user, records[1000:], vectors[user][1000:])  # only in Chroma's write log
    written = s.reopened
    for _ in range(2):
        for user in users:
            for i in (5, 1030):
                assert s.query(user, vectors[user][i], 1)[0].chunk_id == f"note:{i}#0"
            assert s.count(user) == 1050
    assert written >= 2 and s.reopened > written  # reopened while writing and while searching
    unbounded = VectorStore.embedded(tmp_path / "other", "test-model", DIM)
    unbounded.upsert("alice", records, vectors["user0"])
    assert unbounded.reopened == 0


def test_searches_and_writes_in_threads_meanwhile_wait_for_the_reopening(tmp_path: Path) -> None:
    """The client is replaced only when no call is using it; calls meanwhile wait, then use the new one."""
    from concurrent.futures import ThreadPoolExecutor

    s = VectorStore.embedded(tmp_path / "chroma", "test-model", DIM, memory_limit=COLLECTION_BYTES + 300 * CHUNK_BYTES)
    rng = np.random.default_rng(5)
    users = [f"user{n}" for n in range(6)]
    vectors = {user: rng.standard_normal((200, DIM)).astype(np.float32) for user in users}
    records = [record(f"note:{i}", 0) for i in range(200)]
    for user in users[:3]:
        s.upsert(user, records, vectors[user])

    def search(user: str) -> bool:
        return all(s.query(user, vectors[user][i], 1)[0].chunk_id == f"note:{i}#0" for i in (3, 150))

    def write(user: str) -> bool:
        s.upsert(user, records, vectors[user])
        return s.count(user) == 200

    with ThreadPoolExecutor(4) as pool:
        calls = [pool.submit(write, user) for user in users[3:]]
        calls += [pool.submit(search, user) for _ in range(4) for user in users[:3]]
        assert all(call.result() for call in calls)
    assert s.reopened >= 3
