"""Every tool call leaves one parseable line in the real Nextcloud 34's own log (nextcloud.log), with the app
id as its ``app``: refusals at warning (Nextcloud's default level keeps them), served calls at info (kept once
the admin names the app in ``log.condition``, as docs/operating.md says); never content, the query only
when the admin turns it on."""

from __future__ import annotations

import asyncio
import json
import shlex
from typing import Any

import pytest

from realstack import RealStack

from fake_nextcloud.exapp_process import APP_ID

NOTE = ("Osprey lease renewal", "The Osprey warehouse lease renews on 1 March for 36 months at 9,900 euros a month.")


def audit_lines(real: RealStack) -> list[dict[str, Any]]:
    """The app's tool_call records in nextcloud.log, each parsed as a log shipper's logfmt parser would."""
    found = []
    for entry in real.nc.log_lines():
        message = str(entry.get("message", ""))
        if entry.get("app") == APP_ID and message.startswith("tool_call "):
            event, *pairs = shlex.split(message)
            found.append({"level": entry.get("level"), **dict(pair.split("=", 1) for pair in pairs)})
    return found


async def line_for(real: RealStack, **wanted: str) -> dict[str, Any]:
    def match() -> dict[str, Any] | None:
        return next((line for line in reversed(audit_lines(real))
                     if all(line.get(key) == value for key, value in wanted.items())), None)
    return await real.eventually(match, timeout=30, interval=0.5)


@pytest.fixture(scope="module", autouse=True)
def content(real: RealStack) -> None:
    real.user("alice").create_note(*NOTE)
    asyncio.run(real.eventually(lambda: _found(real), timeout=90))


async def _found(real: RealStack) -> bool:
    return NOTE[0] in await real.titles("alice", "warehouse lease", doc_types=["note"])


async def test_a_refusal_is_in_nextclouds_log_at_its_default_level(real: RealStack) -> None:
    assert "'loglevel' => 2" in (real.nc.dir / "server" / "config" / "config.php").read_text()
    real.set_admin_field("default_scopes", "semantic:read")
    try:
        async def refused() -> bool:
            result = await real.call("bob", "nc_disable_vector_sync")
            return result.is_error and "semantic:write" in result.content[0].text
        await real.eventually(refused, timeout=30)
        line = await line_for(real, user="bob", tool="nc_disable_vector_sync", outcome="refused")
        assert line == {"level": 2, "user": "bob", "client": "app-password", "tool": "nc_disable_vector_sync",
                        "outcome": "refused", "reason": "scope"}
    finally:
        real.set_admin_field("default_scopes", "semantic:read, semantic:write")


async def test_every_served_call_is_logged_once_the_admin_names_the_app_in_log_condition(real: RealStack) -> None:
    real.nc.occ("config:system:set", "log.condition", "--value", json.dumps({"apps": [APP_ID]}), "--type", "json")
    try:
        result = await real.call("alice", "nc_semantic_search", {"query": "warehouse lease renewal", "limit": 3})
        assert not result.is_error
        hits = len(result.structured_content["results"])
        line = await line_for(real, user="alice", tool="nc_semantic_search", outcome="ok")
        assert line["level"] == 1 and line["client"] == "app-password" and line["results"] == str(hits)
        assert int(line["ms"]) > 0
        assert "query" not in line  # off by default
        logged = json.dumps(audit_lines(real))
        assert "Osprey" not in logged and "warehouse" not in logged  # neither content nor the question

        real.set_admin_field("audit_queries", True)
        await asyncio.sleep(2)  # the app reads its settings every second here
        await real.call("alice", "nc_semantic_search", {"query": "osprey rent per month", "limit": 3})
        line = await line_for(real, user="alice", query="osprey rent per month")
        assert line["outcome"] == "ok"
    finally:
        real.set_admin_field("audit_queries", False)
        real.nc.occ("config:system:delete", "log.condition")
