"""The five sources against responses recorded from a real Nextcloud 32 (../shared/nextcloud-32-wire).

Recordings are served to the real :class:`NextcloudClient` with pytest-httpx. Where no recording
exists (an address-book listing, a sync answer with deletions), the answer is built in the same
shape as the recorded ones, and says so.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pytest_httpx import HTTPXMock

from semantic_mcp.core.documents import Skipped, SourceDocument
from semantic_mcp.nextcloud.client import NS, NextcloudClient, NotFound, Transient, http_date_to_ts
from semantic_mcp.sources import SOURCES, make_sources
from semantic_mcp.sources.base import SourceOptions
from semantic_mcp.sources.calendar import CalendarSource, document_from_ics, summarize_rrule
from semantic_mcp.sources.contacts import ContactsSource, document_from_vcard, parse_vcard
from semantic_mcp.sources.deck import DeckSource
from semantic_mcp.sources.files import FilesSource, is_in_notes_folder, user_relative_path
from semantic_mcp.sources.notes import NotesSource

WIRE = Path(__file__).resolve().parents[3] / "shared" / "nextcloud-32-wire"
BASE = "https://cloud.test"
NOTES = f"{BASE}/index.php/apps/notes/api/v1/notes"
DECK = f"{BASE}/index.php/apps/deck/api/v1.0"
CALENDARS = f"{BASE}/remote.php/dav/calendars/alice/"
BOOKS = f"{BASE}/remote.php/dav/addressbooks/users/alice/"


def recording(name: str) -> dict[str, Any]:
    """A recorded response as ``add_response`` arguments (hop-by-hop headers left out)."""
    status_line, *lines = (WIRE / "http" / f"{name}.headers").read_text().splitlines()
    headers = [tuple(line.split(": ", 1)) for line in lines if line]
    return {
        "status_code": int(status_line.split()[1]),
        "headers": [(k, v) for k, v in headers if k.lower() not in ("connection", "content-length")],
        "content": (WIRE / "http" / f"{name}.body").read_bytes(),
    }


def body(name: str) -> bytes:
    return (WIRE / "http" / name).read_bytes()


@pytest.fixture
async def nc() -> AsyncIterator[NextcloudClient]:
    client = NextcloudClient(BASE, lambda user: {"X-Test-User": user})
    yield client
    await client.aclose()


def sync_answer(changes: list[tuple[str, str | None]], token: str, *, truncated_at: str | None = None) -> bytes:
    """A sync-collection multistatus shaped like the recorded ``caldav_sync``: etag None means deleted."""
    parts = []
    for href, etag in changes:
        if etag is None:
            parts.append(f"<d:response><d:href>{href}</d:href><d:status>HTTP/1.1 404 Not Found</d:status></d:response>")
        else:
            parts.append(
                f"<d:response><d:href>{href}</d:href><d:propstat><d:prop><d:getetag>&quot;{etag}&quot;</d:getetag>"
                "</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"
            )
    if truncated_at:
        status = "HTTP/1.1 507 Insufficient Storage"
        parts.append(f"<d:response><d:href>{truncated_at}</d:href><d:status>{status}</d:status></d:response>")
    parts.append(f"<d:sync-token>{token}</d:sync-token>")
    return f'<?xml version="1.0"?><d:multistatus xmlns:d="DAV:">{"".join(parts)}</d:multistatus>'.encode()


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

TAG = (
    '<nc:system-tags xmlns:nc="http://nextcloud.org/ns" xmlns:oc="http://owncloud.org/ns">'
    '<nc:system-tag oc:can-assign="true" oc:id="3" oc:user-assignable="true" oc:user-visible="true" nc:color="">'
    "{}</nc:system-tag></nc:system-tags>"
)


def search_answer(*file_ids: str, extra: dict[str, str] | None = None) -> bytes:
    """The recorded ``webdav_search`` cut down to some files, optionally with props added per file id
    (as a SEARCH by file id, or with ``nc:system-tags``/``oc:size`` selected, would answer)."""
    root = ET.fromstring(body("webdav_search.body"))
    for response in list(root):
        file_id = response.findtext("d:propstat/d:prop/oc:fileid", namespaces=NS)
        if file_ids and file_id not in file_ids:
            root.remove(response)
        elif extra and file_id in extra:
            response.find("d:propstat/d:prop", NS).append(ET.fromstring(extra[file_id]))
    return ET.tostring(root)


def search_body(request: Any) -> str:
    return request.content.decode()


def serve_search(httpx_mock: HTTPXMock, answer: bytes, **options: Any) -> None:
    httpx_mock.add_response(method="SEARCH", url=f"{BASE}/remote.php/dav/", status_code=207, content=answer, **options)


def serve_no_team_folders(httpx_mock: HTTPXMock) -> None:
    """The depth-1 PROPFIND a files listing makes for the user's team folders (ADR 0350): none here."""
    httpx_mock.add_response(method="PROPFIND", url=f"{BASE}/remote.php/dav/files/alice/", status_code=207,
                            content=b'<?xml version="1.0"?><d:multistatus xmlns:d="DAV:"/>', is_reusable=True)


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


# --- calendar ----------------------------------------------------------------------------------

PERSONAL = f"{CALENDARS}personal/"
EVENT_HEADERS = {
    "Content-Type": "text/calendar; charset=utf-8",
    "ETag": '"6b8776f3bd96c928d1ca30e2d4467c9c"',
    "Last-Modified": "Sun, 22 Nov 2026 09:59:00 GMT",
}


async def test_calendar_initial_sync(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(method="PROPFIND", url=CALENDARS, **recording("caldav_calendars"))
    httpx_mock.add_response(method="REPORT", url=PERSONAL, **recording("caldav_sync"))
    listing = await CalendarSource().list_changes(nc, "alice", None, full=False)
    # inbox/outbox/trash bin are not calendars; Deck's and the birthday calendar are generated
    assert listing.items == {
        "personal/test-event-0001.ics": "6b8776f3bd96c928d1ca30e2d4467c9c",
        "personal/test-event-0002.ics": "15835f52b0af2143ecc5981f9a389cb3",
    }
    assert listing.complete and not listing.deleted
    assert json.loads(listing.cursor or "") == {"personal": "http://sabre.io/ns/sync/3"}
    report = httpx_mock.get_requests(method="REPORT")[0]
    assert report.headers["Depth"] == "0"
    assert "<d:sync-token></d:sync-token>" in report.content.decode()


async def test_calendar_incremental_sync_reports_deletions(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(method="PROPFIND", url=CALENDARS, **recording("caldav_calendars"))
    changes = [("/remote.php/dav/calendars/alice/personal/test-event-0002.ics", None),
               ("/remote.php/dav/calendars/alice/personal/new%20one.ics", "abc")]
    answer = sync_answer(changes, "http://sabre.io/ns/sync/5")
    httpx_mock.add_response(method="REPORT", url=PERSONAL, status_code=207, content=answer)
    cursor = json.dumps({"personal": "http://sabre.io/ns/sync/1"})  # the recorded home says sync/3 now
    listing = await CalendarSource().list_changes(nc, "alice", cursor, full=False)
    assert listing.items == {"personal/new one.ics": "abc"}
    assert listing.deleted == {"personal/test-event-0002.ics"}
    assert not listing.complete
    assert json.loads(listing.cursor or "") == {"personal": "http://sabre.io/ns/sync/5"}
    sent = httpx_mock.get_request(method="REPORT").content.decode()
    assert "<d:sync-token>http://sabre.io/ns/sync/1</d:sync-token>" in sent


async def test_a_calendar_whose_token_has_not_moved_is_not_asked(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    """Nextcloud lists each collection's sync token in the home's PROPFIND (recorded): the one we
    hold means nothing changed, so an unchanged user costs the PROPFIND alone (issue 16)."""
    httpx_mock.add_response(method="PROPFIND", url=CALENDARS, **recording("caldav_calendars"))
    cursor = json.dumps({"personal": "http://sabre.io/ns/sync/3"})
    listing = await CalendarSource().list_changes(nc, "alice", cursor, full=False)
    assert listing.items == {} and listing.deleted == set() and not listing.complete
    assert json.loads(listing.cursor or "") == {"personal": "http://sabre.io/ns/sync/3"}
    assert not httpx_mock.get_requests(method="REPORT")


async def test_calendar_rejected_token_restarts_from_scratch(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(method="PROPFIND", url=CALENDARS, **recording("caldav_calendars"))
    rejected = b'<?xml version="1.0"?><d:error xmlns:d="DAV:"><d:valid-sync-token/></d:error>'
    httpx_mock.add_response(method="REPORT", url=PERSONAL, status_code=403, content=rejected)
    httpx_mock.add_response(method="REPORT", url=PERSONAL, **recording("caldav_sync"))
    listing = await CalendarSource().list_changes(nc, "alice", json.dumps({"personal": "stale"}), full=False)
    assert listing.complete and len(listing.items) == 2
    assert "<d:sync-token></d:sync-token>" in httpx_mock.get_requests(method="REPORT")[1].content.decode()


async def test_calendar_that_disappeared_forces_a_complete_listing(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(method="PROPFIND", url=CALENDARS, **recording("caldav_calendars"))
    httpx_mock.add_response(method="REPORT", url=PERSONAL, **recording("caldav_sync"))
    cursor = json.dumps({"personal": "http://sabre.io/ns/sync/3", "deleted-calendar": "http://sabre.io/ns/sync/9"})
    listing = await CalendarSource().list_changes(nc, "alice", cursor, full=False)
    assert listing.complete and len(listing.items) == 2


async def test_calendar_sync_error_is_transient(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(method="PROPFIND", url=CALENDARS, **recording("caldav_calendars"))
    httpx_mock.add_response(method="REPORT", url=PERSONAL, status_code=503)
    with pytest.raises(Transient):
        await CalendarSource().list_changes(nc, "alice", json.dumps({"personal": "t"}), full=False)


async def test_calendar_fetch(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(method="PROPFIND", url=CALENDARS, **recording("caldav_calendars"))
    httpx_mock.add_response(url=f"{PERSONAL}test-event-0001.ics", headers=EVENT_HEADERS, content=body("event1.ics"))
    doc = await CalendarSource().fetch(nc, "alice", "personal/test-event-0001.ics")
    assert isinstance(doc, SourceDocument)
    assert doc.text == (
        "Calendar event: Acceptance test meeting\nWhen: Tue 1 Dec 2026 10:00–11:00 (UTC)\nCalendar: Personal\n\n"
        "created via CalDAV PUT"
    )
    assert doc.event_start == int(datetime(2026, 12, 1, 10, tzinfo=UTC).timestamp())
    assert doc.event_end == doc.event_start + 3600
    assert (doc.version, doc.location) == ("6b8776f3bd96c928d1ca30e2d4467c9c", "Personal")
    assert doc.modified == http_date_to_ts(EVENT_HEADERS["Last-Modified"])
    encoded = doc.link.removeprefix("/apps/calendar/edit/")
    assert base64.b64decode(encoded).decode() == "/remote.php/dav/calendars/alice/personal/test-event-0001.ics"


async def test_calendar_objects_of_generated_calendars_count_as_not_found(
    nc: NextcloudClient, httpx_mock: HTTPXMock
) -> None:
    httpx_mock.add_response(method="PROPFIND", url=CALENDARS, **recording("caldav_calendars"))
    with pytest.raises(NotFound):
        await CalendarSource().fetch(nc, "alice", "app-generated--deck--board-2/card-6.ics")


async def test_calendar_event_of_another_user(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    event = f"{BASE}/remote.php/dav/calendars/bob/personal/test-event-0001.ics"
    httpx_mock.add_response(method="PROPFIND", url=event, status_code=404)
    bob_home = f"{BASE}/remote.php/dav/calendars/bob/"
    httpx_mock.add_response(method="PROPFIND", url=bob_home, **recording("caldav_calendars"))
    httpx_mock.add_response(url=event, **recording("bob_caldav_alice"))
    source = CalendarSource()
    assert not await source.can_read(nc, "bob", "personal/test-event-0001.ics")
    with pytest.raises(NotFound):
        await source.fetch(nc, "bob", "personal/test-event-0001.ics")


async def test_calendar_webhook_payload_gives_the_same_version_as_the_listing() -> None:
    deliveries = json.loads((WIRE / "webhooks" / "deliveries_received_by_exapp.json").read_text())
    event = deliveries["POST /webhook/exapp-CalendarObjectCreatedEvent"]["body_json"]["event"]
    obj, calendar = event["objectData"], event["calendarData"]
    hint = {"ics": obj["calendardata"], "etag": obj["etag"], "calendar": calendar["{DAV:}displayname"],
            "modified": obj["lastmodified"]}
    doc = await CalendarSource().document_from_payload(f"{calendar['uri']}/{obj['uri']}", hint, user="alice")
    assert isinstance(doc, SourceDocument)
    assert doc.version == "15835f52b0af2143ecc5981f9a389cb3"  # as in caldav_sync
    assert doc.title == "Webhook trigger event" and doc.modified == 1795341469
    assert await CalendarSource().document_from_payload("personal/x.ics", hint) is None  # no user: the pipeline fetches
    with pytest.raises(NotFound):
        await CalendarSource().document_from_payload("contact_birthdays/x.ics", hint, user="alice")


def ics(*lines: str) -> str:
    """One VEVENT with ``lines`` in a calendar, CRLF-separated as on the wire."""
    head = ["BEGIN:VCALENDAR", "VERSION:2.0", "BEGIN:VEVENT", "UID:u1"]
    return "\r\n".join([*head, *lines, "END:VEVENT", "END:VCALENDAR"])


def test_event_in_its_own_time_zone_with_recurrence() -> None:
    text = ics(
        "DTSTART;TZID=Europe/Berlin:20261207T100000", "DTEND;TZID=Europe/Berlin:20261207T113000",
        "RRULE:FREQ=WEEKLY;BYDAY=MO;UNTIL=20270301T000000Z", "SUMMARY:Team sync",
        "LOCATION:Room 4\\, 2nd floor",
        "ORGANIZER;CN=Bob Boss:mailto:bob@example.test",
        "ATTENDEE;CN=Carol:mailto:carol@example.test",
        "ATTENDEE:mailto:dave@example.test",
        "DESCRIPTION:Agenda:\\n- status",
    )
    doc = document_from_ics("alice", "work/sync.ics", text, '"e1"', "Work", 7, now=datetime(2026, 12, 9, tzinfo=UTC))
    assert isinstance(doc, SourceDocument)
    assert doc.text == (
        "Calendar event: Team sync\n"
        "When: Mon 7 Dec 2026 10:00–11:30 (Europe/Berlin)\n"
        "Repeats: weekly on Monday until 2027-03-01\n"
        "Where: Room 4, 2nd floor\n"
        "Calendar: Work\n"
        "Organizer: Bob Boss\n"
        "Attendees: Carol, dave@example.test\n\n"
        "Agenda:\n- status"
    )
    assert doc.event_start == int(datetime(2026, 12, 7, 9, tzinfo=UTC).timestamp())  # 10:00 in Berlin
    assert doc.extra["next_occurrence"] == "2026-12-14T10:00:00+01:00"
    assert doc.version == "e1"


def test_all_day_event_spanning_days() -> None:
    text = ics("DTSTART;VALUE=DATE:20261224", "DTEND;VALUE=DATE:20261227", "SUMMARY:Holidays")
    doc = document_from_ics("alice", "p/h.ics", text, "e", "P", 0, now=datetime(2026, 12, 9, tzinfo=UTC))
    assert isinstance(doc, SourceDocument)
    assert "When: Thu 24 Dec 2026 – Sat 26 Dec 2026 (all day)" in doc.text
    assert doc.event_start == int(datetime(2026, 12, 24, tzinfo=UTC).timestamp())
    assert doc.event_end == int(datetime(2026, 12, 27, tzinfo=UTC).timestamp())


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("not a calendar at all", "invalid iCalendar"),
        ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nSUMMARY:cut off", "invalid iCalendar"),
        (ics("DTSTART:tomorrow-ish", "SUMMARY:x"), "invalid iCalendar"),
        (ics("DTSTART;VALUE=DATE:20261201", "DTEND:20261202T100000Z"), "invalid iCalendar"),  # date vs time
        (ics("DTSTART:20261201T100000Z", "RRULE:FREQ=WEEKLY;INTERVAL=often"), "invalid iCalendar"),
        ("BEGIN:VCALENDAR\nBEGIN:VTODO\nSUMMARY:a task\nEND:VTODO\nEND:VCALENDAR", "no event"),
    ],
)
def test_unusable_icalendar_is_skipped(text: str, reason: str) -> None:
    doc = document_from_ics("alice", "p/x.ics", text, '"e"', "P", 0, now=datetime(2026, 12, 9, tzinfo=UTC))
    assert isinstance(doc, Skipped) and doc.reason.startswith(reason) and doc.version == "e"


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        ({"FREQ": ["DAILY"]}, "daily"),
        ({"FREQ": ["WEEKLY"], "INTERVAL": [2], "BYDAY": ["MO", "FR"]}, "every 2 weeks on Monday and Friday"),
        ({"FREQ": ["WEEKLY"], "BYDAY": ["MO", "WE", "FR"]}, "weekly on Monday, Wednesday and Friday"),
        ({"FREQ": ["MONTHLY"], "BYDAY": ["-1FR"], "COUNT": [6]}, "monthly on the last Friday, 6 times"),
        ({"FREQ": ["MONTHLY"], "BYMONTHDAY": [15]}, "monthly on day 15"),
        ({"FREQ": ["YEARLY"], "BYMONTH": [3], "BYDAY": ["2SU"]}, "yearly on the second Sunday in March"),
    ],
)
def test_recurrence_in_words(rule: dict[str, list[Any]], words: str) -> None:
    assert summarize_rrule(rule) == words


# --- contacts ----------------------------------------------------------------------------------

ADDRESS_BOOKS = b"""<?xml version="1.0"?>
<d:multistatus xmlns:d="DAV:" xmlns:card="urn:ietf:params:xml:ns:carddav">
 <d:response><d:href>/remote.php/dav/addressbooks/users/alice/</d:href><d:propstat><d:prop>
  <d:resourcetype><d:collection/></d:resourcetype></d:prop>
  <d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
 <d:response><d:href>/remote.php/dav/addressbooks/users/alice/contacts/</d:href><d:propstat><d:prop>
  <d:displayname>Contacts</d:displayname><d:resourcetype><d:collection/><card:addressbook/></d:resourcetype>
  </d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
 <d:response><d:href>/remote.php/dav/addressbooks/users/alice/z-server-generated--system/</d:href><d:propstat><d:prop>
  <d:displayname>Accounts</d:displayname><d:resourcetype><d:collection/><card:addressbook/></d:resourcetype>
  </d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
 <d:response><d:href>/remote.php/dav/addressbooks/users/alice/z-app-generated--contactsinteraction--recent/</d:href>
  <d:propstat><d:prop><d:displayname>Recently contacted</d:displayname>
  <d:resourcetype><d:collection/><card:addressbook/></d:resourcetype></d:prop>
  <d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
</d:multistatus>"""  # no recording of this PROPFIND: shaped like caldav_calendars, with Nextcloud's book names
CONTACT_HREF = "/remote.php/dav/addressbooks/users/alice/contacts/test-contact-0001.vcf"  # from carddav_report
CONTACT_ETAG = "e77cc3dcd9a2b073481e1b9e9901169a"


async def test_contacts_listing_follows_truncated_sync(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(method="PROPFIND", url=BOOKS, status_code=207, content=ADDRESS_BOOKS)
    first = sync_answer([(CONTACT_HREF, CONTACT_ETAG)], "http://sabre.io/ns/sync/7",
                        truncated_at="/remote.php/dav/addressbooks/users/alice/contacts/")
    second_href = "/remote.php/dav/addressbooks/users/alice/contacts/b.vcf"
    second = sync_answer([(second_href, "b1")], "http://sabre.io/ns/sync/8")
    httpx_mock.add_response(method="REPORT", url=f"{BOOKS}contacts/", status_code=207, content=first)
    httpx_mock.add_response(method="REPORT", url=f"{BOOKS}contacts/", status_code=207, content=second)
    listing = await ContactsSource().list_changes(nc, "alice", None, full=True)
    assert listing.items == {"contacts/test-contact-0001.vcf": CONTACT_ETAG, "contacts/b.vcf": "b1"}
    assert listing.complete
    assert json.loads(listing.cursor or "") == {"contacts": "http://sabre.io/ns/sync/8"}
    assert "sync/7" in httpx_mock.get_requests(method="REPORT")[1].content.decode()


async def test_contacts_fetch(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(method="PROPFIND", url=BOOKS, status_code=207, content=ADDRESS_BOOKS)
    headers = {"Content-Type": "text/vcard; charset=utf-8", "ETag": f'"{CONTACT_ETAG}"'}
    httpx_mock.add_response(url=f"{BOOKS}contacts/test-contact-0001.vcf", headers=headers, content=body("contact1.vcf"))
    doc = await ContactsSource().fetch(nc, "alice", "contacts/test-contact-0001.vcf")
    assert isinstance(doc, SourceDocument)
    assert doc.text == (
        "Contact: Bob Example\nEmail: bob@example.test\nPhone: +15555550100 (cell)\nAddress book: Contacts"
    )
    assert doc.link == "/apps/contacts/direct/contact/test-contact-0001~contacts"
    assert (doc.version, doc.location) == (CONTACT_ETAG, "Contacts")


async def test_contact_of_another_user(nc: NextcloudClient, httpx_mock: HTTPXMock) -> None:
    url = f"{BASE}/remote.php/dav/addressbooks/users/bob/contacts/test-contact-0001.vcf"
    httpx_mock.add_response(method="PROPFIND", url=url, status_code=404)
    assert not await ContactsSource().can_read(nc, "bob", "contacts/test-contact-0001.vcf")


def test_vcard_folding_escapes_and_structured_values() -> None:
    card = (
        "BEGIN:VCARD\r\nVERSION:4.0\r\nUID:urn:uuid:42\r\n"
        "FN:Dr. Ada\r\n  Lovelace\r\n"
        "N:Lovelace;Ada;;Dr.;\r\n"
        "ORG:Analytical Engines;Research\r\n"
        "TITLE:Chief\\, Mathematics\r\n"
        'item1.EMAIL;TYPE="work,pref";X-LABEL="a:b;c":ada@example.test\r\n'
        "TEL;VALUE=uri;TYPE=cell:tel:+44-20-1234\r\n"
        "ADR;TYPE=home:;;12 St James\\, Square;London;;SW1;UK\r\n"
        "BDAY:--1210\r\n"
        "NOTE:Met at the\\nRoyal Society; likes\r\n\t poetry\r\n"
        "PHOTO:data:image/png;base64,iVBORw0KGgo=\r\n"
        "END:VCARD\r\n"
    )
    props = parse_vcard(card)
    assert [p.name for p in props][:3] == ["VERSION", "UID", "FN"]
    doc = document_from_vcard("contacts/ada.vcf", card, '"v"', "Contacts", 0)
    assert isinstance(doc, SourceDocument)
    assert doc.title == "Dr. Ada Lovelace"
    assert doc.text == (
        "Contact: Dr. Ada Lovelace\n"
        "Organization: Analytical Engines / Research\n"
        "Job title: Chief, Mathematics\n"
        "Email: ada@example.test (work)\n"
        "Phone: +44-20-1234 (cell)\n"
        "Address: 12 St James, Square, London, SW1, UK (home)\n"
        "Birthday: --12-10\n"
        "Address book: Contacts\n\n"
        "Met at the\nRoyal Society; likes poetry"
    )
    assert doc.link == "/apps/contacts/direct/contact/urn:uuid:42~contacts"


def test_vcard_name_falls_back_to_n_then_org() -> None:
    card = "BEGIN:VCARD\nVERSION:3.0\nN:Curie;Marie;;;\nBDAY:1867-11-07\nEND:VCARD"
    by_n = document_from_vcard("c/a.vcf", card, "e", "C", 0)
    assert isinstance(by_n, SourceDocument) and by_n.title == "Marie Curie" and "Birthday: 1867-11-07" in by_n.text
    assert by_n.link == "/apps/contacts/"  # no UID, no deep link
    by_org = document_from_vcard("c/b.vcf", "BEGIN:VCARD\nVERSION:3.0\nORG:ACME\nEND:VCARD", "e", "C", 0)
    assert isinstance(by_org, SourceDocument) and by_org.title == "ACME"


@pytest.mark.parametrize(
    "text",
    ["", "BEGIN:VCALENDAR\nEND:VCALENDAR", "BEGIN:VCARD\nFN:no end", "FN:Bob\nEND:VCARD", "\x00\x01\x02"],
)
def test_broken_vcard_is_skipped(text: str) -> None:
    doc = document_from_vcard("contacts/x.vcf", text, '"e"', "Contacts", 0)
    assert isinstance(doc, Skipped) and doc.reason.startswith("invalid vCard") and doc.version == "e"


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
