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
    assert "alice asks 'When is my next dentist appointment?'\n    Dentist appointment - calendar event on 20" in out
    assert "bob asks 'What is the on-call rotation?'\n    Operations handbook.md - file, changed 20" in out
    assert "/index.php/apps/app_api/proxy/semantic_mcp/oauth/authorize?response_type=code&client_id=" in out
    assert "/index.php/apps/app_api/proxy/semantic_mcp/mcp" in out
