"""What the app's MCP output costs a client's model (issue 35, item 4): prints bytes and ~tokens (bytes / 4).

Starts the app against the fake Nextcloud with the demo data (as tests/support/stack.py does), then measures
tools/list and the tools' names + descriptions + input schemas (as most clients see them, and as ChatGPT,
which is also offered the search/fetch pair, does), and the text block of typical 5- and 10-hit searches.
"before" is the text the SDK renders by itself (indent=2, nulls kept); "now" is what is sent.

    PYTHONPATH=lib:. python bench/token_cost.py
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pydantic_core

for _path in (Path(__file__).resolve().parents[1] / "tests" / "support", Path(__file__).resolve().parents[1] / "lib"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

QUERIES = ("quarterly budget", "When is my next dentist appointment?", "project kickoff meeting notes")


def size(text: str) -> str:
    n = len(text.encode())
    return f"{n:>7,} B  ~{n // 4:>6,} tokens"


def tool_list_sizes(tools: list[Any]) -> tuple[str, str]:
    listed = json.dumps({"tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]})
    surface = "".join(t.name + (t.description or "") + json.dumps(t.input_schema) for t in tools)
    return listed, surface


async def measure(stack: Any) -> None:
    # ChatGPT's connectors introduce themselves as 'openai-mcp' and are also offered search/fetch (ADR 0710).
    for label, client_name in (("a client", None), ("ChatGPT (openai-mcp)", "openai-mcp")):
        async with stack.client("alice", client_name=client_name) as client:
            tools = (await client.list_tools()).tools
        listed, surface = tool_list_sizes(tools)
        print(f"{label}: tools/list ({len(tools)} tools)".ljust(44) + size(listed))
        print(f"{label}: names + descriptions + input schemas".ljust(44) + size(surface))
    async with stack.client("alice") as client:
        for limit in (5, 10):
            before, now, explained = [], [], []
            for query in QUERIES:
                result = await client.call_tool("nc_semantic_search", {"query": query, "limit": limit})
                before.append(pydantic_core.to_json(result.structured_content, indent=2).decode())
                now.append(result.content[0].text)
                result = await client.call_tool("nc_semantic_search", {"query": query, "limit": limit, "explain": True})
                explained.append(result.content[0].text)
            avg = lambda texts: sum(len(t.encode()) for t in texts) // len(texts)  # noqa: E731
            print(f"{limit:>2}-hit search text, mean of {len(QUERIES)}: before {avg(before):>6,} B  "
                  f"now {avg(now):>6,} B  (~{avg(now) // 4:,} tokens); with explain=true {avg(explained):,} B")


def main() -> None:
    from stack import Stack

    with tempfile.TemporaryDirectory() as workdir:
        stack = Stack(Path(workdir)).start()
        try:
            asyncio.run(measure(stack))
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
