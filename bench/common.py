"""What the benchmarks share to report: percentiles and latency rows, markdown tables, timing of
wrapped calls and threads, a process's CPU time and memory, and the line naming the code and machine.

Set loading lives in ``retrieval_sets.py``; this module prints and measures, so each script's
figures come out the same way.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


# --- percentiles and tables -----------------------------------------------------------------------


def pct(values: Sequence[float], q: float) -> float:
    """The q-th percentile (50: the median, 95: p95); NaN for no values."""
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else float("nan")


def row(name: str, ms: Sequence[float], extra: str = "") -> str:
    """One line of a latency table: | name | n | p50 | p95 | max | mean | (extra) |, in ms."""
    return (
        f"| {name} | {len(ms)} | {pct(ms, 50):.1f} | {pct(ms, 95):.1f} | {max(ms):.1f} | {statistics.fmean(ms):.1f} |"
        + (f" {extra} |" if extra else " |")
    )


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A markdown table: the header, its rule, and one line per row."""
    return [f"| {' | '.join(header)} |", "|" + "---|" * len(header)] + [
        f"| {' | '.join(map(str, cells))} |" for cells in rows]


# --- timing ---------------------------------------------------------------------------------------


def thread_cpu() -> dict[int, tuple[str, float]]:
    """CPU seconds used so far by each thread of this process, labelled by Python thread name or
    (for native threads: OpenMP, Chroma, SQLite) by the kernel's thread name."""
    import re
    import threading

    names = {t.native_id: t.name for t in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        tid = int(task.name)
        label = names.get(tid)
        label = re.sub(r"[_-]?\d+$", "", label) if label else f"native thread '{re.sub(r'[_-]?[0-9]+$', '', comm)}'"
        out[tid] = (label, (int(fields[11]) + int(fields[12])) / tick)
    return out


def cpu_by_label(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> dict[str, float]:
    used: dict[str, float] = {}
    for tid, (label, seconds) in after.items():
        used[label] = used.get(label, 0.0) + seconds - before.get(tid, (label, 0.0))[1]
    return {k: v for k, v in sorted(used.items(), key=lambda item: -item[1]) if v > 0.005}


class Timer:
    """Accumulates wall time spent in wrapped callables (sync or async)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def _add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds
        self.calls[name] = self.calls.get(name, 0) + 1

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        if asyncio.iscoroutinefunction(fn):

            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                started = time.perf_counter()
                try:
                    return await fn(*args, **kwargs)
                finally:
                    self._add(name, time.perf_counter() - started)

            return timed_async

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._add(name, time.perf_counter() - started)

        return timed


# --- processes and the machine ----------------------------------------------------------------


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status(pid: int | str = "self") -> dict[str, int]:
    """VmHWM / VmRSS of a process, in kB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            out[key] = int(value.split()[0])
    return out


def code_version() -> str:
    """The commit measured, and whether the app's code differed from it."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    dirty = git("status", "--porcelain", "--", "lib", "ex_app", "appinfo", "requirements.txt")
    return git("rev-parse", "--short", "HEAD") + (" with uncommitted changes to the app" if dirty else "")


def machine_line() -> str:
    load = os.getloadavg()
    return (
        f"Code: commit {code_version()}. Machine: {os.cpu_count()} CPUs shared with other work, load average "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1/5/15 min) at the end of the run; "
        f"Python {sys.version.split()[0]}; {time.strftime('%Y-%m-%d %H:%M %Z')}."
    )
