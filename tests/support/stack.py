"""The system under test, assembled as in production: fake Nextcloud + the real ExApp process.

Tests talk to the app only as its users do (see :class:`harness.McpHarness`), and change content
through the fake server's Nextcloud APIs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from fake_nextcloud import FakeNextcloud, seed
from fake_nextcloud.appinfo import app_version, deploy_env_from_info_xml, routes_from_info_xml
from fake_nextcloud.clock import Clock
from fake_nextcloud.exapp_process import APP_ID, ExAppProcess
from harness import McpHarness
from semantic_mcp.core.clock import SHIFT_VARIABLE

__all__ = ["APP_ID", "PUBLIC_HOST", "Stack", "on_own_stack"]

# What a real deployment's proxy forwards: the public Nextcloud name, never 127.0.0.1.
PUBLIC_HOST = "cloud.example.com"


class Stack(McpHarness):
    def __init__(
        self, workdir: Path, *, profile: str = "demo", env: dict[str, str] | None = None, clock: Clock | None = None
    ) -> None:
        self.fake = FakeNextcloud(webhook_delay=0.02, clock=clock)
        self.workdir = workdir
        self.profile = profile
        # The environment an app-store install deploys from info.xml (AppAPI 34's quirks included), then the test's;
        # the app runs on the fake's clock, so the seed, Nextcloud and the app agree on "now"
        self.env = {**deploy_env_from_info_xml(), "SETTINGS_REFRESH_SECONDS": "0.5", "APP_LOG_LEVEL": "INFO",
                    SHIFT_VARIABLE: repr(self.fake.clock.shift_seconds), **(env or {})}
        self.exapp: ExAppProcess | None = None

    @property
    def nextcloud_url(self) -> str:  # type: ignore[override]
        return self.fake.url

    def now(self) -> datetime:
        """The instant the seed, the fake Nextcloud and the app agree on (the fake's clock)."""
        return self.fake.clock.now()

    def app_password(self, user: str) -> str:
        return self.fake.password(user)

    def flush_events(self, timeout: float) -> None:
        self.fake.webhooks.flush(timeout)

    def start(self, before_app: Callable[[FakeNextcloud], None] | None = None) -> Stack:
        """Start the fake, seed it, let ``before_app`` add to it, then register the app and wait for
        its first indexing pass (which then sees what ``before_app`` made)."""
        self.fake.start()
        seed(self.fake, self.profile)
        if before_app:
            before_app(self.fake)
        self.start_exapp()
        self.fake.register_exapp(
            APP_ID, self.exapp.url, self.exapp.secret, app_version(), routes_from_info_xml(), exapp_host=PUBLIC_HOST
        )
        asyncio.run(self.wait_backfilled())
        return self

    async def wait_backfilled(self, timeout: float = 300.0) -> None:
        """The indexing pass that enabling the app starts has finished."""
        await self.eventually(lambda: self._first_pass_done("alice"), timeout=timeout, interval=0.5)

    def start_exapp(self) -> ExAppProcess:
        self.exapp = ExAppProcess(
            self.fake.url, self.workdir / "storage", log_path=self.workdir / "exapp.log", env=self.env,
        ).start()
        return self.exapp

    def stop(self) -> None:
        if self.exapp:
            self.exapp.stop()
        self.fake.stop()


def on_own_stack(workdir: Path, scenario: Callable[[Stack], Awaitable[None]], **options: Any) -> None:
    """Run ``scenario`` on a stack of its own (``options`` as for :class:`Stack`), stopped afterwards:
    for sync tests whose stack needs settings the shared fixtures do not have."""
    stack = Stack(workdir, **options).start()
    try:
        asyncio.run(scenario(stack))
    finally:
        stack.stop()
