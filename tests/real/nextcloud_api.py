"""A Nextcloud user's own API calls (Notes, WebDAV, CalDAV, CardDAV, Deck, sharing), as their apps make them.

Works against any Nextcloud that answers these APIs: the real one of the real tier, and the fake.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import httpx

OCS = {"OCS-APIRequest": "true", "Accept": "application/json"}
DECK = "/index.php/apps/deck/api/v1.0"
NOTES = "/index.php/apps/notes/api/v1/notes"


class RetryWhenLocked(httpx.HTTPTransport):
    """Two locks a user's client meets and tries again after, as the tests do, a few times:
    - nc-kit runs Nextcloud on SQLite: under concurrent writes (the app indexing, the webhook
      worker, cron, the test) a request now and then fails with 500 "database is locked" and its
      transaction is rolled back.
    - A file being read holds a shared lock: a MOVE or DELETE while the app downloads it (a second
      event of one upload) fails with "is locked" (a LockedException, 423, or 500 on 34.0.1's MOVE).
    Neither is the app's failure; Nextcloud's own clients retry both."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        for attempt in range(1, 5):
            response = super().handle_request(request)
            if response.status_code not in (423, 500) or attempt == 4:
                return response
            response.read()
            if b"database is locked" not in response.content and b"LockedException" not in response.content:
                return response
            response.close()
            print(f"Nextcloud answered 'locked' to {request.method} {request.url.path}: retrying ({attempt})")
            time.sleep(0.3 * attempt)
        raise AssertionError("unreachable")


class NextcloudUser:
    def __init__(self, base_url: str, user: str, app_password: str) -> None:
        self.user = user
        self.base_url = base_url.rstrip("/")
        # No cookie jar: with Nextcloud's session cookie a request counts as a browser's and WebDAV
        # then demands a CSRF token ("CSRF check not passed"); API clients send credentials alone.
        self.http = httpx.Client(base_url=self.base_url, auth=(user, app_password), timeout=60,
                                 transport=RetryWhenLocked(),
                                 event_hooks={"response": [lambda response: self.http.cookies.clear()]})

    def close(self) -> None:
        self.http.close()

    def _ok(self, response: httpx.Response) -> httpx.Response:
        assert response.status_code < 300, (response.request.method, response.request.url, response.status_code,
                                            response.text[:500])
        return response

    # --- Notes -----------------------------------------------------------------------------------

    def create_note(self, title: str, content: str, category: str = "") -> int:
        body = {"title": title, "content": f"# {title}\n\n{content}", "category": category}
        return int(self._ok(self.http.post(NOTES, json=body)).json()["id"])

    def update_note(self, note_id: int, **fields: str) -> None:
        self._ok(self.http.put(f"{NOTES}/{note_id}", json=fields))

    def delete_note(self, note_id: int) -> None:
        self._ok(self.http.delete(f"{NOTES}/{note_id}"))

    # --- Files (WebDAV) ----------------------------------------------------------------------------

    def dav_path(self, path: str) -> str:
        return f"/remote.php/dav/files/{quote(self.user)}/{quote(path.lstrip('/'))}"

    def put_file(self, path: str, content: str | bytes, content_type: str = "text/plain") -> None:
        data = content.encode() if isinstance(content, str) else content
        self._ok(self.http.put(self.dav_path(path), content=data, headers={"Content-Type": content_type}))

    def mkdir(self, path: str) -> None:
        self._ok(self.http.request("MKCOL", self.dav_path(path)))

    def move(self, source: str, target: str) -> None:
        destination = self.base_url + self.dav_path(target)
        self._ok(self.http.request("MOVE", self.dav_path(source), headers={"Destination": destination}))

    def delete(self, path: str) -> None:
        self._ok(self.http.delete(self.dav_path(path)))

    # --- Calendar (CalDAV) ----------------------------------------------------------------------------

    def put_event(self, summary: str, start: datetime, *, description: str = "", uid: str | None = None,
                  calendar: str = "personal", rrule: str = "") -> str:
        """Create or replace an event (recurring with ``rrule``, e.g. "FREQ=WEEKLY"); returns its UID (the
        object is ``<uid>.ics``)."""
        uid = uid or uuid.uuid4().hex
        fmt = "%Y%m%dT%H%M%SZ"
        ics = "\r\n".join([
            "BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//semantic_mcp tests//EN", "BEGIN:VEVENT",
            f"UID:{uid}", f"DTSTAMP:{datetime.now(UTC).strftime(fmt)}", f"DTSTART:{start.astimezone(UTC).strftime(fmt)}",
            f"DTEND:{(start + timedelta(hours=1)).astimezone(UTC).strftime(fmt)}", f"SUMMARY:{summary}",
            f"DESCRIPTION:{description}", *([f"RRULE:{rrule}"] if rrule else []), "END:VEVENT", "END:VCALENDAR", "",
        ])
        path = f"/remote.php/dav/calendars/{quote(self.user)}/{calendar}/{uid}.ics"
        self._ok(self.http.put(path, content=ics.encode(), headers={"Content-Type": "text/calendar; charset=utf-8"}))
        return uid

    def delete_event(self, uid: str, calendar: str = "personal") -> None:
        self._ok(self.http.delete(f"/remote.php/dav/calendars/{quote(self.user)}/{calendar}/{uid}.ics"))

    # --- Contacts (CardDAV) ---------------------------------------------------------------------------

    def put_contact(self, name: str, *, email: str = "", phone: str = "", note: str = "",
                    book: str = "contacts") -> str:
        uid = uuid.uuid4().hex
        lines = ["BEGIN:VCARD", "VERSION:3.0", f"UID:{uid}", f"FN:{name}", f"N:{name.split()[-1]};{name.split()[0]};;;"]
        lines += [f"EMAIL;TYPE=work:{email}"] if email else []
        lines += [f"TEL;TYPE=cell:{phone}"] if phone else []
        lines += [f"NOTE:{note}"] if note else []
        vcf = "\r\n".join([*lines, "END:VCARD", ""])
        path = f"/remote.php/dav/addressbooks/users/{quote(self.user)}/{book}/{uid}.vcf"
        self._ok(self.http.put(path, content=vcf.encode(), headers={"Content-Type": "text/vcard; charset=utf-8"}))
        return uid

    def share_address_book(self, with_user: str, *, book: str = "contacts", remove: bool = False) -> None:
        """Share (or stop sharing) an address book, as the Contacts app does (ownCloud's DAV share POST)."""
        action = "o:remove" if remove else "o:set"
        body = (f'<?xml version="1.0" encoding="utf-8"?><o:share xmlns:d="DAV:" xmlns:o="http://owncloud.org/ns">'
                f"<{action}><d:href>principal:principals/users/{with_user}</d:href></{action}></o:share>")
        path = f"/remote.php/dav/addressbooks/users/{quote(self.user)}/{book}/"
        self._ok(self.http.post(path, content=body.encode(), headers={"Content-Type": "application/xml; charset=utf-8"}))

    # --- Deck -------------------------------------------------------------------------------------

    def open_deck(self) -> dict[str, int]:
        """The user's boards (title -> id, deleted ones left out), as opening Deck lists them. A first request
        to Deck makes its welcome board (its DefaultBoardMiddleware, after marking the first run done)."""
        boards = self._ok(self.http.get(f"{DECK}/boards", headers=OCS)).json()
        return {board["title"]: board["id"] for board in boards if not board.get("deletedAt")}

    def delete_board(self, board_id: int) -> None:
        self._ok(self.http.delete(f"{DECK}/boards/{board_id}", headers=OCS))

    def has_file(self, path: str) -> bool:
        answer = self.http.request("PROPFIND", self.dav_path(path), headers={"Depth": "0"})
        return answer.status_code == 207

    def create_card(self, board_title: str, title: str, description: str = "", duedate: datetime | None = None) -> str:
        """A new board with one stack holding one card (due at ``duedate``); returns the card's path under the
        Deck API."""
        board = self._ok(self.http.post(f"{DECK}/boards", json={"title": board_title, "color": "0087c5"},
                                        headers=OCS)).json()
        stack = self._ok(self.http.post(f"{DECK}/boards/{board['id']}/stacks", json={"title": "To do", "order": 1},
                                        headers=OCS)).json()
        card = self._ok(self.http.post(
            f"{DECK}/boards/{board['id']}/stacks/{stack['id']}/cards",
            json={"title": title, "type": "plain", "order": 1, "description": description,
                  **({"duedate": duedate.astimezone(UTC).isoformat()} if duedate else {})}, headers=OCS,
        )).json()
        return f"{DECK}/boards/{board['id']}/stacks/{stack['id']}/cards/{card['id']}"

    def update_card(self, card: str, title: str, description: str) -> None:
        """Deck's API replaces the card: title, type and owner are required."""
        self._ok(self.http.put(card, json={"title": title, "type": "plain", "owner": self.user,
                                           "description": description}, headers=OCS))

    def delete_card(self, card: str) -> None:
        self._ok(self.http.delete(card, headers=OCS))

    # --- Sharing ---------------------------------------------------------------------------------

    def share(self, path: str, with_user: str) -> int:
        response = self.http.post(
            "/ocs/v2.php/apps/files_sharing/api/v1/shares",
            params={"format": "json"}, json={"path": path, "shareType": 0, "shareWith": with_user}, headers=OCS,
        )
        return int(self._ok(response).json()["ocs"]["data"]["id"])

    def exists(self, path: str) -> bool:
        return self.http.request("PROPFIND", self.dav_path(path), headers={"Depth": "0"}).status_code == 207

    def unshare(self, share_id: int) -> None:
        self._ok(self.http.delete(f"/ocs/v2.php/apps/files_sharing/api/v1/shares/{share_id}",
                                  params={"format": "json"}, headers=OCS))
