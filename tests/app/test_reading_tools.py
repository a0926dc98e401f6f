"""Opening what a search found: nc_get_document, and the connector-shaped search/fetch pair.

Through the proxy with the official client, against the seeded fake Nextcloud: every read is
made as the caller, so what they may open is the fake Nextcloud's decision.
"""

from __future__ import annotations

import json
from typing import Any

from stack import Stack


async def get_document(stack: Stack, user: str, doc_id: str, **args: Any) -> Any:
    return await stack.call(user, "nc_get_document", {"id": doc_id, **args})


async def test_every_kind_of_search_result_opens_whole(stack: Stack) -> None:
    seen = set()
    for query in ("pancakes recipe", "dentist appointment", "Carol Jones phone", "write release notes",
                  "semantic search whitepaper", "budget proposal"):
        for hit in (await stack.search("alice", query, limit=5))["results"]:
            result = await get_document(stack, "alice", hit["id"])
            assert not result.is_error, (hit["id"], result.content)
            doc = result.structured_content
            assert doc["id"] == hit["id"] and doc["title"] == hit["title"] and doc["link"] == hit["link"]
            assert doc["doc_type"] == hit["doc_type"] and doc["total_chars"] == len(doc["text"]) > 0
            assert doc["next_offset"] is None
            seen.add(hit["doc_type"])
    assert seen == {"note", "file", "deck_card", "calendar_event", "contact"}


async def test_a_document_holds_more_than_the_excerpt(stack: Stack) -> None:
    hit = (await stack.search("alice", "pancakes recipe", doc_types=["note"]))["results"][0]
    doc = (await get_document(stack, "alice", hit["id"])).structured_content
    assert "Whisk everything, rest 10 minutes" in doc["text"] and "200 g flour" in doc["text"]
    assert doc["location"] == hit["location"] and doc["modified"] == hit["modified"]
    pdf = (await stack.search("alice", "semantic search whitepaper", doc_types=["file"]))["results"][0]
    opened = (await get_document(stack, "alice", pdf["id"])).structured_content
    assert opened["metadata"]["mime"] == "application/pdf"
    assert "nearby vectors mean related content" in opened["text"]


async def test_long_documents_come_in_pages(stack: Stack) -> None:
    paragraphs = [f"Paragraph {n}: the lighthouse keeper logs the tide at {n} o'clock." for n in range(120)]
    body = "\n\n".join(paragraphs)
    file_id = stack.fake.put_file("bob", "Documents/Lighthouse log.md", body)
    pages, offset = [], 0
    while offset is not None:
        result = await get_document(stack, "bob", f"file:{file_id}", offset=offset, max_chars=1000)
        assert not result.is_error, stack.failure(result)
        page = result.structured_content
        assert page["offset"] == offset and len(page["text"]) <= 1000
        pages.append(page["text"])
        offset = page["next_offset"]
    stack.fake.delete("bob", "Documents/Lighthouse log.md")  # the session's other tests need not index it
    assert len(pages) > 5
    whole = "".join(pages)
    assert whole.endswith(paragraphs[-1]) and paragraphs[0] in whole and len(whole) == page["total_chars"]
    assert all(text.endswith(("\n\n", "\n", " ")) for text in pages[:-1])  # pages end at a break


async def test_reading_is_checked_as_the_caller(stack: Stack) -> None:
    note = (await stack.search("alice", "pancakes recipe", doc_types=["note"]))["results"][0]
    refused = await get_document(stack, "bob", note["id"])
    assert refused.is_error and "cannot open it" in refused.content[0].text
    shared_id = stack.fake.file_id("alice", "Documents/Shared with Bob.md")
    shared = await get_document(stack, "bob", f"file:{shared_id}")
    assert not shared.is_error, shared.content
    assert "Bob brings the barbecue" in shared.structured_content["text"]
    unknown = await get_document(stack, "alice", "spreadsheet:12")
    assert unknown.is_error and "not an item id" in unknown.content[0].text


async def test_connector_search_and_fetch_shapes(stack: Stack) -> None:
    found = await stack.call("alice", "search", {"query": "When is my next dentist appointment?"},
                             client_name="openai-mcp")  # as ChatGPT introduces itself
    assert not found.is_error, found.content
    results = found.structured_content["results"]
    assert results and set(results[0]) == {"id", "title", "url"}
    # Connector clients read the one text item as JSON.
    assert len(found.content) == 1 and json.loads(found.content[0].text) == found.structured_content
    assert results[0]["title"] == "Dentist appointment"
    fetched = await stack.call("alice", "fetch", {"id": results[0]["id"]}, client_name="openai-mcp")
    assert not fetched.is_error, fetched.content
    doc = fetched.structured_content
    assert set(doc) == {"id", "title", "text", "url", "metadata"} and json.loads(fetched.content[0].text) == doc
    assert doc["id"] == results[0]["id"] and doc["url"] == results[0]["url"]
    assert "Dr. Weber" in doc["text"] and doc["metadata"]["doc_type"] == "calendar_event"
    assert doc["metadata"]["event_start"].endswith("Z")
