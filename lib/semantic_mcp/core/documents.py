"""The data model shared by every layer: what a source yields and what the index stores."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

DocType = Literal["note", "file", "deck_card", "calendar_event", "contact"]
DOC_TYPES: tuple[DocType, ...] = ("note", "file", "deck_card", "calendar_event", "contact")

_NUMBER = re.compile(r"[0-9]{1,19}")  # ASCII only: int() would also take "１２" or " 12"
_DAV_NAME = r"[^/\\\x00-\x1f\x7f]{1,255}"
_DAV_OBJECT = re.compile(f"({_DAV_NAME})/({_DAV_NAME})")


def valid_source_id(doc_type: str, source_id: str) -> bool:
    """Has ``source_id`` the exact shape of its type's ids (see :class:`DocRef`)? Every id from
    outside (a tool argument, a webhook, the index) is checked before it becomes part of a URL, so
    no id can lead a request anywhere else (``22/../../ocs/…``, ``personal/../../files/…``)."""
    if doc_type in ("note", "file", "deck_card"):
        return _NUMBER.fullmatch(source_id) is not None
    if doc_type in ("calendar_event", "contact"):
        match = _DAV_OBJECT.fullmatch(source_id)
        return match is not None and not {match.group(1), match.group(2)} & {".", ".."}
    return False


@dataclass(frozen=True)
class DocRef:
    """Identifies one source document for one user: the unit of queueing and deletion.

    ``source_id`` is stable within its type: the file id for notes and files, the card id for
    deck cards, ``"<calendar-uri>/<object-uri>"`` for events, ``"<addressbook-uri>/<card-uri>"``
    for contacts.
    """

    user: str
    doc_type: DocType
    source_id: str

    @property
    def key(self) -> str:
        return f"{self.doc_type}:{self.source_id}"


@dataclass
class SourceDocument:
    """A document as fetched from Nextcloud, already turned into text and metadata."""

    doc_type: DocType
    source_id: str
    title: str
    text: str
    modified: int  # unix seconds
    version: str  # etag or content hash: unchanged version => never re-embedded
    link: str  # deep link, relative to the Nextcloud base URL (e.g. "/apps/files/?fileid=42")
    location: str = ""  # file path, "Board / Stack", calendar or address book name
    event_start: int | None = None  # unix seconds, calendar events (and deck due dates)
    event_end: int | None = None
    extra: dict[str, str] = field(default_factory=dict)  # small, flat, type-specific metadata
    # What the admin's exclusions look at (sources/base.py, screen): tags, labels or categories,
    # and the user-relative path of a document that is a file (files, notes).
    tags: tuple[str, ...] = ()
    path: str | None = None
    # Where the pages, slides or groups of a sheet's rows start in ``text``: (offset, label), e.g.
    # (1234, "Page 3"). Chunks never span two, and carry the label (indexing/chunking.py).
    sections: tuple[tuple[int, str], ...] = ()
    # What a structured item (contact, event, card) says in words: its heading and its note, place or
    # labels, without the other field lines. Indexed as one more chunk (indexing/records.py), so a
    # question about a contact's note meets it undiluted by emails and phone numbers
    # (bench/structured_items.py); empty when the full text is all there is.
    gist: str = ""


@dataclass
class Skipped:
    """A document that exists but will not be indexed, with the reason recorded for the status tool."""

    doc_type: DocType
    source_id: str
    reason: str
    version: str = ""  # so reconciliation does not fetch an unchanged skipped document again
    # False for what is not a document at all (a folder): never counted among the skipped.
    counted: bool = True
    location: str = ""  # where it is (a file's user-relative path), so that deleting it there forgets it


@dataclass(frozen=True)
class IndexedAs:
    """What the index holds for a document, as a fetch can compare it with the metadata it reads."""

    version: str
    location: str
    team_folder: str = ""  # the id of the team folder whose shared chunks it is in; "" for the reader's own


@dataclass(frozen=True)
class Unchanged:
    """What a fetch gives instead of downloading when the document's metadata shows it is still the
    version, at the place, the index holds: a second event of one upload costs one lookup, not a
    download and a parse (or an OCR)."""

    doc_type: DocType
    source_id: str


MetadataValue = str | int | float | bool


@dataclass(frozen=True)
class ChunkRecord:
    """One chunk as both indexes store it.

    ``chunk_id`` is ``f"{doc_key}#{index}"`` and ``doc_key`` is ``f"{doc_type}:{source_id}"``.
    ``metadata`` is flat, without None values (Chroma rejects them): doc_type, source_id,
    title, location, modified, link, version, chunk_index, and event_start/event_end when
    the document has them. ``doc_key`` is added to it on write, for deletion by document.
    """

    chunk_id: str
    doc_key: str
    text: str  # None only as read with ``read_texts`` False, not yet read (ADR 0567)
    metadata: Mapping[str, MetadataValue]


def chunk_doc_key(chunk_id: str) -> str:
    """The document key of a chunk id (``f"{doc_key}#{index}"``, :class:`ChunkRecord`)."""
    return chunk_id.rsplit("#", 1)[0]
