"""Concurrent searches through a real Nextcloud 34's AppAPI proxy: searches/s, median and p95 per level.

    PYTHONPATH=lib:. .venv/bin/python bench/load.py [--clients 1,4,8,16] [--calls 10] [--mode legacy]

Sets up (or reuses) the nc-kit instance of the real test tier (``REAL_NC_DIR``, ``REAL_NC_PORT``;
PHP's built-in server with 4 workers, as nc-kit runs it), registers the app as AppAPI does, gives
alice and bob some notes and alice a file shared with bob, then runs each level: N concurrent
MCP clients (official Python SDK, one session each, 2025-11-25 by default as most clients are),
each making ``--calls`` ``nc_semantic_search`` calls as alice or bob in turn. Every hit is re-checked
as the caller, so each search makes the app call back into Nextcloud while the proxied request holds
a PHP worker. Reports failed calls and the app's verification counters for the level: hits
re-checked, own hits served unchecked (Nextcloud did not answer in time), shared hits withheld, and
searches that skipped re-checks while Nextcloud was saturated. Shared hits are never served unchecked.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "real")]

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
                      failures: list[str], offset: int) -> None:
    try:
        async with stack.client(user, mode=mode, read_timeout=120) as client:
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


async def level(stack: RealStack, clients: int, calls: int, mode: str) -> dict:
    before = (await stack.status("alice")).get("verification", {})
    latencies: list[float] = []
    failures: list[str] = []
    started = time.monotonic()
    await asyncio.gather(*(
        client_loop(stack, ("alice", "bob")[i % 2], calls, mode, latencies, failures, i * 3) for i in range(clients)
    ))
    elapsed = time.monotonic() - started
    after = (await stack.status("alice")).get("verification", {})
    delta = {key: after[key] - before.get(key, 0) for key in after}
    ordered = sorted(latencies)
    return {
        "clients": clients, "calls": clients * calls, "failed": len(failures),
        "per_second": len(latencies) / elapsed if elapsed else 0.0,
        "median_ms": statistics.median(ordered) * 1000 if ordered else float("nan"),
        "p95_ms": ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000 if ordered else float("nan"),
        "failures": failures[:3], **delta,
    }


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", default="1,4,8,16")
    parser.add_argument("--calls", type=int, default=10, help="calls per client and level")
    parser.add_argument("--mode", default="legacy", choices=["legacy", "auto"],
                        help="legacy: protocol 2025-11-25 (most clients); auto: 2026-07-28")
    args = parser.parse_args()
    nc = RealNextcloud().prepare()
    stack = RealStack(nc, Path(tempfile.mkdtemp(prefix="semantic-mcp-load-")), env={"APP_LOG_LEVEL": "WARNING"})
    stack.start()
    try:
        seed(stack)
        asyncio.run(wait_seeded(stack))
        print(f"Nextcloud 34.0.1 (nc-kit: PHP built-in server, 4 workers, SQLite); MCP protocol "
              f"{'2025-11-25' if args.mode == 'legacy' else '2026-07-28'}; {args.calls} searches per client\n")
        print("| clients | calls | failed | searches/s | median ms | p95 ms | hits re-checked | own served unchecked "
              "| shared withheld | searches short-circuited |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for clients in (int(c) for c in args.clients.split(",")):
            row = asyncio.run(level(stack, clients, args.calls, args.mode))
            print(f"| {row['clients']} | {row['calls']} | {row['failed']} | {row['per_second']:.1f} | "
                  f"{row['median_ms']:.0f} | {row['p95_ms']:.0f} | {row.get('checked', 0)} | "
                  f"{row.get('unverified_served', 0)} | {row.get('withheld', 0)} | "
                  f"{row.get('short_circuited_searches', 0)} |", flush=True)
            for failure in row["failures"]:
                print(f"    failure: {failure}", file=sys.stderr)
    finally:
        stack.stop()
        nc.stop()


if __name__ == "__main__":
    main()
