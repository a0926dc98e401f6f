"""Answers written by Nextcloud's own AI (TaskProcessing ``core:text2text``) when the client cannot sample.

Most MCP clients cannot sample. If the admin has installed an AI provider for Nextcloud's
Assistant, the answer tool schedules the same prompt there, as the calling user (the task is
theirs, counted against their rate limit and visible to them), and waits with a bound.

"No provider" is learned from the real server's answers (recorded on Nextcloud 32.0.1 without one):
``GET /ocs/v2.php/taskprocessing/tasktypes`` lists no ``core:text2text`` (``{"types":[]}``) and
``POST …/schedule`` answers 412 "The given provider is not available". That finding is kept for
:attr:`NextcloudAssistant.no_provider_ttl` seconds, so answer calls do not each pay a request for it.
Nextcloud does not say which provider app ran a task; the result names the task type as
Nextcloud lists it and that the provider is the one the admin configured.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from ..nextcloud.client import NextcloudClient, NextcloudError

log = logging.getLogger(__name__)

TEXT2TEXT = "core:text2text"
_OCS = "/ocs/v2.php/taskprocessing"
_OCS_HEADERS = {"OCS-APIRequest": "true", "Accept": "application/json"}
# Answered by Nextcloud for reasons that concern this call, not Nextcloud's health: read them here
# rather than letting the client treat them as an outage (429 is TaskProcessing's per-user limit).
_EXPECTED = (200, 400, 401, 404, 412, 429)


@dataclass(frozen=True)
class AssistantAnswer:
    text: str
    provider: str  # how the result names who wrote it
    task_id: int


@dataclass(frozen=True)
class AssistantUnavailable:
    reason: str


class NextcloudAssistant:
    def __init__(
        self,
        nc: NextcloudClient,
        app_id: str = "semantic_mcp",
        *,
        no_provider_ttl: float = 300.0,
        provider_ttl: float = 300.0,
        poll_interval: float = 0.5,
    ) -> None:
        self.nc = nc
        self.app_id = app_id
        self.no_provider_ttl = no_provider_ttl
        self.provider_ttl = provider_ttl
        self.poll_interval = poll_interval
        self._known: tuple[float, str | None] | None = None  # (valid until, task type name or None)

    def forget(self) -> None:
        """Ask Nextcloud again next time (e.g. after the admin installed a provider)."""
        self._known = None

    async def provider(self, user: str) -> str | None:
        """The name Nextcloud lists for ``core:text2text``, or None when no provider offers it."""
        now = time.monotonic()
        if self._known is not None and self._known[0] > now:
            return self._known[1]
        response = await self.nc.request(user, "GET", f"{_OCS}/tasktypes", headers=_OCS_HEADERS,
                                         params={"format": "json"}, ok=_EXPECTED)
        types = _ocs_data(response).get("types") if response.status_code == 200 else None
        entry = types.get(TEXT2TEXT) if isinstance(types, dict) else None  # PHP sends [] when empty
        name = str(entry.get("name") or TEXT2TEXT) if isinstance(entry, dict) else None
        self._known = (now + (self.provider_ttl if name else self.no_provider_ttl), name)
        if name is None:
            log.info("Nextcloud has no %s provider; answers without sampling list sources", TEXT2TEXT)
        return name

    async def answer(self, user: str, prompt: str, *, timeout: float) -> AssistantAnswer | AssistantUnavailable:
        """Schedule ``prompt`` as ``user``'s task and wait up to ``timeout`` seconds for its output."""
        try:
            name = await self.provider(user)
            if name is None:
                return AssistantUnavailable("Nextcloud has no AI provider for text generation")
            return await self._run(user, prompt, name, timeout)
        except NextcloudError as exc:  # unavailable, refused, or a request Nextcloud did not expect
            log.warning("Nextcloud's AI could not be asked for %s: %s", user, exc)
            return AssistantUnavailable(f"Nextcloud's AI could not be asked just now ({exc})")

    async def _run(self, user: str, prompt: str, name: str, timeout: float) -> AssistantAnswer | AssistantUnavailable:
        response = await self.nc.request(
            user, "POST", f"{_OCS}/schedule", headers=_OCS_HEADERS, params={"format": "json"}, ok=_EXPECTED,
            json={"type": TEXT2TEXT, "input": {"input": prompt}, "appId": self.app_id, "customId": "answer"},
        )
        if response.status_code == 412:
            self._known = (time.monotonic() + self.no_provider_ttl, None)
            return AssistantUnavailable("Nextcloud has no AI provider for text generation")
        if response.status_code != 200:
            message = _ocs_data(response).get("message") or f"HTTP {response.status_code}"
            return AssistantUnavailable(f"Nextcloud's AI refused the task: {message}")
        task = _ocs_data(response).get("task") or {}
        task_id = int(task.get("id") or 0)
        deadline = time.monotonic() + timeout
        while True:
            status = task.get("status")
            if status == "STATUS_SUCCESSFUL":
                text = str((task.get("output") or {}).get("output") or "").strip()
                if not text:
                    return AssistantUnavailable("Nextcloud's AI returned an empty answer")
                return AssistantAnswer(text, f"Nextcloud Assistant ({name}, the provider the admin configured)",
                                       task_id)
            if status in ("STATUS_FAILED", "STATUS_CANCELLED"):
                return AssistantUnavailable(f"Nextcloud's AI task {task_id} ended as {status.removeprefix('STATUS_').lower()}")
            if time.monotonic() + self.poll_interval > deadline:
                await self._cancel(user, task_id)
                return AssistantUnavailable(f"Nextcloud's AI did not answer within {timeout:g}s")
            await asyncio.sleep(self.poll_interval)
            polled = await self.nc.request(user, "GET", f"{_OCS}/task/{task_id}", headers=_OCS_HEADERS,
                                           params={"format": "json"}, ok=_EXPECTED)
            if polled.status_code != 200:
                return AssistantUnavailable(f"Nextcloud's AI task {task_id} is gone (HTTP {polled.status_code})")
            task = _ocs_data(polled).get("task") or {}

    async def _cancel(self, user: str, task_id: int) -> None:
        """A task nobody will read costs the provider for nothing."""
        try:
            await self.nc.request(user, "POST", f"{_OCS}/tasks/{task_id}/cancel", headers=_OCS_HEADERS,
                                  params={"format": "json"}, ok=_EXPECTED)
        except NextcloudError as exc:
            log.info("Could not cancel TaskProcessing task %s: %s", task_id, exc)


def _ocs_data(response: Any) -> dict[str, Any]:
    try:
        data = response.json()["ocs"]["data"]
    except (ValueError, KeyError, TypeError):
        return {}
    return data if isinstance(data, dict) else {}
