"""The system under test, assembled as in production: fake Nextcloud + the real ExApp process.

Tests talk to the app only as its users do: with the official MCP client through the fake
AppAPI proxy (or, for the streaming-path tests, on the app's own port with AppAPI headers), and
change content through the fake server's Nextcloud APIs.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from fake_nextcloud import FakeNextcloud, seed
from fake_nextcloud.exapp_process import APP_ID, ExAppProcess, app_version, routes_from_info_xml

# What a real deployment's proxy forwards: the public Nextcloud name, never 127.0.0.1.
PUBLIC_HOST = "cloud.example.com"


class Stack:
    def __init__(self, workdir: Path, *, profile: str = "demo", env: dict[str, str] | None = None) -> None:
        self.fake = FakeNextcloud(webhook_delay=0.02)
        self.workdir = workdir
        self.profile = profile
        self.env = {"SETTINGS_REFRESH_SECONDS": "0.5", "APP_LOG_LEVEL": "INFO", **(env or {})}
        self.exapp: ExAppProcess | None = None

    def start(self) -> Stack:
        self.fake.start()
        seed(self.fake, self.profile)
        self.start_exapp()
        self.fake.register_exapp(
            APP_ID, self.exapp.url, self.exapp.secret, app_version(), routes_from_info_xml(), exapp_host=PUBLIC_HOST
        )
        asyncio.run(self.wait_backfilled())
        return self

    async def wait_backfilled(self, timeout: float = 300.0) -> None:
        """The indexing pass that enabling the app starts has finished."""
        await self.eventually(
            lambda: self._backfill_done(), timeout=timeout, interval=0.5
        )

    async def _backfill_done(self) -> bool:
        return (await self.status("alice"))["initial_indexing_progress"] == 100

    def start_exapp(self) -> ExAppProcess:
        self.exapp = ExAppProcess(
            self.fake.url, self.workdir / "storage", log_path=self.workdir / "exapp.log", env=self.env,
        ).start()
        return self.exapp

    def stop(self) -> None:
        if self.exapp:
            self.exapp.stop()
        self.fake.stop()

    @property
    def mcp_url(self) -> str:
        return self.fake.proxy_url(APP_ID, "mcp")

    # --- MCP clients ------------------------------------------------------------------------------

    @asynccontextmanager
    async def client(
        self,
        user: str,
        *,
        mode: str = "auto",
        sampling_callback: Callable[..., Any] | None = None,
        direct: bool = False,
        bearer: bool = True,
        read_timeout: float = 120.0,
    ) -> AsyncIterator[Client]:
        """The official MCP client as ``user``: through the proxy with an app password, or ``direct``ly
        on the app's port (the streaming path) with AppAPI's headers."""
        if direct:
            token = base64.b64encode(f"{user}:{self.exapp.secret}".encode()).decode()
            headers = {"authorization-app-api": token, "ex-app-id": APP_ID, "ex-app-version": app_version(),
                       "aa-version": "32.0.0"}
            url = f"{self.exapp.url}/mcp"
        else:
            headers = self.fake.auth_headers(user, bearer=bearer)
            url = self.mcp_url
        http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=read_timeout))
        async with http, Client(
            streamable_http_client(url, http_client=http), mode=mode, sampling_callback=sampling_callback
        ) as client:
            yield client

    async def call(self, user: str, tool: str, args: dict[str, Any] | None = None, **client_options: Any) -> Any:
        async with self.client(user, **client_options) as client:
            return await client.call_tool(tool, args or {})

    async def search(self, user: str, query: str, **args: Any) -> dict[str, Any]:
        result = await self.call(user, "nc_semantic_search", {"query": query, "use_query_analysis": False, **args})
        assert not result.is_error, result.content
        return result.structured_content

    async def status(self, user: str) -> dict[str, Any]:
        result = await self.call(user, "nc_get_vector_sync_status")
        assert not result.is_error, result.content
        return result.structured_content

    async def titles(self, user: str, query: str, **args: Any) -> list[str]:
        return [hit["title"] for hit in (await self.search(user, query, **args))["results"]]

    async def wait_idle(self, user: str, timeout: float = 120.0) -> dict[str, Any]:
        """Wait until webhooks are delivered and nothing is pending for ``user``."""
        self.fake.webhooks.flush(timeout)
        deadline = time.monotonic() + timeout
        while True:
            status = await self.status(user)
            if sum(source["pending"] for source in status["sources"].values()) == 0:
                return status
            if time.monotonic() > deadline:
                raise TimeoutError(f"still pending after {timeout}s: {status['sources']}")
            await asyncio.sleep(0.3)

    async def eventually(self, check: Callable[[], Any], timeout: float = 60.0, interval: float = 0.4) -> Any:
        """Await ``check()`` until it returns something truthy (it may be sync or async)."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if asyncio.iscoroutine(value):
                value = await value
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not met within {timeout}s; last value {value!r}")
            await asyncio.sleep(interval)

    def log(self) -> str:
        return self.exapp.log_text() if self.exapp else ""
