"""Keyword search: SQLite FTS5 with BM25, one table pair per user.

Dense vectors miss exact rare tokens (an invoice number, a product code, a surname); BM25
finds them. Each user has their own content table and FTS5 index, so BM25's statistics
(document frequencies, average length) and every match come from that user's chunks only,
and a search never touches another user's rows.

How text becomes terms (normalisation, the tokenizer, the scoring budget): keyword_terms.py.

Stored per chunk: its id, the filterable metadata, the normalised text the index matches and the
text as written, which hits show (the vector store keeps vectors and metadata alone: ADR 0566).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..core.filters import SearchFilters
from .keyword_schema import FILTER_COLUMNS, MIGRATIONS, user_tables
from .migrations import is_new, migrate
from .keyword_terms import fts_query, match_terms, normalize, query_terms
from .vectors import ChunkRecord

def _dropped_reads_as(empty: Callable[[], Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A read that meets its user's tables dropped meanwhile (the user deleted, the index cleared)
    answers as if they had never been there."""

    def wrap(read: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(read)
        def reading(*args: Any, **kwargs: Any) -> Any:
            try:
                return read(*args, **kwargs)
            except sqlite3.OperationalError as exc:
                if "no such table" not in str(exc):
                    raise
                return empty()

        return reading

    return wrap


class KeywordIndex:
    """One SQLite file for every user; synchronous and thread-safe, call it from a worker thread.

    Writes go through one connection under a lock; reads through a pool of connections, which
    SQLite's WAL lets run beside each other and beside a write (ADR 0564: at a million chunks, two
    threads searching one index, 259 searches/s on one connection, 376-398 with the pool).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._lock = threading.Lock()
        self._readers: list[sqlite3.Connection] = []  # every read connection, for close()
        self._idle_readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()  # not the write lock: a read must not wait for a write
        # Per user: (chunk count, {term: number of chunks containing it}); any write clears it, and
        # bumps the user's generation so that a read begun before the write does not store old counts.
        self._stats: dict[str, tuple[int, dict[str, int]]] = {}
        self._generation: dict[str, int] = {}
        with self._lock:
            new = is_new(self._db)
            # The users' FTS tables, known here so that a search need not look for its user's table in
            # sqlite_master: 3.8 ms a look at 1,000 users (a scan), twice a search. Only this object
            # drops tables (one app process); one missing here is still looked up (another writer).
            self._fts_tables = {name for (name,) in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'kw_*_fts'"
            ).fetchall()}
            self._language_indexes = {name for (name,) in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND name GLOB 'kw_*_lang'"
            ).fetchall()}
            migrate(self._db, MIGRATIONS, name="keyword index", new=new)

    @staticmethod
    def _tables(user: str) -> tuple[str, str]:
        """(content table, FTS table) of ``user``; hashed so any user id makes a safe name."""
        tag = hashlib.sha256(user.encode()).hexdigest()[:32]
        return f"kw_{tag}", f"kw_{tag}_fts"

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A read connection of the pool, for one read: as many as reads run at once, each opened once
        (a new connection reads the schema first: 0.3-0.4 s at 1,000 users, 14,000 schema rows)."""
        with self._readers_lock:
            db = self._idle_readers.pop() if self._idle_readers else None
        if db is None:
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA query_only=1")
            with self._readers_lock:
                self._readers.append(db)
        try:
            yield db
        finally:
            with self._readers_lock:
                self._idle_readers.append(db)

    @contextmanager
    def _writing(self, user: str) -> Iterator[None]:
        """Under the write lock, around a write to ``user``'s tables: the counts memoised before it are
        forgotten, and so are any a read memoised while it ran (read before its commit)."""
        self._forget(user)
        try:
            yield
        finally:
            self._forget(user)

    def _forget(self, user: str) -> None:
        self._stats.pop(user, None)
        self._generation[user] = self._generation.get(user, 0) + 1

    def _exists(self, fts: str, db: sqlite3.Connection | None = None) -> bool:
        if fts not in self._fts_tables and (db or self._db).execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (fts,)
        ).fetchone():
            self._fts_tables.add(fts)
        return fts in self._fts_tables

    def _create(self, user: str) -> tuple[str, str]:
        content, fts = self._tables(user)
        if not self._exists(fts):
            self._db.executescript(user_tables(content, fts))
            self._fts_tables.add(fts)
            self._language_indexes.add(f"{content}_lang")
        return content, fts

    def upsert(self, user: str, chunks: Sequence[ChunkRecord]) -> None:
        """Insert or replace chunks by id."""
        if not chunks:
            return
        rows = [
            (c.chunk_id, c.doc_key, *(c.metadata.get(col) for col in FILTER_COLUMNS), normalize(c.text), c.text,
             str(c.metadata.get("lang") or ""))  # "": no language detected (NULL: not recorded, ADR 0568)
            for c in chunks
        ]
        with self._lock, self._writing(user):
            content, _ = self._create(user)
            self._db.execute("BEGIN")
            # DELETE then INSERT (not REPLACE) so the delete trigger keeps the FTS index in step.
            self._db.executemany(f"DELETE FROM {content} WHERE chunk_id = ?", [(r[0],) for r in rows])
            columns = ", ".join(("chunk_id", "doc_key", *FILTER_COLUMNS, "body", "text", "lang"))
            self._db.executemany(f"INSERT INTO {content} ({columns}) VALUES ({', '.join('?' * len(rows[0]))})", rows)
            self._db.execute("COMMIT")

    def _delete(self, user: str, column: str, values: Sequence[str]) -> None:
        content, fts = self._tables(user)
        with self._lock, self._writing(user):
            if values and self._exists(fts):
                self._db.execute("BEGIN")
                self._db.executemany(f"DELETE FROM {content} WHERE {column} = ?", [(v,) for v in values])
                self._db.execute("COMMIT")

    def delete_doc(self, user: str, doc_key: str) -> None:
        """Remove every chunk of one document."""
        self._delete(user, "doc_key", [doc_key])

    def delete_chunks(self, user: str, chunk_ids: Sequence[str]) -> None:
        self._delete(user, "chunk_id", chunk_ids)

    def delete_user(self, user: str) -> None:
        content, fts = self._tables(user)
        with self._lock, self._writing(user):
            self._db.executescript(f"BEGIN; DROP TABLE IF EXISTS {fts}; DROP TABLE IF EXISTS {content}; COMMIT;")
            self._fts_tables.discard(fts)
            self._language_indexes.discard(f"{content}_lang")

    def clear(self) -> None:
        """Drop every user's tables (a re-index from scratch)."""
        with self._lock:
            self._stats.clear()
            self._generation = {user: n + 1 for user, n in self._generation.items()}
            names = [
                r[0]
                for r in self._db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'kw_*_fts'"
                )
            ]
            script = "".join(f"DROP TABLE IF EXISTS {fts}; DROP TABLE IF EXISTS {fts[:-4]};" for fts in names)
            self._db.executescript(f"BEGIN; {script} COMMIT;")
            self._fts_tables.clear()
            self._language_indexes.clear()

    @_dropped_reads_as(dict)
    def texts(self, user: str, chunk_ids: Sequence[str]) -> dict[str, str]:
        """The texts of those of ``chunk_ids`` this index holds one for, by chunk id."""
        return self._column(user, "text", chunk_ids)

    @_dropped_reads_as(dict)
    def languages(self, user: str, chunk_ids: Sequence[str]) -> dict[str, str]:
        """The language (``lang``, "" for none detected) of those of ``chunk_ids`` this index recorded one
        for, by chunk id: a search's candidates' without asking the vector store (ADR 0568). Nothing for
        a user's tables made before that, which have no language index (their rows no language)."""
        content, _ = self._tables(user)
        return self._column(user, "lang", chunk_ids) if f"{content}_lang" in self._language_indexes else {}

    def _column(self, user: str, column: str, chunk_ids: Sequence[str]) -> dict[str, str]:
        content, fts = self._tables(user)
        ids = list(dict.fromkeys(chunk_ids))
        with self._reading() as db:
            if not ids or not self._exists(fts, db):
                return {}
            marks = ", ".join("?" * len(ids))
            rows = db.execute(
                f"SELECT chunk_id, {column} FROM {content} WHERE chunk_id IN ({marks}) AND {column} IS NOT NULL", ids
            )
            return dict(rows.fetchall())

    @_dropped_reads_as(lambda: 0)
    def count(self, user: str) -> int:
        content, fts = self._tables(user)
        with self._reading() as db:
            return db.execute(f"SELECT count(*) FROM {content}").fetchone()[0] if self._exists(fts, db) else 0

    def _document_frequencies(
        self, user: str, terms: Sequence[str], db: sqlite3.Connection | None = None
    ) -> tuple[int, dict[str, int]]:
        """(number of ``user``'s chunks, how many of them contain each term), read on ``db``.

        Memoised until the user's next write: counting a common term's posting list is cheap but
        not free (10 ms for a query's terms at 100k chunks), and search and coverage both need it.
        The total and the query's counts are always read together, in one snapshot: read apart, a
        write committed between them counted a term in more chunks than the total held (and the
        IDF's logarithm failed the search).
        """
        content, fts = self._tables(user)
        if db is None:
            with self._reading() as db:
                return self._document_frequencies(user, terms, db)
        generation = self._generation.get(user, 0)
        cached = self._stats.get(user)
        if cached and all(term in cached[1] for term in terms):
            return cached
        db.execute("BEGIN")  # one snapshot (WAL) for the total and every count
        try:
            total = db.execute(f"SELECT count(*) FROM {content}").fetchone()[0]
            fresh = {
                term: db.execute(f"SELECT count(*) FROM {fts} WHERE {fts} MATCH ?", (fts_query([term]),)).fetchone()[0]
                for term in terms
            }
        finally:
            db.execute("COMMIT")
        known = {**cached[1], **fresh} if cached and cached[0] == total else fresh
        if len(known) > 50_000:  # a bound for a long-running process; the next queries refill it
            known = fresh
        if self._generation.get(user, 0) == generation:  # no write to the user's tables meanwhile
            self._stats[user] = (total, known)
        return total, known

    @_dropped_reads_as(lambda: (0, []))
    def matching_chunks(self, user: str, filters: SearchFilters, at_most: int) -> tuple[int, list[str] | None]:
        """How many of ``user``'s chunks pass ``filters``, and their ids when there are at most
        ``at_most`` (None otherwise: too many to be worth listing)."""
        content, fts = self._tables(user)
        condition, params = filters.to_sql()
        with self._reading() as db:
            if not self._exists(fts, db):
                return 0, []
            # Counting first: an index count is ~1 ms, listing 30k ids 40 ms.
            passing = db.execute(f"SELECT count(*) FROM {content} WHERE {condition}", params).fetchone()[0]
            if passing > at_most:
                return passing, None
            return passing, [row[0] for row in db.execute(f"SELECT chunk_id FROM {content} WHERE {condition}", params)]

    @_dropped_reads_as(list)
    def search(self, user: str, query: str, k: int, filters: SearchFilters | None = None) -> list[tuple[str, float]]:
        """The ``k`` best chunks of ``user`` for ``query`` as (chunk_id, score), best first;
        score is the negated BM25 (higher is better, comparable within one query only).

        In a large index the commonest query terms are left out of the match (see
        ``keyword_terms.MATCH_BUDGET_SHARE``), so BM25 ranks by the rarer ones.
        """
        terms = query_terms(query)
        if not terms or k <= 0:
            return []
        content, fts = self._tables(user)
        condition, params = (filters or SearchFilters()).to_sql()
        with self._reading() as db:
            if not self._exists(fts, db):
                return []
            total, frequency = self._document_frequencies(user, terms, db)
            match = fts_query(match_terms(terms, frequency, total))
            if match is None:
                return []
            if condition == "1":  # no filter: rank the index alone, look up the chunk ids of the top k only
                sql = (
                    f"SELECT c.chunk_id, t.score FROM (SELECT rowid, bm25({fts}) AS score FROM {fts} "
                    f"WHERE {fts} MATCH ? ORDER BY score LIMIT ?) AS t JOIN {content} AS c ON c.rowid = t.rowid "
                    "ORDER BY t.score"
                )
                rows = db.execute(sql, [match, k]).fetchall()
            else:
                sql = (
                    f"SELECT c.chunk_id, bm25({fts}) AS score FROM {fts} JOIN {content} AS c "
                    f"ON c.rowid = {fts}.rowid WHERE {fts} MATCH ? AND ({condition}) ORDER BY score LIMIT ?"
                )
                rows = db.execute(sql, [match, *params, k]).fetchall()
            return [(chunk_id, -score) for chunk_id, score in rows]

    @_dropped_reads_as(lambda: 0)
    def rarest(self, user: str, query: str) -> int:
        """How many of ``user``'s chunks hold the query term that the fewest hold, of the terms some chunk
        holds (0: none is held). A code or a name of one passage: 1 (search/calibration.py, ADR 0720)."""
        terms, (_, fts) = query_terms(query), self._tables(user)
        with self._reading() as db:
            counts = self._document_frequencies(user, terms, db)[1] if terms and self._exists(fts, db) else {}
        return min((counts[t] for t in terms if counts.get(t)), default=0)  # the counts hold earlier queries' too

    @_dropped_reads_as(dict)
    def coverage(self, user: str, query: str, chunk_ids: Sequence[str]) -> dict[str, float]:
        """For each of ``chunk_ids``, the share in [0, 1] of ``query``'s term weight that the chunk
        contains: the sum of the inverse document frequencies (as FTS5's ``bm25()`` computes
        them, over all of ``user``'s chunks, floored at 1e-6 for a term in over half of them) of the query
        terms it has, over that of all the query's terms (a term no chunk has weighs most).

        A chunk holding every rare term of the query (a phone number, an invoice id) nears 1
        whatever its length; one that matches only words most chunks contain stays near 0.
        Chunks missing from the index are left out.
        """
        terms = query_terms(query)
        content, fts = self._tables(user)
        ids = list(dict.fromkeys(chunk_ids))
        with self._reading() as db:
            if not terms or not ids or not self._exists(fts, db):
                return {}
            total, frequency = self._document_frequencies(user, terms, db)
            marks = ", ".join("?" * len(ids))
            chunk_of = {
                rowid: chunk_id
                for chunk_id, rowid in db.execute(f"SELECT chunk_id, rowid FROM {content} WHERE chunk_id IN ({marks})", ids)
            }
            weights: list[tuple[float, set[str]]] = []
            for term in terms:
                n = frequency[term]
                weight = max(1e-6, math.log((total - n + 0.5) / (n + 0.5)))
                # A word in over half the chunks weighs next to nothing but still counts: once 200 files
                # mentioned "budget", no chunk covered the query "budget" (issue 35, ADR 0310). A term no chunk
                # has is in none.
                having = self._chunks_having(db, fts, term, chunk_of) if n and chunk_of else set()
                weights.append((weight, having))
            known = set(chunk_of.values())
            whole = sum(w for w, _ in weights)
            return {c: sum(w for w, having in weights if c in having) / whole for c in ids if c in known}

    @staticmethod
    def _chunks_having(db: sqlite3.Connection, fts: str, term: str, chunk_of: dict[int, str]) -> set[str]:
        """Which of the chunks ``chunk_of`` (rowid -> chunk id) contain ``term``.

        SQLite reads the term's posting list into a temporary index and probes it with the
        candidates: 0.3 us a posting, in C. (A ``rowid IN (...)`` on the FTS table seeks once per
        candidate, ~40 us each; reading the postings into Python costs more than both.)
        """
        rows = db.execute(
            f"SELECT value FROM json_each(?) WHERE value IN (SELECT rowid FROM {fts} WHERE {fts} MATCH ?)",
            (json.dumps(list(chunk_of)), fts_query([term])),
        )
        return {chunk_of[rowid] for (rowid,) in rows}

    def close(self) -> None:
        with self._lock, self._readers_lock:
            for reader in self._readers:
                reader.close()
            self._db.close()
