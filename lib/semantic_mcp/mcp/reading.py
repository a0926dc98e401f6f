"""Reading one whole item, by the id a search result carries, as the caller.

The item is fetched from Nextcloud through its source, with the caller's identity: whether they
may open it is Nextcloud's decision at the moment of reading, not the index's. Long texts come in
pages (``offset`` and ``max_chars``, with ``next_offset`` and ``total_chars`` to go on).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, get_args

from pydantic import BaseModel, Field

from ..core.documents import DocType, Skipped, SourceDocument, valid_source_id
from ..nextcloud.client import NotFound, Transient
from ..search.item_fields import FOLLOWING, at_time, when_now
from ..search.service import iso
from ..sources.base import Source, screen
from ..sources.extract import NeedsOcr
from .reading_lane import LANE, ReadBudgetSpent
from ..sources.parse_failures import FAILURES
from ..workers.parser_process import ParserFailed

if TYPE_CHECKING:
    from ..engine import Engine

DEFAULT_PAGE_CHARS = 20_000
MAX_PAGE_CHARS = 100_000
MAX_SECTIONS_LISTED = 200


class DocumentUnavailable(Exception):
    """The item cannot be read: unknown id, gone, not the caller's to open, or not readable as text."""


class DocumentPage(BaseModel):
    """One item's text (or a page of it), with what identifies and locates it."""

    id: str = Field(description="'<doc_type>:<source id>', as in search results")
    doc_type: str
    title: str
    link: str = Field(description="Opens the item in Nextcloud")
    location: str = ""
    modified: str | None = Field(None, description="Last change, ISO 8601 UTC")
    event_start: str | None = None
    event_end: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict, description="Type-specific details (e.g. a file's MIME type)")
    sections: list[str] = Field(default_factory=list, description=(
        "The item's pages, slides or sheet rows (the first 200), to read one by passing it as section"))
    section: str | None = Field(None, description="The part this text is limited to, when one was asked for")
    text: str = Field(description="The item's text from offset, at most max_chars characters")
    offset: int = Field(description="Where this page starts in the whole text, in characters")
    next_offset: int | None = Field(None, description="Pass as offset to read on; null when this page is the end")
    total_chars: int = Field(description="Length of the whole text")


def parse_doc_id(doc_id: str) -> tuple[DocType, str]:
    doc_type, _, source_id = doc_id.strip().partition(":")
    if doc_type not in get_args(DocType) or not valid_source_id(doc_type, source_id):
        raise DocumentUnavailable(
            f"{doc_id!r} is not an item id: use the id of a search result, '<doc_type>:<source id>'"
        )
    return doc_type, source_id  # type: ignore[return-value]


async def fetch_document(engine: Engine, user: str, doc_id: str) -> SourceDocument:
    """The item as ``user`` sees it now in Nextcloud; raises DocumentUnavailable with the reason.
    Parsed in the reading lane, once per version (reading_lane.py)."""
    doc_type, source_id = parse_doc_id(doc_id)
    source = engine.sources().get(doc_type)
    if source is None:
        raise DocumentUnavailable(f"{doc_type.replace('_', ' ')}s are not searchable on this server")
    async with LANE.reading(user):  # many clients of one user are served two at a time
        return await _fetch(engine, source, user, doc_type, source_id, doc_id)


async def _fetch(engine: Engine, source: Source, user: str, doc_type: DocType, source_id: str,
                 doc_id: str) -> SourceDocument:
    try:
        version = await source.current_version(engine.nc, user, source_id) or ""  # "": no parser needed
        if reason := FAILURES.reason(doc_type, source_id, version):
            raise DocumentUnavailable(f"{doc_id} cannot be read as text: {reason}; this version is not tried again")
        if (known := LANE.remembered(user, doc_id, version)) is not None:
            return known
        async with LANE.parsing(user):
            try:
                fetched = await source.fetch(engine.nc, user, source_id)
            except NeedsOcr:  # a scan or a photo: read now, in the reading lane, fewer pages
                fetched = await source.fetch(engine.nc, user, source_id, ocr_lane="read")
    except NotFound as exc:
        raise DocumentUnavailable(f"{doc_id} does not exist or you cannot open it") from exc
    except Transient as exc:
        raise DocumentUnavailable(f"Nextcloud could not be asked for {doc_id} just now; try again") from exc
    except ReadBudgetSpent as exc:
        raise DocumentUnavailable(str(exc)) from exc
    except ParserFailed as exc:
        FAILURES.record(doc_type, source_id, exc.version or version, exc.reason)
        raise DocumentUnavailable(f"{doc_id} cannot be read as text: {exc.reason}") from exc
    if isinstance(fetched, SourceDocument):
        fetched = screen(fetched, source.options)  # what the admin keeps from the index, the reader does not show
    if isinstance(fetched, Skipped):
        raise DocumentUnavailable(f"{doc_id} cannot be read as text: {fetched.reason}")
    LANE.remember(user, doc_id, fetched)
    return fetched


def only_section(doc: SourceDocument, wanted: str) -> SourceDocument:
    """``doc`` cut to the sections ``wanted`` names: a label ("Page 3", "Slide 2"), or its start up to
    a ':' or ',' ("Sheet Prices" is every group of that sheet's rows), in any case."""
    key = " ".join(wanted.split()).casefold()
    ends = [offset for offset, _ in doc.sections[1:]] + [len(doc.text)]
    parts = [doc.text[offset:end].strip() for (offset, label), end in zip(doc.sections, ends, strict=True)
             if label.casefold() == key or label.casefold().startswith((key + ":", key + ","))]
    if not parts:
        where = f"its parts are: {', '.join(_labels(doc)[:20])}" if doc.sections else "it has no pages, slides or sheets"
        raise DocumentUnavailable(f"{doc.title} has no part {wanted!r}: {where}")
    return replace(doc, text="\n\n".join(parts), sections=())


def _labels(doc: SourceDocument) -> list[str]:
    return [label for _, label in doc.sections[:MAX_SECTIONS_LISTED]]


def page_of(engine: Engine, doc_id: str, doc: SourceDocument, offset: int, max_chars: int) -> DocumentPage:
    """A page of ``doc``'s text from ``offset``, ended at a line or word break when one is near."""
    # A recurring event at its occurrence under way or next, as search shows it (search/item_fields.py): in
    # its fields and in its text's "When:" line, so offsets count the text the reader is shown.
    now = int(engine.clock.now().timestamp())
    timed = at_time({**doc.extra, "event_start": doc.event_start, "event_end": doc.event_end}, now, FOLLOWING)
    text = when_now(doc.text, timed, now)
    start = min(max(offset, 0), len(text))
    end = min(start + max_chars, len(text))
    if end < len(text):
        # Prefer a paragraph, line or word break in the last fifth of the page.
        floor = start + max_chars * 4 // 5
        for separator in ("\n\n", "\n", " "):
            cut = text.rfind(separator, floor, end)
            if cut > start:
                end = cut + len(separator)
                break
    return DocumentPage(
        id=doc_id,
        doc_type=doc.doc_type,
        title=doc.title,
        link=engine.search.absolute_link(doc.link),
        location=doc.location,
        modified=iso(doc.modified),
        event_start=iso(timed.get("event_start")),
        event_end=iso(timed.get("event_end")),
        metadata={**doc.extra, **_series(timed)},
        sections=_labels(doc),
        text=text[start:end],
        offset=start,
        next_offset=end if end < len(text) else None,
        total_chars=len(text),
    )


def _series(timed: dict[str, Any]) -> dict[str, str]:
    """A recurring event's first start and its following occurrences, for the page's metadata."""
    if "first_start" not in timed:
        return {}
    return {"first_start": iso(timed["first_start"]) or "",
            "following": ", ".join(iso(start) or "" for start in timed.get("following", []))}


async def read_document(engine: Engine, user: str, doc_id: str, offset: int = 0,
                        max_chars: int = DEFAULT_PAGE_CHARS, section: str | None = None) -> DocumentPage:
    doc = await fetch_document(engine, user, doc_id)
    if not section:
        return page_of(engine, doc_id.strip(), doc, offset, max_chars)
    page = page_of(engine, doc_id.strip(), only_section(doc, section), offset, max_chars)
    return page.model_copy(update={"section": section, "sections": _labels(doc)})


def document_metadata(page: DocumentPage) -> dict[str, Any]:
    """Everything but the text, flat: the ``metadata`` of the connector ``fetch`` shape."""
    fields = page.model_dump(exclude={"text", "offset", "next_offset", "metadata", "title", "id", "link", "sections"},
                             exclude_none=True)
    return {**fields, **page.metadata}
