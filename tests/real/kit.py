"""A real Nextcloud 34.0.1 for the test suite, from ``../shared/nextcloud-34-server/nc-kit``.

Set up once per machine (PHP from Debian's packages on first use, ~1 min), then reset from a
pristine copy at the start of every test run, so runs do not see each other's leftovers. The
directory and port come from ``REAL_NC_DIR`` (default ``.nextcloud`` in the checkout) and
``REAL_NC_PORT`` (default 8089), so several checkouts or engineers can run their own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
KIT = Path(os.environ.get("NC_KIT") or REPO.parent / "shared" / "nextcloud-34-server" / "nc-kit")
USERS = ("admin", "alice", "bob")


class RealNextcloud:
    def __init__(self, directory: Path | None = None, port: int | None = None) -> None:
        self.dir = (directory or Path(os.environ.get("REAL_NC_DIR") or REPO / ".nextcloud")).resolve()
        self.port = port or int(os.environ.get("REAL_NC_PORT") or 8089)
        self.env: dict[str, str] = {}

    @staticmethod
    def available() -> bool:
        return KIT.is_file()

    # --- nc-kit ----------------------------------------------------------------------------------

    def kit(self, command: str, *args: str, timeout: float = 900) -> str:
        result = subprocess.run(
            [str(KIT), command, str(self.dir), *args], capture_output=True, text=True, timeout=timeout
        )
        if result.returncode != 0:
            raise RuntimeError(f"nc-kit {command} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
        return result.stdout

    def prepare(self) -> RealNextcloud:
        """A running instance in its pristine state (as nc-kit set it up: users, no ExApp)."""
        pristine = self.dir / "pristine"
        if not (self.dir / "env.sh").exists():
            self.dir.mkdir(parents=True, exist_ok=True)
            self.kit("setup", str(self.port))
        if not pristine.exists():  # right after setup: keep this state for every later run
            self.kit("save")
            shutil.copytree(self.dir / "snapshot", pristine, symlinks=True)
        else:
            shutil.rmtree(self.dir / "snapshot", ignore_errors=True)
            shutil.copytree(pristine, self.dir / "snapshot", symlinks=True)
            self.kit("restore")
        self.env = _read_env(self.dir / "env.sh")
        self.start()
        return self

    def save(self) -> None:
        self.kit("save")
        self.start()  # save restarts the services only if it saw them running: make sure they are

    def restore(self) -> None:
        self.kit("restore")
        self.start()

    def start(self) -> None:
        """Make sure all three services run: the web server, the webhook worker and cron.

        nc-kit's save/restore restart the services they stopped, but not always (seen under
        pytest), and a web server that answers says nothing about the webhook worker: without it,
        deliveries wait for the next cron run (60 s or more) and timing-based tests fail. nc-kit's
        status may also call a running service stopped for a moment (seen once in CI, the next
        status said running): only a service stopped in several checks in a row counts.
        """
        for attempt in range(4):
            if not self.stopped_services(checks=3):
                break
            if attempt == 3:
                raise RuntimeError(f"nc-kit services not running after 3 starts:\n{self.kit('status')}")
            try:
                self.kit("start")  # starts only what is not running
            except RuntimeError:  # it refuses a port that answers while it thinks the server is down
                self.kit("stop")
                self.kit("start")
        self.wait_up()

    def stopped_services(self, checks: int = 1) -> list[str]:
        """The services nc-kit reports as stopped (``php``, ``worker``, ``cron``) in each of ``checks``
        status calls half a second apart."""
        stopped: set[str] | None = None
        for check in range(checks):
            if check:
                time.sleep(0.5)
            now = {line.split(":")[0] for line in self.kit("status").splitlines() if line.endswith(": stopped")}
            stopped = now if stopped is None else stopped & now
            if not stopped:
                return []
        return sorted(stopped or ())

    def answers(self) -> bool:
        try:
            return '"installed":true' in httpx.get(f"http://127.0.0.1:{self.port}/status.php", timeout=3).text
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        self.kit("stop")

    # --- access ----------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self.env["NC_URL"]

    def app_password(self, user: str) -> str:
        return self.env[f"NC_{user.upper()}_APP_PASSWORD"]

    def login_password(self, user: str) -> str:
        return self.env[f"NC_{user.upper()}_PASSWORD"]

    def occ(self, *args: str, check: bool = True, timeout: float = 300) -> str:
        result = subprocess.run([self.env["NC_OCC"], *args], capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise RuntimeError(f"occ {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
        return result.stdout

    def ocs(self, method: str, path: str, user: str = "admin") -> Any:
        """An OCS call as ``user`` (app password); returns the answer's ``ocs.data``."""
        response = httpx.request(method, self.url + path, params={"format": "json"}, timeout=30,
                                 auth=(user, self.app_password(user)), headers={"OCS-APIRequest": "true"})
        response.raise_for_status()
        return response.json()["ocs"]["data"]

    def pending_webhook_jobs(self) -> int:
        out = self.occ("background-job:list", "--class", "OCA\\WebhookListeners\\BackgroundJobs\\WebhookCall",
                       "--output", "json")
        return len(json.loads(out or "[]"))

    def flush_webhooks(self, timeout: float = 60) -> None:
        """Wait until webhook_listeners has delivered every queued event (its worker runs in nc-kit)."""
        deadline = time.monotonic() + timeout
        while self.pending_webhook_jobs():
            if time.monotonic() > deadline:
                raise TimeoutError(f"webhook deliveries still queued after {timeout}s")
            time.sleep(0.5)

    def bruteforce_attempts(self, ip: str = "127.0.0.1") -> int:
        return int(json.loads(self.occ("security:bruteforce:attempts", ip, "--output", "json"))["attempts"])

    def log_lines(self) -> list[dict]:
        path = self.dir / "data" / "nextcloud.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(errors="replace").splitlines() if line.startswith("{")]

    def wait_up(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.answers():
                return
            time.sleep(0.3)
        raise TimeoutError("Nextcloud did not come up")


def _read_env(path: Path) -> dict[str, str]:
    env = {}
    for line in path.read_text().splitlines():
        if line.startswith("export ") and "=" in line:
            key, _, value = line[len("export "):].partition("=")
            env[key] = value.strip().strip("'")
    return env
