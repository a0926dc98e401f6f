"""Notes, files and Deck cards against responses recorded from a real Nextcloud 32
(../shared/nextcloud-32-wire), and what every source shares (server errors are transient, the registry).
Recordings are served to the real NextcloudClient with pytest-httpx.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from pytest_httpx import HTTPXMock
from semantic_mcp.core.documents import Skipped, SourceDocument
from semantic_mcp.nextcloud.client import NextcloudClient, NotFound, Transient, http_date_to_ts
from semantic_mcp.sources import SOURCES, make_sources
from semantic_mcp.sources.base import SourceOptions
from semantic_mcp.sources.contacts import ContactsSource
from semantic_mcp.sources.deck import DeckSource
from semantic_mcp.sources.files import FilesSource, is_in_notes_folder, user_relative_path
from semantic_mcp.sources.notes import NotesSource
from sources_support import (
    BASE,
    BOOKS,
    DECK,
    NOTES,
    PERSONAL,
    TAG,
    WIRE,
    body,
    nc,  # noqa: F401 - a fixture
    recording,
    search_answer,
    search_body,
    serve_no_team_folders,
    serve_search,
)

# --- notes -------------------------------------------------------------------------------------


async def test_notes_full_listing(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(url=f"{NOTES}?exclude=content", **recording("notes_list"))
    listing = await NotesSource().list_changes(nc, "alice", None, full=True)
    assert listing.items == {"22": "6634d54d60f46e92ff6c6b903d00a994", "43": "b49591a28f85163b6437f94d2ffe8da0"}
    assert listing.complete
    assert listing.cursor == str(http_date_to_ts("Sun, 22 Nov 2026 10:06:00 GMT"))  # the server's clock


async def test_notes_pruned_listing_is_complete_with_stubs(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(url=f"{NOTES}?exclude=content&pruneBefore=1795341600", **recording("notes_list_pruned"))
    listing = await NotesSource().list_changes(nc, "alice", "1795341600", full=False)
    assert listing.items == {"22": None, "43": None} and listing.complete


async def test_notes_fetch(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(url=f"{NOTES}/22", **recording("notes_get"))
    serve_search(httpx_mock, search_answer("22"))  # the note's file: path, system tags, owner (oc:owner-id)
    doc = await NotesSource().fetch(nc, "alice", "22")
    assert isinstance(doc, SourceDocument)
    assert (doc.title, doc.location, doc.modified) == ("First note", "Test", 1795341261)
    assert (doc.link, doc.version) == ("/apps/notes/note/22", "6634d54d60f46e92ff6c6b903d00a994")
    assert doc.text == "Note: First note\nCategory: Test\n\n# First note\nedited"


async def test_notes_access(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    as_alice, as_bob = {"X-Test-User": "alice"}, {"X-Test-User": "bob"}
    httpx_mock.add_response(url=f"{NOTES}/22?exclude=content", match_headers=as_alice, **recording("notes_get"))
    httpx_mock.add_response(url=f"{NOTES}/22?exclude=content", match_headers=as_bob, **recording("bob_notes_get_alice"))
    httpx_mock.add_response(url=f"{NOTES}/22", **recording("bob_notes_get_alice"))
    source = NotesSource()
    assert await source.can_read(nc, "alice", "22")
    assert not await source.can_read(nc, "bob", "22")
    with pytest.raises(NotFound):
        await source.fetch(nc, "bob", "22")


# --- files -------------------------------------------------------------------------------------


async def test_files_full_listing_leaves_out_folders_notes_and_types_without_text(
    nc: NextcloudClient, httpx_mock: HTTPXMock
) -> None:
    httpx_mock.add_response(method="SEARCH", url=f"{BASE}/remote.php/dav/", **recording("webdav_search"))
    serve_no_team_folders(httpx_mock)
    listing = await FilesSource().list_changes(nc, "alice", None, full=True)
    # 20/21/27/29 are folders, 22 and 43 notes, 28 a JPEG
    assert listing.items == {"30": "40c9b645ba4ebc5d5431eda48e7d6832", "55": "350ff75c63d7a15029dc69da6f216d6c"}
    assert listing.complete
    newest = http_date_to_ts("Sun, 22 Nov 2026 10:00:18 GMT")
    assert listing.cursor == str(min(newest, int(time.time())))
    sent = search_body(httpx_mock.get_request(method="SEARCH"))
    assert "<d:href>/files/alice</d:href><d:depth>infinity</d:depth>" in sent
    assert "<d:gte><d:prop><d:getlastmodified/></d:prop><d:literal>0</d:literal></d:gte>" in sent
    assert "<nc:system-tags/>" in sent


async def test_files_incremental_listing_is_not_complete(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    serve_search(httpx_mock, search_answer("55"))
    serve_no_team_folders(httpx_mock)
    listing = await FilesSource().list_changes(nc, "alice", "1795341000", full=False)
    assert listing.items == {"55": "350ff75c63d7a15029dc69da6f216d6c"}
    assert not listing.complete
    assert "<d:literal>1795341000</d:literal>" in search_body(httpx_mock.get_request(method="SEARCH"))


async def test_files_exclusions_by_path_and_tag(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    answer = search_answer(extra={"30": TAG.format("No-AI")})
    serve_search(httpx_mock, answer, is_reusable=True)
    serve_no_team_folders(httpx_mock)
    tagged_out = FilesSource(SourceOptions(excluded_tag="no-ai"))
    assert set((await tagged_out.list_changes(nc, "alice", None, full=True)).items) == {"55"}
    path_out = FilesSource(SourceOptions(excluded_paths=("testdir/worker-*",), excluded_tag=""))
    assert set((await path_out.list_changes(nc, "alice", None, full=True)).items) == {"30"}


async def test_files_fetch(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    serve_search(httpx_mock, search_answer("30"))
    httpx_mock.add_response(url=f"{BASE}/remote.php/dav/files/alice/testdir/hello.txt", **recording("webdav_get"))
    doc = await FilesSource().fetch(nc, "alice", "30")
    assert isinstance(doc, SourceDocument)
    assert (doc.title, doc.location, doc.link) == ("hello.txt", "/testdir/hello.txt", "/f/30")
    assert doc.text == "File: hello.txt\nPath: /testdir/hello.txt\n\nhello webdav"
    assert doc.version == "40c9b645ba4ebc5d5431eda48e7d6832"
    assert doc.modified == http_date_to_ts("Sun, 22 Nov 2026 09:54:59 GMT")
    assert doc.extra["mime"] == "text/plain"
    by_id = "<d:eq><d:prop><oc:fileid/></d:prop><d:literal>30</d:literal></d:eq>"
    assert by_id in search_body(httpx_mock.get_requests()[0])


async def test_files_fetch_reports_bad_content_as_skipped(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    serve_search(httpx_mock, search_answer("30"))
    httpx_mock.add_response(url=f"{BASE}/remote.php/dav/files/alice/testdir/hello.txt", content=b"\x00\x01\x02binary")
    doc = await FilesSource().fetch(nc, "alice", "30")
    assert isinstance(doc, Skipped)
    assert doc.reason == "binary content in a text file"
    assert doc.version == "40c9b645ba4ebc5d5431eda48e7d6832"


@pytest.mark.parametrize(
    ("file_id", "extra", "reason"),
    [
        ("30", "<oc:size xmlns:oc='http://owncloud.org/ns'>13</oc:size>", "too large: 13 bytes, the limit is 5"),
        ("28", "", "an image: reading text in images (OCR) is off"),  # SourceOptions() has no OCR languages
        ("22", "", "a note (indexed by the notes source)"),
        ("30", TAG.format("no-ai"), "tagged 'no-ai'"),
    ],
)
async def test_files_fetch_skips_without_downloading(
    nc: NextcloudClient, httpx_mock: HTTPXMock, file_id: str, extra: str, reason: str
) -> None:
    answer = search_answer(file_id, extra={file_id: extra} if extra else None)
    serve_search(httpx_mock, answer)
    doc = await FilesSource(SourceOptions(max_file_size=5)).fetch(nc, "alice", file_id)
    assert isinstance(doc, Skipped) and doc.reason == reason
    assert len(httpx_mock.get_requests()) == 1  # no GET: nothing registered would answer it


async def test_files_of_another_user_are_not_found(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    empty = b'<?xml version="1.0"?><d:multistatus xmlns:d="DAV:"/>'
    serve_search(httpx_mock, empty, is_reusable=True)
    source = FilesSource()
    assert not await source.can_read(nc, "bob", "30")
    with pytest.raises(NotFound):
        await source.fetch(nc, "bob", "30")


async def test_files_and_notes_check_many_ids_in_one_search(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    """Verification asks once for a batch of file ids (notes are files: note id == file id)."""
    serve_search(httpx_mock, search_answer("30", "22"), is_reusable=True)
    slots = asyncio.Semaphore(4)
    verdicts = await FilesSource().readable(nc, "alice", ["30", "55", "not-a-file-id", "30"], slots=slots, timeout=5)
    assert verdicts == {"30": True, "55": False, "not-a-file-id": False}
    sent = search_body(httpx_mock.get_request())
    assert sent.count("<d:eq>") == 2 and "<d:or>" in sent and "<d:select><d:prop><oc:fileid/></d:prop>" in sent
    assert await NotesSource().readable(nc, "alice", ["22", "23"], slots=slots, timeout=5) == {"22": True, "23": False}
    assert len(httpx_mock.get_requests()) == 2


async def test_batched_check_failing_leaves_the_ids_unverified(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(method="SEARCH", url=f"{BASE}/remote.php/dav/", status_code=503)
    verdicts = await FilesSource().readable(nc, "alice", ["30", "55"], slots=asyncio.Semaphore(1), timeout=5)
    assert verdicts == {"30": None, "55": None}  # "cannot say now" is not "no access"


def _multistatus(*hrefs: str) -> bytes:
    """A multiget answer as Nextcloud 32 gives it: only the objects that exist, no 404 entries."""
    responses = "".join(
        f"<d:response><d:href>{href}</d:href><d:propstat><d:prop><d:getetag>&quot;e&quot;</d:getetag></d:prop>"
        f"<d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>" for href in hrefs
    )
    return f'<?xml version="1.0"?><d:multistatus xmlns:d="DAV:">{responses}</d:multistatus>'.encode()


async def test_contacts_are_checked_with_one_multiget_per_address_book_never_head(
    nc: NextcloudClient, httpx_mock: HTTPXMock
) -> None:
    """HEAD on a contact answers 500 on a real Nextcloud 32 (carddav_head_500): never used."""
    home = "/remote.php/dav/addressbooks/users/alice/"
    httpx_mock.add_response(method="REPORT", url=f"{BASE}{home}contacts/", status_code=207,
                            content=_multistatus(f"{home}contacts/a.vcf"))
    httpx_mock.add_response(method="REPORT", url=f"{BASE}{home}work_shared_by_bob/", status_code=404)
    httpx_mock.add_response(method="REPORT", url=f"{BASE}{home}flaky/", status_code=503)
    ids = ["contacts/a.vcf", "contacts/b.vcf", "contacts/", "work_shared_by_bob/c.vcf", "work_shared_by_bob/d.vcf",
           "flaky/e.vcf"]
    verdicts = await ContactsSource().readable(nc, "alice", ids, slots=asyncio.Semaphore(2), timeout=5)
    assert verdicts == {"contacts/a.vcf": True, "contacts/b.vcf": False,  # absent from the answer: gone
                        "contacts/": False,  # a malformed id is no object, and does not spoil its neighbours
                        "work_shared_by_bob/c.vcf": False, "work_shared_by_bob/d.vcf": False,  # unshared book
                        "flaky/e.vcf": None}  # "cannot say now" is not "no access"
    requests = httpx_mock.get_requests()
    assert [r.method for r in requests] == ["REPORT"] * 3
    assert b"addressbook-multiget" in requests[0].content and requests[0].content.count(b"<d:href>") == 2


async def test_files_deleted_between_search_and_download(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    serve_search(httpx_mock, search_answer("30"))
    httpx_mock.add_response(url=f"{BASE}/remote.php/dav/files/alice/testdir/hello.txt", **recording("webdav_get_404"))
    with pytest.raises(NotFound):
        await FilesSource().fetch(nc, "alice", "30")


def test_webhook_paths() -> None:
    deliveries = (WIRE / "webhooks" / "plain_deliveries_rename_delete_update.jsonl").read_text().splitlines()
    paths = [
        node["path"]
        for line in deliveries
        for event in [json.loads(json.loads(line)["body"])["event"]]
        for node in (event.get("node"), event.get("source"), event.get("target"))
        if node
    ]
    assert user_relative_path("/alice/files/testdir/rename-me.txt", "alice") == "/testdir/rename-me.txt"
    assert "/alice/files/Notes/Test/First note.md" in paths
    relative = user_relative_path("/alice/files/Notes/Test/First note.md", "alice")
    assert relative == "/Notes/Test/First note.md" and is_in_notes_folder(relative, "Notes")
    assert all(user_relative_path(path, "alice") for path in paths)
    assert user_relative_path("/alice/files", "alice") == "/"
    assert user_relative_path("/alice/files_trashbin/files/a.txt.d1", "alice") is None
    assert user_relative_path("/bob/files/a.txt", "alice") is None
    assert not is_in_notes_folder("/Notes2/a.md", "Notes")
    assert is_in_notes_folder("/My Notes/a.md", "/My Notes/")


# --- deck --------------------------------------------------------------------------------------


def serve_deck(httpx_mock: HTTPXMock, **options: Any) -> None:
    """Alice's two recorded boards; board 2's stacks are recorded, board 1 answers with no stacks."""
    ocs = {"match_headers": {"OCS-APIRequest": "true"}, **options}
    httpx_mock.add_response(url=f"{DECK}/boards?details=true", **ocs, **recording("deck_boards"))
    httpx_mock.add_response(url=f"{DECK}/boards/1/stacks", json=[], **ocs)
    httpx_mock.add_response(url=f"{DECK}/boards/2/stacks", **ocs, **recording("deck_stacks"))


async def test_deck_listing(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    serve_deck(httpx_mock)
    listing = await DeckSource().list_changes(nc, "alice", None, full=False)
    etags = {card_id: version.partition("-")[0] for card_id, version in listing.items.items()}
    assert etags == {"6": "64a1495fcbdc7b08feffec4b10dea6c1", "7": "30e88a2ebd7e385c7686c36aa5e894e4"}
    assert listing.complete
    assert all("If-Modified-Since" not in request.headers for request in httpx_mock.get_requests())


async def test_deck_renaming_a_stack_changes_its_cards_versions(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    serve_deck(httpx_mock)
    before = await DeckSource().list_changes(nc, "alice", None, full=False)
    stacks = json.loads(body("deck_stacks.body"))
    stacks[0]["title"] = "Backlog"  # the cards' own ETags stay the same
    httpx_mock.add_response(url=f"{DECK}/boards?details=true", **recording("deck_boards"))
    httpx_mock.add_response(url=f"{DECK}/boards/1/stacks", json=[])
    httpx_mock.add_response(url=f"{DECK}/boards/2/stacks", json=stacks)
    after = await DeckSource().list_changes(nc, "alice", None, full=False)
    assert before.items.keys() == after.items.keys()
    assert all(before.items[card] != after.items[card] for card in before.items)


async def test_deck_fetch(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    serve_deck(httpx_mock)
    doc = await DeckSource().fetch(nc, "alice", "6")
    assert isinstance(doc, SourceDocument)
    assert (doc.title, doc.location) == ("First card", "Test board / To do")
    assert doc.link == "/apps/deck/#/board/2/card/6"
    assert doc.version.startswith("64a1495fcbdc7b08feffec4b10dea6c1-")
    assert doc.event_start == int(datetime(2026, 12, 31, 12, tzinfo=UTC).timestamp())
    assert doc.extra == {"board_id": "2", "stack_id": "5", "owner": "alice"}
    assert doc.text == "Deck card: First card\nBoard: Test board / To do\nDue: 2026-12-31 12:00 UTC\n\ncard body"


async def test_deck_fetch_of_a_missing_card(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    serve_deck(httpx_mock)
    with pytest.raises(NotFound):
        await DeckSource().fetch(nc, "alice", "99")


async def test_deck_access_by_card(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    serve_deck(httpx_mock)
    card = f"{DECK}/boards/2/stacks/5/cards"
    httpx_mock.add_response(url=f"{card}/6", **recording("deck_card"))
    httpx_mock.add_response(url=f"{card}/7", **recording("bob_deck_card_alice"))  # the 403 another user gets
    source = DeckSource()
    await source.list_changes(nc, "alice", None, full=False)  # learns where the cards are
    assert await source.can_read(nc, "alice", "6")
    assert not await source.can_read(nc, "alice", "7")


async def test_deck_card_of_another_user(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(url=f"{DECK}/boards?details=true", json=[])  # bob sees no board of alice's
    assert not await DeckSource().can_read(nc, "bob", "6")


async def test_deck_board_that_became_unreadable_has_no_cards(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(url=f"{DECK}/boards?details=true", **recording("deck_boards"))
    httpx_mock.add_response(url=f"{DECK}/boards/1/stacks", **recording("bob_deck_board_alice"))
    httpx_mock.add_response(url=f"{DECK}/boards/2/stacks", **recording("deck_stacks"))
    listing = await DeckSource().list_changes(nc, "alice", None, full=False)
    assert set(listing.items) == {"6", "7"}


async def test_deck_server_error_is_transient(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(url=f"{DECK}/boards?details=true", **recording("deck_boards_ims"))  # a real 500
    with pytest.raises(Transient):
        await DeckSource().list_changes(nc, "alice", None, full=False)


# --- all sources -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc_type", "method", "url", "source_id"),
    [
        ("note", "GET", f"{NOTES}/22?exclude=content", "22"),
        ("file", "SEARCH", f"{BASE}/remote.php/dav/", "30"),
        ("deck_card", "GET", f"{DECK}/boards?details=true", "6"),
        ("calendar_event", "PROPFIND", f"{PERSONAL}test-event-0001.ics", "personal/test-event-0001.ics"),
        ("contact", "PROPFIND", f"{BOOKS}contacts/test-contact-0001.vcf", "contacts/test-contact-0001.vcf"),
    ],
)
async def test_server_errors_are_transient_never_gone(
    nc: NextcloudClient, httpx_mock: HTTPXMock, doc_type: str, method: str, url: str, source_id: str
) -> None:
    httpx_mock.add_response(method=method, url=url, status_code=503)
    source = make_sources()[doc_type]  # type: ignore[index]
    with pytest.raises(Transient):
        await source.can_read(nc, "alice", source_id)


def test_registry() -> None:
    options = SourceOptions(max_file_size=1)
    sources = make_sources(options)
    assert set(sources) == set(SOURCES) == {"note", "file", "deck_card", "calendar_event", "contact"}
    assert all(source.doc_type == doc_type and source.options is options for doc_type, source in sources.items())
