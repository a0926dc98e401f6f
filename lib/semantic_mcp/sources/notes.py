"""Notes (the Notes app): listed and fetched through its JSON API, one document per note.

A note is a Markdown file in the user's notes folder and its id is that file's id, so the files
source leaves the notes folder alone and file webhooks on it are routed here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.documents import IndexedAs, Skipped, SourceDocument
from ..nextcloud.client import NextcloudClient, http_date_to_ts
from .base import Listing, Source, checked_id, compose_text, is_readable, owner_extra
from .files import FileInfo, lookup_file, lookup_files, readable_by_file_id

NOTES_API = "/index.php/apps/notes/api/v1/notes"
_JSON = {"Accept": "application/json"}


class NotesSource(Source):
    doc_type = "note"

    async def list_changes(self, nc: NextcloudClient, user: str, cursor: str | None, *, full: bool) -> Listing:
        """List every note; with a cursor, notes unchanged since then come back as ``{id}`` stubs.

        The listing is always complete: stubs still name the notes that exist. The cursor is the
        response's ``Last-Modified`` (the server's clock when it built the list), because Notes
        prunes by the time *it* last saw a note change, not by the file's mtime, which a sync
        client may have set to any date. The newest ``modified`` is the fallback.
        """
        params = {"exclude": "content"}  # only ids and etags are needed here; fetch reads the text
        if cursor and not full:
            params["pruneBefore"] = cursor
        response = await nc.request(user, "GET", NOTES_API, headers=_JSON, params=params)
        notes: list[dict[str, Any]] = response.json()
        newest = http_date_to_ts(response.headers.get("Last-Modified")) or max(
            [int(cursor or 0), *(note.get("modified", 0) for note in notes)]
        )
        return Listing(
            items={str(note["id"]): note.get("etag") for note in notes},
            complete=True,
            cursor=str(newest),
        )

    async def carried(
        self, nc: NextcloudClient, user: str, listing: Listing, source_ids: Sequence[str]
    ) -> dict[str, dict[str, Any]]:
        """The changed notes' files (owner, path, system tags), one SEARCH for many of them, with the
        note's ETag as listed: fetch uses them while the note is still that version (ADR 0530)."""
        files = await lookup_files(nc, user, source_ids)
        return {i: {**info.carried(), "note_etag": listing.items.get(i)} for i, info in files.items()}

    async def fetch(
        self, nc: NextcloudClient, user: str, source_id: str, *, listed: Mapping[str, Any] | None = None,
        ocr_lane: str | None = None,  # no text in images here
        indexed: IndexedAs | None = None,  # its content comes with its metadata: nothing to save
    ) -> SourceDocument | Skipped:
        """The note from the Notes API, and its file's path and system tags (which the Notes API does
        not give) from a SEARCH by file id, so the admin's excluded paths and tag apply to notes too;
        no SEARCH when the task carries them (``listed``) and the note is still the version listed."""
        note = await self._get(nc, user, source_id)
        if note.get("error"):
            reason = f"Notes cannot read this note: {note.get('errorType') or 'error'}"
            return Skipped(self.doc_type, source_id, reason, version=note.get("etag") or "")
        unchanged = listed is not None and note.get("etag") and listed.get("note_etag") == note.get("etag")
        file = (FileInfo.from_carried(source_id, listed) if unchanged else None) or await lookup_file(nc, user, source_id)
        title = note.get("title") or "(untitled note)"
        category = note.get("category") or ""
        return SourceDocument(
            doc_type=self.doc_type,
            source_id=source_id,
            title=title,
            text=compose_text(f"Note: {title}", [("Category", category)], note.get("content") or ""),
            modified=int(note.get("modified") or 0),
            version=note.get("etag") or "",
            link=f"/apps/notes/note/{source_id}",
            location=category,
            # A note shared with the user is listed as theirs, writable or not: the owner comes
            # from Nextcloud (the note's file, oc:owner-id), never from where the note appears.
            extra=owner_extra(file.owner or None),
            tags=file.tags,
            path=file.path,
        )

    async def can_read(self, nc: NextcloudClient, user: str, source_id: str) -> bool:
        """One small request: another user's note (or a deleted one) answers 404."""
        return await is_readable(self._get(nc, user, source_id, exclude="content"))

    async def readable(
        self, nc: NextcloudClient, user: str, source_ids: Sequence[str], *, slots: asyncio.Semaphore, timeout: float
    ) -> dict[str, bool | None]:
        """A note is a file and its id the file id: the files' batched check answers for many notes at once."""
        return await readable_by_file_id(nc, user, source_ids, slots=slots, timeout=timeout)

    async def _get(self, nc: NextcloudClient, user: str, source_id: str, *, exclude: str = "") -> dict[str, Any]:
        params = {"exclude": exclude} if exclude else None
        note_id = checked_id("note", source_id)
        response = await nc.request(user, "GET", f"{NOTES_API}/{note_id}", headers=_JSON, params=params)
        return response.json()
