"""Another user of the same Nextcloud: signed in, with their own MCP client, curious about alice.

May: search, read and answer from their own items and what was shared with them. May not: receive
alice's items whatever they ask (filters, limits, many searches at once), reach another path of
Nextcloud through a crafted id, or learn from the status tool who else uses the app, their paths or
their clients' errors. Real-tier twin: tests/real/test_real_settings_and_isolation.py.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from scripted_model import ScriptedModel
from stack import Stack

from semantic_mcp.core.documents import valid_source_id
from semantic_mcp.nextcloud.health import NextcloudHealth
from semantic_mcp.nextcloud.client import NextcloudClient, NotFound
from semantic_mcp.sources import make_sources

ALICES = {"Dentist appointment", "Carol Jones", "Pancakes", "Proposal.docx", "Project plan.md",
          "Write release notes", "Quarterly report.txt"}

# --- isolation under load --------------------------------------------------------------------------


async def test_bob_never_gets_alices_items_among_many_concurrent_searches(stack: Stack) -> None:
    crafted = [{}, {"path_prefix": "/../alice/files/"}, {"path_prefix": "/"}, {"score_threshold": 0.0, "limit": 50},
               {"doc_types": ["note", "file", "deck_card", "calendar_event", "contact"]}]
    queries = ["dentist appointment", "pancakes recipe", "Carol Jones", "quarterly report", "release notes"]

    async def as_alice(query: str) -> set[str]:
        return set(await stack.titles("alice", query))

    async def as_bob(query: str, args: dict) -> set[str]:
        return set(await stack.titles("bob", query, **args))

    searches = [as_bob(q, a) for q in queries for a in crafted] + [as_alice(q) for q in queries]
    found = await asyncio.gather(*searches)
    bobs, alices = found[: len(queries) * len(crafted)], found[len(queries) * len(crafted):]
    assert all(not titles & ALICES for titles in bobs), bobs
    assert set().union(*alices) & ALICES  # the same searches do find them for alice


# --- crafted ids never become another URL -----------------------------------------------------------

CRAFTED = {
    "note": ["22/../../../../../ocs/v2.php/cloud/users", "22?format=json", "１２", " 22", "22#x", "-1", ""],
    "file": ["22/../23", "²", "22 OR 1=1"],
    "deck_card": ["5/../../boards", "５", "5.0"],
    "calendar_event": ["personal/../../../files/alice/Secret.md", "../alice/personal/x.ics", "personal/a/b.ics",
                       "personal/..", "personal/x.ics\r\nX-Injected: 1", "personal\\..\\x/y.ics", "personal/"],
    "contact": ["contacts/../../../../files/alice/Secret.md", "contacts/\x00.vcf", "/contacts/x.vcf"],
}
SHAPED = {"note": "22", "file": "22", "deck_card": "5", "calendar_event": "personal/abc-123.ics",
          "contact": "contacts/Carol%20Jones.vcf"}


@pytest.mark.parametrize(("doc_type", "source_id"), [(t, i) for t, ids in CRAFTED.items() for i in ids])
async def test_a_crafted_id_is_refused_before_any_request(doc_type: str, source_id: str) -> None:
    sent: list[str] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(str(request.url))
        return httpx.Response(404)

    nc = NextcloudClient("https://cloud.test", lambda user: {}, transport=httpx.MockTransport(record))
    source = make_sources()[doc_type]
    assert not valid_source_id(doc_type, source_id)
    with pytest.raises(NotFound):
        await source.fetch(nc, "bob", source_id)
    verdicts = await source.readable(nc, "bob", [source_id], slots=asyncio.Semaphore(1), timeout=5)
    assert verdicts == {source_id: False}
    assert sent == [] or all(".." not in url and "ocs/v2.php/cloud" not in url for url in sent), sent
    assert valid_source_id(doc_type, SHAPED[doc_type])


async def test_a_crafted_id_gets_a_clear_error_from_the_reading_tools(stack: Stack) -> None:
    for doc_id in ("note:22/../../../../../ocs/v2.php/cloud/users", "calendar_event:personal/../../x/y.ics"):
        result = await stack.call("bob", "nc_get_document", {"id": doc_id})
        assert result.is_error and "is not an item id" in result.content[0].text


# --- the status tool shows the caller's own -----------------------------------------------------------


async def test_bob_does_not_see_alices_client_errors_in_his_status(stack: Stack) -> None:
    bobs_before = (await stack.status("bob"))["sampling"]["answer"]["last_failure"]  # his own, from another test
    declining = ScriptedModel(fail="decline")
    await stack.call("alice", "nc_semantic_search_answer", {"query": "When is my next dentist appointment?",
                                                            "use_query_analysis": False},
                     sampling_callback=declining, mode="legacy", direct=True)  # the refusal reaches the app
    assert (await stack.status("alice"))["sampling"]["answer"]["last_failure"]  # hers (this one, or an earlier)
    bobs = await stack.status("bob")
    assert bobs["sampling"]["answer"]["last_failure"] == bobs_before
    assert "alice" not in str(bobs)


def test_the_pause_reason_everyone_sees_names_no_user_and_no_path() -> None:
    health = NextcloudHealth()
    health.confirmed_by_appapi()
    health.unavailable("GET /remote.php/dav/files/alice/Private/Diagnosis.pdf as 'alice': HTTP 503")
    shown = health.snapshot()["pause_reason"]
    assert shown == "Nextcloud unavailable: HTTP 503"
    assert "alice" in (health.pause_reason() or "")  # the log keeps the detail
