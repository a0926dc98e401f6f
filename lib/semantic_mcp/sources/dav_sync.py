"""What the calendar and contacts sources share: DAV collections polled with sync-collection (RFC 6578).

Each user has a DAV home (``/calendars/alice/``, ``/addressbooks/users/alice/``) holding collections
(calendars, address books) holding objects (``.ics``, ``.vcf``). A source id is
``"<collection-uri>/<object-uri>"``. The cursor is JSON ``{collection_uri: sync_token}``: each
listing asks every collection what changed since its token, which is cheap and reports deletions
explicitly. Subclasses only say which collections count and how to turn an object into text.
"""

from __future__ import annotations

import abc
import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import quote, unquote
from xml.sax.saxutils import escape

from ..core.documents import IndexedAs, Skipped, SourceDocument, valid_source_id
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
from .base import Listing, Source, SourceOptions, checked_id, exclusion, is_readable, owner_extra
from ..workers.parser_process import ParserFailed, run_parser

log = logging.getLogger(__name__)

# A sync token the server no longer accepts (RFC 6578: 403 with DAV:valid-sync-token; some servers 409),
# or a collection that went away between listing the home and syncing it.
_SYNC_FAILED_STATUSES = {403, 404, 409, 410}
MULTIGET_BATCH = 100  # objects read in one multiget REPORT: an answer of a few hundred kilobytes


@dataclass
class SyncResult:
    """What changed in one collection since a token: object name -> etag, deleted names, the next token."""

    items: dict[str, str] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    token: str = ""


async def sync_collection(nc: NextcloudClient, user: str, path: str, token: str) -> SyncResult:
    """Run sync-collection on one collection since ``token`` (``""``: initial sync, every object).

    A server may truncate a long answer and mark it with a 507 entry (Nextcloud does for big
    address books); the rest is fetched by asking again with the token it returned.
    """
    result = SyncResult(token=token)
    while True:
        request = f"<d:sync-token>{escape(result.token)}</d:sync-token><d:sync-level>1</d:sync-level>"
        body = dav_body("d:sync-collection", request + prop_xml(["d:getetag"]))
        entries, new_token = await nc.dav(user, "REPORT", path, body, depth="0")
        truncated = _apply(result, entries)
        if not truncated or not new_token or new_token == result.token:
            result.token = new_token or result.token
            return result
        result.token = new_token


def _apply(result: SyncResult, entries: list[DavEntry]) -> bool:
    """Fold one sync answer into ``result``; True when the server said it was truncated."""
    truncated = False
    for entry in entries:
        name = entry.href.rpartition("/")[2]
        if entry.status == 507:
            truncated = True
        elif not name:  # the collection itself
            continue
        elif entry.status == 404:
            result.items.pop(name, None)
            result.deleted.add(name)
        elif entry.status == 200:
            result.deleted.discard(name)
            result.items[name] = strip_etag(entry.prop("d:getetag"))
    return truncated


class _TokenRejected(Exception):
    """An incremental sync failed: the listing starts again from scratch for every collection."""


class DavSyncSource(Source):
    """A source whose documents are the objects of a user's CalDAV or CardDAV collections."""

    home_template: ClassVar[str]  # the user's DAV home, "{user}" quoted in
    collection_type: ClassVar[str]  # the resourcetype an indexable collection has: "calendar", "addressbook"
    collection_props: ClassVar[tuple[str, ...]] = ("d:displayname", "d:resourcetype", "oc:owner-principal",
                                                   "d:sync-token")
    multiget_report: ClassVar[str]  # "cal:calendar-multiget", "card:addressbook-multiget"
    data_prop: ClassVar[str]  # the object's text as a multiget gives it: "cal:calendar-data", "card:address-data"

    def __init__(self, options: SourceOptions | None = None) -> None:
        super().__init__(options)
        self._names: dict[str, dict[str, str]] = {}  # user -> {collection uri: display name}, as last listed
        self._owners: dict[str, dict[str, str]] = {}  # user -> {collection uri: owning account}
        self._current: dict[str, dict[str, str]] = {}  # user -> {collection uri: its sync token now}

    @abc.abstractmethod
    def keeps(self, uri: str, entry: DavEntry) -> bool:
        """Whether a collection of the right type is indexed (generated ones are left out)."""

    # The function turning one object's text into a document, ``"module:name"`` taking (user,
    # source id, text, etag, collection name, modified); broken content gives Skipped, never an exception.
    parser: ClassVar[str]

    async def parse(
        self, user: str, source_id: str, text: str, etag: str, collection_name: str, modified: int
    ) -> SourceDocument | Skipped:
        """Parse one object in the bounded parser process (:mod:`.parser_process`), unless it is over
        the size limit."""
        if reason := exclusion(self.options, size=len(text.encode("utf-8", "replace"))):
            return Skipped(self.doc_type, source_id, reason, version=strip_etag(etag))
        try:
            return await run_parser(self.parser, user, source_id, text, etag, collection_name, modified,
                                    *self.parser_args())
        except ParserFailed as exc:
            exc.version = strip_etag(etag)
            raise

    def parser_args(self) -> tuple:
        """Arguments the parser takes after the object's own (a source that needs "now" adds it)."""
        return ()

    async def list_changes(self, nc: NextcloudClient, user: str, cursor: str | None, *, full: bool) -> Listing:
        """Sync every collection from its token; complete when every one was synced from scratch.
        A collection whose token in the home's listing is still the one we hold is not asked: an
        unchanged user costs one PROPFIND.

        Starting over for all collections (rather than only the failing one) is what lets the
        listing be complete, so documents deleted while a token was unusable are noticed too. The
        same holds when a collection disappeared: its objects can only be dropped by a complete
        listing.
        """
        collections = await self._collections(nc, user)
        tokens = {} if full else _load_tokens(cursor)
        if not tokens.keys() <= collections.keys():
            tokens = {}
        try:
            return await self._sync(nc, user, collections, tokens)
        except _TokenRejected as exc:
            log.info("%s: sync token of %s rejected for %s, listing everything", self.doc_type, exc, user)
            return await self._sync(nc, user, collections, {})

    async def carried(
        self, nc: NextcloudClient, user: str, listing: Listing, source_ids: Sequence[str]
    ) -> dict[str, dict[str, Any]]:
        """The changed objects' text, read with one multiget REPORT per collection and
        :data:`MULTIGET_BATCH` objects, so their tasks need no GET each. An object the answer
        leaves out, or a collection whose REPORT fails, is fetched alone by its task."""
        by_collection: dict[str, list[str]] = {}
        for source_id in source_ids:
            collection, _, name = source_id.partition("/")
            if name and valid_source_id(self.doc_type, source_id):
                by_collection.setdefault(collection, []).append(source_id)
        carried: dict[str, dict[str, Any]] = {}
        for collection, ids in by_collection.items():
            for start in range(0, len(ids), MULTIGET_BATCH):
                part = ids[start : start + MULTIGET_BATCH]
                try:
                    carried.update(await self._multiget(nc, user, collection, part))
                except NextcloudError as exc:  # e.g. one object Nextcloud cannot read: the others still are, alone
                    log.info("%s: multiget of %d objects in %s of %s failed (%s): fetched one by one",
                             self.doc_type, len(part), collection, user, exc)
        return carried

    async def _multiget(self, nc: NextcloudClient, user: str, collection: str, ids: list[str]) -> dict[str, dict[str, Any]]:
        hrefs = "".join(f"<d:href>{escape(self._object_path(user, i))}</d:href>" for i in ids)
        body = dav_body(self.multiget_report, prop_xml(["d:getetag", "d:getlastmodified", self.data_prop]) + hrefs)
        entries, _ = await nc.dav(user, "REPORT", self._home(user) + quote(collection) + "/", body, depth="1")
        wanted = {i.partition("/")[2]: i for i in ids}
        carried: dict[str, dict[str, Any]] = {}
        for entry in entries:
            source_id = wanted.get(entry.href.rstrip("/").rpartition("/")[2])
            text = entry.prop(self.data_prop)
            if source_id and entry.status == 200 and text is not None:
                carried[source_id] = {"data": text, "etag": strip_etag(entry.prop("d:getetag")),
                                      "modified": http_date_to_ts(entry.prop("d:getlastmodified"))}
        return carried

    async def fetch(
        self, nc: NextcloudClient, user: str, source_id: str, *, listed: Mapping[str, Any] | None = None,
        ocr_lane: str | None = None,  # no text in images here
        indexed: IndexedAs | None = None,  # its content comes with its metadata: nothing to save
    ) -> SourceDocument | Skipped:
        """Parse the object's text as :meth:`carried` read it, else GET it. Objects of collections
        that are not indexed count as not found."""
        collection, _, name = source_id.partition("/")
        names = self._names.get(user, {})
        if collection not in names:
            names = await self._collections(nc, user)  # created since the last listing?
        if collection not in names or not name:
            raise NotFound(f"{self.doc_type} {source_id!r} is not in an indexed collection of {user!r}", 404)
        if listed and isinstance(listed.get("data"), str):
            text, etag, modified = listed["data"], str(listed.get("etag") or ""), int(listed.get("modified") or 0)
        else:
            response = await nc.request(user, "GET", self._object_path(user, source_id))
            text = response.content.decode("utf-8", errors="replace")
            etag = strip_etag(response.headers.get("ETag"))
            modified = http_date_to_ts(response.headers.get("Last-Modified"))
        document = await self.parse(user, source_id, text, etag, names[collection], modified)
        if isinstance(document, SourceDocument):
            document.extra.update(owner_extra(self._owners.get(user, {}).get(collection)))
        return document

    async def current_version(self, nc: NextcloudClient, user: str, source_id: str) -> str:
        """The object's ETag now, without its body; NotFound when it is gone. PROPFIND, not HEAD: a real
        Nextcloud 32 answers HEAD on a contact with 500 (recorded: carddav_head_500)."""
        entries = await self._propfind_object(nc, user, source_id)
        return strip_etag(entries[0].prop("d:getetag")) if entries else ""

    async def can_read(self, nc: NextcloudClient, user: str, source_id: str) -> bool:
        """A PROPFIND (Depth 0) on the object: 404 when it is gone or the collection no longer shared."""
        return await is_readable(self._propfind_object(nc, user, source_id))

    async def _propfind_object(self, nc: NextcloudClient, user: str, source_id: str) -> list[DavEntry]:
        body = dav_body("d:propfind", prop_xml(["d:getetag"]))
        entries, _ = await nc.dav(user, "PROPFIND", self._object_path(user, source_id), body, depth="0")
        return entries

    async def readable(
        self, nc: NextcloudClient, user: str, source_ids: Sequence[str], *, slots: asyncio.Semaphore, timeout: float
    ) -> dict[str, bool | None]:
        """One multiget REPORT per collection (RFC 4791/6352) for all of its hits.

        Objects the user can no longer read are simply absent from the answer; a collection that
        was deleted or unshared answers 404 as a whole. Not one request on the DAV home: Sabre
        fails such a REPORT whole as soon as one href's collection is missing.
        """
        verdicts: dict[str, bool | None] = {}
        by_collection: dict[str, list[str]] = {}
        for source_id in dict.fromkeys(source_ids):
            collection, _, name = source_id.partition("/")
            if valid_source_id(self.doc_type, source_id):
                by_collection.setdefault(collection, []).append(source_id)
            else:  # no object has such an id; its neighbours are still checked
                verdicts[source_id] = False

        async def check(collection: str, ids: list[str]) -> dict[str, bool | None]:
            hrefs = "".join(f"<d:href>{escape(self._object_path(user, i))}</d:href>" for i in ids)
            body = dav_body(self.multiget_report, prop_xml(["d:getetag"]) + hrefs)
            path = self._home(user) + quote(collection) + "/"
            try:
                async with slots:
                    entries, _ = await asyncio.wait_for(nc.dav(user, "REPORT", path, body, depth="1"), timeout)
            except NotFound:
                return {i: False for i in ids}
            except (Transient, TimeoutError):
                return dict.fromkeys(ids)
            found = {unquote(entry.href.rstrip("/").rpartition("/")[2]) for entry in entries if entry.status == 200}
            return {i: i.partition("/")[2] in found for i in ids}

        for part in await asyncio.gather(*(check(c, ids) for c, ids in by_collection.items())):
            verdicts.update(part)
        return verdicts

    async def _sync(
        self, nc: NextcloudClient, user: str, collections: dict[str, str], tokens: dict[str, str]
    ) -> Listing:
        listing = Listing(complete=not tokens)
        next_tokens: dict[str, str] = {}
        current = self._current.get(user, {})
        for uri in collections:
            token = tokens.get(uri, "")
            if token and current.get(uri) == token:  # unchanged since the last sync: no REPORT
                next_tokens[uri] = token
                continue
            try:
                result = await sync_collection(nc, user, self._home(user) + quote(uri) + "/", token)
            except NextcloudError as exc:
                if exc.status not in _SYNC_FAILED_STATUSES:
                    raise
                if token:
                    raise _TokenRejected(uri) from exc
                continue  # gone since the PROPFIND: absent from a complete listing, so dropped
            listing.items.update({f"{uri}/{name}": etag for name, etag in result.items.items()})
            listing.deleted.update(f"{uri}/{name}" for name in result.deleted)
            next_tokens[uri] = result.token
        listing.cursor = json.dumps(next_tokens, sort_keys=True)
        return listing

    async def _collections(self, nc: NextcloudClient, user: str) -> dict[str, str]:
        """The user's indexed collections (uri -> display name), remembered for fetch."""
        body = dav_body("d:propfind", prop_xml(self.collection_props))
        entries, _ = await nc.dav(user, "PROPFIND", self._home(user), body, depth="1")
        names: dict[str, str] = {}
        owners: dict[str, str] = {}
        current: dict[str, str] = {}
        for entry in entries:
            uri = entry.href.rstrip("/").rpartition("/")[2]
            if self.collection_type in entry.prop_list("d:resourcetype") and self.keeps(uri, entry):
                names[uri] = entry.prop("d:displayname") or uri
                owners[uri] = collection_owner(user, uri, entry.prop("oc:owner-principal"))
                current[uri] = entry.prop("d:sync-token") or ""  # the same token sync-collection answers
        self._names[user] = names
        self._owners[user] = owners
        self._current[user] = current
        return names

    def _home(self, user: str) -> str:
        return self.home_template.format(user=quote(user))

    def _object_path(self, user: str, source_id: str) -> str:
        """The DAV path of an object: ``/remote.php/dav/calendars/alice/personal/event.ics``."""
        collection, _, name = checked_id(self.doc_type, source_id).partition("/")
        return f"{self._home(user)}{quote(collection)}/{quote(name)}"


def collection_owner(user: str, uri: str, owner_principal: str | None) -> str:
    """The account owning a collection in ``user``'s DAV home.

    A collection shared with the user appears as ``<uri>_shared_by_<owner>`` and names its owner in
    ``oc:owner-principal`` (``principals/users/alice``); the user's own collections carry no such
    property on Nextcloud 32.
    """
    if owner_principal:
        return owner_principal.rstrip("/").rpartition("/")[2]
    if "_shared_by_" in uri:
        return uri.rpartition("_shared_by_")[2]
    return user


def _load_tokens(cursor: str | None) -> dict[str, str]:
    """The per-collection tokens of a cursor; an unreadable cursor means "start from scratch"."""
    try:
        tokens = json.loads(cursor or "{}")
    except ValueError:
        return {}
    return {str(uri): str(token) for uri, token in tokens.items() if token} if isinstance(tokens, dict) else {}
