"""Keyword index: hostile queries, per-user isolation, BM25 order, filters in SQL."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from semantic_mcp.stores.keyword import KeywordIndex
from semantic_mcp.stores.keyword_terms import fts_query, match_terms, query_terms
from semantic_mcp.core.filters import SearchFilters
from semantic_mcp.stores.vectors import ChunkRecord


def record(doc: str, i: int, text: str, **meta: object) -> ChunkRecord:
    doc_type, source_id = doc.split(":", 1)
    base = {
        "doc_type": doc_type,
        "source_id": source_id,
        "title": doc,
        "location": "",
        "modified": 100,
        "chunk_index": i,
    }
    return ChunkRecord(f"{doc}#{i}", doc, text, {**base, **meta})


@pytest.fixture
def index(tmp_path: Path) -> KeywordIndex:
    kw = KeywordIndex(tmp_path / "keyword.db")
    kw.upsert(
        "alice",
        [
            record("note:1", 0, "Invoice INV-2023-0042 from the plumber, paid in March."),
            record("note:1", 1, "The plumber fixed the kitchen sink."),
            record("file:2", 0, "Plumber plumber plumber: three quotes compared.", location="/Work/quotes.md"),
            record("file:3", 0, "Gardening notes: tomatoes and basil.", location="/Home/garden.md", modified=500),
            record("calendar_event:c/4", 0, "Dentist appointment", event_start=1000, event_end=2000),
        ],
    )
    kw.upsert("bob", [record("note:9", 0, "Bob's plumber invoice INV-2023-0042 is private.")])
    yield kw
    kw.close()


HOSTILE = [
    '"',
    '""',
    "*",
    "NEAR(",
    "NEAR(a b",
    "-",
    "a AND",
    "OR",
    "NOT x",
    "(",
    ")",
    "^",
    ":",
    "col:val",
    "'; DROP TABLE x; --",
    "\\",
    "{}",
    "",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(index: KeywordIndex, query: str) -> None:
    assert isinstance(index.search("alice", query, 5), list)


def test_operators_are_plain_words() -> None:
    assert fts_query(query_terms('plumber AND "sink" NEAR(x*')) == '"plumber" OR "and" OR "sink" OR "near" OR "x"'
    assert fts_query(query_terms("*** --")) is None


def test_normalisation_matches_arabic_without_vowel_marks_and_spaces_cjk() -> None:
    assert query_terms("خَيْرُ إِخْوَتِي") == query_terms("خير اخوتي")
    assert query_terms("机器学习") == ["机", "器", "学", "习"]
    assert query_terms("Café") == ["café"]  # the tokenizer's remove_diacritics folds it in the index


def test_bm25_order_and_exact_rare_token(index: KeywordIndex) -> None:
    ranked = [chunk_id for chunk_id, _ in index.search("alice", "plumber", 10)]
    assert ranked[0] == "file:2#0"  # three occurrences in a short chunk
    assert set(ranked) == {"file:2#0", "note:1#0", "note:1#1"}
    assert index.search("alice", "INV-2023-0042", 1)[0][0] == "note:1#0"
    scores = [score for _, score in index.search("alice", "plumber", 10)]
    assert scores == sorted(scores, reverse=True)


def test_users_are_isolated(index: KeywordIndex) -> None:
    assert [c for c, _ in index.search("bob", "plumber invoice", 10)] == ["note:9#0"]
    assert all(not c.startswith("note:9") for c, _ in index.search("alice", "Bob private plumber", 10))
    assert index.search("carol", "plumber", 10) == []
    index.delete_user("bob")
    assert index.search("bob", "plumber", 10) == [] and index.count("alice") == 5


def test_a_search_does_not_look_for_its_users_tables_in_the_schema(index: KeywordIndex, tmp_path: Path) -> None:
    """Which users have tables is known in memory: looking in sqlite_master is a scan of every user's
    tables (3.8 ms at 1,000 users, twice a search). Tables another writer made are still found, and a
    deleted user's are forgotten."""
    statements: list[str] = []
    index.count("alice")  # opens the pooled read connection (one: the reads here come one at a time)
    for db in (index._db, *index._readers):
        db.set_trace_callback(statements.append)
    assert index.search("alice", "plumber invoice", 10) and index.coverage("alice", "plumber", ["note:1#0"])
    assert index.count("bob") == 1
    assert not [s for s in statements if "sqlite_master" in s]
    other = KeywordIndex(tmp_path / "keyword.db")
    other.upsert("carol", [record("note:7", 0, "Carol's plumber came on Tuesday.")])
    assert [c for c, _ in index.search("carol", "plumber", 10)] == ["note:7#0"]
    index.delete_user("carol")
    assert index.search("carol", "plumber", 10) == [] and index.count("carol") == 0


def test_reads_run_beside_a_write_and_meet_dropped_tables_as_empty(index: KeywordIndex, tmp_path: Path) -> None:
    """Reads use connections of their own: a search answers while a write holds the write lock
    (a big user's batch during a backfill), and one that finds its user's tables dropped by another
    connection meanwhile answers as if they had never been there."""
    found: list[list[tuple[str, float]]] = []
    with index._lock:  # a write in progress
        reader = threading.Thread(target=lambda: found.append(index.search("alice", "plumber invoice", 10)))
        reader.start()
        reader.join(5)
        assert found and found[0][0][0] == "note:1#0", "the search waited for the write"
    KeywordIndex(tmp_path / "keyword.db").delete_user("bob")  # dropped behind this index's back
    assert index.search("bob", "plumber", 10) == [] and index.count("bob") == 0
    assert index.coverage("bob", "plumber", ["note:9#0"]) == {}


def test_a_write_between_the_total_and_a_terms_count_is_not_seen_by_either(index: KeywordIndex) -> None:
    """The pooled reads (ADR 0564) once read the user's total and each term's count apart: a write
    committed between them counted "sink" in more chunks than the total held, and the coverage's
    IDF took the logarithm of a negative number (alice's search failed in the real tier)."""
    index.count("alice")  # opens the pooled read connection (one: the reads here come one at a time)
    wrote: list[str] = []

    def write_meanwhile(sql: str) -> None:
        if "MATCH" in sql and not wrote:
            wrote.append(sql)
            index.upsert("alice", [record(f"note:{n}", 0, "sink sink") for n in range(10, 20)])

    for db in index._readers:
        db.set_trace_callback(write_meanwhile)
    shares = index.coverage("alice", "sink", ["note:1#1"])  # read as before the write: 1 of 5 chunks
    assert wrote and shares == {"note:1#1": pytest.approx(1.0)}
    for db in index._readers:
        db.set_trace_callback(None)
    total, counts = index._document_frequencies("alice", ["sink"])
    assert (total, counts["sink"]) == (15, 11), "the write is seen once it is read whole, not memoised stale"


def test_filters_apply_before_ranking(index: KeywordIndex) -> None:
    only_files = index.search("alice", "plumber gardening", 10, SearchFilters(doc_types=["file"]))
    assert {c for c, _ in only_files} == {"file:2#0", "file:3#0"}
    assert [c for c, _ in index.search("alice", "plumber gardening", 10, SearchFilters(path_prefix="/Home/"))] == [
        "file:3#0"
    ]
    assert [c for c, _ in index.search("alice", "plumber gardening", 10, SearchFilters(modified_after=200))] == [
        "file:3#0"
    ]
    events = SearchFilters(event_after=500, event_before=1500)
    assert [c for c, _ in index.search("alice", "dentist plumber", 10, events)] == ["calendar_event:c/4#0"]
    assert index.search("alice", "dentist", 10, SearchFilters(event_after=1500)) == []


def test_upsert_replaces_and_deletes(index: KeywordIndex) -> None:
    index.upsert("alice", [record("note:1", 1, "The electrician replaced the fuse.")])
    assert [c for c, _ in index.search("alice", "sink", 10)] == []
    assert [c for c, _ in index.search("alice", "electrician", 10)] == ["note:1#1"]
    index.delete_chunks("alice", ["note:1#1"])
    assert index.search("alice", "electrician", 10) == []
    index.delete_doc("alice", "note:1")
    assert index.search("alice", "INV-2023-0042", 10) == [] and index.count("alice") == 3
    index.clear()
    assert index.count("alice") == 0 and index.search("alice", "plumber", 10) == []


def test_term_statistics_follow_every_write(index: KeywordIndex) -> None:
    """Document frequencies are memoised per user; a write must not leave a search on stale ones."""
    assert index.search("alice", "electrician", 10) == []  # memoises "electrician": in no chunk
    index.upsert("alice", [record("note:5", 0, "Call the electrician about the fuse box.")])
    assert [c for c, _ in index.search("alice", "electrician", 10)] == ["note:5#0"]
    assert index.coverage("alice", "electrician", ["note:5#0"]) == {"note:5#0": 1.0}
    index.delete_doc("alice", "note:5")
    assert index.search("alice", "electrician", 10) == []


def test_common_terms_leave_the_match_but_not_the_coverage(tmp_path: Path) -> None:
    """In a large index BM25 scores only the rarer terms (a bound on its cost); a chunk that has
    only common words is not matched, and coverage still counts every term that weighs."""
    kw = KeywordIndex(tmp_path / "keyword.db")
    filler = [
        record(f"file:{i}", 0, f"Meeting minutes number {i}" + (" about the budget." if i < 2500 else "."))
        for i in range(6000)
    ]
    kw.upsert("alice", [
        *filler,
        record("note:1", 0, "Meeting: the zeppelin hangar budget."),
        record("note:2", 0, "Meeting: the zeppelin hangar lease."),
    ])
    total, frequency = kw._document_frequencies("alice", query_terms("zeppelin budget meeting"))
    assert total == 6002 and frequency["meeting"] == 6002 and frequency["budget"] == 2501
    assert frequency["zeppelin"] == 2
    # "budget" (42 % of the chunks) would exceed the budget of 2,000 postings; "meeting" weighs nothing.
    assert match_terms(["meeting", "budget", "zeppelin", "absent"], frequency | {"absent": 0}, total) == ["zeppelin"]
    assert {c for c, _ in kw.search("alice", "zeppelin budget meeting", 5)} == {"note:1#0", "note:2#0"}
    # ...but "budget" still weighs in coverage: the chunk that has it covers the whole query.
    covered = kw.coverage("alice", "zeppelin budget meeting", ["note:1#0", "note:2#0", "file:0#0"])
    assert covered["note:1#0"] == pytest.approx(1.0, abs=1e-5)
    assert covered["note:2#0"] < covered["note:1#0"] - 0.03  # lacks "budget" (IDF 0.34 of 8.1)
    assert covered["file:0#0"] < 0.2
    # Only common words: the rarest of them is still matched.
    assert len(kw.search("alice", "budget meeting", 5)) == 5
    # Small indexes keep every term (the budget's floor).
    assert match_terms(["a", "b"], {"a": 3, "b": 3}, 4) == ["a", "b"]
    kw.close()


def test_languages_are_read_from_an_index_and_old_tables_get_the_column(tmp_path: Path) -> None:
    """ADR 0568: a search reads its candidates' languages here, from an index alone (not their rows)."""
    index = KeywordIndex(tmp_path / "keyword.db")
    index.upsert("alice", [record("note:1", 0, "Hallo Welt", lang="de"), record("note:2", 0, "zzqx")])
    assert index.languages("alice", ["note:1#0", "note:2#0", "missing#0"]) == {"note:1#0": "de", "note:2#0": ""}
    assert index.languages("bob", ["note:1#0"]) == {}
    content, _ = index._tables("alice")
    plan = index._db.execute(f"EXPLAIN QUERY PLAN SELECT chunk_id, lang FROM {content} "
                             "WHERE chunk_id IN (?, ?) AND lang IS NOT NULL", ["note:1#0", "note:2#0"]).fetchall()
    assert "COVERING INDEX" in str(plan), plan

    index._db.executescript(f"DROP INDEX {content}_lang; ALTER TABLE {content} DROP COLUMN lang; "
                           "PRAGMA user_version = 0;")  # as before it, from before versioned migrations
    index.close()
    reopened = KeywordIndex(tmp_path / "keyword.db")  # the column is added; the index is not built at start-up
    assert f"{content}_lang" not in {n for (n,) in reopened._db.execute("SELECT name FROM sqlite_master")}
    reopened.upsert("alice", [record("note:1", 0, "Hallo Welt", lang="de")])
    assert reopened.languages("alice", ["note:1#0"]) == {}  # an old table: the search reads the vector store's
    reopened.clear()  # a re-index from scratch makes new tables, with the index
    reopened.upsert("alice", [record("note:1", 0, "Hallo Welt", lang="de")])
    assert reopened.languages("alice", ["note:1#0", "note:2#0"]) == {"note:1#0": "de"}
    reopened.delete_user("alice")
    assert reopened.languages("alice", ["note:1#0"]) == {}
