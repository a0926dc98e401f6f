"""Threat: a malicious document, on a real Nextcloud 32. The issue's event (every hour, minute and second
since 1900: billions of instances) saved through CalDAV froze the app: heartbeat and every user's
search stopped answering. Now it is parsed in a bounded worker process (ADR 0510).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from urllib.parse import quote

import httpx

from realstack import RealStack

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "security"))
import hostile  # noqa: E402

HEARTBEAT_BOUND, SEARCH_BOUND = 5.0, 30.0


async def test_an_event_recurring_billions_of_times_freezes_nobody(real: RealStack) -> None:
    alice = real.user("alice")
    path = f"/remote.php/dav/calendars/{quote('alice')}/personal/tick.ics"
    alice._ok(alice.http.put(path, content=hostile.billion_instance_event().encode(),
                             headers={"Content-Type": "text/calendar; charset=utf-8"}))
    deadline = time.monotonic() + 180
    while True:
        started = time.monotonic()
        assert httpx.get(f"{real.exapp.url}/heartbeat", timeout=HEARTBEAT_BOUND).status_code == 200
        await asyncio.wait_for(real.search("bob", "meeting"), SEARCH_BOUND)
        assert time.monotonic() - started < HEARTBEAT_BOUND + SEARCH_BOUND
        rows = real.db_rows("SELECT 1 FROM documents WHERE user = 'alice' AND source_id = 'personal/tick.ics'")
        if rows:
            break
        assert time.monotonic() < deadline, "the event was not indexed"
        await asyncio.sleep(1)
    assert (await real.status("alice"))["failures"] == []
