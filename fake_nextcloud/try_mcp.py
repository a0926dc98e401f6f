"""Ask the app something with the official MCP client, as a user would from any MCP client.

    python -m fake_nextcloud.try_mcp --user alice "When is my next dentist appointment?"
    python -m fake_nextcloud.try_mcp --user bob --answer "What is the on-call rotation?"
"""

from __future__ import annotations

import argparse
import asyncio
import json

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

DEFAULT_URL = "http://127.0.0.1:8080/index.php/apps/app_api/proxy/semantic_mcp/mcp"


async def ask(url: str, user: str, password: str, query: str, *, answer: bool, mode: str) -> dict:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {password}"}, timeout=httpx2.Timeout(30, read=120))
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        tool = "nc_semantic_search_answer" if answer else "nc_semantic_search"
        result = await client.call_tool(tool, {"query": query})
        if result.is_error:
            raise SystemExit(f"{tool} failed: {result.content[0].text}")
        return result.structured_content


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("query")
    parser.add_argument("--user", default="alice")
    parser.add_argument("--password", help="app password (default: <user>-app-password, as in the demo)")
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--answer", action="store_true", help="use nc_semantic_search_answer")
    parser.add_argument("--mode", default="auto", choices=["auto", "legacy"], help="MCP protocol generation")
    parser.add_argument("--json", action="store_true", help="print the structured result")
    args = parser.parse_args()
    result = asyncio.run(ask(args.url, args.user, args.password or f"{args.user}-app-password", args.query,
                             answer=args.answer, mode=args.mode))
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    elif args.answer:
        print(result["generated_answer"])
    else:
        for hit in result["results"]:
            when = f"  {hit['event_start']}" if hit.get("event_start") else ""
            print(f"{hit['score']:.2f}  {hit['doc_type']:<14} {hit['title']}{when}\n      {hit['link']}")
        print(f"({result['total_found']} found; {result['search_method']})")
        for note in result.get("notes") or []:
            print(f"note: {note}")


if __name__ == "__main__":
    main()
