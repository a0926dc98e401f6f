"""A hit's text says each thing once, and the method only on request (issue 35, item 4; ADR 0710)."""

from __future__ import annotations

import json

import anyio
from mcp import Client
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from semantic_mcp.mcp.compact_output import CompactResultText, compact_text, lean_excerpt

NOTE = {
    "doc_type": "note", "id": "note:6", "title": "Meeting notes", "score": 0.7215, "similarity": 0.861,
    "keyword_match": 0.4, "link": "https://cloud.example/apps/notes/note/6", "location": "Work",
    "excerpt": "Meeting notes\n\nNote: Meeting notes\nCategory: Work\n\n# Meeting notes\n\n## Q3 planning\n\n"
               "- Budget review moved to Friday",
    "modified": "2026-11-28T09:32:03Z", "section": None, "shared_by": None,
}
FILE = {
    "doc_type": "file", "id": "file:15", "title": "Quarterly report.txt", "score": 0.77, "link": "https://c/f/15",
    "location": "/Documents/Quarterly report.txt",
    "excerpt": "File: Quarterly report.txt\nPath: /Documents/Quarterly report.txt\n\n"
               "Quarterly report Q2\n\nRevenue grew.",
}
RESULT = {"results": [NOTE, FILE], "total_found": 2, "search_method": "hybrid (dense + keyword, fused); " * 4,
          "query_analysis": None, "reranked": False,
          "notes": ["Only 2 result(s) reach the relevance cut-off 0.30"]}


def test_a_hit_keeps_what_a_model_needs_and_says_it_once() -> None:
    text = compact_text(RESULT)
    note, file = json.loads(text)["results"]
    assert note == {"id": "note:6", "title": "Meeting notes", "score": 0.7215, "location": "Work",
                    "link": "https://cloud.example/apps/notes/note/6", "modified": "2026-11-28T09:32Z",
                    "excerpt": "## Q3 planning\n- Budget review moved to Friday"}
    assert file["location"] == "/Documents/" and file["excerpt"] == "Quarterly report Q2\nRevenue grew."
    assert json.loads(text)["notes"] == RESULT["notes"]  # the note about the cut-off stays
    for said_already in ("search_method", "similarity", "keyword_match", "reranked", "total_found", "null"):
        assert said_already not in text
    assert text.count("Meeting notes") == 1 and len(text) < len(json.dumps(RESULT)) / 2


def test_what_the_hit_does_not_say_elsewhere_stays_in_the_excerpt() -> None:
    event = "Dentist appointment\n\nCalendar event: Dentist appointment\nWhen: Sat 5 Dec 2026 09:00\n" \
            "Where: Praxis Dr. Weber\nCalendar: Personal\n\nYearly check-up"
    assert lean_excerpt(event, "Dentist appointment", "Personal") == \
        "When: Sat 5 Dec 2026 09:00\nWhere: Praxis Dr. Weber\nYearly check-up"
    assert lean_excerpt("Meeting notes", "Meeting notes", "") == "Meeting notes"  # never emptied


def test_kept_counts_and_a_re_ranking_are_said() -> None:
    cut = compact_text({**RESULT, "total_found": 9, "reranked": True})
    assert '"total_found":9' in cut and '"reranked":true' in cut


class Found(BaseModel):
    results: list[dict]
    search_method: str


def test_explain_true_brings_the_method_and_raw_similarities_into_the_text() -> None:
    server = MCPServer(name="t")
    server.middleware.append(CompactResultText())

    @server.tool()
    def find(explain: bool = False) -> Found:
        return Found(results=[NOTE], search_method="hybrid; results re-checked in Nextcloud as you")

    async def call(arguments: dict) -> object:
        async with Client(server) as client:
            return await client.call_tool("find", arguments)

    plain, explained = anyio.run(call, {}), anyio.run(call, {"explain": True})
    assert "search_method" not in plain.content[0].text and "similarity" not in plain.content[0].text
    shown = json.loads(explained.content[0].text)
    assert shown["search_method"].startswith("hybrid") and shown["results"][0]["similarity"] == 0.861
    assert plain.structured_content == explained.structured_content  # whole either way
