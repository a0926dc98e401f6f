"""A real Chroma server (``chroma run``, the CLI chromadb ships) for the app's HTTP-client mode."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

CHROMA_CLI = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_chroma(path: Path, port: int, timeout: float = 60) -> subprocess.Popen[bytes]:
    """``chroma run`` storing under ``path`` on ``port``, once it answers its heartbeat."""
    proc = subprocess.Popen(
        [CHROMA_CLI, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"chroma server did not start (exit code {proc.poll()})")
        time.sleep(0.1)


@contextmanager
def chroma_server(path: Path) -> Iterator[tuple[str, int]]:
    """(host, port) of a Chroma server storing under ``path``, stopped afterwards."""
    port = free_port()
    proc = start_chroma(path, port)
    try:
        yield "127.0.0.1", port
    finally:
        proc.terminate()
        proc.wait(timeout=10)
