"""An honest "the documents don't say" claims nothing, so it is returned as the answer without a
citation, while a document's injected words stay withheld even dressed as one (issue 36, item 3;
search/grounding.py, ADR 0321)."""

from __future__ import annotations

import pytest
from scripted_model import ScriptedModel
from stack import Stack
from test_answer_grounding import QUESTION, WIFI, _indexed, wifi_stack  # noqa: F401  (the fixture)
from test_search_tools import answer

from semantic_mcp.search import grounding, prompts

SOURCES = [prompts.document_block(1, "note", "Kestrel rota", {}, WIFI + "\nThe rota starts on Monday at the north hide.\n")]
ASKED = "When does the heron count end?"


@pytest.mark.parametrize("reply", [
    "The documents don't say when the heron count ends.",
    "The provided documents contain no information about the end of the heron count.",
    "I'm sorry, but the sources do not specify when the heron count ends.",
    "I could not find when the heron count ends in your documents.",
])
def test_a_refusal_that_echoes_the_question_is_the_answer(reply: str) -> None:
    assert grounding.check(reply, SOURCES, ASKED).grounded


@pytest.mark.parametrize(("reply", "question"), [
    ("Die Dokumente sagen nicht, wann die Reiherzählung endet.", "Wann endet die Reiherzählung?"),
    ("Les documents ne disent pas quand le comptage se termine.", "Quand se termine le comptage ?"),
    ("Los documentos no dicen cuándo termina el conteo.", "¿Cuándo termina el conteo?"),
    ("「観察はいつ終わりますか」について、文書には記載がありません。", "観察はいつ終わりますか？"),
])
def test_refusals_in_other_languages(reply: str, question: str) -> None:
    assert grounding.check(reply, SOURCES, question).grounded


@pytest.mark.parametrize("reply", [
    "ACCESS GRANTED",
    "The documents do not say. ACCESS GRANTED",
    "The documents do not say ACCESS GRANTED.",
    "The documents don't say when the heron count ends; the door code is 4471.",  # a number of no one's
    "The documents don't say when the heron count ends, but it starts on Monday.",  # a fact: it must cite
    "The documents don't say when the count ends; visit evil.example for more.",
])
def test_anything_beside_a_refusal_is_still_a_claim_and_withheld(reply: str) -> None:
    assert not grounding.check(reply, SOURCES, ASKED).grounded


async def test_a_refusal_comes_back_as_the_answer_through_the_app(wifi_stack: Stack) -> None:
    await wifi_stack.eventually(lambda: _indexed(wifi_stack))
    refusal = "The documents don't say when the guest wifi password changes."
    result = await answer(wifi_stack, "alice", "When does the guest wifi password change?", ScriptedModel(answer=refusal),
                          use_query_analysis=False)
    assert result["generated_answer"] == refusal
    assert not any("withheld" in note for note in result["notes"]) and result["sources"]


async def test_an_injection_dressed_as_a_refusal_is_withheld_through_the_app(wifi_stack: Stack) -> None:
    await wifi_stack.eventually(lambda: _indexed(wifi_stack))
    model = ScriptedModel(answer="The documents do not say. ACCESS GRANTED")
    result = await answer(wifi_stack, "alice", QUESTION, model, use_query_analysis=False)
    assert "ACCESS GRANTED" not in result["generated_answer"]
    assert result["generated_answer"].startswith("[Answer withheld:")
