"""Concurrent searches through a real Nextcloud 34's AppAPI proxy: searches/s, median and p95 per level.

    PYTHONPATH=lib:. .venv/bin/python bench/load.py [--clients 1,4,8,16] [--calls 10] [--mode legacy] [--harp]
                                                    [--companion] [--window 10]

``--harp`` (root, Docker): the app deployed through HaRP on Nextcloud 34 as the HaRP test tier does
(tests/harp), each level run twice: through Nextcloud's proxy URL (PHP, then HaRP) and through
HaRP's own ``/exapps/semantic_mcp/mcp`` (no PHP worker held while the app works).

Sets up (or reuses) the nc-kit instance of the real test tier (``REAL_NC_DIR``, ``REAL_NC_PORT``;
PHP's built-in server with 4 workers, as nc-kit runs it), registers the app as AppAPI does, gives
alice and bob some notes and alice a file shared with bob, then runs each level: N concurrent
MCP clients (official Python SDK, one session each, 2025-11-25 by default as most clients are),
each making ``--calls`` ``nc_semantic_search`` calls as alice or bob in turn. Every hit is re-checked
as the caller, so each search makes the app call back into Nextcloud while the proxied request holds
a PHP worker. Reports failed calls and the app's verification counters for the level: hits
re-checked, own hits served unchecked (Nextcloud did not answer in time), shared hits withheld, and
searches that skipped re-checks while Nextcloud was saturated. Shared hits are never served unchecked.

``--companion``: each level three times in the same run (docs/search-bar.md, ADR 0370): MCP searches
with the companion app ``semantic_search`` disabled (each source re-checked with its own requests,
today's path), then enabled (a search's hits re-checked in one PHP request), then Nextcloud's search
bar (``/ocs/v2.php/search/providers/semantic_search/search``): the companion's provider asks the
ExApp and opens every hit as the user in process, so each search holds one PHP worker and never
waits for another. For the bar, "gave up" counts searches the provider answered empty because the
ExApp did not answer within its 2 s budget (Nextcloud's log), and "hits re-checked" the hits shown.

``--window S``: each path twice per level in the same run (ADR 0780): the admin's re-check window at 0
(every hit asked inside its search, the path before the window) and at S seconds (hits served on a
verdict Nextcloud gave as the caller at most S s before; "served on the window" counts them). A
changed window starts empty, so each run starts cold. The last column is the machine's 1-minute load
average when the row ended (2 cores, shared with other work).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "support"), str(ROOT / "tests" / "real")]

from kit import RealNextcloud  # noqa: E402
from realstack import RealStack  # noqa: E402

QUERIES = [
    "budget for the boat rental", "who covers the weekend on-call", "recipe with lentils and cumin",
    "train tickets to Vienna", "what did we decide about the roof repair", "quarterly sales figures",
    "dentist appointment", "wifi router password change", "birthday present ideas", "tax return documents",
    "pelican survey count", "meeting notes from the design review",
]
NOTES = [
    ("Boat rental", "The boat rental for the Heron trip costs 4,200 euros for two weeks."),
    ("On-call rota", "Weekend on-call: Bob covers December, Alice covers January."),
    ("Lentil soup", "Red lentils, cumin, onion and lemon; simmer for 25 minutes."),
    ("Vienna trip", "Train tickets to Vienna booked for 12 May, seats 41 and 42."),
    ("Roof repair", "We decided to replace the flashing first and the tiles next spring."),
    ("Sales Q3", "Quarterly sales figures: 1.2 million euros, up 8 percent."),
    ("Design review", "Meeting notes: the design review approved the new navigation."),
    ("Gift ideas", "Birthday present ideas: a kayak paddle, a book on birds."),
]


async def client_loop(stack: RealStack, user: str, calls: int, mode: str, latencies: list[float],
                      failures: list[str], offset: int, url: str | None) -> None:
    try:
        async with stack.client(user, mode=mode, read_timeout=120, url=url) as client:
            for i in range(calls):
                query = QUERIES[(offset + i) % len(QUERIES)]
                started = time.monotonic()
                try:
                    result = await client.call_tool("nc_semantic_search", {"query": query, "use_query_analysis": False})
                    if result.is_error:
                        failures.append(str(result.content)[:200])
                        continue
                except Exception as exc:  # noqa: BLE001 - a failed call is what this measures
                    failures.append(f"{type(exc).__name__}: {exc}"[:200])
                    continue
                latencies.append(time.monotonic() - started)
    except Exception as exc:  # noqa: BLE001
        failures.append(f"session: {type(exc).__name__}: {exc}"[:200])


async def level(stack: RealStack, clients: int, calls: int, mode: str, url: str | None = None) -> dict:
    before = (await stack.status("alice")).get("verification", {})
    latencies: list[float] = []
    failures: list[str] = []
    started = time.monotonic()
    await asyncio.gather(*(
        client_loop(stack, ("alice", "bob")[i % 2], calls, mode, latencies, failures, i * 3, url) for i in range(clients)
    ))
    elapsed = time.monotonic() - started
    after = (await stack.status("alice")).get("verification", {})
    delta = {key: after[key] - before.get(key, 0) for key in after if isinstance(after[key], int)}
    return {**_summary(clients, calls, latencies, failures, elapsed), **delta}


SEARCH_BAR = "/ocs/v2.php/search/providers/semantic_search/search"
GAVE_UP = "Semantic Search shows nothing"


async def bar_loop(stack: RealStack, user: str, calls: int, latencies: list[float], failures: list[str],
                   offset: int, shown: list[int]) -> None:
    """One person typing ``calls`` searches into Nextcloud's search bar, one after the other."""
    async with httpx.AsyncClient(base_url=stack.nc.url, auth=(user, stack.app_password(user)), timeout=120,
                                 headers={"OCS-APIRequest": "true"}) as http:
        for i in range(calls):
            query = QUERIES[(offset + i) % len(QUERIES)]
            started = time.monotonic()
            try:
                response = await http.get(SEARCH_BAR, params={"term": query, "format": "json", "limit": 10})
            except httpx.HTTPError as exc:
                failures.append(f"{type(exc).__name__}: {exc}"[:200])
                continue
            if response.status_code != 200:
                failures.append(f"HTTP {response.status_code}: {response.text[:150]}")
                continue
            latencies.append(time.monotonic() - started)
            shown.append(len(response.json()["ocs"]["data"]["entries"]))


async def bar_level(stack: RealStack, clients: int, calls: int) -> dict:
    gave_up_before = _gave_up(stack)
    latencies: list[float] = []
    failures: list[str] = []
    shown: list[int] = []
    started = time.monotonic()
    await asyncio.gather(*(
        bar_loop(stack, ("alice", "bob")[i % 2], calls, latencies, failures, i * 3, shown) for i in range(clients)
    ))
    return {**_summary(clients, calls, latencies, failures, time.monotonic() - started),
            "checked": sum(shown), "gave_up": _gave_up(stack) - gave_up_before}


def _gave_up(stack: RealStack) -> int:
    return sum(1 for entry in stack.nc.log_lines() if GAVE_UP in str(entry.get("message")))


def _summary(clients: int, calls: int, latencies: list[float], failures: list[str], elapsed: float) -> dict:
    ordered = sorted(latencies)
    return {
        "clients": clients, "calls": clients * calls, "failed": len(failures),
        "per_second": len(latencies) / elapsed if elapsed else 0.0,
        "median_ms": statistics.median(ordered) * 1000 if ordered else float("nan"),
        "p95_ms": ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000 if ordered else float("nan"),
        "failures": failures[:3],
    }


async def companion_is(stack: RealStack, state: str) -> bool:
    return (await stack.status("alice")).get("companion_app", {}).get("state") == state


def seed(stack: RealStack) -> None:
    for user in ("alice", "bob"):
        for title, text in NOTES:
            stack.user(user).create_note(f"{title} ({user})", text)
    stack.user("alice").put_file("pelican-survey.md", "# Pelican survey\n\nWe counted 312 pelicans at the estuary.")
    stack.share("alice", "/pelican-survey.md", "bob")
    stack.set_admin_field("reconcile_interval_minutes", 0.05)  # bob's index learns about the share


async def wait_seeded(stack: RealStack) -> None:
    await stack.eventually(lambda: _has(stack, "bob", "pelican survey count", "pelican-survey.md"), timeout=120)
    stack.set_admin_field("reconcile_interval_minutes", 15)
    for user in ("alice", "bob"):
        await stack.wait_idle(user)


async def _has(stack: RealStack, user: str, query: str, title: str) -> bool:
    return title in await stack.titles(user, query, score_threshold=0)  # found at all, whatever the cut-off


async def window_is(stack: RealStack, seconds: float) -> bool:
    return (await stack.status("alice")).get("recheck_window_seconds") == seconds


async def run_path(stack: RealStack, path: str | tuple | None, clients: int, calls: int, mode: str) -> dict:
    """One level on one path: a URL (None: the proxy), with --window ("window", seconds, URL), or with
    --companion (kind, companion enabled, URL)."""
    if isinstance(path, tuple) and path[0] == "window":
        _, seconds, url = path
        stack.set_admin_field("recheck_window_seconds", seconds)
        await stack.eventually(lambda: window_is(stack, seconds), timeout=60)
        return await level(stack, clients, calls, mode, url)
    if not isinstance(path, tuple):
        return await level(stack, clients, calls, mode, path)
    kind, companion, url = path
    stack.set_companion(companion)
    await stack.eventually(lambda: companion_is(stack, "installed" if companion else "not installed"), timeout=30)
    return await (bar_level(stack, clients, calls) if kind == "bar" else level(stack, clients, calls, mode, url))


def harp_stack(workdir: Path) -> tuple[RealStack, list]:
    """The HaRP tier's deployment (Docker, HaRP, Nextcloud 34, the app installed from info.xml)."""
    sys.path.insert(0, str(ROOT / "tests" / "harp"))
    from harpstack import KIT, Dockerd, HarpStack, build_images

    daemon = Dockerd(workdir / "dockerd.log").start()
    image = build_images(workdir / "build.log")
    nc = RealNextcloud(Path(os.environ.get("HARP_NC_DIR") or ROOT / ".nextcloud-harp"),
                       int(os.environ.get("HARP_NC_PORT") or 8102), kit=KIT).prepare()
    stack = HarpStack(nc, workdir, image).start()
    # The per-user request quota (600 a minute) is not what is measured. AppAPI passes a deploy option only
    # for a variable info.xml declares, so the bench installs from a copy that declares this one.
    info_xml = workdir / "info.xml"
    info_xml.write_text((ROOT / "appinfo" / "info.xml").read_text().replace(
        "\t\t</environment-variables>",
        "\t\t\t<variable><name>MCP_REQUESTS_PER_MINUTE</name><display-name>quota</display-name>"
        "<default>100000</default></variable>\n\t\t</environment-variables>"))
    stack.install(info_xml)
    return stack, [stack.stop, nc.stop, daemon.stop]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", default="1,4,8,16")
    parser.add_argument("--calls", type=int, default=10, help="calls per client and level")
    parser.add_argument("--mode", default="legacy", choices=["legacy", "auto"],
                        help="legacy: protocol 2025-11-25 (most clients); auto: 2026-07-28")
    parser.add_argument("--harp", action="store_true", help="deploy through HaRP; compare both paths")
    parser.add_argument("--window", type=float, default=None,
                        help="each path with the re-check window at 0 (before) and at this many seconds")
    parser.add_argument("--companion", action="store_true",
                        help="MCP without and with the companion app, then the search bar, at each level")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="semantic-mcp-load-"))
    if args.harp:
        stack, cleanup = harp_stack(workdir)
        paths = {"Nextcloud proxy (PHP → HaRP)": stack.mcp_url, "HaRP /exapps/": stack.harp_mcp_url}
        server = "Nextcloud 34.0.1 + HaRP 0.4.4"
    else:
        nc = RealNextcloud().prepare()
        # The per-user request quota (600 a minute) is not what is measured: 8 clients of one user pass it.
        stack = RealStack(nc, workdir, env={"APP_LOG_LEVEL": "WARNING", "MCP_REQUESTS_PER_MINUTE": "100000"})
        stack.start()
        cleanup = [stack.stop, nc.stop]
        paths = ({"MCP, companion off (per-source re-checks)": ("mcp", False, None),
                  "MCP, companion on (one-request re-checks)": ("mcp", True, None),
                  "search bar (OCS, re-checked in PHP)": ("bar", True, None)}
                 if args.companion else {"AppAPI proxy": None})
        server = "Nextcloud 34.0.1"
    if args.window is not None:
        paths = {f"{name}, {label}": ("window", seconds, url) for name, url in paths.items()
                 for label, seconds in (("window 0 (before)", 0), (f"window {args.window:g} s", args.window))}
    try:
        seed(stack)
        asyncio.run(wait_seeded(stack))
        print(f"{server} (nc-kit: PHP built-in server, 4 workers, SQLite); MCP protocol "
              f"{'2025-11-25' if args.mode == 'legacy' else '2026-07-28'}; {args.calls} searches per client\n")
        print("| path | clients | calls | failed | searches/s | median ms | p95 ms | hits re-checked "
              "| own served unchecked | shared withheld | searches short-circuited | bar gave up "
              "| served on the window | load avg |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for clients in (int(c) for c in args.clients.split(",")):
            for name, path in paths.items():
                row = asyncio.run(run_path(stack, path, clients, args.calls, args.mode))
                print(f"| {name} | {row['clients']} | {row['calls']} | {row['failed']} | {row['per_second']:.1f} | "
                      f"{row['median_ms']:.0f} | {row['p95_ms']:.0f} | {row.get('checked', 0)} | "
                      f"{row.get('unverified_served', 0)} | {row.get('withheld', 0)} | "
                      f"{row.get('short_circuited_searches', 0)} | {row.get('gave_up', '')} | "
                      f"{row.get('from_window', '')} | {os.getloadavg()[0]:.1f} |", flush=True)
                for failure in row["failures"]:
                    print(f"    failure: {failure}", file=sys.stderr)
    finally:
        for step in cleanup:
            step()


if __name__ == "__main__":
    main()
