"""The shape every source module has: list what changed, fetch one document, check access.

A source module (notes, files, deck, calendar, contacts) is the only place that knows its
Nextcloud app's API. Adding an app type means adding one module with a :class:`Source`
subclass and listing it in :mod:`semantic_mcp.sources`.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from ..core.clock import Clock
from ..core.documents import DocType, IndexedAs, Skipped, SourceDocument, Unchanged, valid_source_id
from ..nextcloud.client import NextcloudClient, NotFound, Transient
from .extract.common import MAX_CHARS as MAX_TEXT_CHARS

log = logging.getLogger(__name__)


@dataclass
class Listing:
    """What a reconciliation pass learned about one user's documents of one type.

    ``items`` maps source id to version (etag); ``None`` means "exists, unchanged since the
    cursor" (Notes ``pruneBefore`` stubs). When ``complete`` is true, ``items`` names every
    document that exists, so anything indexed and absent from it is gone. ``deleted`` holds
    deletions the server reported explicitly (sync-collection 404s). ``cursor`` is stored and
    passed back next time (a timestamp, or JSON of per-collection sync tokens).
    """

    items: dict[str, str | None] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    complete: bool = False
    cursor: str | None = None
    # Where each listed document is now, for sources whose versions survive a move (a file keeps
    # its ETag when it or a folder above it is renamed): a new location means "refresh" too.
    locations: dict[str, str] = field(default_factory=dict)
    # What the listing already learned about a document that fetch would otherwise ask for again
    # (a file's metadata, a card with its board): JSON-able, carried in the document's task (ADR 0530).
    known: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The user's team folders (folder id -> mount point), for sources that learn them (files): a
    # change asks for a full listing, as a folder gained or lost sends no event.
    team_folders: dict[str, str] | None = None
    # With ``complete``: every other document that exists but is not one this source indexes (left
    # out of ``items``), so a skipped row recorded by an event is kept while its file is there.
    # None: the source cannot say, and a skipped row missing from ``items`` counts as gone.
    unindexed: set[str] | None = None


@dataclass
class SourceOptions:
    """Admin settings a source needs (exclusions and limits), read at call time so changes apply live;
    and the app's clock."""

    max_file_size: int = 20 * 1024 * 1024
    excluded_paths: tuple[str, ...] = ()  # fnmatch patterns on the user-relative path
    excluded_tag: str = "no-ai"  # documents carrying this tag, label or category are not indexed
    notes_folder: str = "Notes"
    index_examples: bool = False  # Nextcloud's example files (the skeleton every account starts with)
    ocr_languages: tuple[str, ...] = ()  # Tesseract's codes for reading text in images; empty: OCR is off
    clock: Clock = field(default_factory=Clock)


def exclusion(
    options: SourceOptions, *, path: str | None = None, tags: Iterable[str] = (), size: int | None = None
) -> str | None:
    """Why the admin's rules keep a document out of the index, or None: the one place they are decided.

    ``path`` (documents that are files) is matched against the excluded path patterns, ``tags``
    (system tags, Deck labels, iCalendar/vCard categories) against the exclusion tag, ``size`` (in
    bytes) against the size limit. Sources call it early where that saves a download or a parse;
    :func:`screen` applies it to every document before it is indexed.
    """
    for pattern in options.excluded_paths if path else ():
        if fnmatchcase(path, pattern) or fnmatchcase(path.lstrip("/"), pattern):
            return f"excluded by the path pattern {pattern!r}"
    if options.excluded_tag and options.excluded_tag.casefold() in (tag.strip().casefold() for tag in tags):
        return f"tagged {options.excluded_tag!r}"
    if size is not None and size > options.max_file_size:
        return f"too large: {size} bytes, the limit is {options.max_file_size}"
    return None


def screen(doc: SourceDocument, options: SourceOptions) -> SourceDocument | Skipped:
    """Apply the admin's exclusions and the size limit to a fetched document, and cap its text at
    :data:`MAX_TEXT_CHARS`, whatever its source (the pipeline calls it for every document)."""
    reason = exclusion(options, path=doc.path, tags=doc.tags, size=len(doc.text.encode("utf-8", "replace")))
    if reason:
        return Skipped(doc.doc_type, doc.source_id, reason, version=doc.version, location=doc.location)
    if len(doc.text) > MAX_TEXT_CHARS:
        log.info("%s %s: text cut to %d characters", doc.doc_type, doc.source_id, MAX_TEXT_CHARS)
        doc.text = doc.text[:MAX_TEXT_CHARS]
    return doc


def owner_extra(owner: str | None) -> dict[str, str]:
    """``extra`` metadata naming the account that owns a document, when the source knows it.

    Search uses it to decide what a hit becomes when Nextcloud cannot re-check it in time: a
    document the caller owns may be served (the index can only be stale), one shared with the
    caller, or of unknown owner, is withheld (see :mod:`semantic_mcp.search.verify`).
    """
    return {"owner": owner} if owner else {}


def checked_id(doc_type: DocType, source_id: str) -> str:
    """``source_id`` if it has its type's exact shape, else :class:`NotFound` (no such item can
    exist): called wherever an id becomes part of a URL (see :func:`~semantic_mcp.core.documents.valid_source_id`)."""
    if not valid_source_id(doc_type, source_id):
        raise NotFound(f"{doc_type} id {source_id[:80]!r} is not of the shape its ids have", 404)
    return source_id


def compose_text(heading: str, fields: Iterable[tuple[str, str | None]], body: str = "") -> str:
    """The text every source embeds: a title line, ``Label: value`` metadata lines, a blank line, the body.

    Putting the title and the metadata people search by (dates, places, names) first means a
    chunker that repeats a document's first lines with each chunk gives every chunk its context.
    Fields with an empty value are left out.
    """
    head = "\n".join([heading, *(f"{label}: {value}" for label, value in fields if value)])
    body = body.strip()
    return f"{head}\n\n{body}" if body else head


def compose_gist(heading: str, *parts: str | None) -> str:
    """A structured item's gist (``SourceDocument.gist``): its heading and the parts written in words
    (a note, a description, a place, labels), without field labels; "" when it has none of them."""
    said = [part.strip() for part in parts if part and part.strip()]
    return "\n".join([heading, *said]) if said else ""


class Source(abc.ABC):
    doc_type: DocType

    def __init__(self, options: SourceOptions | None = None) -> None:
        self.options = options or SourceOptions()

    @abc.abstractmethod
    async def list_changes(self, nc: NextcloudClient, user: str, cursor: str | None, *, full: bool) -> Listing:
        """List documents changed since ``cursor`` (all of them when ``cursor`` is None or ``full``)."""

    @abc.abstractmethod
    async def fetch(
        self, nc: NextcloudClient, user: str, source_id: str, *, listed: Mapping[str, Any] | None = None,
        ocr_lane: str | None = None, indexed: IndexedAs | None = None,
    ) -> SourceDocument | Skipped | Unchanged:
        """Fetch one document as ``user``. Raise NotFound when it is gone or no longer readable.

        ``listed`` is what :meth:`carried` gave the document's task, if anything: fetch uses it
        instead of asking again, as far as it can tell it is still current (ADR 0530).

        ``indexed`` is what the index holds for it, if anything: a source that can see from metadata
        alone that it is all still current returns :class:`Unchanged` without downloading (files);
        the others ignore it.

        ``ocr_lane`` names the parser lane to read text in images in (the indexing's ``"ocr"`` lane,
        ADR 0601, or the reading tool's ``"read"``). A source whose documents can have their text in
        images raises :class:`~semantic_mcp.sources.extract.NeedsOcr` without it; the others ignore it."""

    # --- optional abilities: the defaults say "not this source"; a source that has one overrides it

    async def current_version(self, nc: NextcloudClient, user: str, source_id: str) -> str | None:
        """The document's version now, asked without reading it (an ETag), or None when this source
        cannot tell short of fetching. Raise NotFound when it is gone. The sources whose documents
        need a parser have it: a version known before fetching spares a parse (a failure remembered,
        a text the reading lane has already read) and proves an event's copy current."""
        return None

    async def document_from_payload(
        self, source_id: str, payload: Mapping[str, Any], user: str | None = None
    ) -> SourceDocument | Skipped | None:
        """The document built from what its event carried (a calendar webhook has the whole
        iCalendar), or None to fetch it; used only when :meth:`current_version` confirms it current."""
        return None

    async def carried(
        self, nc: NextcloudClient, user: str, listing: Listing, source_ids: Sequence[str]
    ) -> dict[str, dict[str, Any]]:
        """What the tasks of ``source_ids`` (changed documents of ``listing``) carry to fetch: by default
        what the listing learned; a source may read it for many documents at once here instead."""
        return {i: listing.known[i] for i in source_ids if i in listing.known}

    async def can_read(self, nc: NextcloudClient, user: str, source_id: str) -> bool:
        """True when ``user`` can still open the document, False when it is gone or forbidden.

        Raises :class:`~semantic_mcp.nextcloud.client.Transient` when Nextcloud cannot say right now.
        The default fetches the document; sources override it with a cheaper request.
        """
        return await is_readable(self.fetch(nc, user, source_id))

    async def readable(
        self, nc: NextcloudClient, user: str, source_ids: Sequence[str], *, slots: asyncio.Semaphore, timeout: float
    ) -> dict[str, bool | None]:
        """For each of ``source_ids``: can ``user`` still open it? True, False (gone or forbidden) or
        None (Nextcloud could not say within ``timeout``: a transient failure is not "no access").

        The default asks :meth:`can_read` for each, at most ``slots`` at once; a source that can
        check many documents in one request overrides it.
        """

        async def one(source_id: str) -> bool | None:
            try:
                async with slots:
                    return await asyncio.wait_for(self.can_read(nc, user, source_id), timeout)
            except (Transient, TimeoutError):
                return None

        return dict(zip(source_ids, await asyncio.gather(*(one(i) for i in source_ids)), strict=True))


async def is_readable(request: Awaitable[object]) -> bool:
    """Await a request made as the user: True if it succeeds, False if Nextcloud says gone or forbidden.

    :class:`~semantic_mcp.nextcloud.client.Transient` propagates: "cannot say now" is not "no access".
    """
    try:
        await request
    except NotFound:
        return False
    return True
