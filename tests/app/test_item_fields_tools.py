"""Time, tasks and people from the items' own fields, through the MCP tools on the fake Nextcloud (issue 35).

The demo seeds a weekly team meeting begun two weeks before the clock, a card three days overdue beside
one due in two days and one done, and Dave Miller the plumber with an e-mail. Recurrence
tests run on today's clock and on shifted ones (``clock_sensitive``).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from stack import Stack


async def ask(stack: Stack, tool: str, query: str, **args: object) -> dict:
    result = await stack.call("alice", tool, {"query": query, **args})  # no sampling callback
    assert not result.is_error, stack.failure(result)
    return result.structured_content


def now_iso(stack: Stack) -> str:
    return stack.now().isoformat().replace("+00:00", "Z")


@pytest.mark.clock_sensitive
async def test_the_next_team_meeting_is_the_coming_occurrence_on_search_and_answer(dated_stack: Stack) -> None:
    for tool, key in (("nc_semantic_search", "results"), ("nc_semantic_search_answer", "sources")):
        found = await ask(dated_stack, tool, "when is the next team meeting")
        (meeting,) = [hit for hit in found[key] if hit["title"] == "Weekly team meeting"]
        assert found[key][0]["title"] == "Weekly team meeting", found[key]
        assert now_iso(dated_stack) <= meeting["event_end"] and meeting["event_start"] < now_iso_plus_week(dated_stack)
        assert meeting["following"] and len(meeting["following"]) == 3 and meeting["following"][0] > meeting["event_start"]


def now_iso_plus_week(stack: Stack) -> str:
    return (stack.now() + timedelta(days=7)).isoformat().replace("+00:00", "Z")


async def test_overdue_tasks_come_first_and_done_ones_are_not_overdue(stack: Stack) -> None:
    for question in ("which of my tasks are overdue?", "which cards are past their due date",
                     "Welche Aufgaben sind überfällig?"):
        found = await ask(stack, "nc_semantic_search", question)
        assert found["results"][0]["title"] == "Book launch venue", (question, found["results"])
        assert found["results"][0]["event_start"] < now_iso(stack)
        assert "Set up staging server" not in [hit["title"] for hit in found["results"][:1]]
        assert any("past their due date" in note for note in found["notes"]), found["notes"]


async def test_a_contact_hit_carries_its_email_even_from_the_chunk_that_lacks_it(stack: Stack) -> None:
    """The best chunk for the question is the contact's gist (name and note): the e-mail comes from its fields."""
    for question in ("who fixed the kitchen sink", "wer hat die Spüle repariert"):
        found = await ask(stack, "nc_semantic_search", question)
        plumbers = [hit for hit in found["results"] if hit["title"] == "Dave Miller"]
        assert plumbers, found
        assert "dave@example.test" in plumbers[0]["excerpt"], plumbers[0]


@pytest.mark.clock_sensitive
async def test_fetching_the_weekly_meeting_reports_its_coming_occurrence(dated_stack: Stack) -> None:
    found = await ask(dated_stack, "nc_semantic_search", "when is the next team meeting")
    meeting = next(hit for hit in found["results"] if hit["title"] == "Weekly team meeting")
    page = await dated_stack.call("alice", "nc_get_document", {"id": meeting["id"]})
    assert not page.is_error, dated_stack.failure(page)
    read = page.structured_content
    assert read["event_start"] == meeting["event_start"] and read["event_end"] >= now_iso(dated_stack)
    assert read["metadata"]["first_start"] < now_iso(dated_stack) and read["metadata"]["following"]
