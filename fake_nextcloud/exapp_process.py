"""Run the real ExApp (``python -m ex_app.main``) as a child process, the way AppAPI's daemon would.

Used by the test suite and by ``make demo``. A separate process, not an in-process app, so that
tests exercise the real entry point, real environment handling, and can ``kill -9`` it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from .appinfo import REPO, app_version

APP_ID = "semantic_mcp"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ExAppProcess:
    def __init__(
        self,
        nextcloud_url: str,
        storage: Path,
        *,
        app_id: str = APP_ID,
        version: str | None = None,
        secret: str = "test-app-secret-0123456789abcdef",
        port: int | None = None,
        log_path: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.app_id = app_id
        self.version = version or app_version()
        self.secret = secret
        self.port = port or free_port()
        self.storage = storage
        self.log_path = log_path or storage.parent / f"{app_id}.log"
        self.env = {
            **os.environ,
            "APP_ID": app_id,
            "APP_VERSION": self.version,
            "APP_SECRET": secret,
            "APP_HOST": "127.0.0.1",
            "APP_PORT": str(self.port),
            "NEXTCLOUD_URL": nextcloud_url,
            "APP_PERSISTENT_STORAGE": str(storage),
            "PYTHONPATH": os.pathsep.join([str(REPO / "lib"), str(REPO)]),
            "HF_HUB_OFFLINE": "1",
            "ANONYMIZED_TELEMETRY": "False",
            **(env or {}),
        }
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> ExAppProcess:
        self.storage.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child process
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ex_app.main"], cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"ExApp exited with {self.process.returncode}; see {self.log_path}")
            try:
                if httpx.get(f"{self.url}/heartbeat", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"ExApp did not answer /heartbeat within {timeout}s; see {self.log_path}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def kill(self) -> None:
        """``kill -9``: no shutdown handlers run, as in a crash."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
