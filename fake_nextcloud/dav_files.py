"""WebDAV for files: ``files/<user>``, the trash bin, system tags, and SEARCH across a tree.

Another user's ``files/<user>`` is an empty collection to the caller (Nextcloud hands out a
SimpleCollection), so its children answer Sabre's "File not found: x in 'alice'" 404.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from .davxml import (
    FILES,
    NS,
    DavError,
    DavResponse,
    P,
    Prop,
    Raw,
    check_preconditions,
    depth_of,
    destination_of,
    escape_text,
    forbidden,
    href,
    http_date,
    multistatus,
    name_of,
    not_found,
    parse_body,
    requested_props,
    split_props,
)
from .files import Generated, Node, Tag

if TYPE_CHECKING:
    from .state import State

INSTANCE_ID = "ocfakenc0001"
DEFAULT_PROPS = [
    P(p) for p in ("d:getlastmodified", "d:getcontentlength", "d:resourcetype", "d:getetag", "d:getcontenttype")
]
TAG_PROPS = [P(p) for p in ("oc:id", "oc:display-name", "oc:user-visible", "oc:user-assignable", "oc:can-assign")]


def _bool(value: bool) -> str:
    return "true" if value else "false"


def tags_xml(tags: list[Tag]) -> Raw:
    return Raw(
        "".join(
            f'<nc:system-tag oc:can-assign="{_bool(t.user_assignable)}" oc:id="{t.id}" '
            f'oc:user-assignable="{_bool(t.user_assignable)}" oc:user-visible="{_bool(t.user_visible)}" '
            f'nc:color="">{escape_text(t.name)}</nc:system-tag>'
            for t in tags
        )
    )


def node_props(nc: State, uid: str, node: Node) -> dict[Prop, Any]:
    team_folder = nc.files.team_folder_of(node)
    received = node.owner != uid and team_folder is None
    shared_out = any(s.node is node and not s.team_folder for s in nc.files.shares.values())
    perms = ("S" if received else "") + ("RGDNVCK" if node.is_dir else "RGDNVW")
    props: dict[Prop, Any] = {
        P("d:getlastmodified"): http_date(node.mtime),
        P("d:getetag"): f'"{node.etag}"',
        P("d:resourcetype"): Raw("<d:collection/>") if node.is_dir else "",
        P("oc:fileid"): node.id,
        P("oc:id"): f"{node.id:08d}{INSTANCE_ID}",
        P("oc:permissions"): perms,
        P("oc:size"): node.size,
        P("oc:favorite"): int(node.favorite),
        P("oc:owner-id"): uid if team_folder else node.owner,  # a team folder's files are the viewer's
        P("oc:owner-display-name"): nc.display_name(uid if team_folder else node.owner),
        P("oc:share-types"): Raw("<oc:share-type>0</oc:share-type>" if shared_out else ""),
        P("nc:has-preview"): "false",
        P("nc:is-encrypted"): 0,
        P("nc:system-tags"): tags_xml(nc.files.file_tags(node.id)),
        P("nc:upload_time"): int(node.mtime),
        P("nc:creation_time"): 0,
    }
    if team_folder:
        props[P("nc:group-folder-id")] = team_folder.id
        props[P("nc:mount-type")] = "group"
    if not node.is_dir:
        props[P("d:getcontenttype")] = node.mimetype
        props[P("d:getcontentlength")] = node.size
    return props


def file_href(uid: str, path: str, node: Node) -> str:
    return href("files", uid, path, collection=node.is_dir)


def _file_headers(node: Node) -> dict[str, str]:
    return {"OC-FileId": f"{node.id:08d}{INSTANCE_ID}", "ETag": f'"{node.etag}"', "OC-ETag": f'"{node.etag}"'}


def download(request: Request, node: Node) -> Response:
    """GET/HEAD with the headers Nextcloud sends, single byte ranges, and streaming for big files."""
    if node.is_dir:
        raise DavError(501, "Sabre\\DAV\\Exception\\NotImplemented", "GET is only implemented on File objects")
    size = node.size
    content_type = node.mimetype + (";charset=UTF-8" if node.mimetype.startswith("text/") else "")
    headers = {
        "Content-Type": content_type,
        "Last-Modified": http_date(node.mtime),
        **{k: v for k, v in _file_headers(node).items() if k != "OC-FileId"},
        "Content-Disposition": f"attachment; filename*=UTF-8''{quote(node.name, safe='')}; filename=\"{node.name}\"",
        "X-Accel-Buffering": "no",
        "Accept-Ranges": "bytes",
    }
    start, end, status = 0, size, 200
    match = re.fullmatch(r"bytes=(\d*)-(\d*)", request.headers.get("range", "").strip())
    if match and (match.group(1) or match.group(2)):
        if match.group(1):
            start = int(match.group(1))
            end = min(int(match.group(2)) + 1, size) if match.group(2) else size
        else:
            start = max(size - int(match.group(2)), 0)
        if start >= size:
            return Response(status_code=416, headers={"Content-Range": f"bytes */{size}"})
        status = 206
        headers["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
    headers["Content-Length"] = str(end - start)
    if request.method == "HEAD":
        return Response(status_code=status, headers=headers)
    if isinstance(node.content, Generated):
        return StreamingResponse(node.content.chunks(start, end), status_code=status, headers=headers)
    return Response(node.read(start, end), status_code=status, headers=headers)


async def files_dav(request: Request, rest: str) -> Response:
    nc: State = request.app.state.nc
    uid: str = request.state.user
    owner, _, path = rest.partition("/")
    path = path.strip("/")
    method = request.method
    body = await request.body()
    if owner != uid:
        return _foreign_files(request, owner, path, body)
    with nc.lock:
        if method == "PROPFIND":
            wanted = requested_props(parse_body(body))
            node = nc.files.resolve(uid, path)
            responses = []
            for user_path, n in nc.files.walk_view(uid, node, path, depth_of(request)):
                found, missing = split_props(wanted, node_props(nc, uid, n), DEFAULT_PROPS)
                responses.append(DavResponse(file_href(uid, user_path, n), found, missing))
            response = multistatus(responses, FILES)
            response.headers["Vary"] = "Brief,Prefer"
            return response
        if method in ("GET", "HEAD"):
            node = nc.files.resolve(uid, path)
            check_preconditions(request, node.etag, {"ETag": f'"{node.etag}"'})
            return download(request, node)
        if method == "PUT":
            existing = nc.files.find(uid, path)
            check_preconditions(request, existing.etag if existing else None)
            node, created = nc.files.write(uid, path, body)
            headers = _file_headers(node)
            if "x-oc-mtime" in request.headers:  # clients may keep their own modification time
                node.mtime = float(request.headers["x-oc-mtime"])
                headers["X-OC-MTime"] = "accepted"
            return Response(status_code=201 if created else 204, headers=headers)
        if method == "MKCOL":
            if body:
                raise DavError(
                    415,
                    "Sabre\\DAV\\Exception\\UnsupportedMediaType",
                    "The request body for the MKCOL request must be empty",
                )
            return Response(status_code=201, headers=_file_headers(nc.files.mkdir(uid, path)))
        if method == "DELETE":
            nc.files.delete(uid, path)
            return Response(status_code=204)
        if method in ("MOVE", "COPY"):
            dest_owner, _, dest = destination_of(request).removeprefix("files/").partition("/")
            if dest_owner != uid:
                raise forbidden("The destination is outside your files")
            overwrite = request.headers.get("overwrite", "T").upper() != "F"
            operation = nc.files.move if method == "MOVE" else nc.files.copy
            node, created = operation(uid, path, dest, overwrite)
            return Response(status_code=201 if created else 204, headers=_file_headers(node))
    raise DavError(
        501,
        "Sabre\\DAV\\Exception\\NotImplemented",
        f"There was no plugin in the system that was willing to handle this {method} method.",
    )


def _foreign_files(request: Request, owner: str, path: str, body: bytes) -> Response:
    """Nextcloud shows another user's files root as an empty SimpleCollection named after them."""
    if not owner:
        raise not_found("File not found:  in 'files'")
    if path:
        raise not_found(f"File not found: {path.split('/')[0]} in '{owner}'")
    if request.method == "PROPFIND":
        wanted = requested_props(parse_body(body))
        found, missing = split_props(wanted, {P("d:resourcetype"): Raw("<d:collection/>")}, [P("d:resourcetype")])
        return multistatus([DavResponse(href("files", owner, collection=True), found, missing)], FILES)
    if request.method in ("PUT", "MKCOL"):
        raise forbidden("Permission denied to create file")
    raise DavError(
        405, "Sabre\\DAV\\Exception\\MethodNotAllowed", f"{request.method} is not allowed on this collection"
    )


# ---- trash bin ------------------------------------------------------------------------------


async def trashbin_dav(request: Request, rest: str) -> Response:
    nc: State = request.app.state.nc
    uid: str = request.state.user
    owner, _, path = rest.partition("/")
    area, _, name = path.strip("/").partition("/")
    if owner != uid or area != "trash":
        raise not_found(f"Node with name '{owner if owner != uid else area}' could not be found")
    body = await request.body()
    with nc.lock:
        if request.method == "PROPFIND":
            wanted = requested_props(parse_body(body))
            responses = []
            if not name:
                folder = {P("d:resourcetype"): Raw("<d:collection/>")}
                responses.append(
                    DavResponse(
                        href("trashbin", uid, "trash", collection=True), *split_props(wanted, folder, DEFAULT_PROPS)
                    )
                )
            if name or depth_of(request) != 0:
                for item in [nc.files.trash_item(uid, name)] if name else nc.files.trash[uid]:
                    props = node_props(nc, uid, item.node)
                    props.update(
                        {
                            P("nc:trashbin-filename"): item.node.name,
                            P("nc:trashbin-original-location"): f"{item.location}/{item.node.name}".lstrip("/"),
                            P("nc:trashbin-deletion-time"): item.deleted_at,
                        }
                    )
                    found, missing = split_props(wanted, props, DEFAULT_PROPS)
                    responses.append(
                        DavResponse(
                            href("trashbin", uid, "trash", item.trash_name, collection=item.node.is_dir), found, missing
                        )
                    )
            return multistatus(responses, FILES)
        if request.method in ("GET", "HEAD"):
            return download(request, nc.files.trash_item(uid, name).node)
        if request.method == "MOVE":
            if not destination_of(request).startswith(f"trashbin/{uid}/restore/"):
                raise forbidden("Items can only be restored to the restore folder")
            return Response(status_code=201, headers=_file_headers(nc.files.restore(uid, name)))
        if request.method == "DELETE":
            nc.files.purge(uid, name or None)
            return Response(status_code=204)
    raise DavError(405, "Sabre\\DAV\\Exception\\MethodNotAllowed", f"{request.method} is not allowed here")


# ---- system tags ------------------------------------------------------------------------------


def _tag_props(tag: Tag) -> dict[Prop, Any]:
    return {
        P("oc:id"): tag.id,
        P("oc:display-name"): tag.name,
        P("oc:user-visible"): _bool(tag.user_visible),
        P("oc:user-assignable"): _bool(tag.user_assignable),
        P("oc:can-assign"): _bool(tag.user_assignable),
    }


def _tag_listing(wanted: list[Prop] | None, root: str, tags: list[Tag], base: tuple[str, ...]) -> Response:
    responses = [
        DavResponse(root, *split_props(wanted, {P("d:resourcetype"): Raw("<d:collection/>")}, [P("d:resourcetype")]))
    ]
    responses += [DavResponse(href(*base, str(t.id)), *split_props(wanted, _tag_props(t), TAG_PROPS)) for t in tags]
    return multistatus(responses, FILES)


async def systemtags_dav(request: Request, rest: str) -> Response:
    nc: State = request.app.state.nc
    body = await request.body()
    with nc.lock:
        if request.method == "POST":
            try:
                data = json.loads(body or b"{}")
            except ValueError:
                raise DavError(400, "Sabre\\DAV\\Exception\\BadRequest", "Invalid JSON body") from None
            tag = nc.files.create_tag(
                str(data.get("name", "")), bool(data.get("userVisible", True)), bool(data.get("userAssignable", True))
            )
            return Response(status_code=201, headers={"Content-Location": href("systemtags", str(tag.id))})
        if request.method == "PROPFIND":
            wanted = requested_props(parse_body(body))
            tag_id = rest.strip("/")
            if tag_id:
                tag = nc.files.tags.get(int(tag_id)) if tag_id.isdigit() else None
                if tag is None:
                    raise not_found(f"Tag with id {tag_id} not found")
                return multistatus(
                    [DavResponse(href("systemtags", tag_id), *split_props(wanted, _tag_props(tag), TAG_PROPS))], FILES
                )
            return _tag_listing(
                wanted, href("systemtags", collection=True), list(nc.files.tags.values()), ("systemtags",)
            )
    raise DavError(405, "Sabre\\DAV\\Exception\\MethodNotAllowed", f"{request.method} is not allowed here")


async def tag_relations_dav(request: Request, rest: str) -> Response:
    nc: State = request.app.state.nc
    uid: str = request.state.user
    kind, _, ids = rest.partition("/")
    file_id, _, tag_id = ids.strip("/").partition("/")
    if kind != "files" or not file_id.isdigit():
        raise not_found(f"Node with name '{kind}' could not be found")
    body = await request.body()
    with nc.lock:
        node = nc.files.by_id.get(int(file_id))
        if node is None or nc.files.user_path(uid, node) is None:
            raise not_found(f"Node with name '{file_id}' could not be found")
        if request.method == "PROPFIND":
            return _tag_listing(
                requested_props(parse_body(body)),
                href("systemtags-relations", "files", file_id, collection=True),
                nc.files.file_tags(node.id),
                ("systemtags-relations", "files", file_id),
            )
        if not tag_id.isdigit():
            raise not_found(f"Tag with id {tag_id} not found")
        if request.method == "PUT":
            if not nc.files.set_tag(uid, node.id, int(tag_id), True):
                raise DavError(409, "Sabre\\DAV\\Exception\\Conflict", "Tag already assigned")
            return Response(status_code=201)
        if request.method == "DELETE":
            if not nc.files.set_tag(uid, node.id, int(tag_id), False):
                raise not_found(f"Tag with id {tag_id} not assigned")
            return Response(status_code=204)
    raise DavError(405, "Sabre\\DAV\\Exception\\MethodNotAllowed", f"{request.method} is not allowed here")


# ---- SEARCH -------------------------------------------------------------------------------------

_TIME_PROPS = {P("d:getlastmodified"), P("d:creationdate"), P("nc:upload_time")}
_NUMBER_PROPS = {P("oc:size"), P("d:getcontentlength"), P("oc:fileid"), P("oc:favorite")}


def _search_value(node: Node, prop: Prop) -> Any:
    if prop in _TIME_PROPS:
        return node.mtime
    return {
        P("oc:size"): node.size,
        P("d:getcontentlength"): node.size,
        P("oc:fileid"): node.id,
        P("oc:favorite"): int(node.favorite),
        P("d:getcontenttype"): node.mimetype,
        P("d:displayname"): node.name,
        P("oc:owner-id"): node.owner,
    }.get(prop)


def _literal(prop: Prop, text: str) -> Any:
    """Cast like Nextcloud: timestamps or ISO/HTTP dates for times, PHP's leading-digit ints."""
    text = text.strip()
    if prop in _TIME_PROPS:
        if re.fullmatch(r"\d+(\.\d+)?", text):
            return float(text)
        try:
            return datetime.fromisoformat(text).timestamp()
        except ValueError:
            try:
                return parsedate_to_datetime(text).timestamp()
            except (TypeError, ValueError):
                return 0.0
    if prop in _NUMBER_PROPS:
        match = re.match(r"\d+", text)
        return int(match.group(0)) if match else 0
    return text


def _like(pattern: str) -> re.Pattern:
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.compile(f"^{regex}$", re.IGNORECASE | re.DOTALL)


_COMPARE = {
    "eq": lambda a, b: a == b,
    "gt": lambda a, b: a > b,
    "gte": lambda a, b: a >= b,
    "lt": lambda a, b: a < b,
    "lte": lambda a, b: a <= b,
}


def _compile(el: ET.Element) -> Callable[[Node], bool]:
    op = name_of(el)[1]
    children = list(el)
    if op in ("and", "or"):
        tests = [_compile(c) for c in children]
        combine = all if op == "and" else any
        return lambda n: combine(t(n) for t in tests)
    if op == "not":
        test = _compile(children[0])
        return lambda n: not test(n)
    if op == "is-collection":
        return lambda n: n.is_dir
    prop_el, literal_el = el.find("d:prop", NS), el.find("d:literal", NS)
    if prop_el is None or literal_el is None or not len(prop_el):
        raise DavError(400, "Sabre\\DAV\\Exception\\BadRequest", f"Invalid {op} operator")
    prop = name_of(prop_el[0])
    literal = _literal(prop, literal_el.text or "")
    if op == "like":
        pattern = _like(str(literal))
        return lambda n: (v := _search_value(n, prop)) is not None and bool(pattern.match(str(v)))
    if op not in _COMPARE:
        raise DavError(400, "Sabre\\DAV\\Exception\\BadRequest", f"Unsupported operator {op}")
    compare = _COMPARE[op]
    return lambda n: (v := _search_value(n, prop)) is not None and compare(v, literal)


def _sought_file_ids(el: ET.Element) -> list[int] | None:
    """The file ids a where clause asks for, when it is only ``oc:fileid`` equality tests (one, or
    an ``d:or`` of them); None for any other search."""
    tests = list(el) if name_of(el)[1] == "or" else [el]
    ids: list[int] = []
    for test in tests:
        prop_el, literal_el = test.find("d:prop", NS), test.find("d:literal", NS)
        if name_of(test)[1] != "eq" or prop_el is None or literal_el is None or len(prop_el) != 1:
            return None
        if name_of(prop_el[0]) != P("oc:fileid"):
            return None
        ids.append(_literal(P("oc:fileid"), literal_el.text or ""))
    return list(dict.fromkeys(ids)) if ids else None


async def search(request: Request) -> Response:
    """basicsearch (RFC 5323) over a user's files, as Nextcloud's file search implements it."""
    nc: State = request.app.state.nc
    uid: str = request.state.user
    root = parse_body(await request.body())
    basic = root.find("d:basicsearch", NS) if root is not None else None
    if basic is None:
        raise DavError(400, "Sabre\\DAV\\Exception\\BadRequest", "Missing basicsearch")
    select = basic.find("d:select/d:prop", NS)
    wanted = [name_of(c) for c in select] if select is not None else DEFAULT_PROPS
    scope = (basic.findtext("d:from/d:scope/d:href", "", NS) or "").strip().removeprefix("/remote.php/dav").strip("/")
    depth = (basic.findtext("d:from/d:scope/d:depth", "infinity", NS) or "infinity").strip()
    kind, _, rest = scope.partition("/")
    owner, _, path = rest.partition("/")
    if kind != "files" or owner != uid:
        raise DavError(400, "Sabre\\DAV\\Exception\\BadRequest", "Invalid search scope")
    where = basic.find("d:where", NS)
    test = _compile(where[0]) if where is not None and len(where) else (lambda n: True)
    sought = _sought_file_ids(where[0]) if where is not None and len(where) else None
    with nc.lock:
        start = nc.files.resolve(uid, path)
        if sought is not None and start is nc.files.homes.get(uid) and depth == "infinity":
            # A search by file ids over the whole home: Nextcloud answers it from the file cache's
            # index, so the fake looks the ids up too instead of walking every file (the cost of a
            # per-hit check must not grow with the size of the user's tree).
            found = ((nc.files.by_id.get(file_id), file_id) for file_id in sought)
            hits = [
                (p, n) for n, _ in found
                if n is not None and n is not start and (p := nc.files.user_path(uid, n)) is not None
            ]
        else:
            hits = [
                (p, n)
                for p, n in nc.files.walk_view(uid, start, path.strip("/"), -1 if depth == "infinity" else int(depth))
                if n is not start and test(n)
            ]
        hits.sort(key=lambda hit: hit[1].id)
        for order in reversed(basic.findall("d:orderby/d:order", NS)):
            prop_el = order.find("d:prop", NS)
            if prop_el is not None and len(prop_el):
                prop = name_of(prop_el[0])
                hits.sort(
                    key=lambda hit: _search_value(hit[1], prop) or 0, reverse=order.find("d:descending", NS) is not None
                )
        limit = basic.findtext("d:limit/d:nresults", None, NS)
        if limit:
            hits = hits[: int(limit)]
        responses = [
            DavResponse(file_href(uid, p, n), *split_props(wanted, node_props(nc, uid, n), DEFAULT_PROPS))
            for p, n in hits
        ]
    response = multistatus(responses, FILES)
    response.headers["Content-Type"] = 'application/xml; charset="utf-8"'
    return response
