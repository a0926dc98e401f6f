"""``/remote.php/dav``: dispatch to files, trash bin, tags, CalDAV, CardDAV, and principals."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .auth import requires_user
from .dav_files import files_dav, search, systemtags_dav, tag_relations_dav, trashbin_dav
from .dav_groupware import addressbooks_dav, calendars_dav
from .davxml import (
    ALL,
    DavError,
    DavResponse,
    P,
    Raw,
    href,
    multistatus,
    not_found,
    parse_body,
    requested_props,
    split_props,
)

METHODS = [
    "OPTIONS",
    "PROPFIND",
    "PROPPATCH",
    "GET",
    "HEAD",
    "POST",
    "PUT",
    "DELETE",
    "MKCOL",
    "MOVE",
    "COPY",
    "REPORT",
    "SEARCH",
]
DAV_HEADER = (
    "1, 3, extended-mkcol, access-control, calendarserver-principal-property-search, calendar-access, "
    "nc-calendar-trashbin, nc-paginate, nextcloud-checksum-update, nc-calendar-search"
)

_HANDLERS = {
    "files": files_dav,
    "trashbin": trashbin_dav,
    "systemtags": systemtags_dav,
    "systemtags-relations": tag_relations_dav,
    "calendars": calendars_dav,
    "addressbooks": addressbooks_dav,
}


async def _principal(request: Request, uid: str, path: str) -> Response:
    """Discovery: the root and ``principals/users/<me>`` tell clients where the homes are."""
    wanted = requested_props(parse_body(await request.body()))
    me = f"<d:href>{href('principals', 'users', uid, collection=True)}</d:href>"
    props = {
        P("d:resourcetype"): Raw("<d:collection/>" if not path else "<d:principal/>"),
        P("d:current-user-principal"): Raw(me),
    }
    if path:
        if path.strip("/") != f"principals/users/{uid}":
            raise not_found(f"Principal with name {path.strip('/').rsplit('/', 1)[-1]} not found")
        props.update(
            {
                P("d:displayname"): request.app.state.nc.display_name(uid),
                P("d:principal-URL"): Raw(me),
                P("cal:calendar-home-set"): Raw(f"<d:href>{href('calendars', uid, collection=True)}</d:href>"),
                P("card:addressbook-home-set"): Raw(
                    f"<d:href>{href('addressbooks', 'users', uid, collection=True)}</d:href>"
                ),
            }
        )
    found, missing = split_props(wanted, props, list(props))
    return multistatus(
        [DavResponse(href(path, collection=True) if path else href(collection=True), found, missing)], ALL
    )


async def dav(request: Request) -> Response:
    path = request.path_params.get("path", "")
    root, _, rest = path.partition("/")
    if request.method == "OPTIONS":
        return Response(headers={"DAV": DAV_HEADER, "Allow": ", ".join(METHODS)})
    if root in _HANDLERS:
        return await _HANDLERS[root](request, rest)
    if root == "" and request.method == "SEARCH":
        return await search(request)
    if request.method == "PROPFIND" and root in ("", "principals"):
        return await _principal(request, request.state.user, path)
    if root == "":
        raise DavError(405, "Sabre\\DAV\\Exception\\MethodNotAllowed", f"{request.method} is not allowed on the root")
    raise not_found(f"File not found: {root} in 'root'")


dav = requires_user(dav, dav=True)  # AppAPI's DAV login serves a disabled account too (real 34.0.1)
ROUTES = [
    Route("/remote.php/dav", dav, methods=METHODS),
    Route("/remote.php/dav/{path:path}", dav, methods=METHODS),
]
