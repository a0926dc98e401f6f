"""One module per Nextcloud app type; :data:`SOURCES` is the list the rest of the app iterates.

Adding an app type means writing a :class:`~.base.Source` subclass in its own module and adding
it here.
"""

from __future__ import annotations

from ..core.documents import DocType
from .base import Listing, Source, SourceOptions
from .calendar import CalendarSource
from .contacts import ContactsSource
from .deck import DeckSource
from .files import FilesSource
from .notes import NotesSource

SOURCES: dict[DocType, type[Source]] = {
    "note": NotesSource,
    "file": FilesSource,
    "deck_card": DeckSource,
    "calendar_event": CalendarSource,
    "contact": ContactsSource,
}


def make_sources(options: SourceOptions | None = None) -> dict[DocType, Source]:
    """One instance per type, sharing ``options`` (a mutable object the shell updates as settings change)."""
    options = options or SourceOptions()
    return {doc_type: source(options) for doc_type, source in SOURCES.items()}


__all__ = ["SOURCES", "Listing", "Source", "SourceOptions", "make_sources"]
