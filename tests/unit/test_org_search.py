"""bench/org_search.py (issue 16, part e) writes what the app would have written: the metadata the
pipeline gives a chunk, in the collection and keyword tables the app's search opens."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.org_search import CHUNKS_PER_ITEM, DIM, MODEL_ID, Corpus, build
from semantic_mcp.core.documents import DocRef, SourceDocument
from semantic_mcp.embedding.backends import OpenAIEmbedder
from semantic_mcp.indexing.records import chunk_records
from semantic_mcp.stores.keyword import KeywordIndex
from semantic_mcp.stores.vectors import VectorStore


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus(texts=20)


def test_records_carry_the_metadata_the_pipeline_gives_a_chunk(corpus: Corpus) -> None:
    records = corpus.records("alice", 4, first_id=100)
    assert len(records) == 4 * CHUNKS_PER_ITEM
    for record in records[:: CHUNKS_PER_ITEM]:
        meta = record.metadata
        doc = SourceDocument(meta["doc_type"], meta["source_id"], meta["title"], " ".join(  # type: ignore[arg-type]
            r.text.split("\n\n", 1)[1] for r in records if r.doc_key == record.doc_key),
            meta["modified"], meta["version"], meta["link"], location=meta["location"], extra={"owner": "alice"})
        expected = chunk_records(doc, DocRef("alice", doc.doc_type, doc.source_id))[0]
        assert set(meta) == set(expected.metadata) - {"section"}
        assert meta["lang"] == expected.metadata["lang"] == "en" and meta["owner"] == "alice"
        assert record.chunk_id == f"{record.doc_key}#0" == expected.chunk_id
    assert {r.metadata["doc_type"] for r in records} == {"file", "note"}


def test_the_index_is_written_where_the_app_searches(tmp_path: Path, corpus: Corpus) -> None:
    built = build(tmp_path, users=3, chunks=60, batch=30, corpus=corpus)
    # The probe's engine embeds with the stub's model "stub": its collections are the ones written.
    assert OpenAIEmbedder("http://127.0.0.1:9/v1", "stub").model_id == MODEL_ID
    store = VectorStore.embedded(tmp_path / "chroma", MODEL_ID, DIM)
    keyword = KeywordIndex(tmp_path / "keyword.db")
    per_user = [store.count(f"user{n:04d}") for n in range(3)]
    assert per_user == [keyword.count(f"user{n:04d}") for n in range(3)]
    assert sum(per_user) == built["chunks"] == built["items"] * CHUNKS_PER_ITEM
    assert min(per_user) >= 5 * CHUNKS_PER_ITEM  # every user has at least item_counts' five items
    keyword.close()
