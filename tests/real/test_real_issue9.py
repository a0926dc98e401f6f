"""Issue 9 on a real Nextcloud 34.0.1, for clients that cannot sample (the official client, no callback).

Time-aware questions, reading a whole item as the caller, the connector search/fetch pair, the
answer tool on a server without an AI provider (TaskProcessing answers ``{"types":[]}``), and
Nextcloud's example files, which nc-kit's first logins put in every account, kept out of results.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from realstack import RealStack
from semantic_mcp.sources.examples import NEXTCLOUD_32_SKELETON

NOTE_TITLE = "Kingfisher survey protocol"
NOTE_BODY = "\n\n".join(f"Step {n}: count the kingfishers at pond {n} and note the water level." for n in range(1, 400))
OWN_TEMPLATE = "/Templates/Kingfisher tally sheet.md"


@pytest.fixture(scope="module", autouse=True)
def content(real: RealStack) -> None:
    alice = real.user("alice")
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    # DAV first: the Notes API answers with a session cookie, and DAV refuses a cookie without CSRF token.
    alice.put_file(OWN_TEMPLATE, "# Kingfisher tally sheet\n\nPond, time, kingfishers seen, water level.\n")
    alice.put_event("Orthodontist appointment", now + timedelta(days=6), description="Braces check with Dr. Alvarez")
    alice.put_event("Orthodontist appointment", now - timedelta(days=200), description="Braces fitted")
    alice.create_note(NOTE_TITLE, NOTE_BODY)
    asyncio.run(real.eventually(lambda: _indexed(real), timeout=180, interval=2))


async def _indexed(real: RealStack) -> bool:
    events = await real.search("alice", "orthodontist appointment", doc_types=["calendar_event"])
    notes = await real.titles("alice", NOTE_TITLE, doc_types=["note"])
    files = await real.search("alice", "kingfisher tally sheet", doc_types=["file"])
    return (len([h for h in events["results"] if h["title"] == "Orthodontist appointment"]) == 2
            and NOTE_TITLE in notes and any(h["location"] == OWN_TEMPLATE for h in files["results"]))


def now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


async def test_next_and_last_appointment(real: RealStack) -> None:
    upcoming = (await real.call("alice", "nc_semantic_search",
                                {"query": "When is my next orthodontist appointment?"})).structured_content
    assert upcoming["results"][0]["title"] == "Orthodontist appointment"
    assert upcoming["results"][0]["event_start"] > now_iso(), upcoming["results"][:2]
    past = (await real.call("alice", "nc_semantic_search",
                            {"query": "When was my last orthodontist appointment?"})).structured_content
    assert past["results"][0]["title"] == "Orthodontist appointment"
    assert past["results"][0]["event_start"] < now_iso(), past["results"][:2]


async def test_a_result_opens_whole_and_in_pages_as_the_caller(real: RealStack) -> None:
    hit = (await real.search("alice", NOTE_TITLE, doc_types=["note"]))["results"][0]
    first = (await real.call("alice", "nc_get_document", {"id": hit["id"], "max_chars": 5000})).structured_content
    assert first["title"] == NOTE_TITLE and first["link"] == hit["link"] and first["next_offset"]
    assert first["total_chars"] > len(NOTE_BODY) > 5000
    rest = (await real.call("alice", "nc_get_document", {"id": hit["id"], "offset": first["next_offset"],
                                                         "max_chars": 100000})).structured_content
    assert "Step 399:" in rest["text"] and rest["next_offset"] is None
    refused = await real.call("bob", "nc_get_document", {"id": hit["id"]})
    assert refused.is_error and "cannot open it" in refused.content[0].text


async def test_connector_search_and_fetch(real: RealStack) -> None:
    results = (await real.call("alice", "search", {"query": NOTE_TITLE})).structured_content["results"]
    assert set(results[0]) == {"id", "title", "url"} and results[0]["title"] == NOTE_TITLE
    doc = (await real.call("alice", "fetch", {"id": results[0]["id"]})).structured_content
    assert doc["url"] == results[0]["url"] and "Step 1:" in doc["text"]


async def test_answer_without_an_ai_provider_lists_the_sources(real: RealStack) -> None:
    result = (await real.call("alice", "nc_semantic_search_answer",
                              {"query": "How do I count the kingfishers?"})).structured_content
    assert "Nextcloud has no AI provider for text generation" in result["generated_answer"]
    assert result["sources"] and result["model_used"] is None


async def test_nextclouds_example_files_stay_out_of_results(real: RealStack) -> None:
    for query in ("Templates credits open source community", "meeting notes agenda", "invoice", "Nextcloud flyer",
                  "Welcome to Nextcloud Hub"):
        found = [hit["location"] for hit in (await real.search("alice", query, limit=10))["results"]]
        assert not set(found) & set(NEXTCLOUD_32_SKELETON), (query, found)
    own = await real.search("alice", "kingfisher tally sheet", doc_types=["file"])
    assert own["results"][0]["location"] == OWN_TEMPLATE  # her own file in Templates/ is hers


async def test_a_question_nothing_answers_returns_nothing_and_says_so(real: RealStack) -> None:
    """On a real account (skeleton files, default Deck board and contact) as on the demo."""
    result = await real.search("alice", "What is the wifi password?")
    assert result["results"] == [] and any("Nothing in your Nextcloud answers" in note for note in result["notes"])
