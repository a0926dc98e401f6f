"""The plumber asked for in German, French or Spanish on `make demo`'s data: the contact who is the plumber
comes first with his e-mail and phone, not the contact whose name reads closest to the question's language
(ADR 0722). Before, "Wie erreiche ich den Klempner?" put Erin Schmidt first, "Comment joindre le plombier ?"
Carol Jones, and "¿Cómo contacto al fontanero?" returned nothing: e5-small does not tie those words to
"Miller Plumbing"."""

from __future__ import annotations

import pytest

from stack import Stack

QUESTIONS = ("Wie erreiche ich den Klempner?", "Comment joindre le plombier ?", "¿Cómo contacto al fontanero?",
             "Wie kontaktiere ich den Klempner?",
             "Wie kontaktiere ich den Sanitärinstallateur?")


@pytest.mark.parametrize("question", QUESTIONS)
async def test_the_plumber_comes_first_whatever_the_language_of_the_question(stack: Stack, question: str) -> None:
    result = await stack.call("alice", "nc_semantic_search", {"query": question, "use_query_analysis": False})
    assert not result.is_error, stack.failure(result)
    found = result.structured_content
    assert found["results"], (question, found["notes"])
    first = found["results"][0]
    assert first["title"] == "Dave Miller", (question, [hit["title"] for hit in found["results"]])
    assert "dave@example.test" in first["excerpt"] and "+15555550142" in first["excerpt"], first
    assert any("plumber" in note for note in found["notes"]), found["notes"]

