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
from .files import FileStore
from .groupware import Groupware
from .notes import Notes
from .outages import Maintenance, Throttler
from .webhooks import Webhooks


@dataclass
class User:
    uid: str
    display_name: str
    password: str
    admin: bool = False
    email: str | None = None


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
        self.throttler = Throttler()
        file_ids = itertools.count(1)
        self.webhooks = Webhooks(
            lock=self.lock,
            apps=self.apps,
            maintenance=self.maintenance,
            display_name=self.display_name,
            deck_webhooks_supported=lambda: self.deck_webhooks_supported,
            clock=clock,
            delay=webhook_delay,
        )
        self.files = FileStore(self.emit, lambda: next(file_ids), clock)
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
    ) -> User:
        """Create a user with a home folder, a ``personal`` calendar and a ``contacts`` address book,
        as a real server does at the user's first web login."""
        with self.lock:
            user = User(uid, display_name or uid, password or f"{uid}-app-password", admin, email)
            self.users[uid] = user
            self.files.ensure_home(uid)
            self.groupware.create_calendar(uid, "personal", "Personal")
            self.groupware.create_calendar(uid, "contact_birthdays", "Contact birthdays", ("VEVENT",))
            self.groupware.create_addressbook(uid, "contacts", "Contacts")
            return user

    def display_name(self, uid: str) -> str:
        user = self.users.get(uid)
        return user.display_name if user else uid

    def emit(self, event_class: str, actor: str, event: dict) -> None:
        self.webhooks.dispatch(event_class, actor, event)
