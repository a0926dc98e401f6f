"""What the fake Nextcloud's own tests share (tests/app/test_fake_nextcloud*.py): the recordings of a real
Nextcloud 32 (../shared/nextcloud-32-wire), XML shapes to compare them by, and a throwaway Starlette app that
plays the ExApp.
"""

from __future__ import annotations

import asyncio
import base64
import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fixtures_fake_nextcloud import fake_nc  # noqa: F401  (fixture)
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from fake_nextcloud import FakeNextcloud
from fake_nextcloud.exapps import AA_VERSION
from fake_nextcloud.server import ServerThread

WIRE = Path(__file__).resolve().parents[2].parent / "shared" / "nextcloud-32-wire"
RECORDED_34 = Path(__file__).resolve().parents[1] / "recordings" / "nextcloud-34"  # recorded on 34.0.1 (README)
NS = {"d": "DAV:", "oc": "http://owncloud.org/ns", "nc": "http://nextcloud.org/ns", "s": "http://sabredav.org/ns",
      "cal": "urn:ietf:params:xml:ns:caldav", "cs": "http://calendarserver.org/ns/",
      "card": "urn:ietf:params:xml:ns:carddav"}
NODE = "OCP\\Files\\Events\\Node\\"
FILE_PROPS = (
    b'<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns">'
    b"<d:prop><d:getlastmodified/><d:getetag/><d:getcontenttype/><d:resourcetype/><oc:fileid/>"
    b"<oc:permissions/><oc:size/><d:getcontentlength/><nc:has-preview/><nc:system-tags/></d:prop></d:propfind>"
)
ROUTES = [
    {"url": "^mcp$", "verb": "GET,POST,DELETE", "access_level": 1, "headers_to_exclude": ["cookie"]},
    {"url": "^slow$", "verb": "GET", "access_level": 1, "headers_to_exclude": []},
    {"url": "^public$", "verb": "GET", "access_level": 0, "headers_to_exclude": []},
    {"url": "^admin$", "verb": "GET", "access_level": 2, "headers_to_exclude": []},
    {"url": "^/slash$", "verb": "GET", "access_level": 0, "headers_to_exclude": []},
    {"url": "^/first$", "verb": "GET", "access_level": 2, "headers_to_exclude": []},
    {"url": "^/first", "verb": "GET", "access_level": 0, "headers_to_exclude": []},
    {"url": "^\\/?escaped$", "verb": "GET", "access_level": 0, "headers_to_exclude": []},  # "\/" is fine in PHP's /…/
]


def recorded(name: str) -> tuple[int, dict[str, str], bytes]:
    lines = (WIRE / "http" / f"{name}.headers").read_text().splitlines()
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    body = (WIRE / "http" / f"{name}.body").read_bytes()
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


def recorded_json(name: str):
    return json.loads(recorded(name)[2])


def shape(xml: bytes) -> list[tuple[list[str], list[str]]]:
    """Per response: the 200 prop names and the 404 prop names."""
    out = []
    for response in ET.fromstring(xml).findall("d:response", NS):
        found, missing = [], []
        for propstat in response.findall("d:propstat", NS):
            names = [child.tag for child in propstat.find("d:prop", NS)]
            (found if "200" in propstat.findtext("d:status", "", NS) else missing).extend(names)
        out.append((sorted(found), sorted(missing)))
    return out


def hrefs(xml: bytes) -> list[str]:
    return [h.text or "" for h in ET.fromstring(xml).findall("d:response/d:href", NS)]


def client(nc: FakeNextcloud, user: str | None = "alice") -> httpx.Client:
    return httpx.Client(base_url=nc.url, auth=nc.auth(user) if user else None, timeout=10)


# ---- a throwaway ExApp --------------------------------------------------------------------------


class StubExApp:
    """Records every request; reports init progress through the fake's OCS API like nc_py_api."""

    def __init__(self, fake: FakeNextcloud, enable_error: str = "") -> None:
        self.fake, self.enable_error = fake, enable_error
        self.app_id, self.secret, self.version = "stub_exapp", "stub-secret", "1.0.0"
        self.received: list[dict] = []
        self.server = ServerThread()

        async def record(request: Request) -> Response:
            body = await request.body()
            self.received.append({"method": request.method, "path": request.url.path, "query": request.url.query,
                                  "headers": dict(request.headers), "body": body})
            path = request.url.path
            if path == "/init":
                return JSONResponse({}, background=BackgroundTask(self._report_progress))
            if path == "/enabled":
                return JSONResponse({"error": self.enable_error})
            if path == "/slow":

                async def chunks():
                    yield b"first\n"
                    await asyncio.sleep(1.0)
                    yield b"second\n"

                return StreamingResponse(chunks(), media_type="text/event-stream")
            return JSONResponse({"path": path, "headers": dict(request.headers)}, headers={"mcp-session-id": "s1"})

        self.app = Starlette(routes=[Route("/{path:path}", record, methods=["GET", "POST", "PUT", "DELETE"])])

    async def _report_progress(self) -> None:
        auth = base64.b64encode(f":{self.secret}".encode()).decode()
        headers = {"AUTHORIZATION-APP-API": auth, "EX-APP-ID": self.app_id, "EX-APP-VERSION": self.version,
                   "AA-VERSION": AA_VERSION, "OCS-APIRequest": "true"}
        async with httpx.AsyncClient() as http:
            for progress in (30, 100):
                await http.put(f"{self.fake.url}/ocs/v1.php/apps/app_api/ex-app/status?format=json",
                               json={"progress": progress, "error": ""}, headers=headers)

    def register(self) -> None:
        self.fake.register_exapp(self.app_id, self.server.url, self.secret, self.version, ROUTES)

    def paths(self) -> list[str]:
        return [f"{r['method']} {r['path']}" for r in self.received]


@pytest.fixture
def stub(fake_nc: FakeNextcloud) -> Iterator[StubExApp]:  # noqa: F811
    exapp = StubExApp(fake_nc)
    exapp.server.start(exapp.app)
    yield exapp
    exapp.server.stop()


@pytest.fixture
def registered(stub: StubExApp) -> StubExApp:
    stub.register()
    return stub
