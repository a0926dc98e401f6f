"""The fake server's whole in-memory world, guarded by one lock.

Route handlers run on the server's event loop and test code calls in from other threads, so
every read or change of the model happens under :attr:`State.lock` (never held across an
``await``). Changes emit events through :meth:`State.emit`, which hands them to webhooks.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass

from .clock import Clock
from .deck import Deck
from .exapps import ExApp
from .team_folders import TeamFolderFiles
from .groupware import Groupware
from .notes import Notes
from .access_log import AccessLog
from .outages import LockedDatabase, Maintenance, Throttler
from .webhooks import Webhooks


@dataclass
class User:
    uid: str
    display_name: str
    password: str
    admin: bool = False
    email: str | None = None
    enabled: bool = True
    # ``firstLoginTimestamp``: set at the first login, 0 before it. A uid deleted and created again
    # starts at 0, then gets a later time: never the old account's value.
    first_login: int = 0
    # Personal settings → Personal info: Nextcloud's language code (en, de, de_DE …) and locale ("" = none chosen)
    language: str = "en"
    locale: str = ""


@dataclass
class Session:
    """A browser session (:mod:`fake_nextcloud.login`), by cookie in :attr:`State.sessions`."""

    csrf: str
    user: str | None = None


class State:
    def __init__(self, clock: Clock, *, webhook_delay: float = 0.05, deck_webhooks_supported: bool = True) -> None:
        self.lock = threading.RLock()
        self.clock = clock
        self.base_url = ""
        self.users: dict[str, User] = {}
        self.apps: dict[str, ExApp] = {}
        self.sessions: dict[str, Session] = {}  # browser sessions by cookie (login.py)
        self.deck_webhooks_supported = deck_webhooks_supported
        self.maintenance = Maintenance()  # occ maintenance:mode: 503 everywhere, webhook worker stopped
        self.access_log = AccessLog()  # every request and as whom, as a web server's access log
        self.locked_database = LockedDatabase()  # SQLite's "database is locked": 500 for some requests
        self.throttler = Throttler()
        file_ids = itertools.count(1)
        self._login_times = itertools.count(1795341256, 97)  # distinct first-login times, as on a real server
        self.webhooks = Webhooks(
            lock=self.lock,
            apps=self.apps,
            maintenance=self.maintenance,
            display_name=self.display_name,
            deck_webhooks_supported=lambda: self.deck_webhooks_supported,
            clock=clock,
            delay=webhook_delay,
        )
        self.files = TeamFolderFiles(self.emit, lambda: next(file_ids), clock)
        self.groupware = Groupware(self.emit, self.display_name, clock)
        self.deck = Deck(self.emit, self.display_name, lambda: self.deck_webhooks_supported, clock)
        self.notes = Notes(self.files)

    def add_user(
        self,
        uid: str,
        display_name: str | None = None,
        password: str | None = None,
        admin: bool = False,
        email: str | None = None,
        *,
        logged_in: bool = True,
    ) -> User:
        """Create a user with a home folder, a ``personal`` calendar and a ``contacts`` address book,
        as a real server does at the user's first web login (which ``logged_in`` says happened)."""
        with self.lock:
            user = User(uid, display_name or uid, password or f"{uid}-app-password", admin, email,
                        first_login=next(self._login_times) if logged_in else 0)
            self.users[uid] = user
            self.files.ensure_home(uid)
            self.groupware.create_calendar(uid, "personal", "Personal")
            self.groupware.create_calendar(uid, "contact_birthdays", "Contact birthdays", ("VEVENT",))
            self.groupware.create_addressbook(uid, "contacts", "Contacts")
            return user

    def logged_in(self, uid: str) -> None:
        """A password login: the first one sets ``firstLoginTimestamp``."""
        with self.lock:
            if self.users[uid].first_login == 0:
                self.users[uid].first_login = next(self._login_times)

    def set_enabled(self, uid: str, enabled: bool) -> None:
        """``occ user:disable`` / ``user:enable``: the account's app passwords and sessions stop (401),
        OCS and app routes refuse AppAPI acting as it, WebDAV still answers AppAPI."""
        with self.lock:
            self.users[uid].enabled = enabled

    def delete_user(self, uid: str) -> None:
        """``occ user:delete``: the account and everything in its home are gone; AppAPI acting as it
        is anonymous (401 everywhere) and AppAPI's user list omits it."""
        with self.lock:
            del self.users[uid]
            self.files.drop_home(uid)
            self.groupware.drop_user(uid)
            self.deck.drop_user(uid)

    def display_name(self, uid: str) -> str:
        user = self.users.get(uid)
        return user.display_name if user else uid

    def emit(self, event_class: str, actor: str, event: dict) -> None:
        self.webhooks.dispatch(event_class, actor, event)
