"""Core OCS endpoints: current user, capabilities, unified search providers, and file sharing.

Capabilities and search providers are the recorded answers of the real server (with its URL
replaced by the fake's), so clients see the same feature flags (``app_api`` included).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .auth import NotLoggedIn, identify, logged_in
from .davxml import DavError
from .files import Share
from .responses import OcsError, json_response, ocs_response, request_params

if TYPE_CHECKING:
    from .state import State

_DATA = resources.files(__package__) / "data"


def _user(request: Request) -> tuple[State, str]:
    nc: State = request.app.state.nc
    caller = identify(request, nc)
    if not logged_in(caller):
        raise NotLoggedIn()
    return nc, caller.user


def _profile_fields() -> dict[str, str]:
    fields: dict[str, str] = {}
    for name in (
        "phone",
        "address",
        "website",
        "twitter",
        "bluesky",
        "fediverse",
        "organisation",
        "role",
        "headline",
        "biography",
        "profile_enabled",
        "pronouns",
    ):
        fields[name] = "1" if name == "profile_enabled" else ""
        fields[f"{name}Scope"] = "v2-federated" if name == "pronouns" else "v2-local"
    return fields


def user_json(nc: State, uid: str) -> dict[str, Any]:
    user = nc.users[uid]
    used = nc.files.homes[uid].size
    return {
        "enabled": user.enabled,
        "id": uid,
        "firstLoginTimestamp": user.first_login,
        "lastLoginTimestamp": user.first_login and user.first_login + 648,
        "lastLogin": (user.first_login and user.first_login + 648) * 1000,
        "backend": "Database",
        "subadmin": [],
        "quota": {"free": -3, "used": used, "total": -3, "relative": 0, "quota": -3},
        "manager": "",
        "avatarScope": "v2-federated",
        "email": user.email,
        "emailScope": "v2-federated",
        "additional_mail": [],
        "additional_mailScope": [],
        "displayname": user.display_name,
        "display-name": user.display_name,
        "displaynameScope": "v2-federated",
        **_profile_fields(),
        "groups": ["admin"] if user.admin else [],
        "language": user.language,
        "locale": user.locale,
        "timezone": "",
        "notify_email": None,
        "backendCapabilities": {"setDisplayName": True, "setPassword": True},
    }


async def current_user(request: Request) -> Response:
    nc, uid = _user(request)
    with nc.lock:
        return ocs_response(request, user_json(nc, uid))


async def user_info(request: Request) -> Response:
    nc, uid = _user(request)
    target = request.path_params["uid"]
    with nc.lock:
        if target not in nc.users:
            raise OcsError(404, "User does not exist")
        if target != uid and not nc.users[uid].admin:
            return ocs_response(request, {"id": target, "displayname": nc.display_name(target)})
        return ocs_response(request, user_json(nc, target))


async def capabilities(request: Request) -> Response:
    nc: State = request.app.state.nc
    identify(request, nc)
    data = json.loads((_DATA / "capabilities.json").read_text().replace("{base_url}", nc.base_url))
    if not nc.deck_webhooks_supported:
        data["capabilities"]["deck"]["version"] = "1.16.7"  # the Deck of Nextcloud 32: no card events
    return ocs_response(request, data)


async def status(request: Request) -> Response:
    """``status.php``: what clients probe before logging in; answered in maintenance mode too."""
    return json_response(
        {
            "installed": True,
            "maintenance": request.app.state.nc.maintenance.on,
            "needsDbUpgrade": False,
            "version": "34.0.1.2",
            "versionstring": "34.0.1",
            "edition": "",
            "productname": "Nextcloud",
            "extendedSupport": False,
        }
    )


async def search_providers(request: Request) -> Response:
    _user(request)
    return ocs_response(request, json.loads((_DATA / "search_providers.json").read_text()))


def share_json(nc: State, share: Share, viewer: str) -> dict[str, Any]:
    node = share.node
    path = nc.files.user_path(viewer, node)
    return {
        "id": str(share.id),
        "share_type": 0,
        "uid_owner": share.owner,
        "displayname_owner": nc.display_name(share.owner),
        "permissions": share.permissions,
        "can_edit": viewer == share.owner,
        "can_delete": True,
        "stime": share.stime,
        "parent": None,
        "expiration": None,
        "token": None,
        "uid_file_owner": node.owner,
        "note": "",
        "label": "",
        "displayname_file_owner": nc.display_name(node.owner),
        "path": "/" + (path or node.name),
        "item_type": "folder" if node.is_dir else "file",
        "item_permissions": 31 if node.is_dir else 27,
        "is-mount-root": False,
        "mount-type": "shared" if viewer != share.owner else "",
        "mimetype": node.mimetype,
        "has_preview": False,
        "storage_id": f"home::{node.owner}",
        "storage": 1,
        "item_source": node.id,
        "file_source": node.id,
        "file_parent": node.parent.id if node.parent else None,
        "file_target": "/" + share.target,
        "item_size": node.size,
        "item_mtime": int(node.mtime),
        "share_with": share.recipient,
        "share_with_displayname": nc.display_name(share.recipient),
        "share_with_displayname_unique": share.recipient,
        "status": [],
        "mail_send": 0,
        "hide_download": 0,
        "attributes": None,
        "tags": [],
    }


async def shares(request: Request) -> Response:
    nc, uid = _user(request)
    params = await request_params(request)
    with nc.lock:
        if request.method == "GET":
            received = str(params.get("shared_with_me", "")).lower() == "true"
            found = [
                s
                for s in nc.files.shares.values()
                if (s.recipient if received else s.owner) == uid
                and (not params.get("path") or nc.files.user_path(uid, s.node) == str(params["path"]).strip("/"))
            ]
            return ocs_response(request, [share_json(nc, s, uid) for s in found])
        if not params.get("path"):
            raise OcsError(404, "Please specify a file or folder path")
        if str(params.get("shareType", "0")) != "0":
            raise OcsError(400, "Unknown share type")
        recipient = str(params.get("shareWith", ""))
        if recipient not in nc.users:
            raise OcsError(404, "Please specify a valid account to share with")
        if recipient == uid:
            raise OcsError(403, "Sharing with yourself is not allowed")
        try:
            share = nc.files.share(uid, str(params["path"]), recipient, int(params.get("permissions") or 19))
        except DavError:
            raise OcsError(404, "Wrong path, file/folder does not exist") from None
        return ocs_response(request, share_json(nc, share, uid))


async def share_item(request: Request) -> Response:
    nc, uid = _user(request)
    share_id = request.path_params["share_id"]
    with nc.lock:
        share = nc.files.shares.get(share_id)
        if share is None or uid not in (share.owner, share.recipient):
            raise OcsError(404, "Wrong share ID, share does not exist")
        if request.method == "GET":
            return ocs_response(request, [share_json(nc, share, uid)])
        nc.files.unshare(share_id)
        return ocs_response(request, [])


_OCS = "/ocs/v{v:int}.php"
_SHARES = _OCS + "/apps/files_sharing/api/v1/shares"
ROUTES = [
    Route("/status.php", status, methods=["GET"]),
    Route(_OCS + "/cloud/user", current_user, methods=["GET"]),
    Route(_OCS + "/cloud/users/{uid}", user_info, methods=["GET"]),
    Route(_OCS + "/cloud/capabilities", capabilities, methods=["GET"]),
    Route(_OCS + "/search/providers", search_providers, methods=["GET"]),
    Route(_SHARES, shares, methods=["GET", "POST"]),
    Route(_SHARES + "/{share_id:int}", share_item, methods=["GET", "DELETE"]),
]
