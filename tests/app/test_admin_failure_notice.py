"""When items fail, the admins hear of it (issue 40, item 1) and ``occ semantic_mcp:why`` says why and when the
item is tried again (item 2): a document that hangs its parser is dead-lettered on a stack of this test's own."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import hostile
from stack import APP_ID, Stack

TIMEOUT = 3  # PARSER_TIMEOUT_SECONDS of this stack


def test_admins_are_told_of_failed_items_and_why_says_the_reason(tmp_path: Path) -> None:
    env = {"PARSER_TIMEOUT_SECONDS": str(TIMEOUT), "PARSER_WORKERS": "1", "RETRY_SECONDS": "0.25",
           "ADMIN_NOTIFY_CHECK_SECONDS": "1"}
    stack = Stack(tmp_path, profile="minimal", env=env).start()
    try:
        file_id = stack.fake.put_file("alice", "/Hostile/slow.html", hostile.slow_html())

        def told() -> list[tuple[str, dict]]:
            return [(user, params) for user, params in stack.fake.notifications(APP_ID)
                    if "could not index" in params["subject_params"]["rich_subject"]]

        notices = asyncio.run(stack.eventually(told, timeout=180, interval=1.0))
        assert [user for user, _ in notices] == ["admin"]
        assert notices[0][1]["subject_params"]["rich_subject"].startswith("Semantic MCP could not index 1 more item(s)")
        code, out = stack.fake.occ(APP_ID, "semantic_mcp:why", {"user": "alice", "item": f"file:{file_id}"},
                                   {"output": "json"})
        answer = json.loads(out)
        assert code == 0 and answer["state"] == "failed", answer
        assert answer["details"]["reason"] == f"parsing took longer than {TIMEOUT} s (stopped)"
        assert answer["details"]["next_try"].startswith("when the item changes")
        _, status = stack.fake.occ(APP_ID, "semantic_mcp:status", options={"output": "json"})
        alice = next(u for u in json.loads(status)["users"] if u["user"] == "alice")
        assert alice["sources"]["file"]["failed"] == 1
    finally:
        stack.stop()
