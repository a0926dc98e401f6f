"""Calendar events and contacts against responses recorded from a real Nextcloud 32
(../shared/nextcloud-32-wire): sync-collection listings, fetches, iCalendar and vCard parsing. Where no
recording exists (an address-book listing, a sync answer with deletions), the answer is built in the same
shape as the recorded ones, and says so.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pytest_httpx import HTTPXMock
from semantic_mcp.core.documents import Skipped, SourceDocument
from semantic_mcp.nextcloud.client import NextcloudClient, NotFound, Transient, http_date_to_ts
from semantic_mcp.sources.calendar import CalendarSource, document_from_ics, summarize_rrule
from semantic_mcp.sources.contacts import ContactsSource, document_from_vcard, parse_vcard
from sources_support import (
    BASE,
    BOOKS,
    CALENDARS,
    PERSONAL,
    WIRE,
    body,
    nc,  # noqa: F401 - a fixture
    recording,
    sync_answer,
)

# --- calendar ----------------------------------------------------------------------------------

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
