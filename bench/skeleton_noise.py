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

    PYTHONPATH=lib:.:tests python bench/skeleton_noise.py [--skeleton-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "lib"), str(ROOT), str(ROOT / "tests")]

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


async def measure(stack: Stack) -> dict[str, float]:
    in_top = {1: 0, 5: 0, 10: 0}
    per_top10: list[int] = []
    hits_at_1: list[int] = []
    reciprocal: list[float] = []
    for user, query, answers in QUERIES:
        results = (await stack.search(user, query, limit=10))["results"]
        flags = [is_example(hit["location"]) for hit in results]
        for k in in_top:
            in_top[k] += any(flags[:k])
        per_top10.append(sum(flags))
        if answers:
            ranks = [i for i, hit in enumerate(results, 1) if hit["title"] in answers and not is_example(hit["location"])]
            hits_at_1.append(int(bool(ranks) and ranks[0] == 1))
            reciprocal.append(1 / ranks[0] if ranks else 0.0)
    n = len(QUERIES)
    return {
        "queries": n,
        "example_at_1": in_top[1] / n,
        "example_in_top5": in_top[5] / n,
        "example_in_top10": in_top[10] / n,
        "examples_per_top10": statistics.mean(per_top10),
        "own_success_at_1": statistics.mean(hits_at_1),
        "own_mrr_at_10": statistics.mean(reciprocal),
    }


async def count_indexed_examples(stack: Stack) -> int:
    found = set()
    for query in ("Nextcloud", "template", "Templates credits", "Readme", "invoice letter report"):
        for user in ("alice", "bob"):
            found |= {(user, h["location"]) for h in (await stack.search(user, query, limit=50))["results"]
                      if is_example(h["location"])}
    return len(found)


async def switch(stack: Stack, on: bool) -> None:
    stack.fake.set_admin_setting(APP_ID, "index_nextcloud_examples", "1" if on else "")
    await asyncio.sleep(2)  # the app re-reads its settings every 0.5 s here, then reconciles in full
    for user in ("alice", "bob"):
        await stack.wait_idle(user, timeout=900)
    await stack.eventually(lambda: _settled(stack, on), timeout=600, interval=2)


async def _settled(stack: Stack, on: bool) -> bool:
    for user in ("alice", "bob"):
        if sum(s["pending"] for s in (await stack.status(user))["sources"].values()):
            return False
    indexed = await count_indexed_examples(stack)
    return indexed > 0 if on else indexed == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skeleton-dir", type=Path, help="an extracted nextcloud/core/skeleton")
    args = parser.parse_args()
    skeleton = read_skeleton(args.skeleton_dir)
    with tempfile.TemporaryDirectory() as workdir:
        stack = Stack(Path(workdir), profile="demo")
        started = time.monotonic()
        stack.start()
        try:
            for user in ("alice", "bob"):
                for path, content in skeleton.items():
                    stack.fake.put_file(user, path, content)
            rows = {}
            asyncio.run(switch(stack, True))
            rows["examples indexed"] = asyncio.run(measure(stack))
            asyncio.run(switch(stack, False))
            rows["examples left out (default)"] = asyncio.run(measure(stack))
        finally:
            stack.stop()
    answerable = sum(1 for _, _, answers in QUERIES if answers)
    print(f"{len(QUERIES)} queries ({answerable} answerable by the user's own content), top 10, no sampling; "
          f"{len(skeleton)} skeleton files per user; {time.monotonic() - started:.0f} s\n")
    print("| mode | example at rank 1 | example in top 5 | example in top 10 | examples per top 10 "
          "| own answer success@1 | own answer MRR@10 |")
    print("|---|---|---|---|---|---|---|")
    for mode, r in rows.items():
        print(f"| {mode} | {r['example_at_1']:.0%} | {r['example_in_top5']:.0%} | {r['example_in_top10']:.0%} "
              f"| {r['examples_per_top10']:.2f} | {r['own_success_at_1']:.2f} | {r['own_mrr_at_10']:.3f} |")


if __name__ == "__main__":
    main()
