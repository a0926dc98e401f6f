"""Time-aware questions on the demo data, from a client that cannot sample (most clients today).

The demo seeds alice's dentist appointments relative to today: one next week, one a year ago.
Nothing but the words of the question can tell the app which one is meant.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from scripted_model import ScriptedModel
from stack import Stack


def now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


async def ask(stack: Stack, tool: str, query: str, **args: object) -> dict:
    result = await stack.call("alice", tool, {"query": query, **args})  # no sampling callback
    assert not result.is_error, result.content
    return result.structured_content


async def test_next_appointment_ranks_the_upcoming_one_first(stack: Stack) -> None:
    result = await ask(stack, "nc_semantic_search", "When is my next dentist appointment?")
    top = result["results"][0]
    assert top["title"] == "Dentist appointment" and top["event_start"] > now_iso()
    assert any("upcoming items first" in note for note in result["notes"]), result["notes"]


async def test_last_appointment_ranks_the_past_one_first(stack: Stack) -> None:
    result = await ask(stack, "nc_semantic_search", "When was my last dentist appointment?")
    top = result["results"][0]
    assert top["title"] == "Dentist appointment" and top["event_start"] < now_iso()
    assert any("past items first" in note for note in result["notes"]), result["notes"]


async def test_other_languages_read_the_same_cues(stack: Stack) -> None:
    german = await ask(stack, "nc_semantic_search", "Wann ist mein nächster Zahnarzttermin?")
    assert german["results"][0]["doc_type"] == "calendar_event"
    assert german["results"][0]["event_start"] > now_iso()
    spanish = await ask(stack, "nc_semantic_search", "¿Cuándo fue mi última cita con el dentista?")
    assert spanish["results"][0]["doc_type"] == "calendar_event"
    assert spanish["results"][0]["event_start"] < now_iso()


async def test_answer_tool_lists_the_upcoming_appointment_as_source_one(stack: Stack) -> None:
    result = await ask(stack, "nc_semantic_search_answer", "When is my next dentist appointment?")
    first = result["sources"][0]
    assert first["number"] == 1 and first["title"] == "Dentist appointment" and first["event_start"] > now_iso()


async def test_a_sampling_clients_analysis_replaces_the_word_cues_but_keeps_the_time_order(stack: Stack) -> None:
    """The model filters (calendar events from a year and a half ago on); the words still say "soonest first"."""
    since = (datetime.now(UTC) - timedelta(days=550)).strftime("%Y-%m-%d")
    model = ScriptedModel(analysis=json.dumps({"doc_types": ["calendar_event"], "event_after": since,
                                               "keywords": "dentist appointment"}))
    result = await stack.call("alice", "nc_semantic_search", {"query": "When is my next dentist appointment?",
                                                              "use_reranking": False}, sampling_callback=model)
    assert not result.is_error, result.content
    found = result.structured_content
    assert found["query_analysis"]["doc_types"] == ["calendar_event"]
    assert {hit["doc_type"] for hit in found["results"]} == {"calendar_event"}  # the model's filter
    assert found["results"][0]["title"] == "Dentist appointment" and found["results"][0]["event_start"] > now_iso()
    (note,) = [note for note in found["notes"] if note.startswith("Read from the query")]
    assert "upcoming items first" in note and "favoured" not in note  # types and window: the model's
    assert "'next'" in note and "appointment" not in note
