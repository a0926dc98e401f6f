"""Who the client is: a Client ID Metadata Document (CIMD, the URL is the client id) or a client
registered with RFC 7591 dynamic registration; and which redirect URIs it may use.

A metadata document is fetched from the open internet on behalf of an anonymous caller, so the
fetch is bounded in every way that matters: HTTPS only, no redirects, a size cap, a total time
cap, the host's addresses checked (no loopback, private or link-local ones, also not inside a NAT64,
6to4, mapped or Teredo address, unless the admin allows them) and the connection pinned to the checked address, so DNS cannot switch it after
the check.

Both are anonymous work on our side (a stored registration, an outgoing fetch), so both have quotas
per caller network and hour (AppAPI's ``X-Origin-IP``: Nextcloud's view of the client, ``trusted_proxies``
applied; its IPv4 /24 or IPv6 /64), fetches also in total; never-used registrations are bounded in number.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from .addresses import is_public, network_of
from .errors import OAuthError
from .store import OAuthStore, digest, new_secret

MAX_DOCUMENT_BYTES = 5 * 1024  # the CIMD draft's suggested bound
FETCH_SECONDS = 5.0
CACHE_SECONDS = (300.0, 86400.0)  # bounds for Cache-Control max-age; default is the lower one
MAX_REDIRECT_URIS = 10
MAX_REGISTRATION_BYTES = 16 * 1024
AUTH_METHODS = ("none", "client_secret_post")
BLOCKED_SCHEMES = frozenset({"javascript", "data", "file", "vbscript", "about", "blob", "ftp", "ws", "wss"})
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*$")
QUOTA_WINDOW_SECONDS = 3600.0
# (per caller network, in total) per QUOTA_WINDOW_SECONDS; a fetch is counted when it is tried. A network is
# an IPv4 /24 or an IPv6 /64 (addresses.network_of): cycling through one's own addresses buys nothing.
# Registrations have no total: a total is a switch any caller can turn off for everyone (the review of issue
# 36 closed registration for an hour from one /64). What bounds them instead is MAX_UNUSED_REGISTRATIONS:
# beyond it the oldest registration nobody has authorized yet is dropped (store.add_client).
QUOTAS = {"registration": (30, None), "metadata document fetch": (30, 300)}


@dataclass(frozen=True)
class Client:
    client_id: str
    name: str
    redirect_uris: tuple[str, ...]
    auth_method: str  # one of AUTH_METHODS; metadata documents are always "none"
    secret_hash: str | None = None
    from_metadata_document: bool = False

    def redirect_uri_for(self, requested: str | None) -> str:
        """The registered redirect URI ``requested`` names (RFC 8252: a loopback one may change port)."""
        if requested is None:
            if len(self.redirect_uris) == 1:
                return self.redirect_uris[0]
            raise OAuthError("invalid_request", "redirect_uri is required: the client registered several")
        if any(redirect_uri_matches(registered, requested) for registered in self.redirect_uris):
            return requested
        raise OAuthError("invalid_request", "redirect_uri is not registered for this client")

    def check_secret(self, secret: str | None) -> bool:
        if self.auth_method == "none":
            return True
        return secret is not None and self.secret_hash is not None and secrets.compare_digest(
            digest(secret), self.secret_hash
        )


def is_metadata_document_url(client_id: str) -> bool:
    return client_id.startswith("https://")


def redirect_uri_allowed(uri: str) -> bool:
    """HTTPS anywhere, HTTP only on loopback, or a native app's private-use scheme (RFC 8252)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return False
    scheme = parts.scheme.lower()
    if not _SCHEME.match(scheme) or parts.fragment or scheme in BLOCKED_SCHEMES or len(uri) > 2000:
        return False
    if scheme == "https":
        return bool(parts.hostname)
    if scheme == "http":
        return parts.hostname in LOOPBACK_HOSTS
    return True


def redirect_uri_matches(registered: str, requested: str) -> bool:
    if registered == requested:
        return True
    reg, req = urlsplit(registered), urlsplit(requested)
    return (
        reg.scheme == req.scheme == "http"
        and reg.hostname in LOOPBACK_HOSTS
        and reg.hostname == req.hostname
        and reg.path == req.path
        and reg.query == req.query
    )


def _clean_name(value: Any, fallback: str) -> str:
    if not isinstance(value, str):
        return fallback
    cleaned = "".join(ch for ch in value if ch.isprintable()).strip()
    return cleaned[:100] or fallback


def _redirect_uris(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or len(value) > MAX_REDIRECT_URIS:
        raise OAuthError("invalid_redirect_uri", f"redirect_uris must list 1 to {MAX_REDIRECT_URIS} URIs")
    for uri in value:
        if not isinstance(uri, str) or not redirect_uri_allowed(uri):
            raise OAuthError("invalid_redirect_uri", f"redirect URI not allowed: {str(uri)[:200]!r}")
    return tuple(value)


@dataclass(frozen=True)
class MetadataPolicy:
    """Admin settings that decide which metadata documents may be fetched."""

    allowed_hosts: tuple[str, ...] = ()
    allow_private: bool = False

    def host_allowed(self, host: str) -> bool:
        if not self.allowed_hosts:
            return True
        host = host.lower()
        for entry in (h.lower() for h in self.allowed_hosts):
            if host == entry or (entry.startswith("*.") and host.endswith(entry[1:])):
                return True
        return False


class ClientRegistry:
    def __init__(self, store: OAuthStore, *, verify: ssl.SSLContext | None = None,
                 fetch_seconds: float = FETCH_SECONDS, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock  # the authorization server's: registrations, quotas and cached documents age by it
        self.fetch_seconds = fetch_seconds
        # The system trust store; OpenSSL honours SSL_CERT_FILE, which is how tests add their own CA.
        self._verify = verify or ssl.create_default_context()

    def _admit(self, kind: str, source: str) -> None:
        per_source, in_total = QUOTAS[kind]
        exhausted = self.store.admit_anonymous(kind, network_of(source), self.clock(), QUOTA_WINDOW_SECONDS,
                                               per_source, in_total)
        if exhausted:
            whose = "from your network" if exhausted == "source" else "on this server"
            raise OAuthError("temporarily_unavailable", f"too many client {kind}s {whose} in the last hour "
                             f"(at most {per_source if exhausted == 'source' else in_total}); try again later",
                             status=429)

    async def find(self, client_id: str, policy: MetadataPolicy, source: str = "") -> Client:
        """``source``: the caller's address, for the quota on fetching metadata documents."""
        if is_metadata_document_url(client_id):
            return await self._from_metadata_document(client_id, policy, source)
        found = self.store.client(client_id)
        if found is None:
            raise OAuthError("invalid_client", "unknown client_id", status=401)
        metadata, secret_hash = found
        return Client(
            client_id, metadata["client_name"], tuple(metadata["redirect_uris"]),
            metadata["token_endpoint_auth_method"], secret_hash,
        )

    # --- RFC 7591 dynamic registration

    def register(self, body: bytes, source: str = "") -> dict[str, Any]:
        if len(body) > MAX_REGISTRATION_BYTES:
            raise OAuthError("invalid_client_metadata", "registration request too large")
        try:
            request = json.loads(body)
        except ValueError as exc:
            raise OAuthError("invalid_client_metadata", "the body is not JSON") from exc
        if not isinstance(request, dict):
            raise OAuthError("invalid_client_metadata", "the body must be a JSON object")
        redirect_uris = _redirect_uris(request.get("redirect_uris"))
        # Basic credentials never reach us: Nextcloud takes them for a login and answers 401 itself.
        # So a client asking for client_secret_basic (RFC 7591's default) gets client_secret_post.
        method = request.get("token_endpoint_auth_method") or "client_secret_basic"
        if method == "client_secret_basic":
            method = "client_secret_post"
        if method not in AUTH_METHODS:
            raise OAuthError("invalid_client_metadata", f"token_endpoint_auth_method must be one of {AUTH_METHODS}")
        grant_types = request.get("grant_types") or ["authorization_code"]
        if not isinstance(grant_types, list) or not set(grant_types) <= {"authorization_code", "refresh_token"}:
            raise OAuthError("invalid_client_metadata", "only authorization_code and refresh_token grants exist here")
        if not set(request.get("response_types") or ["code"]) <= {"code"}:
            raise OAuthError("invalid_client_metadata", "only the code response type exists here")
        host = urlsplit(redirect_uris[0]).hostname or "unknown host"
        metadata = {
            "client_name": _clean_name(request.get("client_name"), host),
            "redirect_uris": list(redirect_uris),
            "token_endpoint_auth_method": method,
            "grant_types": grant_types,
            "response_types": ["code"],
        }
        self._admit("registration", source)  # only a well-formed request counts
        client_id = "dcr-" + secrets.token_urlsafe(18)
        secret = new_secret() if method != "none" else None
        now = self.clock()
        self.store.add_client(client_id, metadata, secret, now)
        answer: dict[str, Any] = {"client_id": client_id, "client_id_issued_at": int(now), **metadata}
        if secret:
            answer |= {"client_secret": secret, "client_secret_expires_at": 0}
        return answer

    # --- Client ID Metadata Documents

    async def _from_metadata_document(self, url: str, policy: MetadataPolicy, source: str) -> Client:
        document = await self.fetch_document(url, policy, source)
        return Client(
            url, _clean_name(document.get("client_name"), urlsplit(url).hostname or url),
            tuple(document["redirect_uris"]), "none", from_metadata_document=True,
        )

    async def fetch_document(self, url: str, policy: MetadataPolicy, source: str = "") -> dict[str, Any]:
        """The validated document, from the cache or fetched. The admin's policy (allowed hosts, private
        addresses) is applied on every use, so tightening it also stops documents cached earlier."""
        parts = urlsplit(url)
        host = parts.hostname
        if parts.scheme != "https" or not host or parts.path in ("", "/") or parts.fragment or parts.username:
            raise OAuthError("invalid_client", "a client_id URL must be https with a path and no fragment or credentials",
                             status=401)
        if not policy.host_allowed(host):
            raise OAuthError("invalid_client", f"client metadata host {host} is not allowed by the administrator",
                             status=401)
        try:
            async with asyncio.timeout(self.fetch_seconds):
                addresses = await self._addresses(host, parts.port or 443, policy)
                cached = self.store.cached_document(url, self.clock())
                if cached is not None:
                    return cached
                self._admit("metadata document fetch", source)
                response_body, max_age = await self._get(url, host, addresses)
        except TimeoutError as exc:
            raise OAuthError("invalid_client", f"client metadata document at {url} took too long", status=401) from exc
        document = self._validate(url, response_body)
        self.store.cache_document(url, document, self.clock() + max_age)
        return document

    @staticmethod
    def _validate(url: str, response_body: bytes) -> dict[str, Any]:
        try:
            document = json.loads(response_body)
        except ValueError as exc:
            raise OAuthError("invalid_client", "client metadata document is not JSON", status=401) from exc
        if not isinstance(document, dict) or document.get("client_id") != url:
            raise OAuthError("invalid_client", "client metadata document must name its own URL as client_id",
                             status=401)
        if (document.get("token_endpoint_auth_method") or "none") != "none" or "client_secret" in document:
            raise OAuthError("invalid_client", "client metadata documents are for public clients (auth method none)",
                             status=401)
        try:
            document["redirect_uris"] = list(_redirect_uris(document.get("redirect_uris")))
        except OAuthError as exc:
            raise OAuthError("invalid_client", f"client metadata document: {exc.description}", status=401) from exc
        return document

    async def _addresses(self, host: str, port: int, policy: MetadataPolicy) -> list[str]:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise OAuthError("invalid_client", f"client metadata host {host} does not resolve", status=401) from exc
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        for address in addresses:
            if not is_public(address) and not policy.allow_private:
                raise OAuthError(
                    "invalid_client", f"client metadata host {host} has a private or loopback address", status=401
                )
        return addresses

    async def _get(self, url: str, host: str, addresses: list[str]) -> tuple[bytes, float]:
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        last_error: Exception | None = None
        async with httpx.AsyncClient(verify=self._verify, follow_redirects=False, trust_env=False) as client:
            for address in addresses:
                netloc = f"[{address}]" if ":" in address else address
                request = client.build_request(
                    "GET", f"https://{netloc}:{parts.port or 443}{target}",
                    headers={"Host": parts.netloc, "Accept": "application/json"},
                    extensions={"sni_hostname": host},  # TLS and certificate checks still use the name
                )
                try:
                    response = await client.send(request, stream=True)
                except httpx.ConnectError as exc:
                    last_error = exc
                    continue
                except httpx.HTTPError as exc:
                    raise OAuthError("invalid_client", f"client metadata document: {exc}", status=401) from exc
                try:
                    return await self._read(response, url)
                finally:
                    await response.aclose()
        raise OAuthError("invalid_client", f"client metadata document unreachable: {last_error}", status=401)

    @staticmethod
    async def _read(response: httpx.Response, url: str) -> tuple[bytes, float]:
        if response.is_redirect:
            raise OAuthError("invalid_client", "client metadata document redirects; redirects are not followed",
                             status=401)
        if response.status_code != 200:
            raise OAuthError("invalid_client", f"client metadata document answered {response.status_code}", status=401)
        declared = response.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > MAX_DOCUMENT_BYTES:
            raise OAuthError("invalid_client", f"client metadata document exceeds {MAX_DOCUMENT_BYTES} bytes",
                             status=401)
        body = b""
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_DOCUMENT_BYTES:
                raise OAuthError("invalid_client", f"client metadata document exceeds {MAX_DOCUMENT_BYTES} bytes",
                                 status=401)
        return body, _max_age(response.headers.get("cache-control", ""))


def _max_age(cache_control: str) -> float:
    match = re.search(r"max-age=(\d+)", cache_control)
    low, high = CACHE_SECONDS
    return min(max(float(match.group(1)), low), high) if match else low
