"""What the sources' unit tests share (tests/unit/test_sources*.py): the recordings of a real Nextcloud 32
(../shared/nextcloud-32-wire), served to the real NextcloudClient with pytest-httpx, and answers built in their
shape where none was recorded.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpx import HTTPXMock
from semantic_mcp.nextcloud.client import NS, NextcloudClient

WIRE = Path(__file__).resolve().parents[3] / "shared" / "nextcloud-32-wire"
BASE = "https://cloud.test"
NOTES = f"{BASE}/index.php/apps/notes/api/v1/notes"
DECK = f"{BASE}/index.php/apps/deck/api/v1.0"
CALENDARS = f"{BASE}/remote.php/dav/calendars/alice/"
BOOKS = f"{BASE}/remote.php/dav/addressbooks/users/alice/"
PERSONAL = f"{CALENDARS}personal/"


def recording(name: str) -> dict[str, Any]:
    """A recorded response as ``add_response`` arguments (hop-by-hop headers left out)."""
    status_line, *lines = (WIRE / "http" / f"{name}.headers").read_text().splitlines()
    headers = [tuple(line.split(": ", 1)) for line in lines if line]
    return {
        "status_code": int(status_line.split()[1]),
        "headers": [(k, v) for k, v in headers if k.lower() not in ("connection", "content-length")],
        "content": (WIRE / "http" / f"{name}.body").read_bytes(),
    }


def body(name: str) -> bytes:
    return (WIRE / "http" / name).read_bytes()


@pytest.fixture
async def nc() -> AsyncIterator[NextcloudClient]:
    client = NextcloudClient(BASE, lambda user: {"X-Test-User": user})
    yield client
    await client.aclose()


def sync_answer(changes: list[tuple[str, str | None]], token: str, *, truncated_at: str | None = None) -> bytes:
    """A sync-collection multistatus shaped like the recorded ``caldav_sync``: etag None means deleted."""
    parts = []
    for href, etag in changes:
        if etag is None:
            parts.append(f"<d:response><d:href>{href}</d:href><d:status>HTTP/1.1 404 Not Found</d:status></d:response>")
        else:
            parts.append(
                f"<d:response><d:href>{href}</d:href><d:propstat><d:prop><d:getetag>&quot;{etag}&quot;</d:getetag>"
                "</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"
            )
    if truncated_at:
        status = "HTTP/1.1 507 Insufficient Storage"
        parts.append(f"<d:response><d:href>{truncated_at}</d:href><d:status>{status}</d:status></d:response>")
    parts.append(f"<d:sync-token>{token}</d:sync-token>")
    return f'<?xml version="1.0"?><d:multistatus xmlns:d="DAV:">{"".join(parts)}</d:multistatus>'.encode()


# --- files: WebDAV SEARCH answers ------------------------------------------------------------

TAG = (
    '<nc:system-tags xmlns:nc="http://nextcloud.org/ns" xmlns:oc="http://owncloud.org/ns">'
    '<nc:system-tag oc:can-assign="true" oc:id="3" oc:user-assignable="true" oc:user-visible="true" nc:color="">'
    "{}</nc:system-tag></nc:system-tags>"
)


def search_answer(*file_ids: str, extra: dict[str, str] | None = None) -> bytes:
    """The recorded ``webdav_search`` cut down to some files, optionally with props added per file id
    (as a SEARCH by file id, or with ``nc:system-tags``/``oc:size`` selected, would answer)."""
    root = ET.fromstring(body("webdav_search.body"))
    for response in list(root):
        file_id = response.findtext("d:propstat/d:prop/oc:fileid", namespaces=NS)
        if file_ids and file_id not in file_ids:
            root.remove(response)
        elif extra and file_id in extra:
            response.find("d:propstat/d:prop", NS).append(ET.fromstring(extra[file_id]))
    return ET.tostring(root)


def search_body(request: Any) -> str:
    return request.content.decode()


def serve_search(httpx_mock: HTTPXMock, answer: bytes, **options: Any) -> None:
    httpx_mock.add_response(method="SEARCH", url=f"{BASE}/remote.php/dav/", status_code=207, content=answer, **options)


def serve_no_team_folders(httpx_mock: HTTPXMock) -> None:
    """The depth-1 PROPFIND a files listing makes for the user's team folders (ADR 0350): none here."""
    httpx_mock.add_response(method="PROPFIND", url=f"{BASE}/remote.php/dav/files/alice/", status_code=207,
                            content=b'<?xml version="1.0"?><d:multistatus xmlns:d="DAV:"/>', is_reusable=True)
