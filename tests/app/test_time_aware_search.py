"""Time-aware questions on the demo data, from a client that cannot sample (most clients today).

The seed places alice's dentist appointments around the stack's clock: one next week, one a year
ago. Nothing but the words of the question can tell the app which one is meant. Each test runs on
today's clock and on shifted ones (a month end, a year end, leap days), where the seed, the fake
Nextcloud and the app share the shifted "now".
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from scripted_model import ScriptedModel
from stack import Stack

pytestmark = pytest.mark.clock_sensitive


def now_iso(stack: Stack) -> str:
    return stack.now().isoformat().replace("+00:00", "Z")


async def ask(stack: Stack, tool: str, query: str, **args: object) -> dict:
    result = await stack.call("alice", tool, {"query": query, **args})  # no sampling callback
    assert not result.is_error, stack.failure(result)
    return result.structured_content


async def test_next_appointment_ranks_the_upcoming_one_first(dated_stack: Stack) -> None:
    result = await ask(dated_stack, "nc_semantic_search", "When is my next dentist appointment?")
    top = result["results"][0]
    assert top["title"] == "Dentist appointment" and top["event_start"] > now_iso(dated_stack)
    assert any("upcoming items first" in note for note in result["notes"]), result["notes"]


async def test_last_appointment_ranks_the_past_one_first(dated_stack: Stack) -> None:
    result = await ask(dated_stack, "nc_semantic_search", "When was my last dentist appointment?")
    top = result["results"][0]
    assert top["title"] == "Dentist appointment" and top["event_start"] < now_iso(dated_stack)
    assert any("past items first" in note for note in result["notes"]), result["notes"]


async def test_other_languages_read_the_same_cues(dated_stack: Stack) -> None:
    german = await ask(dated_stack, "nc_semantic_search", "Wann ist mein nächster Zahnarzttermin?")
    assert german["results"][0]["doc_type"] == "calendar_event"
    assert german["results"][0]["event_start"] > now_iso(dated_stack)
    spanish = await ask(dated_stack, "nc_semantic_search", "¿Cuándo fue mi última cita con el dentista?")
    assert spanish["results"][0]["doc_type"] == "calendar_event"
    assert spanish["results"][0]["event_start"] < now_iso(dated_stack)


async def test_answer_tool_lists_the_upcoming_appointment_as_source_one(dated_stack: Stack) -> None:
    result = await ask(dated_stack, "nc_semantic_search_answer", "When is my next dentist appointment?")
    first = result["sources"][0]
    assert first["number"] == 1 and first["title"] == "Dentist appointment"
    assert first["event_start"] > now_iso(dated_stack)


async def test_a_sampling_clients_analysis_replaces_the_word_cues_but_keeps_the_time_order(
    dated_stack: Stack,
) -> None:
    """The model filters (calendar events from a year and a half ago on); the words still say "soonest first"."""
    since = (dated_stack.now() - timedelta(days=550)).strftime("%Y-%m-%d")
    model = ScriptedModel(analysis=json.dumps({"doc_types": ["calendar_event"], "event_after": since,
                                               "keywords": "dentist appointment"}))
    result = await dated_stack.call("alice", "nc_semantic_search",
                                    {"query": "When is my next dentist appointment?", "use_reranking": False},
                                    sampling_callback=model)
    assert not result.is_error, dated_stack.failure(result)
    found = result.structured_content
    assert found["query_analysis"]["doc_types"] == ["calendar_event"]
    assert {hit["doc_type"] for hit in found["results"]} == {"calendar_event"}  # the model's filter
    top = found["results"][0]
    assert top["title"] == "Dentist appointment" and top["event_start"] > now_iso(dated_stack)
    (note,) = [note for note in found["notes"] if note.startswith("Read from the query")]
    assert "upcoming items first" in note and "favoured" not in note  # types and window: the model's
    assert "'next'" in note and "appointment" not in note
