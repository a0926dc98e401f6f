"""A real slice of an organisation (issue 16, point 3): ``--users`` accounts on a real Nextcloud 34
with a few dozen items each, backfilled by the real ExApp through the real APIs, and the PHP requests
that took, counted from Nextcloud's own access log.

nc-kit's web server (``php -S``, 4 workers) logs one line per request in ``logs/php.log``. The
slice is written before the app is registered, so the backfill is a first pass with no webhook
deliveries; every line after registration that is not a request to the app's proxy is a request
the app made (cron and the webhook worker run as CLI processes and are not in that log). Then the
reconciliation interval is set to one minute and the requests of idle passes are counted the same
way: what an organisation whose users change nothing costs its Nextcloud.

    PYTHONPATH=lib:. python bench/real_slice.py [--users 50]

The instance lives in ``REAL_NC_DIR`` (default ``.nextcloud-bench``) on ``REAL_NC_PORT`` (default
8095), reset to its pristine copy at every run, as the real test tier does with its own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "tests" / "real", ROOT / "tests" / "support", ROOT / "lib", ROOT, Path(__file__).parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

os.environ.setdefault("REAL_NC_DIR", str(ROOT / ".nextcloud-bench"))
os.environ.setdefault("REAL_NC_PORT", "8095")

from indexing import passages
from kit import RealNextcloud
from nextcloud_api import RetryWhenLocked
from realstack import RealStack

# A user's content: "a few dozen items", every type the app indexes.
NOTES, FILES, EVENTS, CONTACTS, CARDS = 8, 8, 3, 3, 2
ITEMS = NOTES + FILES + EVENTS + CONTACTS + CARDS
LINE = re.compile(r"\[(\d{3})\]: (\S+) (\S+)")
PROXY = "/index.php/apps/app_api/proxy/"


def add_users(nc: RealNextcloud, names: list[str]) -> None:
    """Accounts made through the provisioning API as an admin makes them, each logged in once (which
    creates its calendar and address book) and given an app password, as a client's login flow gets one.
    Over HTTP rather than ``occ``: a PHP process per command costs seconds on a busy machine."""
    ocs = {"OCS-APIRequest": "true", "Accept": "application/json"}
    # No cookie jar: a session cookie from one login would make the next request that user's.
    with httpx.Client(base_url=nc.url, headers=ocs, timeout=120, transport=RetryWhenLocked(),
                      event_hooks={"response": [lambda response: http.cookies.clear()]}) as http:
        for name in names:  # one at a time: SQLite takes one writer
            password = f"slice-{name}-pw-0123456789"
            for attempt in range(6):  # a locked SQLite fails the creation with a bare "Bad request"
                made = http.post("/ocs/v2.php/cloud/users", json={"userid": name, "password": password},
                                 auth=("admin", nc.login_password("admin")))
                if made.status_code == 200 or "already exists" in made.text:  # made by a try that then failed
                    break
                time.sleep(2 + attempt)
            else:
                made.raise_for_status()
            http.get("/ocs/v2.php/cloud/user", auth=(name, password)).raise_for_status()  # the first login
            answer = http.get("/ocs/v2.php/core/getapppassword", auth=(name, password))
            answer.raise_for_status()
            nc.env[f"NC_{name.upper()}_APP_PASSWORD"] = answer.json()["ocs"]["data"]["apppassword"]


def write_content(stack: RealStack, users: list[str], now: datetime) -> None:
    texts = passages(len(users) * (NOTES + FILES + CARDS + CONTACTS), 120)

    def patiently(make, *args, **kwargs) -> None:
        # Besides this script, the new accounts' background jobs write to nc-kit's SQLite: a write
        # can still find it locked after the transport's own retries. A locked write made nothing.
        for attempt in range(8):
            try:
                make(*args, **kwargs)
                return
            except AssertionError as exc:  # Deck answers a locked write with a bare "Internal server error"
                if not any(sign in str(exc) for sign in ("database is locked", "Internal server error")) or attempt == 7:
                    raise
                time.sleep(2)

    def write(index: int, name: str) -> None:
        api = stack.user(name)
        mine = iter(texts[index * (NOTES + FILES + CARDS + CONTACTS):])
        for i in range(NOTES):
            patiently(api.create_note, f"Note {i} of {name}", next(mine))
        patiently(api.mkdir, "/Reports")
        for i in range(FILES):
            patiently(api.put_file, f"/Reports/report-{i}.md", f"# Report {i}\n\n{next(mine)}")
        for i in range(EVENTS):
            patiently(api.put_event, f"Meeting {i} of {name}", now + timedelta(days=i - 3),
                      description="Agenda: budget review")
        for i in range(CONTACTS):
            patiently(api.put_contact, f"Contact{i} Person{index}", email=f"c{i}@example.org", note=next(mine)[:300])
        for i in range(CARDS):
            patiently(api.create_card, f"Board {i}", f"Card {i} of {name}", next(mine)[:600])

    for pair in enumerate(users):  # one writer: nc-kit's SQLite fails concurrent writes ("database is locked")
        write(*pair)


def access_log(nc: RealNextcloud) -> list[str]:
    return (nc.dir / "logs" / "php.log").read_text(errors="replace").splitlines()


def requests_since(nc: RealNextcloud, offset: int) -> tuple[Counter[str], int]:
    """The app's requests logged after line ``offset``, by kind, and the client requests to its proxy."""
    kinds: Counter[str] = Counter()
    proxied = 0
    for line in access_log(nc)[offset:]:
        match = LINE.search(line)
        if not match:
            continue
        _, method, path = match.groups()
        if path.startswith(PROXY):
            proxied += 1
        else:
            kinds[kind_of(method, path)] += 1
    return kinds, proxied


def kind_of(method: str, path: str) -> str:
    path = path.split("?")[0]
    for prefix, name in (("/remote.php/dav/files/", "files"), ("/remote.php/dav/calendars/", "calendars"),
                         ("/remote.php/dav/addressbooks/", "address books"), ("/index.php/apps/notes/", "notes API"),
                         ("/index.php/apps/deck/", "deck API"), ("/ocs/", "OCS")):
        if path.startswith(prefix):
            return f"{method} {name}"
    if path.rstrip("/") == "/remote.php/dav":
        return f"{method} dav root (file search)"
    return f"{method} {path[:40]}"


async def settled(stack: RealStack, expected: int, timeout: float) -> float:
    """Seconds until the ledger holds ``expected`` items (indexed or skipped), nothing is queued and the
    ledger is unchanged for 5 s. Read from the app's database, so the wait adds no request."""
    start = time.monotonic()
    last = None
    while True:
        queued = stack.db_rows("SELECT count(*) FROM tasks")[0][0]
        done = stack.db_rows("SELECT (SELECT count(*) FROM documents) + (SELECT count(*) FROM skipped)")[0][0]
        if not queued and done >= expected and done == last:
            return time.monotonic() - start - 5
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{done} of {expected} items after {timeout}s, {queued} queued")
        last = done if not queued else None
        await asyncio.sleep(5)


def table(kinds: Counter[str], per: int) -> str:
    rows = [f"| {kind} | {count} | {count / per:.1f} |" for kind, count in kinds.most_common()]
    return "\n".join(["| request | count | per user |", "|---|---|---|", *rows,
                      f"| **all** | **{sum(kinds.values())}** | **{sum(kinds.values()) / per:.1f}** |"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--idle-minutes", type=float, default=3.0)
    args = parser.parse_args()

    started = time.monotonic()
    nc = RealNextcloud().prepare()
    workdir = Path(tempfile.mkdtemp(prefix="real-slice-"))
    # Settings read every 10 s, as deployed (the test tier reads them every second).
    stack = RealStack(nc, workdir, env={"SETTINGS_REFRESH_SECONDS": "10"})
    try:
        users = [f"staff{i:03d}" for i in range(1, args.users + 1)]
        # No example files in new accounts (as many admins set it up): the slice is the users' own
        # content, and a first login that copies no skeleton is quicker.
        nc.occ("config:system:set", "skeletondirectory", "--value", "")
        t0 = time.monotonic()
        add_users(nc, users)
        print(f"{len(users)} accounts added in {time.monotonic() - t0:.0f} s")
        t0 = time.monotonic()
        write_content(stack, users, datetime.now(UTC))
        print(f"{len(users)} accounts with {ITEMS} items each ({NOTES} notes, {FILES} files, {EVENTS} events, "
              f"{CONTACTS} contacts, {CARDS} cards) written in {time.monotonic() - t0:.0f} s")

        offset = len(access_log(nc))
        stack.start_exapp()
        stack.register()
        everyone = len(users) + 3  # and admin, alice, bob with their skeleton content
        expected = len(users) * ITEMS
        seconds = asyncio.run(settled(stack, expected, timeout=3600))
        kinds, proxied = requests_since(nc, offset)
        docs = stack.db_rows("SELECT count(*), sum(chunk_count) FROM documents")[0]
        print(f"\n## Backfill of {everyone} accounts ({expected} slice items; ledger {docs[0]} documents, "
              f"{docs[1]} chunks) in {seconds:.0f} s, default model\n")
        print(table(kinds, everyone))
        print(f"\n({proxied} request(s) through the app's proxy meanwhile, not counted above)")
        size = sum(path.stat().st_size for path in stack.storage.rglob("*") if path.is_file())
        print(f"\napp storage (Chroma, keyword index, ledger, embedding cache): {size / 2**20:.1f} MB, "
              f"{size / max(docs[1] or 0, 1) / 1024:.1f} KB a chunk")

        stack.set_admin_field("reconcile_interval_minutes", 1)
        time.sleep(15)  # the app reads its settings every 10 s
        offset = len(access_log(nc))
        passes = count_passes(stack, args.idle_minutes * 60)
        kinds, _ = requests_since(nc, offset)
        total = sum(kinds.values())
        settings = sum(count for kind, count in kinds.items() if "OCS" in kind)
        print(f"\n## Idle: {everyone} accounts, nothing changed, reconciliation every minute, "
              f"{args.idle_minutes:g} minutes\n")
        print(table(kinds, everyone))
        print(f"\n{total / args.idle_minutes:.0f} requests a minute; {passes / everyone:.1f} passes an account "
              f"in the window, so {(total - settings) / max(passes, 1):.1f} requests an account and pass "
              f"besides OCS (settings reads every 10 s, user checks: {settings} in all)")
        print(f"\nload average {os.getloadavg()[0]:.1f}; whole run {time.monotonic() - started:.0f} s")
    finally:
        stack.stop()
        nc.stop()


def count_passes(stack: RealStack, seconds: float) -> float:
    """Reconciliation passes finished in the next ``seconds``, summed over accounts: each source's
    ``last_reconcile`` moves once a pass (averaged over the sources). Under load a pass over every
    account takes longer than the interval, so requests a minute are not requests a pass."""
    sql = "SELECT user, doc_type, last_reconcile FROM cursors"
    seen: set[tuple[str, str, float]] = set()
    before = set(stack.db_rows(sql))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen |= set(stack.db_rows(sql)) - before
        time.sleep(1)
    doc_types = {doc_type for _, doc_type, _ in before} or {""}
    return len(seen) / len(doc_types)


if __name__ == "__main__":
    main()
