"""A recurring event's text says its occurrence under way or next, as its ``event_start`` does (issue 35, item 3).

The index holds the text written when the event was indexed, whose "When:" line names the series' first,
past occurrence. A client's model reads that text (the hit's excerpt, the answer's source blocks, a fetched
page) and would report the past date; every path rewrites the line from the item's fields at the call's clock.
The demo's weekly team meeting began two weeks before the clock (fake_nextcloud/seed.py), in UTC.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from scripted_model import ScriptedModel
from stack import Stack

QUESTION = "when is the next team meeting"


def day(iso: str) -> str:
    """'2026-11-30T08:00Z' as the "When:" line writes its day: 'Mon 30 Nov 2026'."""
    moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return f"{moment:%a} {moment.day} {moment:%b %Y}"


async def meeting_hit(stack: Stack) -> dict:
    result = await stack.call("alice", "nc_semantic_search", {"query": QUESTION})
    assert not result.is_error, stack.failure(result)
    return next(hit for hit in result.structured_content["results"] if hit["title"] == "Weekly team meeting")


def says_the_coming_occurrence(text: str, hit: dict) -> None:
    """``text`` dates the meeting at the hit's ``event_start`` (08:00 UTC, as seeded), never at its first start."""
    when = [line for line in text.splitlines() if "When:" in line]
    assert len(when) == 1, text
    assert f"When: {day(hit['event_start'])} 08:00–09:00 (UTC)" in when[0], text
    assert "next occurrence" in when[0] or "under way" in when[0], text


@pytest.mark.clock_sensitive
async def test_the_search_excerpt_dates_a_weekly_meeting_at_its_coming_occurrence(dated_stack: Stack) -> None:
    hit = await meeting_hit(dated_stack)
    says_the_coming_occurrence(hit["excerpt"], hit)


@pytest.mark.clock_sensitive
async def test_the_answer_prompt_gives_the_model_the_coming_occurrence(dated_stack: Stack) -> None:
    hit = await meeting_hit(dated_stack)
    model = ScriptedModel()
    result = await dated_stack.call("alice", "nc_semantic_search_answer", {"query": QUESTION}, sampling_callback=model)
    assert not result.is_error, dated_stack.failure(result)
    block = next(part for part in model.prompt("answer").split("<document ")[1:] if "Weekly team meeting" in part)
    says_the_coming_occurrence(block.replace("\u2503", ""), hit)  # document lines carry a data mark


@pytest.mark.clock_sensitive
async def test_a_fetched_weekly_meeting_reads_its_coming_occurrence(dated_stack: Stack) -> None:
    hit = await meeting_hit(dated_stack)
    page = await dated_stack.call("alice", "nc_get_document", {"id": hit["id"]})
    assert not page.is_error, dated_stack.failure(page)
    read = page.structured_content
    says_the_coming_occurrence(read["text"], hit)
    assert read["total_chars"] == len(read["text"])  # the page's counts are of the text it shows
