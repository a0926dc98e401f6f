"""Files: every file of the user's with extractable text, found with one WebDAV SEARCH.

The source id is the file id, which survives renames and moves (DAV paths do not). Which files
count is decided in one place, :meth:`FilesSource._exclusion`: folders, notes (``.md``/``.txt`` in
the notes folder, which the notes source indexes), admin-excluded paths, files with the excluded
system tag and types without text are not documents of this source. Listings leave them out;
:meth:`FilesSource.fetch`, which a webhook may call for any file, reports them as
:class:`~semantic_mcp.core.documents.Skipped`. Files over the size limit are listed, so the status tool
can say which ones were too large.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

import httpx

from ..core.documents import IndexedAs, Skipped, SourceDocument, Unchanged, valid_source_id
from ..nextcloud.client import (
    DavEntry,
    NextcloudClient,
    NextcloudError,
    NotFound,
    Transient,
    dav_body,
    http_date_to_ts,
    prop_xml,
    strip_etag,
)
from .base import Listing, Source, compose_text, exclusion, is_readable, owner_extra
from .examples import EXAMPLE_FILE_REASON, is_nextcloud_example
from .extract import NeedsOcr, OcrOptions, UnsupportedContent, content_kind
from .extract.ocr import READ_OCR_PAGES, READ_OCR_SECONDS
from ..workers.parser_process import ParserFailed, run_parser
from .team_folders import team_folder_mounts

_NOTE_SUFFIXES = (".md", ".txt")  # what the Notes app treats as notes; other files in its folder are files
_PROPS = (
    "oc:fileid",
    "d:getetag",
    "d:getlastmodified",
    "d:getcontenttype",
    "oc:size",
    "d:resourcetype",
    "nc:system-tags",
    "oc:owner-id",
    "nc:group-folder-id",  # set inside a team folder (groupfolders), the same for every member
)


def user_relative_path(node_path: str, user: str) -> str | None:
    """Map a webhook node path to the path inside the user's files: ``/alice/files/dir/a.txt`` -> ``/dir/a.txt``.

    None for anything outside ``files/`` (trash bin, versions, another user's tree).
    """
    return _path_under(node_path, f"/{user}/files")


def is_in_notes_folder(rel_path: str, notes_folder: str) -> bool:
    """True for the notes folder and everything below it (``/Notes/Work/Plan.md`` with folder ``Notes``)."""
    folder = "/" + notes_folder.strip("/")
    return folder != "/" and (rel_path == folder or rel_path.startswith(folder + "/"))


def is_note_path(rel_path: str, notes_folder: str) -> bool:
    """A file the Notes app treats as a note: ``.md``/``.txt`` in the notes folder (others there are files)."""
    return rel_path.lower().endswith(_NOTE_SUFFIXES) and is_in_notes_folder(rel_path, notes_folder)


READABLE_BATCH = 50  # file ids per SEARCH when checking access


async def readable_by_file_id(
    nc: NextcloudClient, user: str, file_ids: Sequence[str], *, slots: asyncio.Semaphore, timeout: float
) -> dict[str, bool | None]:
    """Which of ``file_ids`` ``user`` can open now (see :meth:`Source.readable`), with one WebDAV
    SEARCH per ``READABLE_BATCH`` ids (an OR of file-id tests): Nextcloud finds only the files
    the user can see, shares included, so a missing id is a file gone or no longer shared."""
    ids = list(dict.fromkeys(file_ids))

    async def batch(part: list[str]) -> dict[str, bool | None]:
        try:
            async with slots:
                entries = await asyncio.wait_for(search_files(nc, user, _any_file_id(part), ("oc:fileid",)), timeout)
        except (Transient, TimeoutError):
            return dict.fromkeys(part)
        found = {entry.props.get("oc:fileid") for entry in entries if entry.status == 200}
        return {file_id: file_id in found for file_id in part}

    numeric = [i for i in ids if valid_source_id("file", i)]
    verdicts: dict[str, bool | None] = {i: False for i in ids if i not in numeric}  # no file has such an id
    parts = [numeric[i : i + READABLE_BATCH] for i in range(0, len(numeric), READABLE_BATCH)]
    for result in await asyncio.gather(*(batch(part) for part in parts)):
        verdicts.update(result)
    return verdicts


def _any_file_id(file_ids: Sequence[str]) -> str:
    """A SEARCH condition matching the files of ``file_ids`` (numeric, as valid ids are)."""
    tests = [f"<d:eq>{prop_xml(['oc:fileid'])}<d:literal>{file_id}</d:literal></d:eq>" for file_id in file_ids]
    return tests[0] if len(tests) == 1 else f"<d:or>{''.join(tests)}</d:or>"


async def search_files(nc: NextcloudClient, user: str, where: str, props: Sequence[str] = _PROPS) -> list[DavEntry]:
    """One basicsearch over the user's whole tree (shares included) for ``props``."""
    scope = f"<d:scope><d:href>/files/{quote(user)}</d:href><d:depth>infinity</d:depth></d:scope>"
    body = dav_body(
        "d:searchrequest",
        f"<d:basicsearch><d:select>{prop_xml(list(props))}</d:select><d:from>{scope}</d:from>"
        f"<d:where>{where}</d:where><d:orderby/></d:basicsearch>",
    )
    entries, _ = await nc.dav(user, "SEARCH", "/remote.php/dav/", body, depth=None)
    return entries


def _path_under(path: str, root: str) -> str | None:
    if path in (root, root + "/"):
        return "/"
    return path[len(root):] if path.startswith(root + "/") else None


@dataclass(frozen=True)
class FileInfo:
    """The metadata one SEARCH answer gives about a file, in the form the checks below need."""

    file_id: str
    path: str  # user-relative, e.g. "/Documents/report.pdf"
    etag: str
    modified: int
    mime: str
    size: int
    tags: tuple[str, ...]
    is_folder: bool
    owner: str  # the account that owns the file: another user's for a file shared with this one
    team_folder: str = ""  # the team folder's id for a file in one (its owner-id is then the viewer's own)

    @property
    def name(self) -> str:
        return PurePosixPath(self.path).name

    def carried(self) -> dict[str, Any]:
        """What a task carries of it (ADR 0530): a listed file is never a folder, its id is the task's."""
        return {"path": self.path, "etag": self.etag, "modified": self.modified, "mime": self.mime,
                "size": self.size, "tags": list(self.tags), "owner": self.owner, "team_folder": self.team_folder}

    @classmethod
    def from_carried(cls, file_id: str, listed: Mapping[str, Any] | None) -> FileInfo | None:
        """Back from :meth:`carried`; None without it, or when it is not what carried wrote."""
        try:
            return cls(file_id, str(listed["path"]), str(listed["etag"]), int(listed["modified"]), str(listed["mime"]),
                       int(listed["size"]), tuple(map(str, listed["tags"])), False, str(listed["owner"]),
                       str(listed.get("team_folder") or "")) if listed else None
        except (KeyError, TypeError, ValueError):
            return None

    @classmethod
    def from_entry(cls, entry: DavEntry, user: str) -> FileInfo:
        # DAV hrefs may carry a web-root prefix (/nextcloud/remote.php/...), so cut at the files root.
        _, _, below = entry.href.partition(f"/remote.php/dav/files/{user}")
        return cls(
            file_id=entry.prop("oc:fileid") or "",
            path=below.rstrip("/") or "/",
            etag=strip_etag(entry.prop("d:getetag")),
            modified=http_date_to_ts(entry.prop("d:getlastmodified")),
            mime=entry.prop("d:getcontenttype") or "",
            size=int(entry.prop("oc:size") or 0),
            tags=tuple(entry.prop_list("nc:system-tags")),
            is_folder=entry.is_collection,
            owner=entry.prop("oc:owner-id") or "",
            team_folder=entry.prop("nc:group-folder-id") or "",
        )


class FilesSource(Source):
    doc_type = "file"

    async def list_changes(self, nc: NextcloudClient, user: str, cursor: str | None, *, full: bool) -> Listing:
        """Files modified at or after the cursor (all files when full or without one).

        ``>=`` rather than ``>`` so a file written in the same second as the last listing is not
        missed; re-listing an unchanged file costs nothing as its etag is unchanged. The cursor is
        the newest modification time seen, capped at the local clock so one file with a future
        mtime cannot stall incremental listings. Uploads that keep an old mtime (desktop clients)
        are caught by webhooks and by full reconciliation, not by this listing.
        """
        since = 0 if full or not cursor else int(cursor)
        where = f"<d:gte>{prop_xml(['d:getlastmodified'])}<d:literal>{since}</d:literal></d:gte>"
        files = await _search_infos(nc, user, where)
        mounts = await team_folder_mounts(nc, user)
        newest = max([since, *(info.modified for info in files)])
        listed = [info for info in files if self._exclusion(info) is None]
        return Listing(
            items={info.file_id: info.etag for info in listed},
            complete=since == 0,
            cursor=str(min(newest, int(self.options.clock.time()))),
            locations={info.file_id: info.path for info in listed},
            known={info.file_id: info.carried() for info in listed},
            team_folders=mounts,
            unindexed={info.file_id for info in files if not info.is_folder} - {info.file_id for info in listed},
        )

    async def fetch(
        self,
        nc: NextcloudClient,
        user: str,
        source_id: str,
        *,
        listed: Mapping[str, Any] | None = None,
        ocr_lane: str | None = None,
        indexed: IndexedAs | None = None,
    ) -> SourceDocument | Skipped | Unchanged:
        """Read the metadata, decide without downloading when possible, then download and extract.

        The metadata is the listing's (``listed``) while the file is still the one listed: the
        download asks for that ETag (``If-Match``), and a file changed, moved or unshared since
        is looked up again by id, as one without it is (ADR 0530).

        Text in images is read only with ``ocr_lane``, the parser workers to read it in (the
        indexing's OCR lane, ADR 0601, or the reading tool's); without it, a file that needs OCR
        raises :class:`NeedsOcr` while OCR is on, and is skipped while it is off."""
        read = await self._download(nc, user, source_id, FileInfo.from_carried(source_id, listed), indexed)
        if isinstance(read, Skipped | Unchanged):
            return read
        info, response = read
        version = strip_etag(response.headers.get("ETag")) or info.etag  # of the bytes read, if changed meanwhile
        languages = self.options.ocr_languages
        reading = None
        if ocr_lane and languages:  # the reading tool's lane reads fewer pages, for less time
            reading = OcrOptions(languages, READ_OCR_PAGES, READ_OCR_SECONDS) if ocr_lane == "read" else OcrOptions(languages)
        try:  # in a bounded process: a hostile file can fail its own task, never stop the app
            extracted = await run_parser(
                "semantic_mcp.sources.extract:extract", response.content, info.mime, info.name, reading,
                lane=ocr_lane if reading else None, timeout=reading.seconds + 30 if reading else None)
        except NeedsOcr as exc:
            if languages:
                raise
            return Skipped(self.doc_type, source_id, exc.reason, version=version, location=info.path)
        except UnsupportedContent as exc:
            return Skipped(self.doc_type, source_id, exc.reason, version=version, location=info.path)
        except ParserFailed as exc:
            exc.version = version
            raise
        text = compose_text(f"File: {info.name}", [("Path", info.path)], extracted.text)
        shift = len(text) - len(extracted.text)  # the sections' offsets, past the heading lines
        return SourceDocument(
            doc_type=self.doc_type,
            source_id=source_id,
            title=info.name,
            text=text,
            modified=info.modified,
            version=version,
            link=f"/f/{source_id}",
            location=info.path,
            extra={"mime": info.mime, "size": str(info.size), **_sharing_extra(info)},
            tags=info.tags,
            path=info.path,
            sections=tuple((offset + shift, label) for offset, label in extracted.sections),
        )

    async def _download(
        self, nc: NextcloudClient, user: str, source_id: str, listed: FileInfo | None,
        indexed: IndexedAs | None = None,
    ) -> tuple[FileInfo, httpx.Response] | Skipped | Unchanged:
        """The file's metadata and bytes, or why it is not downloaded (an exclusion, its size, or the
        version indexed still current: one upload sends NodeCreated and NodeWritten)."""
        info = listed or await lookup_file(nc, user, source_id)
        if reason := self.why_not(info):
            return Skipped(self.doc_type, source_id, reason, version=info.etag, counted=not info.is_folder,
                           location=info.path)
        if indexed == IndexedAs(info.etag, info.path, info.team_folder):  # the path gives the title too
            return Unchanged(self.doc_type, source_id)
        path = nc.files_root(user) + quote(info.path)
        if listed is None:
            return info, await nc.request(user, "GET", path)
        try:
            return info, await nc.request(user, "GET", path, headers={"If-Match": f'"{info.etag}"'})
        except NextcloudError as exc:
            if not isinstance(exc, NotFound) and exc.status != 412:  # 412: its ETag is no longer the one listed
                raise
        return await self._download(nc, user, source_id, None, indexed)  # changed, moved or unshared since the listing

    async def current_version(self, nc: NextcloudClient, user: str, source_id: str) -> str:
        """The file's ETag as ``user`` sees it now (NotFound when they cannot): one SEARCH, no download."""
        return (await lookup_file(nc, user, source_id)).etag

    async def can_read(self, nc: NextcloudClient, user: str, source_id: str) -> bool:
        """One SEARCH by file id: files the user cannot see (any more) are simply not found."""
        return await is_readable(lookup_file(nc, user, source_id))

    async def readable(
        self, nc: NextcloudClient, user: str, source_ids: Sequence[str], *, slots: asyncio.Semaphore, timeout: float
    ) -> dict[str, bool | None]:
        return await readable_by_file_id(nc, user, source_ids, slots=slots, timeout=timeout)

    def why_not(self, info: FileInfo) -> str | None:
        """Why this file is not downloaded and indexed (a rule, its kind, its size), or None: the
        decision :meth:`fetch` takes, which ``occ semantic_mcp:why`` shows an admin."""
        return self._exclusion(info) or exclusion(self.options, size=info.size)

    def _exclusion(self, info: FileInfo) -> str | None:
        """Why a file is not a document of this source, or None when it is."""
        options = self.options
        if info.is_folder:
            return "folder"
        if is_note_path(info.path, options.notes_folder):
            return "a note (indexed by the notes source)"
        if reason := exclusion(options, path=info.path, tags=info.tags):
            return reason
        if not options.index_examples and is_nextcloud_example(info.path, info.size):
            return EXAMPLE_FILE_REASON
        try:
            kind = content_kind(info.mime, info.name)
        except UnsupportedContent as exc:
            return exc.reason
        if kind == "image" and not options.ocr_languages:
            return "an image: reading text in images (OCR) is off"
        return None


def _sharing_extra(info: FileInfo) -> dict[str, str]:
    """Who the file belongs to, for search's decision on a hit Nextcloud cannot re-check in time.
    A team folder's files report the viewer as their owner (``oc:owner-id``), so they are recorded
    with their team folder instead and no owner: such a hit is withheld, never served unchecked,
    as a member an ACL has just denied must not see it."""
    return {"team_folder": info.team_folder} if info.team_folder else owner_extra(info.owner)


async def _search_infos(nc: NextcloudClient, user: str, where: str) -> list[FileInfo]:
    """One basicsearch over the user's whole tree (shares included), returning what ``_PROPS`` says."""
    return [FileInfo.from_entry(entry, user) for entry in await search_files(nc, user, where) if entry.status == 200]


async def lookup_file(nc: NextcloudClient, user: str, file_id: str) -> FileInfo:
    """Find a file (or note) by id, as DAV paths are by name; NotFound when the user cannot see it."""
    if info := (await lookup_files(nc, user, [file_id])).get(file_id):
        return info
    raise NotFound(f"file {file_id} not found for {user!r}", 404)


async def lookup_path(nc: NextcloudClient, user: str, path: str) -> FileInfo:
    """A file or folder by its user-relative path (one PROPFIND); NotFound when the user has none there."""
    entries, _ = await nc.dav(user, "PROPFIND", nc.files_root(user) + quote("/" + path.strip("/")),
                              dav_body("d:propfind", prop_xml(_PROPS)), depth="0")
    for entry in entries:
        if entry.status == 200:
            return FileInfo.from_entry(entry, user)
    raise NotFound(f"no file at {path!r} for {user!r}", 404)


async def lookup_files(nc: NextcloudClient, user: str, file_ids: Sequence[str]) -> dict[str, FileInfo]:
    """Find many files (or notes) by id, one SEARCH per :data:`READABLE_BATCH` of them; those the
    user cannot see are absent from the answer."""
    ids = [file_id for file_id in dict.fromkeys(file_ids) if valid_source_id("file", file_id)]
    found: dict[str, FileInfo] = {}
    for start in range(0, len(ids), READABLE_BATCH):
        part = ids[start : start + READABLE_BATCH]
        found.update((info.file_id, info) for info in await _search_infos(nc, user, _any_file_id(part)))
    return {file_id: found[file_id] for file_id in ids if file_id in found}
