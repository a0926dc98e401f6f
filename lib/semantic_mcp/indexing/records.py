"""A document as the records both indexes store: its chunks, with the metadata every chunk carries.

Pure functions of the document, so the same document always gives the same records (chunk ids are
``doc_key#n``). The pipeline runs them in a parser worker (ADR 0569); benches and tests call them here.
"""

from __future__ import annotations

from ..core.documents import ChunkRecord, DocRef, SourceDocument
from ..core.language import document_language
from .chunking import Chunk, chunk_document

ITEM_FIELDS = ("rrule", "tzid", "done", "email", "phone", "address", "company")


def chunk_metadata(doc: SourceDocument) -> dict[str, str | int]:
    """The metadata every chunk of ``doc`` carries (plus its ``chunk_index``): flat, no None values."""
    base: dict[str, str | int] = {
        "doc_type": doc.doc_type,
        "source_id": doc.source_id,
        "title": doc.title,
        "location": doc.location,
        "modified": int(doc.modified),
        "link": doc.link,
        "version": doc.version,
    }
    if doc.event_start is not None:
        base["event_start"] = int(doc.event_start)
    if doc.event_end is not None:
        base["event_end"] = int(doc.event_end)
    if owner := doc.extra.get("owner"):  # decides what an unverifiable hit becomes (search/verify.py)
        base["owner"] = owner
    if team_folder := doc.extra.get("team_folder"):  # a team folder's file: no owner, shared (ADR 0350)
        base["team_folder"] = team_folder
    # What a search reads from the item's own fields at its own time (search/occurrences.py): a recurring
    # event's rule, a card's done state, a contact's ways to reach them.
    for key in ITEM_FIELDS:
        if value := doc.extra.get(key):
            base[key] = value
    if language := document_language(f"{doc.title}\n{doc.text}"):  # the cross-language offset (ADR 0280)
        base["lang"] = language
    return base


def chunk_records(doc: SourceDocument, ref: DocRef) -> list[ChunkRecord]:
    """Turn a document into the records both indexes store: its chunks, then its gist if it has one
    (a document scores as its best chunk, so the gist only adds a way to be found)."""
    base = chunk_metadata(doc)
    chunks = chunk_document(doc)
    if doc.gist.strip():
        chunks.append(Chunk(len(chunks), doc.gist.strip()))
    return [
        ChunkRecord(
            chunk_id=f"{ref.key}#{chunk.index}",
            doc_key=ref.key,
            text=chunk.text,
            metadata={**base, "chunk_index": chunk.index, **({"section": chunk.section} if chunk.section else {})},
        )
        for chunk in chunks
    ]


def chunk_batch(items: list[tuple[SourceDocument, DocRef]]) -> list[list[ChunkRecord]]:
    """:func:`chunk_records` of each document: what a parser worker runs for a batch (ADR 0569)."""
    return [chunk_records(doc, ref) for doc, ref in items]


def prepare() -> None:
    """Load what chunking needs (py3langid's model): a parser worker of the main lane calls this
    before its memory cap is set, so the cap bounds a batch, not the model (ADR 0569)."""
    document_language("Load the model.")
