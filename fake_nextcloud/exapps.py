"""The ExApp record AppAPI keeps, and how AppAPI calls an ExApp: signed headers, Nextcloud's HTTP client.

The registry, lifecycle and proxy that use them are in :mod:`fake_nextcloud.appapi`; webhook
deliveries (:mod:`fake_nextcloud.webhooks`) are signed the same way.
"""

from __future__ import annotations

import base64
from collections import Counter
from dataclasses import dataclass, field

import httpx

AA_VERSION = "34.0.0"  # AppAPI on Nextcloud 34.0.1


def encode_pair(user: str, secret: str) -> str:
    """``user:secret`` in base64, as Basic auth and AppAPI's ``AUTHORIZATION-APP-API`` header carry it
    (read back by :func:`fake_nextcloud.auth.decode_pair`)."""
    return base64.b64encode(f"{user}:{secret}".encode()).decode()


@dataclass
class ExApp:
    app_id: str
    url: str
    secret: str
    version: str
    routes: list[dict]
    host: str
    proxy_mode: str = "buffered"
    enabled: bool = False
    init_progress: list[int] = field(default_factory=list)
    init_error: str = ""
    config: dict[str, str] = field(default_factory=dict)
    preferences: dict[str, dict[str, str]] = field(default_factory=dict)
    forms: dict[str, dict] = field(default_factory=dict)
    proxied: Counter = field(default_factory=Counter)
    logs: list[tuple[int, str]] = field(default_factory=list)
    occ_commands: dict[str, dict] = field(default_factory=dict)  # name -> AppAPI's stored registration
    notifications: list[tuple[str, dict]] = field(default_factory=list)  # (user, the params it sent)


def signed_headers(app: ExApp, user: str, request_id: str = "CLI", language: bool = True) -> dict[str, str]:
    """The headers AppAPI signs a request to an ExApp with, in the order AppAPI sends them."""
    headers = {
        "aa-version": AA_VERSION,
        "ex-app-id": app.app_id,
        "ex-app-version": app.version,
        "authorization-app-api": encode_pair(user, app.secret),
        "aa-request-id": request_id,
    }
    if language:
        headers["accept-language"] = "en"
    return headers


def crawler_client(timeout: float = 30.0) -> httpx.Client:
    """An HTTP client that sends only what Nextcloud's server-side client sends (no Accept,
    no Connection), identified as Nextcloud's crawler."""
    client = httpx.Client(timeout=timeout)
    for name in ("accept", "connection"):
        del client.headers[name]
    client.headers.update({"user-agent": "Nextcloud Server Crawler", "accept-encoding": "gzip"})
    return client
