"""The system under test on a real Nextcloud 34: the real ExApp process, registered the way AppAPI does it.

``occ app_api:app:register … --json-info`` with the routes of ``appinfo/info.xml`` and
``--wait-finish`` on nc-kit's ``manual_install`` daemon; users reach the app through the real
AppAPI PHP proxy with their app passwords. After the first indexing pass the instance and the
app's storage are saved together, and :meth:`reset` brings both back between test modules.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from fake_nextcloud.appinfo import deploy_env_from_info_xml, json_info
from fake_nextcloud.exapp_process import APP_ID, ExAppProcess, free_port
from harness import McpHarness
from kit import RealNextcloud
from nextcloud_api import NextcloudUser

from semantic_mcp.sources.examples import DECK_SAMPLE_IMAGE

SECRET = "real-tier-secret-0123456789abcdef0123456789"
COMPANION = Path(__file__).resolve().parents[2] / "companion" / "semantic_search"
WELCOME_BOARD = "Welcome to Nextcloud Deck!"


class RealStack(McpHarness):
    def __init__(self, nc: RealNextcloud, workdir: Path, env: dict[str, str] | None = None) -> None:
        self.nc = nc
        self.workdir = workdir
        self.port = free_port()
        # The environment an app-store install deploys from info.xml, then the test's.
        self.env = {**deploy_env_from_info_xml(), "SETTINGS_REFRESH_SECONDS": "1", "APP_LOG_LEVEL": "INFO",
                    "COMPANION_CHECK_SECONDS": "1",
                    **(env or {})}
        self.exapp: ExAppProcess | None = None
        self._users: dict[str, NextcloudUser] = {}
        self.dirty = True  # False while Nextcloud and the storage are exactly as saved

    @property
    def nextcloud_url(self) -> str:  # type: ignore[override]
        return self.nc.url

    def app_password(self, user: str) -> str:
        return self.nc.app_password(user)

    def flush_events(self, timeout: float) -> None:
        self.nc.flush_webhooks(timeout)

    def user(self, name: str) -> NextcloudUser:
        """``name``'s own Nextcloud API calls (Notes, WebDAV, CalDAV, CardDAV, Deck, sharing)."""
        if name not in self._users:
            self._users[name] = NextcloudUser(self.nc.url, name, self.nc.app_password(name))
        return self._users[name]

    def share(self, owner: str, path: str, recipient: str, attempts: int = 3) -> int:
        """Share ``path`` and make sure the recipient sees it. On nc-kit's SQLite a share made while the
        server is busy can fail its "share created" event ("database is locked"): the share exists
        but never reaches the recipient. Such a share is made again."""
        for _ in range(attempts):
            share_id = self.user(owner).share(path, recipient)
            if self.user(recipient).exists(path.rpartition("/")[2]):
                return share_id
            self.user(owner).unshare(share_id)
        raise AssertionError(f"{recipient} never saw {path} shared by {owner}")

    # --- lifecycle --------------------------------------------------------------------------------

    def json_info(self) -> str:
        return json.dumps(json_info(SECRET, self.port))

    def register(self) -> None:
        self.nc.occ("app_api:app:register", APP_ID, "manual_install", "--json-info", self.json_info(), "--wait-finish")

    def unregister(self) -> None:
        self.nc.occ("app_api:app:unregister", APP_ID, "--silent", "--force", check=False)

    def start_exapp(self) -> ExAppProcess:
        self.exapp = ExAppProcess(
            self.nc.url, self.storage, secret=SECRET, port=self.port, log_path=self.workdir / "exapp.log",
            env=self.env,
        ).start()
        return self.exapp

    def stop_exapp(self) -> None:
        if self.exapp:
            self.exapp.stop()

    def start(self) -> RealStack:
        """Register on the pristine instance, wait for the first indexing pass, save both sides.

        The users open Deck first, as people do: Deck makes its welcome board on a user's first request
        and marks the first run done before it writes the board, so on nc-kit's SQLite a "database is
        locked" during the app's busy first pass would leave the board half made, never retried."""
        for user in ("alice", "bob", "admin"):
            self._open_deck_first(user)
        self.install_companion()
        self.start_exapp()
        self.register()
        try:  # within pytest-timeout's 300 s, so that the reason is printed
            asyncio.run(self.eventually(lambda: self._first_pass_done("alice"), timeout=240, interval=1.0))
        except AssertionError as exc:
            raise AssertionError("\n\n".join([f"first indexing pass not done: {exc}"] + [
                f"--- {title} ---\n{text}" for title, text in self.diagnostics()])) from None
        self.stop_exapp()
        self.nc.save()
        shutil.rmtree(self.workdir / "storage.saved", ignore_errors=True)
        shutil.copytree(self.storage, self.workdir / "storage.saved")
        self.start_exapp()
        self.dirty = False
        return self

    def install_companion(self) -> None:
        """The companion app (search bar, one-request re-checks) from this checkout, as an admin installs
        it by hand: copied into the server's apps folder, then enabled."""
        target = self.nc.dir / "server" / "apps" / COMPANION.name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(COMPANION, target)
        self.nc.occ("app:enable", COMPANION.name)

    def set_companion(self, enabled: bool) -> None:
        self.nc.occ("app:enable" if enabled else "app:disable", COMPANION.name)

    def _open_deck_first(self, user: str) -> None:
        """Deck's welcome board, whole: its sample image too, the board's last write. Even before the app
        runs, nc-kit's cron and webhook worker can lock the SQLite file ("Could not create default board
        | database is locked" in a CI run, the image missing): the half board goes, and Deck's first run
        is asked again."""
        client = self.user(user)
        for _ in range(3):
            boards = client.open_deck()
            if WELCOME_BOARD in boards and client.has_file(f"/Deck/{DECK_SAMPLE_IMAGE[0]}"):
                return
            if WELCOME_BOARD in boards:
                client.delete_board(boards[WELCOME_BOARD])
            self.nc.occ("user:setting", user, "deck", "firstRun", "yes")
        raise AssertionError(f"Deck made no whole welcome board for {user} in three tries")

    def diagnostics(self) -> list[tuple[str, str]]:
        """What the app and Nextcloud said lately, for a failure report: CI keeps only the test
        output, and timing failures there are otherwise impossible to explain."""
        app_lines = [line for line in self.log().splitlines()
                     if " INFO httpx:" not in line and " DEBUG " not in line][-60:]
        sections = [("semantic_mcp log (last 60 lines, no HTTP request lines)", "\n".join(app_lines))]
        try:
            nc_lines = [f"{entry.get('time')} {entry.get('app')} {str(entry.get('url'))[:80]}: "
                        f"{str(entry.get('message'))[:160]} {_exception_message(entry)[:200]}"
                        for entry in self.nc.log_lines()[-20:]]
        except ValueError as exc:  # a line being written right now
            nc_lines = [f"(unreadable: {exc})"]
        sections.append(("nextcloud.log (last 20 entries)", "\n".join(nc_lines)))
        try:
            sections.append(("nc-kit status", self.nc.kit("status", timeout=30)))
        except (RuntimeError, OSError) as exc:
            sections.append(("nc-kit status", f"(failed: {exc})"))
        worker = self.nc.dir / "logs" / "worker.log"
        if worker.exists():
            sections.append(("webhook worker log (last 15 lines)",
                             "\n".join(worker.read_text(errors="replace").splitlines()[-15:])))
        return sections

    def reset(self) -> None:
        """Nextcloud and the app's storage as they were right after the first indexing pass."""
        if not self.dirty:
            return
        self.stop_exapp()
        self.nc.restore()
        shutil.rmtree(self.storage, ignore_errors=True)
        shutil.copytree(self.workdir / "storage.saved", self.storage)
        self.start_exapp()
        self.dirty = False

    def stop(self) -> None:
        self.stop_exapp()
        for client in self._users.values():
            client.close()
        self._users.clear()


def _exception_message(entry: dict) -> str:
    """The exception's own message (e.g. "database is locked" under "Uncaught exception")."""
    exception = entry.get("exception")
    return f"| {exception.get('Message')}" if isinstance(exception, dict) and exception.get("Message") else ""
