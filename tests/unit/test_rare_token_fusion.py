"""The token fusion needs a word few passages hold (ADR 0720): a code or a name one passage holds is lifted as
before, the capitalised words of an entity question that many passages share ("born in Germany") are not."""

from __future__ import annotations

from pathlib import Path

from semantic_mcp.search.calibration import calibration_for
from semantic_mcp.stores.keyword import KeywordIndex
from semantic_mcp.stores.vectors import ChunkRecord


def test_a_token_query_gets_the_token_fusion_only_when_a_word_of_it_is_rare() -> None:
    e5 = calibration_for("multilingual-e5-small-q4")
    query = "Which actors were born in Germany?"
    assert e5.rare_term_chunks is not None
    rare, common = e5.for_query(query, rarest=1), e5.for_query(query, rarest=e5.rare_term_chunks + 1)
    assert rare.keyword_weight == e5.token_weight and rare.exact_bonus == e5.exact_bonus > 0
    assert common.keyword_weight == e5.keyword_weight < e5.token_weight and common.exact_bonus == 0
    assert e5.for_query(query) == rare  # not counted: the text alone decides, as before
    assert e5.for_query("how do I make breakfast crepes", rarest=1).exact_bonus == 0  # plain stays plain


def test_the_keyword_index_counts_the_chunks_holding_the_rarest_word_held(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "keyword.db")
    texts = [f"An actor born in Germany, number {i}." for i in range(6)] + ["Invoice K7R-99Q2 from Germany."]
    index.upsert("alice", [ChunkRecord(f"note:{i}#0", f"note:{i}", t, {"doc_type": "note"}) for i, t in enumerate(texts)])
    assert index.rarest("alice", "born in Germany") == 6  # "Germany" is held by seven
    assert index.rarest("alice", "invoice K7R-99Q2") == 1
    assert index.rarest("alice", "zzqx frobnicate") == 0  # no word held (the counts of the queries before are kept)
    assert index.rarest("bob", "Germany") == 0  # no index yet
