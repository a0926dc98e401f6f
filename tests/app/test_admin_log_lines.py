"""The app's log as an admin reads it (issue 40 item 5): a short indexing run and a few searches
(``make demo --once``) leave at INFO only lines that say what the app decided: what it will index
and remove, what it indexed, what it skipped or failed and why, and one record per tool call.
Requests, sessions and start-up steps are DEBUG."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from fake_nextcloud.exapp_process import REPO

LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (?P<level>[A-Z]+) (?P<logger>[\w.]+): (?P<message>.*)$")

# Every kind of line the app writes at INFO for such a run, by logger: each one is a decision or a
# change of the app's state an admin acts on.
DECISIONS = {
    "semantic_mcp": [r"Semantic MCP \S+ started; storage at ", r"Registering the app's \d+ webhooks$", r"Init finished: embedding model \S+ ready \(\d+ "
                     r"dimensions\); vector store ready$", r"Admin settings changed: \w+(, \w+)*$"],
    "semantic_mcp.nextcloud.health": [r"AppAPI confirmed the app's secret$", r"Nextcloud is usable again; resuming$",
                                      r"Nextcloud answers again after \d+ s unavailable$"],
    "semantic_mcp.nextcloud.companion": [r"The companion app semantic_search is (not )?enabled$"],
    "semantic_mcp.indexing.reconcile": [r"Reconciliation \w+ for \w+: \d+ to refresh, \d+ to remove"],
    "semantic_mcp.indexing.writing": [r"Indexing \d+ document\(s\): \d+ chunk\(s\), \d+ newly embedded$",
                                      r"Indexed \w+:\S+ for \w+: \d+ chunk\(s\)$"],
    "semantic_mcp.indexing.pipeline": [r"Not indexing \S+ for \w+: ", r"\S+ for \w+ is gone or no longer readable",
                                       r"Indexing \S+ for \w+ failed \(attempt \d+\), trying again later: "],
    "semantic_mcp.search.verify": [r"Nextcloud could not re-check \d+ hit\(s\) for \w+ in time",
                                   r"Dropped \d+ hit\(s\) \w+ can no longer open"],
    "semantic_mcp.engine": [r"Indexing pass started for \d+ user\(s\)$", r"Indexing pass finished: \d+ item\(s\)"],
    "semantic_mcp.audit": [r"tool_call user=\w+ client=\S+ tool=nc_\w+ outcome=ok( results=\d+)? ms=\d+$"],
    "ex_app.oauth_http": [r"Registered OAuth client 'Demo MCP client'$"],
}


def demo_log(storage: Path) -> list[tuple[str, str, str]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "lib"), str(REPO)])}
    env.pop("APP_LOG_LEVEL", None)
    run = subprocess.run(
        [sys.executable, "-m", "fake_nextcloud.demo", "--once", "--port", "0", "--exapp-port", "0",
         "--storage", str(storage)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    records = []
    for line in (storage / "exapp.log").read_text().splitlines():
        found = LINE.match(line)
        if found:  # a traceback's lines belong to the record above them
            records.append((found["level"], found["logger"], found["message"]))
    return records


def test_a_short_indexing_run_and_a_few_searches_leave_only_decisions_at_info(tmp_path: Path) -> None:
    records = demo_log(tmp_path)
    info = [(logger, message) for level, logger, message in records if level == "INFO"]
    undecided = [(logger, message) for logger, message in info
                 if not any(re.match(pattern, message) for pattern in DECISIONS.get(logger, ()))]
    assert undecided == []
    by_logger = Counter(logger for logger, _ in info)
    # The demo's two searches and its status polls: one audit line each, nothing else per request.
    searches = [message for logger, message in info if logger == "semantic_mcp.audit" and "nc_semantic_search" in message]
    assert len(searches) == 2, info
    assert by_logger["semantic_mcp"] <= 4, info  # started, webhooks registered, init finished, (settings changed)
    assert not [logger for _, logger, _ in records if logger.split(".")[0] in ("httpx", "httpcore", "mcp", "uvicorn")]
    # One line for each item indexed, and one for each batch embedded (its cost: how many chunks were new).
    [processed] = [int(re.search(r"(\d+) item", message)[1]) for logger, message in info
                   if message.startswith("Indexing pass finished")]
    indexed = [message for _, message in info if message.startswith("Indexed ")]
    assert len(indexed) == processed == 29, info
    assert 1 <= len([m for _, m in info if m.startswith("Indexing ") and "newly embedded" in m]) <= 10, info
    # 2 users x 5 sources, each with work to do (an event may ask for one more)
    assert 10 <= by_logger["semantic_mcp.indexing.reconcile"] <= 12, info
    print(f"INFO lines by logger: {dict(by_logger)}; all lines: {len(records)}")
