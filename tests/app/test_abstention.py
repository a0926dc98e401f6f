"""Scores that mean something: a question nothing in the user's Nextcloud answers gets no results and
says so, real questions keep their answers, and ``score_threshold`` works on the calibrated scale.

Through the real ExApp and the fake Nextcloud's demo content, with a client that cannot sample
(as most clients: Claude, Cursor, ChatGPT), so nothing but the app's own scores decides.
"""

from __future__ import annotations

import pytest

from semantic_mcp.search.calibration import DEFAULT_CUT_OFF
from stack import Stack

NO_ANSWER = ["wifi password", "recipe for moon cheese", "zzqx frobnicate"]

# (user, question, the item that answers it)
ANSWERED = [
    ("alice", "When is my next dentist appointment?", "Dentist appointment"),
    ("alice", "infrastructure budget increase proposal", "Proposal.docx"),
    ("alice", "+15555550101", "Carol Jones"),
    # A question about a contact's note: its gist chunk, not the list of fields (bench/structured_items.py)
    ("alice", "Who did I meet at the Berlin conference?", "Carol Jones"),
    ("alice", "How do I make pancakes?", "Pancakes"),
    ("alice", "What did revenue do last quarter?", "Quarterly report.txt"),
    ("bob", "What is the on-call rotation?", "Operations handbook.md"),
    ("bob", "when do I plant tomatoes", "Garden plans"),
]


@pytest.mark.parametrize("query", NO_ANSWER)
async def test_a_question_nothing_answers_returns_nothing_and_says_so(stack: Stack, query: str) -> None:
    result = await stack.search("alice", query, use_reranking=False)
    assert result["results"] == [] and result["total_found"] == 0
    assert any("Nothing in your Nextcloud answers this" in note for note in result["notes"]), result["notes"]


async def test_the_answer_tool_does_not_answer_from_noise(stack: Stack) -> None:
    result = await stack.call("alice", "nc_semantic_search_answer", {"query": "wifi password", "use_query_analysis": False})
    content = result.structured_content
    assert not result.is_error and content["sources"] == []
    assert "No matching documents" in content["generated_answer"]
    assert any("Nothing in your Nextcloud answers this" in note for note in content["notes"])


@pytest.mark.parametrize(("user", "query", "title"), ANSWERED)
async def test_real_questions_keep_their_answers(stack: Stack, user: str, query: str, title: str) -> None:
    result = await stack.search(user, query, use_reranking=False)
    titles = [hit["title"] for hit in result["results"]]
    assert title in titles[:2], (titles, result["notes"])
    hit = result["results"][titles.index(title)]
    assert DEFAULT_CUT_OFF <= hit["score"] <= 1 and hit["similarity"] is not None and 0 <= hit["keyword_match"] <= 1


async def test_score_threshold_works_on_the_calibrated_scale(stack: Stack) -> None:
    closest = await stack.search("alice", "wifi password", score_threshold=0, use_reranking=False)
    assert closest["results"], "score_threshold=0 shows the closest items even when none answers"
    assert all(hit["score"] < DEFAULT_CUT_OFF for hit in closest["results"])

    query = "infrastructure budget increase proposal"
    everything = (await stack.search("alice", query, score_threshold=0, use_reranking=False))["results"]
    default = (await stack.search("alice", query, use_reranking=False))["results"]
    assert len(default) < len(everything) and all(hit["score"] >= DEFAULT_CUT_OFF for hit in default)
    middle = (everything[0]["score"] + everything[1]["score"]) / 2
    strict = await stack.search("alice", query, score_threshold=middle, use_reranking=False)
    assert [hit["title"] for hit in strict["results"]] == ["Proposal.docx"]
    assert any("reach the relevance cut-off" in note for note in strict["notes"])
