"""The first indexing pass is visible to admins from the moment the app is enabled (issue 40, item 1):
``occ semantic_mcp:status`` says it lists content, then how far indexing is and how long it still needs,
then that it finished, while AppAPI's own init progress said 100 long before."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from fake_nextcloud import seed
from fake_nextcloud.appinfo import app_version, routes_from_info_xml
from stack import APP_ID, PUBLIC_HOST, Stack

FILES = 120


def test_the_first_pass_shows_its_progress_and_time_left_until_it_finishes(tmp_path: Path) -> None:
    stack = Stack(tmp_path, profile="minimal", env={"PARSER_WORKERS": "1"})
    try:
        stack.fake.start()
        seed(stack.fake, "minimal")
        for n in range(FILES):
            stack.fake.put_file("alice", f"/Reports/report-{n:03}.md",
                                f"# Report {n}\n\nThe survey of site {n} counted {n * 7} birds near the river.\n")
        stack.start_exapp()
        registering = threading.Thread(target=stack.fake.register_exapp, args=(
            APP_ID, stack.exapp.url, stack.exapp.secret, app_version(), routes_from_info_xml()),
            kwargs={"exapp_host": PUBLIC_HOST}, daemon=True)
        registering.start()
        seen: list[dict] = []
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if APP_ID in stack.fake.state.apps and stack.fake.exapp(APP_ID).enabled:
                code, out = stack.fake.occ(APP_ID, "semantic_mcp:status", options={"output": "json"})
                if code == 0:
                    seen.append(json.loads(out)["first_pass"])
                    if seen[-1]["phase"] == "finished":
                        break
            time.sleep(0.2)
        registering.join(timeout=60)
        phases = [s["phase"] for s in seen]
        print([(s["phase"], s["progress_percent"], s["seconds_left"]) for s in seen])
        assert phases and phases[-1] == "finished", phases
        indexing = [s for s in seen if s["phase"] == "indexing"]
        assert indexing, f"never seen indexing: {phases}"
        assert any(s["seconds_left"] is not None and s["seconds_left"] >= 0 for s in indexing), indexing
        progress = [s["progress_percent"] for s in indexing]
        assert progress == sorted(progress) and progress[-1] < 100  # it only moves forward
        assert 100 in stack.fake.init_progress(APP_ID)  # AppAPI's own progress was 100 before any of this
        assert seen[-1]["finished_at"] and seen[-1]["pending"] == 0
    finally:
        stack.stop()
