"""Issue 16: what indexing an item costs Nextcloud, counted in the fake's access log.

A new account's first pass (reconciliation, then the indexing pipeline drained) for each source:
events and contacts are read with one multiget per collection, not a GET each; files and notes
use the metadata their reconciliation read (no SEARCH by id each); Deck cards need no request
beyond the listing (ADR 0530). What changed since it was listed is still read again: a file's
download asks for the ETag listed, and a file changed since is looked up by id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pytest
from fake_nextcloud_support import RECORDED_34, WIRE, hrefs, shape
from fixtures_fake_nextcloud import fake_nc  # noqa: F401  (fixture)
from semantic_mcp.core.documents import DocRef
from semantic_mcp.indexing.pipeline import Pipeline
from semantic_mcp.indexing.reconcile import reconcile_source
from semantic_mcp.indexing.state import IndexState
from semantic_mcp.nextcloud.client import NextcloudClient
from semantic_mcp.sources import make_sources
from semantic_mcp.stores.keyword import KeywordIndex
from semantic_mcp.stores.vectors import VectorStore

from fake_nextcloud import FakeNextcloud

USER, ITEMS = "carol", 6
EVENT = """BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20261120T100000Z\r
DTSTART:20261201T100000Z\r\nDTEND:20261201T110000Z\r\nSUMMARY:Planning meeting {n}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"""
CONTACT = "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:{uid}\r\nFN:Person {n}\r\nNOTE:Met at the fair {n}\r\nEND:VCARD\r\n"


class LengthEmbedder:
    """Vectors from the text's length: what is counted here is requests, not meaning."""

    model_id, dim = "length", 4

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([[len(text), 1, 0, 0] for text in texts], dtype=np.float32)

    def embed_query(self, query: str) -> np.ndarray:
        return np.array([len(query), 0, 0, 1], dtype=np.float32)


@dataclass
class Indexing:
    fake: FakeNextcloud
    nc: NextcloudClient
    state: IndexState
    pipeline: Pipeline
    sources: dict  # what the pipeline indexes: the source under test

    async def first_pass(self, doc_type: str) -> tuple[Counter[str], Counter[str]]:
        """Reconcile one source for the user and drain the queue: the requests of each, by kind."""
        source = self.sources.setdefault(doc_type, make_sources()[doc_type])
        log = self.fake.state.access_log
        start = log.mark()
        await reconcile_source(self.state, self.nc, source, USER, full_every=3600)
        listed = log.mark()
        while await self.pipeline.run_once():
            pass
        return _kinds(log.since(start, USER)[: listed - start]), _kinds(log.since(listed, USER))

    def indexed(self, doc_type: str) -> int:
        return len(self.state.indexed_versions(USER, doc_type))


def _kinds(requests: list) -> Counter[str]:
    def kind(path: str) -> str:
        for marker, name in (("/calendars/", "caldav"), ("/addressbooks/", "carddav"), ("/dav/files/", "file"),
                             ("/apps/notes/", "notes"), ("/apps/deck/", "deck"), ("/remote.php/dav", "dav")):
            if marker in path:
                return name
        return path
    return Counter(f"{r.method} {kind(r.path)}" for r in requests)


@pytest.fixture
async def indexing(fake_nc: FakeNextcloud, tmp_path: Path) -> AsyncIterator[Indexing]:  # noqa: F811
    fake_nc.add_user(USER, "Carol")
    nc = NextcloudClient(fake_nc.url, lambda user: fake_nc.auth_headers(user))
    state = IndexState(tmp_path / "state.db")
    store = VectorStore.embedded(tmp_path / "chroma", LengthEmbedder.model_id, LengthEmbedder.dim)
    sources: dict = {}
    pipeline = Pipeline(state, lambda: sources, nc, store, KeywordIndex(tmp_path / "keyword.db"), LengthEmbedder,
                        lambda user: True)
    yield Indexing(fake_nc, nc, state, pipeline, sources)
    await nc.aclose()
    state.close()


async def test_events_and_contacts_are_read_with_one_multiget_per_collection(indexing: Indexing) -> None:
    fake = indexing.fake
    for n in range(ITEMS):
        fake.put_calendar_object(USER, "personal", f"event-{n}.ics", EVENT.format(uid=f"event-{n}", n=n))
        fake.put_contact(USER, "contacts", f"person-{n}.vcf", CONTACT.format(uid=f"person-{n}", n=n))
    fake.put_raw_calendar_object(USER, "personal", "broken.ics", "BEGIN:VCALENDAR\nnot ical")  # loses nothing else

    listing, indexing_ = await indexing.first_pass("calendar_event")
    assert indexing_ == Counter(), indexing_  # no GET an event: the multiget read them all
    assert listing == Counter({"PROPFIND caldav": 1, "REPORT caldav": 2}), listing  # sync, then one multiget
    assert indexing.indexed("calendar_event") == ITEMS
    assert indexing.state.skipped_versions(USER, "calendar_event").keys() == {"personal/broken.ics"}

    listing, indexing_ = await indexing.first_pass("contact")
    assert indexing_ == Counter() and listing == Counter({"PROPFIND carddav": 1, "REPORT carddav": 2}), listing
    assert indexing.indexed("contact") == ITEMS


async def test_an_object_the_multiget_cannot_give_is_fetched_alone(indexing: Indexing) -> None:
    fake = indexing.fake
    for n in range(3):
        fake.put_contact(USER, "contacts", f"person-{n}.vcf", CONTACT.format(uid=f"person-{n}", n=n))
    source = make_sources()["contact"]
    listing = await source.list_changes(indexing.nc, USER, None, full=True)
    fake.delete_contact(USER, "contacts", "person-1.vcf")  # gone between the sync and the multiget
    carried = await source.carried(indexing.nc, USER, listing, sorted(listing.items))
    assert sorted(carried) == ["contacts/person-0.vcf", "contacts/person-2.vcf"]
    fake.lock_database("/remote.php/dav/addressbooks/users/carol/contacts/")  # the multiget fails whole: 500
    assert await source.carried(indexing.nc, USER, listing, sorted(listing.items)) == {}

    # What a task without the object's text does: one GET, as before (a new client: the 500 paused the old one)
    nc = NextcloudClient(fake.url, lambda user: fake.auth_headers(user))
    start = fake.state.access_log.mark()
    document = await source.fetch(nc, USER, "contacts/person-0.vcf")
    await nc.aclose()
    assert document.title == "Person 0"
    assert _kinds(fake.state.access_log.since(start, USER)) == Counter({"GET carddav": 1})


async def test_files_and_notes_are_indexed_without_a_search_each(indexing: Indexing) -> None:
    fake = indexing.fake
    for n in range(ITEMS):
        fake.put_file(USER, f"/Reports/report-{n}.txt", f"Quarterly report number {n}: revenue grew.")
        fake.create_note(USER, f"Idea {n}", f"An idea worth keeping, number {n}.")

    listing, indexing_ = await indexing.first_pass("file")
    assert listing == Counter({"SEARCH dav": 1, "PROPFIND file": 1}), listing  # and the user's team folders (ADR 0350)
    assert indexing_ == Counter({"GET file": ITEMS}), indexing_  # the bytes only: the metadata was listed
    assert indexing.indexed("file") == ITEMS

    listing, indexing_ = await indexing.first_pass("note")
    assert listing == Counter({"GET notes": 1, "SEARCH dav": 1}), listing  # one SEARCH for all the notes' files
    assert indexing_ == Counter({"GET notes": ITEMS}), indexing_
    assert indexing.indexed("note") == ITEMS


async def test_a_file_changed_since_it_was_listed_is_looked_up_again(indexing: Indexing) -> None:
    fake = indexing.fake
    file_id = fake.put_file(USER, "/a.txt", "The first version of the text.")
    moved_id = fake.put_file(USER, "/b.txt", "A text that moves to another folder.")
    source = indexing.sources["file"] = make_sources()["file"]
    await reconcile_source(indexing.state, indexing.nc, source, USER, full_every=3600)
    fake.put_file(USER, "/a.txt", "The second version, written after the listing.")
    fake.move(USER, "/b.txt", "/c.txt")

    start = fake.state.access_log.mark()
    while await indexing.pipeline.run_once():
        pass
    # a.txt: the download for the listed ETag is refused (412), a SEARCH, the download; b.txt: 404, SEARCH, GET
    assert _kinds(fake.state.access_log.since(start, USER)) == Counter({"GET file": 4, "SEARCH dav": 2})
    documents = indexing.state.indexed(DocRef(USER, "file", str(file_id))), indexing.state.indexed(
        DocRef(USER, "file", str(moved_id)))
    assert [doc.location for doc in documents if doc] == ["/a.txt", "/c.txt"]
    assert [hit for hit, _ in indexing.pipeline.keyword.search(USER, "second version", 5)] == [f"file:{file_id}#0"]


async def test_a_second_event_of_an_unchanged_file_costs_a_lookup_not_a_download(indexing: Indexing) -> None:
    """One upload sends NodeCreatedEvent and NodeWrittenEvent: the second finds the version indexed
    still current (ETag and path) and downloads nothing; a changed or moved file is read again."""
    fake = indexing.fake
    ids = [fake.put_file(USER, f"/Scans/scan-{n}.txt", f"A scanned letter, number {n}.") for n in range(3)]
    await indexing.first_pass("file")
    refs = [DocRef(USER, "file", str(file_id)) for file_id in ids]
    indexing.state.enqueue(refs, "upsert", urgent=True)  # the second event of each upload
    start = fake.state.access_log.mark()
    while await indexing.pipeline.run_once():
        pass
    assert _kinds(fake.state.access_log.since(start, USER)) == Counter({"SEARCH dav": 3})

    fake.put_file(USER, "/Scans/scan-0.txt", "A scanned letter, number 0, with a postscript.")
    fake.mkdir(USER, "/Letters")
    fake.move(USER, "/Scans/scan-1.txt", "/Letters/scan-1.txt")
    indexing.state.enqueue(refs, "upsert", urgent=True)
    start = fake.state.access_log.mark()
    while await indexing.pipeline.run_once():
        pass
    assert _kinds(fake.state.access_log.since(start, USER)) == Counter({"SEARCH dav": 3, "GET file": 2})
    assert [indexing.state.indexed(ref).location for ref in refs] == [
        "/Scans/scan-0.txt", "/Letters/scan-1.txt", "/Scans/scan-2.txt"]
    assert [hit for hit, _ in indexing.pipeline.keyword.search(USER, "postscript", 5)] == [f"file:{ids[0]}#0"]


async def test_deck_cards_need_no_request_beyond_the_listing(indexing: Indexing) -> None:
    fake = indexing.fake
    board = fake.create_board(USER, "Garden")
    stack = fake.create_stack(USER, board, "To do")
    for n in range(ITEMS):
        fake.create_card(USER, stack, f"Plant tree {n}", description=f"An apple tree by the fence, number {n}.")

    listing, indexing_ = await indexing.first_pass("deck_card")
    assert indexing_ == Counter(), indexing_
    assert listing == Counter({"GET deck": 2}), listing  # the boards, the board's stacks with their cards
    assert indexing.indexed("deck_card") == ITEMS


def test_the_fake_answers_multigets_and_a_stale_download_as_nextcloud_34(fake_nc: FakeNextcloud) -> None:  # noqa: F811
    """Recorded on nc-kit's 34.0.1 (tests/recordings/nextcloud-34/README.md): objects that do not
    exist are left out of a multiget's answer; a GET whose If-Match is not the ETag answers 412."""
    xmlns = 'xmlns:d="DAV:" xmlns:cal="urn:ietf:params:xml:ns:caldav" xmlns:card="urn:ietf:params:xml:ns:carddav"'
    event = (WIRE / "http" / "event1.ics").read_text()
    with httpx.Client(base_url=fake_nc.url, auth=fake_nc.auth("alice"), timeout=10) as alice:
        for recording, home, report, data, names, content in (
            ("caldav_multiget", "/remote.php/dav/calendars/alice/personal/", "cal:calendar-multiget",
             "cal:calendar-data", ("probe-1.ics", "missing.ics", "probe-2.ics"),
             lambda n: event.replace("test-event-0001", n)),
            ("carddav_multiget", "/remote.php/dav/addressbooks/users/alice/contacts/", "card:addressbook-multiget",
             "card:address-data", ("probe-1.vcf", "missing.vcf"), lambda n: (WIRE / "http" / "contact1.vcf").read_text()),
        ):
            for name in names:
                if not name.startswith("missing"):
                    assert alice.put(home + name, content=content(name.partition(".")[0])).status_code == 201
            body = (f'<{report} {xmlns}><d:prop><d:getetag/><d:getlastmodified/><{data}/></d:prop>'
                    + "".join(f"<d:href>{home}{name}</d:href>" for name in names) + f"</{report}>")
            answer = alice.request("REPORT", home, content=body, headers={"Depth": "1"})
            status, _, recorded = _recorded_34(recording)
            assert (answer.status_code, hrefs(answer.content), shape(answer.content)) == (
                status, hrefs(recorded), shape(recorded))
        put = alice.put("/remote.php/dav/files/alice/probe.txt", content=b"hello")
        stale = alice.get("/remote.php/dav/files/alice/probe.txt", headers={"If-Match": '"0123456789abcdef"'})
        status, headers, recorded = _recorded_34("webdav_get_if_match_stale")
        assert (stale.status_code, stale.content) == (status, recorded)
        assert stale.headers["etag"] == put.headers["etag"] and "etag" in headers  # the current one


def _recorded_34(name: str) -> tuple[int, dict[str, str], bytes]:
    lines = (RECORDED_34 / f"{name}.headers").read_text().splitlines()
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, (RECORDED_34 / f"{name}.body").read_bytes()
