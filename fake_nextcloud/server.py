"""``FakeNextcloud``: run the fake on a loopback port in a background thread, and drive it from tests.

The helper methods change the world through the same model code the HTTP API uses, so they
emit the same webhook events; a test can equally well call the HTTP API with the users'
credentials (:meth:`FakeNextcloud.auth_headers`).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from datetime import datetime
from typing import Any, Self

import uvicorn

from .app import create_app
from .clock import Clock
from . import appapi_occ
from .appapi import ExAppManager
from .dav_groupware import ADDRESSBOOKS, CALENDARS, validate
from .exapps import ExApp, encode_pair, signed_headers
from .files import Generated, Node
from .groupware import Collection
from .state import State
from .webhooks import Webhooks

# uid, display name, admin, email
DEFAULT_USERS = (
    ("admin", "admin", True, "admin@example.test"),
    ("alice", "Alice Test", False, "alice@example.test"),
    ("bob", "Bob Test", False, "bob@example.test"),
)


class ServerThread:
    """Any ASGI app served by uvicorn on a loopback port from a daemon thread (also used by tests
    to run a throwaway ExApp)."""

    def __init__(self) -> None:
        self.url = ""
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> str:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        self.port = sock.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, server_header=False, lifespan="on", timeout_graceful_shutdown=2,
            http="httptools",  # the proxy's header quirks rely on how this implementation frames bodies
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"server on {self.url} did not start")
            time.sleep(0.01)
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)


class FakeNextcloud:
    """A fake Nextcloud 32 server: ``with FakeNextcloud() as nc: ...`` or ``start()``/``stop()``."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        passwords: dict[str, str] | None = None,
        webhook_delay: float = 0.05,
        deck_webhooks_supported: bool = True,
        proxy_timeout: float = 300.0,
        init_timeout: float = 60.0,
        clock: Clock | None = None,
    ) -> None:
        self.host, self.port = host, port
        self.url = ""
        self.clock = clock or Clock()
        self.seeded_at: datetime | None = None  # the "now" the sample content is placed around (seed.py)
        self.state = State(self.clock, webhook_delay=webhook_delay, deck_webhooks_supported=deck_webhooks_supported)
        for uid, display, admin, email in DEFAULT_USERS:
            self.state.add_user(uid, display, (passwords or {}).get(uid), admin, email)
        self.exapps = ExAppManager(self.state, init_timeout)
        self._proxy_timeout = proxy_timeout
        self._server = ServerThread()

    # ---- lifecycle ----------------------------------------------------------------------------

    def start(self) -> str:
        """Serve in a background thread and start the webhook worker; returns the base URL."""
        self._server.start(create_app(self.state, self._proxy_timeout), self.host, self.port)
        self.port = self._server.port
        self.url = self.state.base_url = self._server.url
        self.state.webhooks.start()
        return self.url

    def stop(self) -> None:
        self.state.webhooks.stop()
        self._server.stop()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- users and credentials ---------------------------------------------------------------

    def add_user(
        self, uid: str, display_name: str | None = None, password: str | None = None, admin: bool = False,
        *, logged_in: bool = True,
    ) -> None:
        self.state.add_user(uid, display_name, password, admin, logged_in=logged_in)

    def set_user_enabled(self, uid: str, enabled: bool) -> None:
        self.state.set_enabled(uid, enabled)

    def delete_user(self, uid: str) -> None:
        self.state.delete_user(uid)

    def password(self, uid: str) -> str:
        """The user's app password (``<uid>-app-password`` unless configured)."""
        return self.state.users[uid].password

    def auth(self, uid: str) -> tuple[str, str]:
        """``(user, app password)`` for httpx's ``auth=``."""
        return uid, self.password(uid)

    def auth_headers(self, uid: str, bearer: bool = False) -> dict[str, str]:
        if bearer:
            return {"Authorization": f"Bearer {self.password(uid)}"}
        return {"Authorization": f"Basic {encode_pair(uid, self.password(uid))}"}

    def appapi_headers(self, app_id: str, user: str = "") -> dict[str, str]:
        """Headers an ExApp sends to act as ``user`` (empty: app-level), for tests posing as the app."""
        app = self.exapp(app_id)
        signed = signed_headers(app, user, language=False)
        return {k: v for k, v in signed.items() if k != "aa-request-id"} | {"OCS-APIRequest": "true"}

    # ---- ExApps ---------------------------------------------------------------------------------

    def register_exapp(
        self,
        app_id: str,
        exapp_url: str,
        secret: str,
        version: str = "1.0.0",
        routes: list[dict] | None = None,
        exapp_host: str | None = None,
        proxy_mode: str = "buffered",
    ) -> ExApp:
        """What ``occ app_api:app:register --wait-finish`` does with a manual_install daemon: GET
        /heartbeat, POST /init, wait (``init_timeout``) for progress 100, GET /heartbeat, PUT /enabled.
        Raises :class:`ExAppError` with the reason if any step fails."""
        return self.exapps.register(app_id, exapp_url, secret, version, routes, exapp_host, proxy_mode)

    def unregister_exapp(self, app_id: str) -> None:
        self.exapps.unregister(app_id)

    def enable_exapp(self, app_id: str) -> None:
        self.exapps.enable(app_id)

    def disable_exapp(self, app_id: str) -> None:
        self.exapps.disable(app_id)

    def exapp(self, app_id: str) -> ExApp:
        with self.state.lock:
            return self.state.apps[app_id]

    def occ(self, app_id: str, name: str, arguments: dict[str, Any] | None = None,
            options: dict[str, Any] | None = None) -> tuple[int, str]:
        """``occ <name>`` for a command the ExApp registered: (exit code, output), as AppAPI runs it."""
        return appapi_occ.run_occ(self.state, app_id, name, arguments, options)

    def notifications(self, app_id: str) -> list[tuple[str, dict]]:
        """The notifications the ExApp sent: (user, AppAPI's ``params``)."""
        with self.state.lock:
            return list(self.state.apps[app_id].notifications)

    def init_progress(self, app_id: str) -> list[int]:
        return list(self.exapp(app_id).init_progress)

    def set_proxy_mode(self, app_id: str, mode: str) -> None:
        """``buffered`` (the PHP proxy: nothing before the end) or ``streaming`` (HaRP)."""
        if mode not in ("buffered", "streaming"):
            raise ValueError(mode)
        self.exapp(app_id).proxy_mode = mode

    def proxy_url(self, app_id: str, path: str = "") -> str:
        return f"{self.url}/index.php/apps/app_api/proxy/{app_id}/{path.lstrip('/')}"

    def proxy_count(self, app_id: str, path: str | None = None) -> int:
        """Requests the proxy forwarded to the ExApp (for one path, or in total)."""
        counts = self.exapp(app_id).proxied
        return sum(counts.values()) if path is None else counts[path.lstrip("/")]

    def set_admin_setting(self, app_id: str, key: str, value: Any) -> None:
        """Store an admin-settings value where AppAPI keeps it for ExApps: the app's appconfig_ex
        (read by ``nc.appconfig_ex.get_value``). Non-strings are stored as JSON text."""
        with self.state.lock:
            self.exapp(app_id).config[key] = value if isinstance(value, str) else json.dumps(value)

    def app_config(self, app_id: str) -> dict[str, str]:
        with self.state.lock:
            return dict(self.exapp(app_id).config)

    def settings_forms(self, app_id: str) -> dict[str, dict]:
        with self.state.lock:
            return dict(self.exapp(app_id).forms)

    # ---- bad minutes -------------------------------------------------------------------------

    def set_maintenance(self, on: bool) -> None:
        """``occ maintenance:mode --on/--off``: 503 everywhere but status.php, webhook worker stopped."""
        self.state.maintenance.on = on
        self.state.webhooks.wake()

    def refused_in_maintenance(self) -> int:
        """Requests (other than status.php) answered 503 because of maintenance mode so far."""
        return sum(self.state.maintenance.refused.values())

    def lock_database(self, path_prefix: str, times: int = 1) -> None:
        """The next ``times`` requests under ``path_prefix`` fail with 500, as on a real Nextcloud on
        SQLite when a concurrent write holds the database ("database is locked")."""
        self.state.locked_database.fail(path_prefix, times)

    def bruteforce_attempts(self, ip: str = "127.0.0.1") -> int:
        """``occ security:bruteforce:attempts IP``: failed logins recorded for the address (12 h)."""
        return self.state.throttler.attempts(ip)

    def bruteforce_reset(self, ip: str = "127.0.0.1") -> None:
        self.state.throttler.reset(ip)

    @property
    def webhooks(self) -> Webhooks:
        """Registered webhooks, the delivery log and the delivery controls."""
        return self.state.webhooks

    @property
    def deck_webhooks_supported(self) -> bool:
        return self.state.deck_webhooks_supported

    @deck_webhooks_supported.setter
    def deck_webhooks_supported(self, value: bool) -> None:
        self.state.deck_webhooks_supported = value

    # ---- files ------------------------------------------------------------------------------

    def put_file(self, user: str, path: str, content: bytes | str, mtime: float | None = None) -> int:
        """Create or overwrite a file (parent folders are created); returns its file id."""
        data = content.encode() if isinstance(content, str) else content
        return self._write(user, path, data, mtime).id

    def put_big_file(self, user: str, path: str, size: int, pattern: bytes | None = None) -> int:
        """A file of ``size`` bytes whose content is generated when read (no memory held)."""
        content = Generated(size, pattern) if pattern else Generated(size)
        return self._write(user, path, content, None).id

    def _write(self, user: str, path: str, content: bytes | Generated, mtime: float | None) -> Node:
        with self.state.lock:
            parent = path.strip("/").rpartition("/")[0]
            if parent:
                self.state.files.makedirs(user, parent)
            node, _ = self.state.files.write(user, path, content)
            if mtime is not None:
                node.mtime = mtime
            return node

    def mkdir(self, user: str, path: str) -> int:
        with self.state.lock:
            return self.state.files.makedirs(user, path).id

    def delete(self, user: str, path: str) -> None:
        with self.state.lock:
            self.state.files.delete(user, path)

    def move(self, user: str, src: str, dest: str) -> None:
        with self.state.lock:
            self.state.files.move(user, src, dest)

    def file_id(self, user: str, path: str) -> int | None:
        with self.state.lock:
            node = self.state.files.find(user, path)
            return node.id if node else None

    def read_file(self, user: str, path: str) -> bytes:
        with self.state.lock:
            return self.state.files.resolve(user, path).read()

    def share(self, owner: str, path: str, with_user: str) -> int:
        """Share a file or folder with a user (auto-accepted, as on 32); returns the share id."""
        with self.state.lock:
            return self.state.files.share(owner, path, with_user).id

    def unshare(self, share_id: int) -> None:
        with self.state.lock:
            self.state.files.unshare(share_id)

    def create_team_folder(self, name: str, members: set[str]) -> int:
        """A team folder given to ``members`` (see team_folders.py); returns its id."""
        with self.state.lock:
            folder = self.state.files.create_team_folder(name)
            self.state.files.set_team_folder_members(folder.id, members)
            return folder.id

    def set_team_folder_members(self, folder_id: int, members: set[str]) -> None:
        with self.state.lock:
            self.state.files.set_team_folder_members(folder_id, members)

    def deny_team_folder_read(self, folder_id: int, path: str, user: str) -> None:
        with self.state.lock:
            self.state.files.deny_read(folder_id, path, user)

    def delete_team_folder(self, folder_id: int) -> None:
        with self.state.lock:
            self.state.files.delete_team_folder(folder_id)

    def create_tag(self, name: str) -> int:
        with self.state.lock:
            return self.state.files.create_tag(name).id

    def tag_file(self, user: str, path: str, tag_id: int, assigned: bool = True) -> None:
        with self.state.lock:
            node = self.state.files.resolve(user, path)
            self.state.files.set_tag(user, node.id, tag_id, assigned)

    # ---- notes ------------------------------------------------------------------------------

    def create_note(self, user: str, title: str, content: str, category: str = "", favorite: bool = False) -> int:
        with self.state.lock:
            return self.state.notes.create(user, content, title, category, favorite=favorite).id

    def update_note(self, user: str, note_id: int, **fields: Any) -> None:
        """Fields as in the Notes API: ``content``, ``title``, ``category``, ``favorite``, ``modified``."""
        with self.state.lock:
            self.state.notes.update(user, self.state.notes.get(user, note_id), **fields)

    def delete_note(self, user: str, note_id: int) -> None:
        with self.state.lock:
            self.state.notes.delete(user, self.state.notes.get(user, note_id))

    # ---- calendars and contacts ----------------------------------------------------------------

    def _collection(self, kind: str, user: str, uri: str) -> Collection:
        table = self.state.groupware.calendars if kind == "calendar" else self.state.groupware.addressbooks
        return table[(user, uri)]

    def create_calendar(self, user: str, uri: str, displayname: str) -> None:
        with self.state.lock:
            self.state.groupware.create_calendar(user, uri, displayname)

    def put_calendar_object(self, user: str, calendar: str, uri: str, ics: str) -> str:
        """Store an iCalendar object as a CalDAV PUT by ``user`` does (validated, events emitted);
        returns its ETag."""
        validate(CALENDARS, ics)
        return self.put_raw_calendar_object(user, calendar, uri, ics)

    def put_raw_calendar_object(self, user: str, calendar: str, uri: str, ics: str) -> str:
        """Test-only: store text a real server would reject, so a broken object reaches the app."""
        with self.state.lock:
            obj, _ = self.state.groupware.put(self._collection("calendar", user, calendar), uri, ics, user)
            return obj.etag

    def delete_calendar_object(self, user: str, calendar: str, uri: str) -> None:
        """Delete as CalDAV does: into the calendar trash bin (CalendarObjectMovedToTrashEvent)."""
        with self.state.lock:
            self.state.groupware.delete(self._collection("calendar", user, calendar), uri, user)

    def restore_calendar_object(self, user: str, calendar: str, uri: str) -> None:
        with self.state.lock:
            self.state.groupware.restore(self._collection("calendar", user, calendar), uri, user)

    def put_contact(self, user: str, book: str, uri: str, vcard: str) -> str:
        validate(ADDRESSBOOKS, vcard)
        with self.state.lock:
            obj, _ = self.state.groupware.put(self._collection("addressbook", user, book), uri, vcard, user)
            return obj.etag

    def delete_contact(self, user: str, book: str, uri: str) -> None:
        with self.state.lock:
            self.state.groupware.delete(self._collection("addressbook", user, book), uri, user)

    # ---- deck -------------------------------------------------------------------------------

    def create_board(self, user: str, title: str, color: str = "0082c9") -> int:
        with self.state.lock:
            return self.state.deck.create_board(user, title, color).id

    def create_stack(self, user: str, board_id: int, title: str, order: int = 0) -> int:
        with self.state.lock:
            board = self.state.deck.board_for(user, board_id, "PERMISSION_MANAGE")
            return self.state.deck.create_stack(board, title, order).id

    def create_card(
        self,
        user: str,
        stack_id: int,
        title: str,
        description: str = "",
        duedate: str | None = None,
        labels: tuple[str, ...] = (),
    ) -> int:
        """Create a card; ``labels`` are label titles of the board (e.g. "Action needed")."""
        deck = self.state.deck
        with self.state.lock:
            stack = deck.stack_for(user, stack_id, "PERMISSION_EDIT")
            board = deck.boards[stack.board_id]
            label_ids = [lb.id for lb in board.labels if lb.title in labels]
            card = deck.create_card(user, stack, title, description=description, duedate=duedate, labels=label_ids)
            return card.id

    def update_card(self, user: str, card_id: int, **fields: Any) -> None:
        """Fields of the card model: ``title``, ``description``, ``duedate``, ``archived``, ``order``..."""
        with self.state.lock:
            deck = self.state.deck
            deck.update_card(user, deck.card_for(user, card_id, "PERMISSION_EDIT"), **fields)

    def delete_card(self, user: str, card_id: int) -> None:
        with self.state.lock:
            deck = self.state.deck
            deck.delete_card(user, deck.card_for(user, card_id, "PERMISSION_EDIT"))

    def share_board(self, owner: str, board_id: int, with_user: str, edit: bool = False) -> None:
        with self.state.lock:
            deck = self.state.deck
            deck.add_acl(deck.board_for(owner, board_id, "PERMISSION_SHARE"), with_user, edit=edit)
