"""``make demo`` is part of the contract: it must come up, index the sample content and answer."""

from __future__ import annotations

import os
import subprocess
import sys

from fake_nextcloud.exapp_process import REPO


def test_demo_starts_registers_indexes_and_answers(tmp_path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "lib"), str(REPO)])}
    run = subprocess.run(
        [sys.executable, "-m", "fake_nextcloud.demo", "--once", "--port", "0", "--exapp-port", "0",
         "--storage", str(tmp_path)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "indexing the sample content: 100%" in out
    assert "alice: 'When is my next dentist appointment?' -> Dentist appointment" in out
    assert "bob: 'What is the on-call rotation?' -> Operations handbook.md" in out
    assert "/index.php/apps/app_api/proxy/semantic_mcp/mcp" in out
