"""The fake Nextcloud against the recordings of a real Nextcloud 32 (../shared/nextcloud-32-wire): OCS, Notes,
Deck, WebDAV, shares, CalDAV and CardDAV. Each test talks HTTP to a running fake; where a recording exists,
the answer is compared with it (status, headers, JSON keys, XML structure).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import date, timedelta

import httpx
import pytest
from fake_nextcloud_support import (
    FILE_PROPS,
    NS,
    WIRE,
    client,
    hrefs,
    recorded,
    recorded_json,
    shape,
)
from fixtures_fake_nextcloud import fake_nc  # noqa: F401  (fixture)

from fake_nextcloud import FakeNextcloud
from fake_nextcloud.exapps import AA_VERSION

# ---- OCS and auth ---------------------------------------------------------------------------------


def test_ocs_user_capabilities_and_auth(fake_nc: FakeNextcloud) -> None:  # noqa: F811
    with client(fake_nc) as http:
        r = http.get("/ocs/v2.php/cloud/user", params={"format": "json"})
        assert r.status_code == 200 and r.headers["content-type"] == recorded("ocs_user")[1]["content-type"]
        assert r.json()["ocs"]["data"].keys() == recorded_json("ocs_user")["ocs"]["data"].keys()
        assert r.json()["ocs"]["data"]["displayname"] == "Alice Test"
        caps = http.get("/ocs/v1.php/cloud/capabilities", headers={"Accept": "application/json"}).json()["ocs"]
        assert caps["meta"]["statuscode"] == 100 and caps["data"]["capabilities"]["app_api"]["version"] == AA_VERSION
        assert fake_nc.url in caps["data"]["capabilities"]["theming"]["logo"]
    bearer = httpx.get(f"{fake_nc.url}/ocs/v2.php/cloud/user?format=json", headers=fake_nc.auth_headers("bob", True))
    assert bearer.json()["ocs"]["data"]["id"] == "bob"
    wrong = httpx.get(f"{fake_nc.url}/ocs/v2.php/cloud/user?format=json", auth=("alice", "nope"))
    status, headers, body = recorded("wrong_password")
    assert (wrong.status_code, wrong.content, wrong.headers["content-type"]) == (status, body, headers["content-type"])


# ---- Notes and Deck -------------------------------------------------------------------------------


@pytest.mark.clock_sensitive
def test_notes_api_matches_recordings(fake_nc: FakeNextcloud) -> None:  # noqa: F811
    with client(fake_nc) as alice, client(fake_nc, "bob") as bob:
        notes = alice.get("/index.php/apps/notes/api/v1/notes")
        assert notes.headers["x-notes-api-versions"] == "0.2, 1.3, 1.4" and "last-modified" in notes.headers
        assert notes.json()[0].keys() == recorded_json("notes_list")[0].keys()
        note = next(n for n in notes.json() if n["title"] == "Meeting notes")
        assert note["category"] == "Work" and note["internalPath"] == "/Notes/Work/Meeting notes.md"
        assert '"internalPath":"\\/Notes\\/Work' in notes.text  # PHP escapes slashes
        one = alice.get(f"/apps/notes/api/v1/notes/{note['id']}")
        assert one.headers["etag"] == f'"{note["etag"]}"'
        stubs = alice.get("/index.php/apps/notes/api/v1/notes", params={"pruneBefore": int(fake_nc.clock.time()) + 60})
        assert all(n.keys() == {"id"} for n in stubs.json())
        status, _, body = recorded("bob_notes_get_alice")
        denied = bob.get(f"/index.php/apps/notes/api/v1/notes/{note['id']}")
        assert (denied.status_code, denied.content) == (status, body)
        stale = alice.put(
            f"/index.php/apps/notes/api/v1/notes/{note['id']}", json={"content": "x"}, headers={"If-Match": '"0000"'}
        )
        assert stale.status_code == 412
        created = alice.post("/index.php/apps/notes/api/v1/notes", json={"title": "Groceries", "content": "milk"})
        file_id = fake_nc.file_id("alice", "Notes/Groceries.md")
        assert created.json()["id"] == file_id and fake_nc.read_file("alice", "Notes/Groceries.md") == b"milk"


@pytest.mark.clock_sensitive
def test_deck_api_matches_recordings(fake_nc: FakeNextcloud) -> None:  # noqa: F811
    with client(fake_nc) as alice, client(fake_nc, "bob") as bob:
        boards = alice.get("/index.php/apps/deck/api/v1.0/boards", params={"details": "true"})
        board = next(b for b in boards.json() if b["title"] == "Product launch")
        reference = recorded_json("deck_boards")[0]
        assert board.keys() == reference.keys() and board["stacks"][0].keys() == reference["stacks"][0].keys()
        stacks = alice.get(f"/index.php/apps/deck/api/v1.0/boards/{board['id']}/stacks").json()
        assert stacks[0].keys() == recorded_json("deck_stacks")[0].keys()
        card = stacks[0]["cards"][0]
        assert card.keys() == recorded_json("deck_card").keys() and card["labels"][0]["cardId"] == card["id"]
        # Deck's overdue flag, on the fake's clock: 3 once due, 0 while more than a day away
        overdue = {c["title"]: c["overdue"] for stack in stacks for c in stack.get("cards") or []}
        assert overdue["Book launch venue"] == 3 and overdue["Write release notes"] == 0
        wrong_board = alice.get(f"/index.php/apps/deck/api/v1.0/boards/999/stacks/1/cards/{card['id']}")
        assert wrong_board.status_code == 200 and wrong_board.headers["etag"] == f'"{card["ETag"]}"'
        status, _headers, body = recorded("bob_deck_card_alice")
        denied = bob.get(f"/index.php/apps/deck/api/v1.0/boards/{board['id']}/stacks/1/cards/{card['id']}")
        assert (denied.status_code, denied.content, denied.headers["x-user-id"]) == (status, body, "bob")
        assert alice.get("/index.php/apps/deck/api/v1.0/boards", headers={"If-Modified-Since": "x"}).status_code == 500
        alice.post(f"/index.php/apps/deck/api/v1.0/boards/{board['id']}/acl", json={"type": 0, "participant": "bob"})
        shared = bob.get(f"/index.php/apps/deck/api/v1.0/boards/{board['id']}")
        assert shared.status_code == 200 and shared.json()["permissions"]["PERMISSION_EDIT"] is False
        calendars = bob.request("PROPFIND", "/remote.php/dav/calendars/bob/", headers={"Depth": "1"})
        assert f"/remote.php/dav/calendars/bob/app-generated--deck--board-{board['id']}/" in hrefs(calendars.content)


# ---- WebDAV -----------------------------------------------------------------------------------------


def test_webdav_propfind_get_and_errors(fake_nc: FakeNextcloud) -> None:  # noqa: F811
    with client(fake_nc) as alice, client(fake_nc, "bob") as bob:
        listing = alice.request("PROPFIND", "/remote.php/dav/files/alice/", headers={"Depth": "1"}, content=FILE_PROPS)
        assert listing.status_code == 207 and listing.headers["content-type"] == "application/xml; charset=utf-8"
        root_found, root_missing = shape(listing.content)[0]
        rec_found, rec_missing = shape(recorded("webdav_propfind")[2])[0]
        assert set(rec_found) <= set(root_found) and set(rec_missing) <= set(root_missing)
        docs = alice.request(
            "PROPFIND", "/remote.php/dav/files/alice/Documents", headers={"Depth": "1"}, content=FILE_PROPS
        )
        assert "/remote.php/dav/files/alice/Documents/Project%20plan.md" in hrefs(docs.content)
        assert (
            b'oc:id="1" oc:user-assignable="true" oc:user-visible="true" nc:color="">Important</nc:system-tag>'
            in docs.content
        )
        got = alice.get("/remote.php/dav/files/alice/Documents/Quarterly report.txt")
        assert (
            got.headers["content-type"] == "text/plain;charset=UTF-8" and got.headers["oc-etag"] == got.headers["etag"]
        )
        status, _, body = recorded("webdav_get_404")
        missing = alice.get("/remote.php/dav/files/alice/nope.txt")
        assert (missing.status_code, missing.content) == (status, body)
        status, _, body = recorded("bob_webdav_alice")
        foreign = bob.get("/remote.php/dav/files/alice/testdir")
        assert (foreign.status_code, foreign.content) == (status, body)
        blob = bytes(range(256)) * 300
        put = alice.put("/remote.php/dav/files/alice/blob.bin", content=blob)
        assert put.status_code == 201 and put.headers["oc-fileid"].startswith(
            f"{fake_nc.file_id('alice', 'blob.bin'):08d}"
        )
        assert alice.get("/remote.php/dav/files/alice/blob.bin").content == blob
        fake_nc.put_big_file("alice", "big.log", 200 * 1024 * 1024)
        size = alice.request(
            "PROPFIND", "/remote.php/dav/files/alice/big.log", headers={"Depth": "0"}, content=FILE_PROPS
        )
        assert ET.fromstring(size.content).findtext(".//oc:size", namespaces=NS) == str(200 * 1024 * 1024)
        tail = alice.get("/remote.php/dav/files/alice/big.log", headers={"Range": "bytes=-10"})
        assert tail.status_code == 206 and len(tail.content) == 10


@pytest.mark.clock_sensitive
def test_webdav_search_move_trash_restore(fake_nc: FakeNextcloud) -> None:  # noqa: F811
    since = (fake_nc.clock.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = f"""<d:searchrequest xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:basicsearch>
      <d:select><d:prop><oc:fileid/><d:getlastmodified/><d:getetag/><d:getcontenttype/></d:prop></d:select>
      <d:from><d:scope><d:href>/files/alice</d:href><d:depth>infinity</d:depth></d:scope></d:from>
      <d:where><d:and><d:gt><d:prop><d:getlastmodified/></d:prop><d:literal>{since}</d:literal></d:gt>
      <d:like><d:prop><d:getcontenttype/></d:prop><d:literal>text/%</d:literal></d:like></d:and></d:where>
      </d:basicsearch></d:searchrequest>"""
    with client(fake_nc) as alice:
        found = alice.request("SEARCH", "/remote.php/dav/", content=body, headers={"Content-Type": "text/xml"})
        assert (
            found.status_code == 207 and found.headers["content-type"] == recorded("webdav_search")[1]["content-type"]
        )
        assert "/remote.php/dav/files/alice/Notes/Work/Meeting%20notes.md" in hrefs(found.content)
        assert not any(h.endswith((".pdf", ".docx", "/")) for h in hrefs(found.content))
        assert shape(found.content)[0] == shape(recorded("webdav_search")[2])[0]
        file_id = fake_nc.file_id("alice", "Documents/Project plan.md")
        moved = alice.request(
            "MOVE",
            "/remote.php/dav/files/alice/Documents/Project plan.md",
            headers={"Destination": f"{fake_nc.url}/remote.php/dav/files/alice/Plan.md"},
        )
        assert moved.status_code == 201 and fake_nc.file_id("alice", "Plan.md") == file_id
        assert alice.delete("/remote.php/dav/files/alice/Plan.md").status_code == 204
        trash = alice.request("PROPFIND", "/remote.php/dav/trashbin/alice/trash/", headers={"Depth": "1"})
        item = next(h for h in hrefs(trash.content) if "/Plan.md.d" in h)
        restored = alice.request(
            "MOVE",
            item,
            headers={"Destination": f"{fake_nc.url}/remote.php/dav/trashbin/alice/restore/{item.rsplit('/', 1)[1]}"},
        )
        assert restored.status_code == 201 and fake_nc.file_id("alice", "Plan.md") == file_id


def test_share_and_revoke(fake_nc: FakeNextcloud) -> None:  # noqa: F811
    with client(fake_nc) as alice, client(fake_nc, "bob") as bob:
        fake_nc.put_file("alice", "Reports/summary.txt", "numbers")
        created = alice.post(
            "/ocs/v2.php/apps/files_sharing/api/v1/shares?format=json",
            data={"path": "/Reports", "shareType": 0, "shareWith": "bob"},
        )
        share = created.json()["ocs"]["data"]
        assert created.status_code == 200 and share["share_with"] == "bob" and share["item_type"] == "folder"
        listing = bob.request(
            "PROPFIND", "/remote.php/dav/files/bob/Reports/", headers={"Depth": "1"}, content=FILE_PROPS
        )
        ids = ET.fromstring(listing.content).findall(".//oc:fileid", NS)
        assert fake_nc.file_id("alice", "Reports/summary.txt") in [int(i.text or 0) for i in ids]
        assert bob.get("/remote.php/dav/files/bob/Reports/summary.txt").content == b"numbers"
        assert alice.delete(f"/ocs/v2.php/apps/files_sharing/api/v1/shares/{share['id']}").status_code == 200
        assert bob.get("/remote.php/dav/files/bob/Reports/summary.txt").status_code == 404


# ---- CalDAV and CardDAV -------------------------------------------------------------------------------


def calendar_query(dav: httpx.Client, url: str, day: date) -> httpx.Response:
    """The events of ``url`` that overlap the UTC day ``day`` (recurrences included)."""
    window = f'start="{day:%Y%m%d}T000000Z" end="{day + timedelta(days=1):%Y%m%d}T000000Z"'
    return dav.request(
        "REPORT",
        url,
        headers={"Depth": "1"},
        content=(
            '<cal:calendar-query xmlns:d="DAV:" xmlns:cal="urn:ietf:params:xml:ns:caldav"><d:prop><d:getetag/>'
            '<cal:calendar-data/></d:prop><cal:filter><cal:comp-filter name="VCALENDAR"><cal:comp-filter name="VEVENT">'
            f"<cal:time-range {window}/></cal:comp-filter></cal:comp-filter></cal:filter></cal:calendar-query>"
        ),
    )


@pytest.mark.clock_sensitive
def test_caldav_and_carddav(fake_nc: FakeNextcloud) -> None:  # noqa: F811
    props = (
        b'<d:propfind xmlns:d="DAV:" xmlns:cs="http://calendarserver.org/ns/" xmlns:cal="urn:ietf:params:xml:ns:caldav">'
        b"<d:prop><d:displayname/><d:resourcetype/><cs:getctag/><d:sync-token/>"
        b"<cal:supported-calendar-component-set/></d:prop></d:propfind>"
    )
    sync = '<d:sync-collection xmlns:d="DAV:"><d:sync-token>{}</d:sync-token><d:sync-level>1</d:sync-level><d:prop><d:getetag/></d:prop></d:sync-collection>'
    # The recorded event, moved to a day the seed leaves free (it is placed around its own clock)
    free_day = fake_nc.seeded_at.date() + timedelta(days=3)
    event = (WIRE / "http" / "event1.ics").read_text().replace("20261201T", f"{free_day:%Y%m%d}T")
    with client(fake_nc) as alice, client(fake_nc, "bob") as bob:
        home = alice.request("PROPFIND", "/remote.php/dav/calendars/alice/", headers={"Depth": "1"}, content=props)
        reference = dict(zip(hrefs(recorded("caldav_calendars")[2]), shape(recorded("caldav_calendars")[2])))
        ours = dict(zip(hrefs(home.content), shape(home.content)))
        for href in (
            "/remote.php/dav/calendars/alice/",
            "/remote.php/dav/calendars/alice/personal/",
            "/remote.php/dav/calendars/alice/inbox/",
            "/remote.php/dav/calendars/alice/app-generated--deck--board-1/",
        ):
            assert ours[href] == reference[href]
        url = "/remote.php/dav/calendars/alice/personal/"
        first = alice.request("REPORT", url, content=sync.format(""), headers={"Depth": "1"})
        token = ET.fromstring(first.content).findtext("d:sync-token", namespaces=NS)
        assert alice.put(url + "test-event-0001.ics", content=event).status_code == 201
        assert alice.delete(url + "dentist-last-year.ics").status_code == 204
        delta = alice.request("REPORT", url, content=sync.format(token), headers={"Depth": "1"})
        statuses = {
            r.findtext("d:href", namespaces=NS): r.findtext("d:status", namespaces=NS)
            for r in ET.fromstring(delta.content).findall("d:response", NS)
        }
        assert statuses == {url + "test-event-0001.ics": None, url + "dentist-last-year.ics": "HTTP/1.1 404 Not Found"}
        query = calendar_query(alice, url, free_day)
        assert (
            shape(query.content) == shape(recorded("caldav_report")[2])[:1]
            and b"Acceptance test meeting" in query.content
        )
        # A week after the seed's day: the dentist, and the weekly meeting that began two weeks before
        next_week = calendar_query(alice, url, fake_nc.seeded_at.date() + timedelta(days=7))
        assert set(hrefs(next_week.content)) == {url + "dentist-next-week.ics", url + "weekly-team-meeting.ics"}
        assert alice.put(url + "broken.ics", content="BEGIN:VCALENDAR\nnot ical").status_code == 415
        fake_nc.put_raw_calendar_object("alice", "personal", "broken.ics", "BEGIN:VCALENDAR\nnot ical")
        assert alice.get(url + "broken.ics").status_code == 200
        status, _, body = recorded("bob_caldav_alice")
        foreign = bob.get(url + "test-event-0001.ics")
        assert (foreign.status_code, foreign.content) == (status, body)
        book = "/remote.php/dav/addressbooks/users/alice/contacts/"
        assert (
            alice.put(book + "test-contact-0001.vcf", content=(WIRE / "http" / "contact1.vcf").read_bytes()).status_code
            == 201
        )
        cards = alice.request(
            "REPORT",
            book,
            headers={"Depth": "1"},
            content=(
                b'<card:addressbook-query xmlns:d="DAV:" xmlns:card="urn:ietf:params:xml:ns:carddav"><d:prop><d:getetag/>'
                b'<card:address-data/></d:prop><card:filter><card:prop-filter name="FN"><card:text-match>bob example'
                b"</card:text-match></card:prop-filter></card:filter></card:addressbook-query>"
            ),
        )
        assert cards.content.count(b"<d:response>") == 1
        assert cards.content.replace(b"\n", b"") == recorded("carddav_report")[2].replace(b"\n", b"")
