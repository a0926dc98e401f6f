"""Semantic MCP deployed by AppAPI through HaRP on a real Nextcloud 34, as an admin installs it.

The pieces an admin runs (README "Install with HaRP"): Docker, HaRP in a container, a front proxy
that sends ``/exapps/`` to HaRP and the rest to Nextcloud, a HaRP deploy daemon registered in AppAPI,
and our image deployed from ``appinfo/info.xml`` with no ``--env``, as an app-store install does.
The only test-specific parts: images come from ``build.sh`` (no registry here; AppAPI is told the
image is local), Nextcloud is nc-kit's, and HaRP bans no IP (every test client is 127.0.0.1).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import httpx

from fake_nextcloud.exapp_process import APP_ID
from kit import RealNextcloud
from realstack import RealStack

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
KIT = SHARED / "nextcloud-34-server" / "nc-kit"
HARP_SRC = SHARED / "harp"
INFO_XML = REPO / "appinfo" / "info.xml"
ARTIFACTS = REPO / "tests" / "artifacts"
BASE_IMAGE = "semantic-mcp-base:bookworm"  # build.sh makes it: Debian bookworm + python3 3.11

DAEMON = "harp_local"
HARP_CONTAINER = "appapi-harp"
HARP_IMAGE = "harp-sid:0.4.4"  # build.sh makes it: HaRP 0.4.4 on Debian sid's haproxy 3.2 (ADR 0523)
SHARED_KEY = "harp-tier-shared-key-7d1f0c"
CONTAINER = f"nc_app_{APP_ID}"
VOLUME = f"nc_app_{APP_ID}_data"
HARP_EXAPPS = "127.0.0.1:8780"  # HaRP's HTTP entry for ExApps (and AppAPI's control calls)
HARP_FRP = "127.0.0.1:8782"  # where ExApps' frpc connect
FRONT_PORT = int(os.environ.get("HARP_FRONT_PORT") or 18000)


def missing() -> str | None:
    """Why the tier cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (Docker, HaRP)"
    for path in (KIT, HARP_SRC / "harp-0.4.4-src.tar.gz"):
        if not path.exists():
            return f"{path} not found"
    for tool in ("docker", "dockerd", "haproxy", "debootstrap"):
        if not shutil.which(tool):
            return f"{tool} not installed (make test installs it)"
    return None


def docker(*args: str, check: bool = True, timeout: float = 300) -> str:
    result = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise RuntimeError(f"docker {' '.join(args[:3])} failed: {result.stderr.strip()}")
    return result.stdout.strip()


class Dockerd:
    """The machine's dockerd, started here (host networking only, as CI has no bridge) if none runs."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.process: subprocess.Popen | None = None

    def start(self) -> Dockerd:
        if subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
            return self
        self.process = subprocess.Popen(
            ["dockerd", "--iptables=false", "--ip6tables=false", "--bridge=none"],
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"dockerd did not start; see {self.log}")
            time.sleep(0.5)
        return self

    def stop(self) -> None:
        if self.process:
            self.process.terminate()
            self.process.wait(timeout=60)


def container_log(container: str, since: str | None = None) -> str:
    """A container's output with Docker's timestamps, stdout and stderr merged in time order (HaRP's haproxy
    writes to one, its agent to the other); ``since``: a Unix time or RFC 3339 date."""
    args = ["docker", "logs", "-t", *(["--since", since] if since else []), container]
    result = subprocess.run(args, capture_output=True, text=True, timeout=30)
    lines = result.stdout.splitlines() + result.stderr.splitlines()
    return "\n".join(sorted(lines, key=lambda line: line.split(" ", 1)[0]))


def record(name: str, value: object) -> None:
    """Measured figures, kept in tests/artifacts/harp-figures.json (the README quotes them)."""
    path = ARTIFACTS / "harp-figures.json"
    ARTIFACTS.mkdir(exist_ok=True)
    figures = json.loads(path.read_text()) if path.exists() else {}
    figures[name] = value
    figures["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    path.write_text(json.dumps(figures, indent=2) + "\n")


def build_images(log: Path) -> str:
    """Our image's name as info.xml names it (cached by content: seconds when nothing changed)."""
    with log.open("a") as out:
        result = subprocess.run([str(Path(__file__).with_name("build.sh"))], stdout=subprocess.PIPE, stderr=out,
                                text=True, timeout=1800)
    if result.returncode != 0:
        raise RuntimeError(f"tests/harp/build.sh failed; see {log}")
    return result.stdout.strip().splitlines()[-1]


class FrontProxy:
    """The web server in front of Nextcloud: ``/exapps/`` to HaRP, the rest to Nextcloud (AppAPI calls
    HaRP ExApps at the daemon's Nextcloud URL + /exapps/). Debian's haproxy, as in ../shared/harp."""

    def __init__(self, workdir: Path, nextcloud_port: int) -> None:
        self.config = workdir / "front-haproxy.cfg"
        self.nextcloud_port = nextcloud_port
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{FRONT_PORT}"

    def start(self) -> FrontProxy:
        self.config.write_text(f"""defaults
    mode http
    timeout connect 10s
    timeout client 300s
    timeout server 300s
frontend front
    bind 127.0.0.1:{FRONT_PORT}
    use_backend harp if {{ path_beg /exapps/ }}
    default_backend nextcloud
backend harp
    server harp {HARP_EXAPPS}
backend nextcloud
    server nc 127.0.0.1:{self.nextcloud_port}
""")
        self.process = subprocess.Popen(["haproxy", "-f", str(self.config), "-db"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        return self

    def stop(self) -> None:
        if self.process:
            self.process.terminate()
            self.process.wait(timeout=30)


class HarpStack(RealStack):
    """Nextcloud 34 + front proxy + HaRP + our app deployed through AppAPI. Users, sharing and the
    admin's settings work as on the real tier's stack; the app's life cycle is AppAPI's and HaRP's."""

    def __init__(self, nc: RealNextcloud, workdir: Path, image: str) -> None:
        super().__init__(nc, workdir)
        self.image = image
        self.front = FrontProxy(workdir, nc.port)
        self.install_seconds = 0.0

    # --- what users and admins reach -------------------------------------------------------------

    @property
    def nextcloud_url(self) -> str:  # type: ignore[override]
        return self.front.url  # the one address users, AppAPI and the app all use

    @property
    def harp_mcp_url(self) -> str:
        """The MCP endpoint on HaRP's own path (through the front proxy), bypassing PHP."""
        return f"{self.front.url}/exapps/{APP_ID}/mcp"

    @property
    def storage(self) -> Path:  # type: ignore[override]
        """The app's persistent volume as Docker keeps it on this machine."""
        return Path(json.loads(docker("volume", "inspect", VOLUME))[0]["Mountpoint"])

    def log(self, since: str | None = None) -> str:
        """The app container's output (the app logs to stderr, frpc to stdout)."""
        return container_log(CONTAINER, since)

    def harp_log(self, since: str | None = None) -> str:
        """HaRP's output: haproxy's line per request (timers TR/Tw/Tc/Tr/Ta, status, termination state)
        and its SPOE agent's (which SPOA connection received each verdict request, where it rerouted)."""
        return container_log(HARP_CONTAINER, since)

    # --- the admin's steps ------------------------------------------------------------------------

    def start(self) -> HarpStack:
        # A run that was killed leaves its app container and volume; Nextcloud was reset, so they go too.
        docker("rm", "-f", CONTAINER, check=False)
        docker("volume", "rm", VOLUME, check=False)
        self.nc.occ("config:system:set", "trusted_domains", "20", f"--value=127.0.0.1:{FRONT_PORT}")
        self.front.start()
        self.start_harp()
        self.nc.occ("app_api:daemon:register", DAEMON, "HaRP", "docker-install", "http", HARP_EXAPPS,
                    self.front.url, "--net", "host", "--harp", "--harp_frp_address", HARP_FRP,
                    "--harp_shared_key", SHARED_KEY)
        # The image is already on this machine: AppAPI checks it exists and pulls nothing.
        registry = self.image.split("/")[0]
        self.nc.occ("app_api:daemon:registry:add", DAEMON, "--registry-from", registry, "--registry-to", "local")
        self.install_companion()  # the search bar's companion app, as on the real tier (docs/search-bar.md)
        return self

    def start_harp(self) -> None:
        docker("rm", "-f", HARP_CONTAINER, check=False)
        docker("run", "-d", "--name", HARP_CONTAINER, "--net", "host",
               "-e", f"HP_SHARED_KEY={SHARED_KEY}", "-e", f"NC_INSTANCE_URL={self.nc.url}",
               "-e", f"HP_EXAPPS_ADDRESS={HARP_EXAPPS}", "-e", f"HP_FRP_ADDRESS={HARP_FRP}",
               "-e", "HP_BLACKLIST_COUNT=100000",  # all test clients share 127.0.0.1
               # haproxy logs one line per request (timers, termination state) and the agent its verdicts:
               # a failed test prints them (conftest.py), so CI output says which hop stalled.
               "-e", "HP_LOG_LEVEL=info",
               "-v", "/var/run/docker.sock:/var/run/docker.sock", HARP_IMAGE)
        self.wait_healthy(HARP_CONTAINER, timeout=120)

    def install(self, info_xml: Path = INFO_XML, timeout: float = 600) -> float:
        """``occ app_api:app:register`` exactly as the app store's install does; returns its seconds."""
        started = time.monotonic()
        self.nc.occ("app_api:app:register", APP_ID, DAEMON, "--info-xml", str(info_xml), "--wait-finish",
                    timeout=timeout)
        took = time.monotonic() - started
        self.wait_enabled()
        return took

    def wait_enabled(self, timeout: float = 60) -> None:
        """Until the app has finished enabling: its webhook registrations are all there (the last
        thing its /enabled handler does), the same count twice in a row."""
        deadline = time.monotonic() + timeout
        last = -1
        while True:
            hooks = json.loads(self.nc.occ("webhook_listeners:list", "--output=json") or "[]")
            count = sum(1 for hook in hooks if hook.get("appId") == APP_ID)
            if count and count == last:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the app's webhooks not registered after {timeout}s ({count})")
            last = count
            time.sleep(2)

    def update(self, info_xml: Path, timeout: float = 600) -> None:
        self.nc.occ("app_api:app:update", APP_ID, "--info-xml", str(info_xml), "--wait-finish", timeout=timeout)
        self.wait_enabled()

    def unregister(self, *options: str) -> None:
        self.nc.occ("app_api:app:unregister", APP_ID, *options, timeout=300)

    def app_state(self) -> dict:
        """AppAPI's view of the app: enabled and init progress (``occ app_api:app:list``)."""
        listing = self.nc.occ("app_api:app:list")
        match = re.search(rf"^{APP_ID} \(([^)]*)\): ([^ ]+) \[(\w+)\]", listing, re.M)
        return {"listing": listing, "found": bool(match), "enabled": bool(match and match.group(3) == "enabled")}

    def init_status(self) -> dict:
        """AppAPI's status of the app as the admin's Apps page reads it (init progress, errors)."""
        response = httpx.get(f"{self.nc.url}/index.php/apps/app_api/apps/status/{APP_ID}", auth=self.admin_auth(),
                             headers={"OCS-APIRequest": "true"}, timeout=30)
        response.raise_for_status()
        return response.json()

    @staticmethod
    def wait_healthy(container: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            state = docker("inspect", "-f", "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}",
                           container, check=False)
            if state.endswith("healthy") and not state.endswith("unhealthy"):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{container} not healthy after {timeout}s: {state!r}")
            time.sleep(1)

    def reset(self) -> None:
        """Nothing to reset: one install per session, modules leave their content behind."""

    def stop(self) -> None:
        super().stop()  # the users' API clients (no ExApp process of ours: Docker runs the app)
        self.nc.occ("app_api:app:unregister", APP_ID, "--rm-data", "--silent", "--force", check=False)
        self.nc.occ("app_api:daemon:unregister", DAEMON, check=False)
        docker("rm", "-f", HARP_CONTAINER, CONTAINER, check=False)
        docker("volume", "rm", VOLUME, check=False)
        self.front.stop()
