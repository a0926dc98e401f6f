"""Telling Nextcloud's admins something: who they are, and a notification to one of them.

AppAPI's notification endpoint notifies only the user a request is signed as (signed as the app
itself, Nextcloud answers 500), and an ExApp cannot list a group's members as itself: so each user's
own groups are asked as them, and each admin gets their own request."""

from __future__ import annotations

import logging
import time

from semantic_mcp.nextcloud.client import NextcloudClient

log = logging.getLogger(__name__)

NOTIFICATION_ENDPOINT = "/ocs/v1.php/apps/app_api/api/v1/notification"


async def is_admin(nc: NextcloudClient, user: str) -> bool:
    """Whether ``user`` is in Nextcloud's ``admin`` group; False when Nextcloud does not say."""
    if not user:
        return False
    try:
        data = await nc.ocs(user, "GET", "/ocs/v2.php/cloud/user")
    except Exception as exc:  # noqa: BLE001 - no answer: not treated as an admin
        log.info("Could not check whether %r is an admin: %s", user, exc)
        return False
    return "admin" in ((data or {}).get("groups") or [])


async def notify(nc: NextcloudClient, admin: str, subject: str, message: str = "", link: str = "") -> None:
    """One notification in ``admin``'s Nextcloud (raises what Nextcloud answered if it refuses)."""
    subject_params = {"rich_subject": subject, "rich_subject_params": {},
                      # braces would read as rich-text placeholders (an endpoint's JSON error)
                      "rich_message": message.replace("{", "(").replace("}", ")"), "rich_message_params": {}}
    if link:
        subject_params["link"] = link
    params = {"object": "semantic_mcp", "object_id": f"{int(time.time() * 1000)}", "subject_type": "semantic_mcp",
              "subject_params": subject_params}
    await nc.ocs(admin, "POST", NOTIFICATION_ENDPOINT, json={"params": params})
