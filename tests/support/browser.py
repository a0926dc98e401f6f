"""Headless Chromium (Debian's ``chromium`` package) driven over the DevTools protocol, for tests
that need a real browser: real form submission, cookies, redirects and rendering.

``make test`` installs the package when missing.
"""

from __future__ import annotations

import base64
import json
import shutil
import struct
import subprocess
import time
import zlib
from pathlib import Path
from typing import Any

import httpx
import websocket

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--remote-debugging-port=0", "--window-size=1000,800",
]


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Chromium:
    def __init__(self, profile_dir: Path) -> None:
        binary = chromium_binary()
        if binary is None:
            raise RuntimeError("chromium is not installed: run `make test` (it installs Debian's chromium package)")
        self.profile_dir = profile_dir
        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile_dir}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        port_file = profile_dir / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        pages = [t for t in httpx.get(f"http://127.0.0.1:{port}/json/list").json() if t["type"] == "page"]
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], suppress_origin=True, timeout=30)
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.call("Page.enable")
        self.call("Network.enable")

    def close(self) -> None:
        if getattr(self, "ws", None):
            self.ws.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        self.ws.send(json.dumps({"id": self._next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for_event(self, method: str, timeout: float = 30.0, **match: Any) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for index, event in enumerate(self.events):
                params = event.get("params", {})
                if event.get("method") == method and all(match_value(params, k, v) for k, v in match.items()):
                    del self.events[: index + 1]
                    return params
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} event within {timeout}s")
            self.ws.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                self.events.append(json.loads(self.ws.recv()))
            except websocket.WebSocketTimeoutException:
                continue

    def navigate(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_for_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return result.get("result", {}).get("value")

    def wait_until(self, expression: str, timeout: float = 30.0) -> Any:
        """Evaluate ``expression`` until it is truthy (pages that move on by themselves)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(expression)
            except RuntimeError:  # the page navigated away mid-evaluation
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression!r} stayed falsy for {timeout}s")
            time.sleep(0.1)

    def screenshot(self, path: Path) -> bytes:
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return data


def match_value(params: dict[str, Any], key: str, expected: Any) -> bool:
    value: Any = params
    for part in key.split("__"):
        value = value.get(part) if isinstance(value, dict) else None
    return expected(value) if callable(expected) else value == expected


def png_colours(data: bytes) -> int:
    """How many distinct byte values the decoded image data holds (a blank page has very few)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    offset, idat = 8, b""
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        if kind == b"IDAT":
            idat += data[offset + 8:offset + 8 + length]
        offset += 12 + length
    return len(set(zlib.decompress(idat)))
