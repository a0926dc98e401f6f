"""``make demo``: the real app against the bundled fake Nextcloud, with sample content for alice and bob.

Starts the fake Nextcloud, starts the ExApp as AppAPI's daemon would, registers it exactly as
``occ app_api:app:register`` does (heartbeat, init, enabled), waits for the first indexing pass,
runs a sample search as each user and prints the MCP URL and client commands. Runs until Ctrl-C
(``--once`` stops after the sample searches).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import secrets
import shutil
import socket
import time
from pathlib import Path

from . import FakeNextcloud, seed
from .appinfo import REPO, routes_from_info_xml
from .exapp_process import APP_ID, ExAppProcess, free_port
from .try_mcp import ask

USERS = ("alice", "bob")
SAMPLES = {"alice": "When is my next dentist appointment?", "bob": "What is the on-call rotation?"}


def describe(hit: dict) -> str:
    """One result as a person reads it: "Dentist appointment - calendar event on 2026-12-03 10:00"."""
    kind = hit["doc_type"].replace("_", " ")
    if hit.get("event_start"):
        return f"{hit['title']} - {kind} on {hit['event_start'].replace('T', ' ')[:16]}"
    if hit.get("modified"):
        return f"{hit['title']} - {kind}, changed {hit['modified'].replace('T', ' ')[:16]}"
    return f"{hit['title']} - {kind}"


def consent_page_url(fake: FakeNextcloud) -> str:
    """An authorization request from a demo client that registered itself, as Claude Code or VS Code would."""
    import httpx

    issuer = fake.proxy_url(APP_ID, "").rstrip("/")
    redirect = "http://127.0.0.1:33418/callback"
    client = httpx.post(f"{issuer}/oauth/register", json={
        "client_name": "Demo MCP client", "redirect_uris": [redirect], "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]}, timeout=30).json()
    challenge = base64.urlsafe_b64encode(hashlib.sha256(secrets.token_bytes(32)).digest()).rstrip(b"=").decode()
    return str(httpx.URL(f"{issuer}/oauth/authorize", params={
        "response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect, "state": "demo",
        "code_challenge": challenge, "code_challenge_method": "S256", "scope": "semantic:read semantic:write"}))


def _port(preferred: int) -> int:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", preferred))
            return preferred
        except OSError:
            return free_port()


async def _wait_for_indexing(url: str, fake: FakeNextcloud, timeout: float = 600) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    deadline = time.monotonic() + timeout
    shown = None
    while time.monotonic() < deadline:
        http = httpx2.AsyncClient(headers=fake.auth_headers("alice", bearer=True))
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            status = (await client.call_tool("nc_get_vector_sync_status", {})).structured_content
        progress = status["initial_indexing_progress"]
        if progress != shown:
            print(f"  indexing the sample content: {progress if progress is not None else 0}%", flush=True)
            shown = progress
        if progress == 100:
            return
        await asyncio.sleep(1)
    raise TimeoutError("the first indexing pass did not finish")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8080, help="fake Nextcloud port (another if busy)")
    parser.add_argument("--exapp-port", type=int, default=23000, help="ExApp port (another if busy)")
    parser.add_argument("--storage", type=Path, default=REPO / ".demo", help="where the app keeps its data")
    parser.add_argument("--once", action="store_true", help="exit after the sample searches")
    args = parser.parse_args()

    print("Starting the fake Nextcloud with sample content for alice and bob…", flush=True)
    fake = FakeNextcloud(port=_port(args.port))
    fake.start()
    exapp = None
    try:
        seed(fake, "demo")
        print("Starting Semantic MCP and registering it (heartbeat, init, enabled)…", flush=True)
        storage = args.storage / "storage"
        shutil.rmtree(storage, ignore_errors=True)  # the fake starts empty every time: so does the index
        exapp = ExAppProcess(fake.url, storage, port=_port(args.exapp_port), log_path=args.storage / "exapp.log")
        exapp.start()
        fake.register_exapp(APP_ID, exapp.url, exapp.secret, exapp.version, routes_from_info_xml(),
                            exapp_host="cloud.example.com")
        url = fake.proxy_url(APP_ID, "mcp")
        asyncio.run(_wait_for_indexing(url, fake))

        print("\nSample searches through the AppAPI proxy:")
        for user in USERS:
            result = asyncio.run(ask(url, user, fake.password(user), SAMPLES[user], answer=False, mode="auto"))
            print(f"  {user} asks {SAMPLES[user]!r}")
            for hit in result["results"][:3]:
                print(f"    {describe(hit)}")

        print(f"\nMCP endpoint (streamable HTTP):\n  {url}\n")
        for user in USERS:
            print(f"  {user}:  Authorization: Bearer {fake.password(user)}")
        print("\nTry it:")
        print(f'  .venv/bin/python -m fake_nextcloud.try_mcp --url {url} --user alice "dentist appointment"')
        print(f'  .venv/bin/python -m fake_nextcloud.try_mcp --url {url} --user bob --mode legacy "garden"')
        print(f'  claude mcp add --transport http nextcloud-demo {url} '
              f'--header "Authorization: Bearer {fake.password("alice")}"')
        consent = consent_page_url(fake)
        print("\nSee the OAuth consent page an MCP client opens (log in as alice, password "
              f"{fake.password('alice')}; after Allow the browser goes to a client that is not there):\n  {consent}")
        print(f"Connected clients page:\n  {fake.proxy_url(APP_ID, 'oauth/clients')}")
        print(f"\nApp log: {exapp.log_path}")
        if args.once:
            return
        print("Running. Press Ctrl-C to stop.", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        if exapp:
            exapp.stop()
        fake.stop()


if __name__ == "__main__":
    main()
