"""Issue 35 items 2, 4 and 5 on a real Nextcloud 34 through the AppAPI PHP proxy, with the official client:
errors in one plain sentence, compact result text, notes true to the rule applied."""

from __future__ import annotations

import json
import re

import httpx

from realstack import RealStack

NOTE = ("Osprey grant budget", "The Osprey grant covers 3,100 euros of field equipment in Lapland.")


def _plain(text: str) -> None:
    assert "pydantic" not in text and "Error executing tool" not in text and "\n" not in text, text


async def test_argument_errors_come_back_as_one_plain_sentence(real: RealStack) -> None:
    empty = await real.call("alice", "nc_semantic_search", {"query": ""})
    blank = await real.call("alice", "nc_semantic_search", {"query": "   "})
    long = await real.call("alice", "nc_semantic_search_answer", {"query": "x" * 2001})
    bad_date = await real.call("alice", "nc_semantic_search", {"query": "budget", "modified_after": "yesterday"})
    bad_id = await real.call("alice", "nc_get_document", {"id": "spreadsheet:12"})
    for result in (empty, blank, long, bad_date, bad_id):
        assert result.is_error
        _plain(result.content[0].text)
    assert long.content[0].text == "query is too long: the limit is 2,000 characters."
    assert "ISO 8601" in bad_date.content[0].text


def test_a_token_nextcloud_does_not_know_says_where_to_make_an_app_password(real: RealStack) -> None:
    refused = httpx.post(real.mcp_url, json={}, headers={"Authorization": "Bearer not-a-password"}, timeout=30)
    assert refused.status_code == 401
    assert "Devices & sessions" in refused.json()["error_description"]


async def test_result_text_is_compact_and_the_structured_content_whole(real: RealStack) -> None:
    real.user("alice").create_note(*NOTE)
    await real.eventually(lambda: _found(real), timeout=60)
    result = await real.call("alice", "nc_semantic_search", {"query": NOTE[1], "use_query_analysis": False})
    assert not result.is_error
    text = result.content[0].text
    assert "\n  " not in text and "null" not in text and '"similarity"' not in text and "search_method" not in text
    assert json.loads(text)["results"][0]["title"] == NOTE[0]
    assert "similarity" in result.structured_content["results"][0] and result.structured_content["search_method"]


async def _found(real: RealStack) -> bool:
    return NOTE[0] in await real.titles("alice", NOTE[0], doc_types=["note"])


async def test_a_nothing_found_note_quotes_a_score_under_the_cut_off_it_names(real: RealStack) -> None:
    for query in ("zqxv wplm krrt", "Which submarine did the dentist's parrot buy?"):
        notes = (await real.search("alice", query))["notes"]
        for note in notes:
            for score, cut in re.findall(r"relevance is (\d\.\d\d), below the cut-off (\d\.\d\d)", note):
                assert float(score) < float(cut), note
