"""What the OAuth tests need around the app: a TLS host for client metadata documents on loopback,
a scripted browser that logs in to Nextcloud and answers the consent page, and the official SDK's
OAuth client wired to both. Works against the fake and against a real Nextcloud alike."""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import html
import ipaddress
import json
import re
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import httpx2
import pytest
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

REDIRECT_URI = "http://127.0.0.1:8765/callback"  # never listened on: the browser stops at the redirect


# --- TLS for a loopback metadata host ---------------------------------------------------------------


@dataclass(frozen=True)
class TLSFiles:
    ca: Path
    cert: Path
    key: Path


def make_certificates(directory: Path) -> TLSFiles:
    """A throwaway CA and a certificate for localhost / 127.0.0.1 signed by it."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "semantic_mcp test CA")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                     key_encipherment=False, data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                    x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    files = TLSFiles(directory / "ca.pem", directory / "cert.pem", directory / "key.pem")
    files.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))
    return files


@dataclass
class Document:
    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    chunks: int = 1  # >1: sent chunked, without Content-Length


class MetadataHost:
    """An HTTPS server on loopback serving client metadata documents (and misbehaving ones)."""

    def __init__(self, tls: TLSFiles) -> None:
        self.tls = tls
        self.documents: dict[str, Document] = {}
        self.base_url = ""
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> MetadataHost:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.base_url = f"https://localhost:{sock.getsockname()[1]}"
        app = Starlette(routes=[Route("/{path:path}", self._serve)])
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                ssl_certfile=str(self.tls.cert), ssl_keyfile=str(self.tls.key))
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert time.monotonic() < deadline, "metadata host did not start"
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server:
            self._server.should_exit = True
        if self._thread:
            self._thread.join(timeout=10)

    def client(self, path: str, name: str, redirect_uris: list[str] | None = None, **extra: Any) -> str:
        """Publish a well-formed client metadata document; returns its URL (the client id)."""
        url = f"{self.base_url}/{path}"
        document = {"client_id": url, "client_name": name, "redirect_uris": redirect_uris or [REDIRECT_URI],
                    "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
                    "token_endpoint_auth_method": "none", **extra}
        self.documents[path] = Document(json.dumps(document).encode(), headers={"content-type": "application/json"})
        return url

    async def _serve(self, request: Request) -> Response:
        document = self.documents.get(request.path_params["path"])
        if document is None:
            return Response(status_code=404)
        if document.delay:
            await asyncio.sleep(document.delay)
        if document.chunks > 1:
            from starlette.responses import StreamingResponse

            size = len(document.body) // document.chunks + 1

            async def parts() -> AsyncIterator[bytes]:
                for start in range(0, len(document.body), size):
                    yield document.body[start:start + size]

            return StreamingResponse(parts(), status_code=document.status, headers=document.headers)
        return Response(document.body, status_code=document.status, headers=document.headers)


# --- a browser, scripted over HTTP -------------------------------------------------------------------


@pytest.fixture(scope="module")
def metadata_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetadataHost]:
    """A loopback HTTPS host serving client metadata documents, with its own test CA (import it as a fixture)."""
    host = MetadataHost(make_certificates(tmp_path_factory.mktemp("tls"))).start()
    try:
        yield host
    finally:
        host.stop()


class ConsentRefused(AssertionError):
    """The app answered the authorization request without a consent page."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"{response.status_code} {response.headers.get('location', '')} {response.text[:300]}")
        self.response = response


class ScriptedBrowser:
    """Logs in to Nextcloud as a user (login page, CSRF token, login POST), then opens authorization
    URLs and answers the consent page, as a person in a browser would."""

    def __init__(self, nextcloud_url: str) -> None:
        self.nextcloud_url = nextcloud_url.rstrip("/")
        self.http = httpx.AsyncClient(follow_redirects=False, timeout=60)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def login(self, user: str, password: str, redirect_url: str | None = None) -> str:
        """Nextcloud's login as a browser does it; returns where Nextcloud sends the browser next."""
        page = await self.http.get(f"{self.nextcloud_url}/index.php/login")
        assert page.status_code == 200, page.status_code
        token = (await self.http.get(f"{self.nextcloud_url}/index.php/csrftoken")).json()["token"]
        form = {"user": user, "password": password, "requesttoken": token}
        if redirect_url:
            form["redirect_url"] = redirect_url
        done = await self.http.post(
            f"{self.nextcloud_url}/index.php/login", data=form, headers={"Origin": self.nextcloud_url},
        )
        assert done.status_code == 303 and "error" not in done.headers["location"], done.headers.get("location")
        return urljoin(self.nextcloud_url + "/", done.headers["location"])

    async def open(self, url: str, *, max_hops: int = 5) -> httpx.Response:
        """GET ``url`` and follow redirects and refresh pages that stay on Nextcloud (login and back)."""
        for _ in range(max_hops):
            response = await self.http.get(url)
            target = next_url(response)
            if target and target.startswith(self.nextcloud_url):
                url = target
                continue
            return response
        raise AssertionError("too many redirects")

    async def consent(self, authorization_url: str, decision: str = "approve") -> str:
        """Open the authorization URL and answer the consent page; returns the client redirect it leads to."""
        page = await self.open(authorization_url)
        if page.status_code != 200 or 'name="request_id"' not in page.text:
            raise ConsentRefused(page)
        form = consent_form(page.text)
        answer = await self.http.post(
            urljoin(str(page.url), form.pop("action")), data={**form, "decision": decision},
            headers={"Origin": self.nextcloud_url},
        )
        target = next_url(answer)
        assert target, (answer.status_code, answer.text[:300])
        return target


def next_url(response: httpx.Response) -> str | None:
    """Where a browser goes next: an HTTP redirect, or a refresh page (the app sends those, since
    AppAPI's proxy would follow a redirect itself)."""
    if response.status_code in (301, 302, 303, 307, 308) and "location" in response.headers:
        return urljoin(str(response.url), response.headers["location"])
    refresh = re.search(r'<meta http-equiv="refresh" content="0;url=([^"]+)">', response.text)
    return urljoin(str(response.url), html.unescape(refresh.group(1))) if refresh else None


def consent_form(page: str) -> dict[str, str]:
    fields = dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)"', page))
    fields["action"] = re.search(r'<form method="post" action="([^"]+)"', page).group(1)
    return fields


def code_from(redirect: str) -> AuthorizationCodeResult:
    query = {key: values[0] for key, values in parse_qs(urlsplit(redirect).query).items()}
    if "error" in query:
        raise AssertionError(f"authorization failed: {query}")
    return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))


def query_of(url: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}


# --- PKCE and the official SDK's OAuth client -------------------------------------------------------


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


class MemoryTokenStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@asynccontextmanager
async def sdk_oauth_client(
    mcp_url: str, browser: ScriptedBrowser, *, client_metadata_url: str | None = None, client_name: str = "Test client",
    storage: MemoryTokenStorage | None = None,
) -> AsyncIterator[tuple[Client, MemoryTokenStorage]]:
    """The official SDK client knowing only ``mcp_url``: it discovers, identifies itself (CIMD when
    ``client_metadata_url`` is given, else dynamic registration), sends the browser to consent, and
    exchanges the code."""
    storage = storage or MemoryTokenStorage()
    pending: list[str] = []

    async def redirect_handler(url: str) -> None:
        pending.append(url)

    async def callback_handler() -> AuthorizationCodeResult:
        return code_from(await browser.consent(pending.pop()))

    provider = OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=OAuthClientMetadata(
            client_name=client_name, redirect_uris=[REDIRECT_URI], grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=client_metadata_url,
    )
    http = httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30.0, read=120.0))
    async with http, Client(streamable_http_client(mcp_url, http_client=http)) as client:
        yield client, storage


async def connect_as(mcp_url: str, nextcloud_url: str, user: str, password: str) -> tuple[str, str, str]:
    """``user`` logs in to Nextcloud and consents to a registered client, which asks for its status
    as that user: (client id, access token, refresh token)."""
    browser = ScriptedBrowser(nextcloud_url)
    await browser.login(user, password)
    try:
        async with sdk_oauth_client(mcp_url, browser, client_name=f"{user}'s client") as (client, storage):
            status = await client.call_tool("nc_get_vector_sync_status", {})
    finally:
        await browser.aclose()
    assert status.structured_content["user"] == user
    return storage.client_info.client_id, storage.tokens.access_token, storage.tokens.refresh_token


# --- a clock the tests move --------------------------------------------------------------------------


class Clock:
    """Unix seconds that move only when the test moves them."""

    def __init__(self, start: datetime.datetime) -> None:
        self.now = start.timestamp()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(clock_start: datetime.datetime | None) -> Clock:
    """Starts today, or at each shifted instant for a ``clock_sensitive`` test (conftest.py); import it
    as a fixture."""
    return Clock(clock_start or datetime.datetime.now(datetime.UTC))
