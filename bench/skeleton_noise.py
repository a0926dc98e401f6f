"""How much Nextcloud's example files (the account skeleton) get in the way of search.

Every new Nextcloud account starts with ~60 example files (``core/skeleton``: Readme files, a
flyer, example documents and photos, ~40 office templates and "Templates credits.md"). This
measures what they do to the results of questions about the user's own content:

* The fake Nextcloud with the demo accounts (alice and bob), plus the *whole* skeleton of
  Nextcloud 32.0.1 copied byte for byte into both homes, as a first login does (read from the
  release tarball in ``../shared/nextcloud-32-server``, or ``--skeleton-dir``).
* The real ExApp process, indexing through its own sources and text extraction (the app
  extracts what it supports: Markdown, PDF, DOCX, ODT; not ODS/ODP/ODG, whiteboards, images).
* 35 questions a user asks about their own content, each with the item(s) that answer it,
  plus 5 that nothing in the account answers. Through MCP, ``nc_semantic_search``, top 10,
  no sampling (as most clients).
* Twice: with the example files indexed (admin setting ``index_nextcloud_examples`` on) and
  left out (the default), on the same index, switched at run time.

Reported per mode: queries with an example file in the top 1 / 5 / 10, mean example files per
top 10, and for answerable queries success@1 and MRR@10 of the user's own answer.

``--real``: the same on a real Nextcloud 32.0.1 (nc-kit, ``REAL_NC_DIR``/``REAL_NC_PORT`` as for the
real test tier), where alice's first login created the skeleton; her own content is a part of the
demo account (notes, files, events, a contact, a Deck card) created through Nextcloud's APIs, and
only the questions it answers (plus the unanswerable ones) are asked.

    PYTHONPATH=lib:.:tests python bench/skeleton_noise.py [--skeleton-dir DIR | --real]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tarfile
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "lib"), str(ROOT), str(ROOT / "tests" / "support"), str(ROOT / "tests" / "real")]

from semantic_mcp.sources.examples import NEXTCLOUD_32_SKELETON  # noqa: E402
from stack import APP_ID, Stack  # noqa: E402

TARBALL = ROOT.parent / "shared" / "nextcloud-32-server" / "nextcloud-32.0.1.tar.xz"
SKELETON_PREFIX = "nextcloud/core/skeleton/"

# (user, question, titles that answer it; empty: nothing in the account does)
QUERIES: list[tuple[str, str, set[str]]] = [
    ("alice", "When is my next dentist appointment?", {"Dentist appointment"}),
    ("alice", "pancake recipe", {"Pancakes"}),
    ("alice", "how do I make breakfast crepes", {"Pancakes"}),
    ("alice", "Q3 planning: how many engineers are we hiring?", {"Meeting notes"}),
    ("alice", "When is the budget review?", {"Meeting notes"}),
    ("alice", "What are the risks of Project Phoenix?", {"Project plan.md"}),
    ("alice", "migration of old invoices", {"Project plan.md"}),
    ("alice", "who brings the barbecue to the garden party", {"Shared with Bob.md"}),
    ("alice", "release notes for the blog", {"Write release notes"}),
    ("alice", "where is the search workshop", {"Search workshop in Berlin"}),
    ("alice", "Carol's phone number", {"Carol Jones"}),
    ("alice", "who fixed the kitchen sink", {"Dave Miller"}),
    ("alice", "partner manager for the pilot", {"Erin Schmidt"}),
    ("alice", "travel ideas for spring", {"Travel ideas"}),
    ("alice", "which database do we use for billing", {"Architecture decisions"}),
    ("alice", "quarterly revenue growth", {"Quarterly report.txt"}),
    ("alice", "who leads the platform group", {"Team page.html"}),
    ("alice", "how does semantic search work", {"Whitepaper.pdf"}),
    ("alice", "infrastructure budget increase", {"Proposal.docx"}),
    ("alice", "where do the holiday photos go", {"README.txt"}),
    ("alice", "book a venue for the launch", {"Book launch venue"}),
    ("alice", "short notes rank above long documents", {"Fix search ranking"}),
    ("alice", "staging server", {"Set up staging server"}),
    ("alice", "weekly team meeting", {"Weekly team meeting"}),
    ("alice", "agenda of our team meeting", {"Weekly team meeting", "Meeting notes"}),
    ("alice", "meeting notes", {"Meeting notes"}),
    ("alice", "project plan", {"Project plan.md"}),
    ("alice", "report", {"Quarterly report.txt"}),
    ("alice", "calendar", {"Dentist appointment", "Weekly team meeting", "Search workshop in Berlin"}),
    ("alice", "product launch tasks", {"Write release notes", "Book launch venue", "Fix search ranking"}),
    ("bob", "What is the on-call rotation?", {"Operations handbook.md"}),
    ("bob", "paint the hallway", {"Paint the hallway"}),
    ("bob", "when is the car service", {"Car service"}),
    ("bob", "when do I plant tomatoes", {"Garden plans"}),
    ("bob", "books to read", {"Book list"}),
    ("alice", "wifi password", set()),
    ("alice", "recipe for moon cheese", set()),
    ("alice", "How much is the deposit for the new flat?", set()),
    ("alice", "letter to the landlord", set()),
    ("bob", "invoice for the painter", set()),
]


def read_skeleton(directory: Path | None) -> dict[str, bytes]:
    """Path under the home -> bytes, for every file of Nextcloud 32.0.1's skeleton."""
    files: dict[str, bytes] = {}
    if directory is not None:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                files[path.relative_to(directory).as_posix()] = path.read_bytes()
    else:
        with tarfile.open(TARBALL, "r:xz") as tar:
            for member in tar:
                if member.isfile() and member.name.startswith(SKELETON_PREFIX):
                    files[member.name[len(SKELETON_PREFIX):]] = tar.extractfile(member).read()
    assert {"/" + p: len(b) for p, b in files.items()} == NEXTCLOUD_32_SKELETON, "not Nextcloud 32.0.1's skeleton"
    return files


def is_example(location: str) -> bool:
    return location in NEXTCLOUD_32_SKELETON


async def measure(stack: Any, queries: list[tuple[str, str, set[str]]]) -> dict[str, float]:
    in_top = {1: 0, 5: 0, 10: 0}
    per_top10: list[int] = []
    hits_at_1: list[int] = []
    reciprocal: list[float] = []
    for user, query, answers in queries:
        results = (await stack.search(user, query, limit=10))["results"]
        flags = [is_example(hit["location"]) for hit in results]
        for k in in_top:
            in_top[k] += any(flags[:k])
        per_top10.append(sum(flags))
        if answers:
            ranks = [i for i, hit in enumerate(results, 1) if hit["title"] in answers and not is_example(hit["location"])]
            hits_at_1.append(int(bool(ranks) and ranks[0] == 1))
            reciprocal.append(1 / ranks[0] if ranks else 0.0)
    n = len(queries)
    return {
        "queries": n,
        "example_at_1": in_top[1] / n,
        "example_in_top5": in_top[5] / n,
        "example_in_top10": in_top[10] / n,
        "examples_per_top10": statistics.mean(per_top10),
        "own_success_at_1": statistics.mean(hits_at_1),
        "own_mrr_at_10": statistics.mean(reciprocal),
    }


async def count_indexed_examples(stack: Any, users: tuple[str, ...]) -> int:
    found = set()
    for query in ("Nextcloud", "template", "Templates credits", "Readme", "invoice letter report"):
        for user in users:
            found |= {(user, h["location"]) for h in (await stack.search(user, query, limit=50))["results"]
                      if is_example(h["location"])}
    return len(found)


async def switch(stack: Any, on: bool, users: tuple[str, ...]) -> None:
    if isinstance(stack, Stack):
        stack.fake.set_admin_setting(APP_ID, "index_nextcloud_examples", "1" if on else "")
    else:  # as the admin page does
        stack.set_admin_field("index_nextcloud_examples", on)
    await asyncio.sleep(3)  # the app re-reads its settings every second or less, then reconciles in full
    await stack.eventually(lambda: _settled(stack, on, users), timeout=900, interval=2)


async def _settled(stack: Any, on: bool, users: tuple[str, ...]) -> bool:
    for user in users:
        if sum(s["pending"] for s in (await stack.status(user))["sources"].values()):
            return False
    indexed = await count_indexed_examples(stack, users)
    return indexed > 0 if on else indexed == 0


def run_fake(skeleton: dict[str, bytes]) -> dict[str, dict[str, float]]:
    rows = {}
    with tempfile.TemporaryDirectory() as workdir:
        stack = Stack(Path(workdir), profile="demo")
        stack.start()
        try:
            for user in ("alice", "bob"):
                for path, content in skeleton.items():
                    stack.fake.put_file(user, path, content)
            asyncio.run(switch(stack, True, ("alice", "bob")))
            rows["examples indexed"] = asyncio.run(measure(stack, QUERIES))
            asyncio.run(switch(stack, False, ("alice", "bob")))
            rows["examples left out (default)"] = asyncio.run(measure(stack, QUERIES))
        finally:
            stack.stop()
    return rows


def create_real_content(stack: Any) -> set[str]:
    """A part of alice's demo account, through Nextcloud's own APIs; returns the titles created."""
    from fake_nextcloud.seed import make_docx, make_pdf

    alice = stack.user("alice")
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    # DAV first: the Notes API answers with a session cookie that DAV then refuses without a CSRF token.
    alice.put_file("/Documents/Project plan.md", "# Project Phoenix\n\n## Goals\n\nMigrate the billing system to "
                   "the new platform before the end of the year.\n\n## Risks\n\n- Data migration of old invoices\n")
    alice.put_file("/Documents/Quarterly report.txt", "Quarterly report Q2\n\nRevenue grew 12 percent. Support "
                   "tickets dropped after the new onboarding flow.\n")
    alice.put_file("/Documents/Team page.html", "<!DOCTYPE html><html><head><title>Team</title></head><body><h1>Our "
                   "team</h1><p>Alice leads the platform group; Bob runs operations.</p></body></html>\n", "text/html")
    alice.put_file("/Documents/Whitepaper.pdf", make_pdf("Semantic search whitepaper", [
        "Semantic search finds documents by meaning rather than by keywords.",
        "Embeddings map text to vectors; nearby vectors mean related content."]), "application/pdf")
    alice.put_file("/Documents/Proposal.docx", make_docx("Budget proposal 2027", [
        "We propose to increase the infrastructure budget by ten percent.",
        "The increase covers the new search cluster and its backups."]),
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document")
    alice.put_event("Dentist appointment", now + timedelta(days=7), description="Yearly check-up with Dr. Weber")
    alice.put_event("Weekly team meeting", now - timedelta(days=14), description="Status round and blockers")
    alice.put_contact("Carol Jones", email="carol@example.test", phone="+15555550101",
                      note="Met at the Berlin conference; interested in the search integration.")
    alice.put_contact("Dave Miller", email="dave@example.test", note="Miller Plumbing. Fixed the kitchen sink; reliable.")
    alice.create_card("Product launch", "Write release notes", "Summarize the new search features for the blog.")
    alice.create_note("Meeting notes", "# Meeting notes\n\n## Q3 planning\n\n- Budget review moved to Friday\n"
                      "- Hiring: two backend engineers\n- Launch date: end of September\n", "Work")
    alice.create_note("Pancakes", "# Pancakes\n\n## Ingredients\n\n- 200 g flour\n- 2 eggs\n- 300 ml milk\n\n"
                      "## Steps\n\nWhisk everything, rest 10 minutes, fry in butter.\n", "Recipes")
    alice.create_note("Travel ideas", "# Travel ideas\n\n- Lisbon in spring\n- Hiking in the Dolomites\n"
                      "- Northern lights in Tromsø\n")
    alice.create_note("Architecture decisions", "# Architecture decisions\n\n## ADR-1: Use PostgreSQL\n\nWe keep "
                      "one database for billing and reporting.\n", "Work/Projects")
    return {"Project plan.md", "Quarterly report.txt", "Team page.html", "Whitepaper.pdf", "Proposal.docx",
            "Dentist appointment", "Weekly team meeting", "Carol Jones", "Dave Miller", "Meeting notes", "Pancakes",
            "Travel ideas", "Architecture decisions", "Write release notes"}


def run_real() -> dict[str, dict[str, float]]:
    from kit import RealNextcloud
    from realstack import RealStack

    rows = {}
    with tempfile.TemporaryDirectory() as workdir:
        nc = RealNextcloud().prepare()
        stack = RealStack(nc, Path(workdir)).start()
        try:
            stack.set_admin_field("reconcile_interval_minutes", 0.05)  # Deck cards and contacts have no events
            titles = create_real_content(stack)
            queries = [(u, q, a) for u, q, a in QUERIES if u == "alice" and (not a or a <= titles)]
            stack.flush_events(60)
            asyncio.run(stack.eventually(lambda: _all_found(stack, titles), timeout=900, interval=3))
            asyncio.run(switch(stack, True, ("alice",)))
            rows["examples indexed"] = asyncio.run(measure(stack, queries))
            asyncio.run(switch(stack, False, ("alice",)))
            rows["examples left out (default)"] = asyncio.run(measure(stack, queries))
            rows["_queries"] = {"queries": len(queries), "answerable": sum(1 for *_, a in queries if a)}
        finally:
            stack.stop()
            nc.stop()
    return rows


async def _all_found(stack: Any, titles: set[str]) -> bool:
    found = set()
    for query in ("project plan report team whitepaper proposal", "dentist meeting", "Carol Dave",
                  "meeting notes pancakes travel architecture", "release notes", *titles):
        found |= {hit["title"] for hit in (await stack.search("alice", query, limit=50))["results"]}
    return titles <= found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skeleton-dir", type=Path, help="an extracted nextcloud/core/skeleton")
    parser.add_argument("--real", action="store_true", help="on a real Nextcloud 32 (nc-kit) instead of the fake")
    args = parser.parse_args()
    started = time.monotonic()
    if args.real:
        rows = run_real()
        counts = rows.pop("_queries")
        where = "a real Nextcloud 32.0.1, alice's own skeleton from her first login"
    else:
        skeleton = read_skeleton(args.skeleton_dir)
        rows = run_fake(skeleton)
        counts = {"queries": len(QUERIES), "answerable": sum(1 for _, _, answers in QUERIES if answers)}
        where = f"the fake Nextcloud, {len(skeleton)} skeleton files per user"
    print(f"{counts['queries']:.0f} queries ({counts['answerable']:.0f} answerable by the user's own content), top 10, "
          f"no sampling; {where}; {time.monotonic() - started:.0f} s\n")
    print("| mode | example at rank 1 | example in top 5 | example in top 10 | examples per top 10 "
          "| own answer success@1 | own answer MRR@10 |")
    print("|---|---|---|---|---|---|---|")
    for mode, r in rows.items():
        print(f"| {mode} | {r['example_at_1']:.0%} | {r['example_in_top5']:.0%} | {r['example_in_top10']:.0%} "
              f"| {r['examples_per_top10']:.2f} | {r['own_success_at_1']:.2f} | {r['own_mrr_at_10']:.3f} |")


if __name__ == "__main__":
    main()
