"""What every test stack offers, whichever Nextcloud it runs against (the fake or a real one).

Tests talk to the app only as its users and admins do: the official MCP client through the
AppAPI proxy with an app password (or, for the streaming-path tests, on the app's own port with
AppAPI's headers), and Nextcloud's own APIs to change content and settings.
"""

from __future__ import annotations

import asyncio
import base64
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

from ex_app.settings_form import form_of
from fake_nextcloud.appinfo import app_version
from fake_nextcloud.exapps import AA_VERSION
from fake_nextcloud.exapp_process import APP_ID, ExAppProcess

SUBJECTS = ["otter", "glacier", "violin", "lantern", "cactus", "harbour", "comet", "falcon", "meadow", "tunnel"]
PLACES = ["Lisbon", "Nairobi", "Osaka", "Quito", "Bergen", "Tbilisi", "Hobart", "Tromso", "Cusco", "Dakar"]


def report_text(tag: str, i: int) -> str:
    """Short file contents, distinct for every (tag, i) and findable by meaning."""
    return f"The {SUBJECTS[i % 10]} report from {PLACES[(i // 10 + len(tag)) % 10]} ({tag} {i})."


class McpHarness:
    """Subclasses set ``nextcloud_url``, ``workdir`` (the app's storage is ``workdir/storage``),
    ``exapp`` and implement :meth:`app_password` and :meth:`flush_events`."""

    nextcloud_url: str
    workdir: Path
    exapp: ExAppProcess | None = None

    def app_password(self, user: str) -> str:
        raise NotImplementedError

    def flush_events(self, timeout: float) -> None:
        """Wait until Nextcloud has delivered the change events queued so far."""
        raise NotImplementedError

    @property
    def mcp_url(self) -> str:
        return f"{self.nextcloud_url}/index.php/apps/app_api/proxy/{APP_ID}/mcp"

    def auth_headers(self, user: str, *, bearer: bool = True) -> dict[str, str]:
        password = self.app_password(user)
        if bearer:
            return {"Authorization": f"Bearer {password}"}
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}

    # --- MCP clients ------------------------------------------------------------------------------

    @asynccontextmanager
    async def client(
        self,
        user: str,
        *,
        mode: str = "auto",
        sampling_callback: Callable[..., Any] | None = None,
        direct: bool = False,
        bearer: bool = True,
        read_timeout: float = 120.0,
        url: str | None = None,
        client_name: str | None = None,
    ) -> AsyncIterator[Client]:
        """The official MCP client as ``user``: through the proxy (or ``url``) with an app password, or
        ``direct``ly on the app's port (the streaming path) with AppAPI's headers; ``client_name`` is the
        clientInfo it introduces itself with (e.g. ChatGPT's 'openai-mcp')."""
        if direct:
            assert self.exapp is not None
            token = base64.b64encode(f"{user}:{self.exapp.secret}".encode()).decode()
            headers = {"authorization-app-api": token, "ex-app-id": APP_ID, "ex-app-version": app_version(),
                       "aa-version": AA_VERSION}
            url = f"{self.exapp.url}/mcp"
        else:
            headers = self.auth_headers(user, bearer=bearer)
            url = url or self.mcp_url
        http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=read_timeout))
        async with http, Client(
            streamable_http_client(url, http_client=http), mode=mode, sampling_callback=sampling_callback,
            client_info=Implementation(name=client_name, version="1.0.0") if client_name else None,
        ) as client:
            yield client

    async def call(self, user: str, tool: str, args: dict[str, Any] | None = None, **client_options: Any) -> Any:
        try:
            async with self.client(user, **client_options) as client:
                return await client.call_tool(tool, args or {})
        except Exception as exc:
            self.raise_if_app_died(exc)
            raise

    def raise_if_app_died(self, cause: BaseException) -> None:
        """A call that failed because the app's process is gone says so, with how it ended and its log's end
        (the client itself only sees the proxy's error response)."""
        process = self.exapp.process if self.exapp else None
        if process is not None and process.poll() is not None:
            tail = "\n".join(self.log().splitlines()[-30:])
            raise RuntimeError(f"the app's process ended with {process.returncode}; its log ends:\n{tail}") from cause

    def failure(self, result: Any) -> str:
        """What a failed tool call says, with the traceback the app logged for it when it crashed (the
        client sees only "Error executing tool ..."; the test's stack, and so its log, are gone after CI)."""
        said = " ".join(getattr(part, "text", str(part)) for part in result.content)
        log = self.log()
        crash = log.rfind("raised an unexpected exception")
        if crash < 0:
            return said
        return f"{said}\nthe app's log:\n" + "\n".join(log[log.rfind("\n", 0, crash) + 1:].splitlines()[:60])

    async def search(self, user: str, query: str, **args: Any) -> dict[str, Any]:
        result = await self.call(user, "nc_semantic_search", {"query": query, "use_query_analysis": False, **args})
        assert not result.is_error, self.failure(result)
        return result.structured_content

    async def status(self, user: str) -> dict[str, Any]:
        result = await self.call(user, "nc_get_vector_sync_status")
        assert not result.is_error, self.failure(result)
        return result.structured_content

    async def titles(self, user: str, query: str, **args: Any) -> list[str]:
        return [hit["title"] for hit in (await self.search(user, query, **args))["results"]]

    async def wait_idle(self, user: str, timeout: float = 120.0) -> dict[str, Any]:
        """Wait until change events are delivered and nothing is pending for ``user``."""
        self.flush_events(timeout)
        deadline = time.monotonic() + timeout
        while True:
            status = await self.status(user)
            if sum(source["pending"] for source in status["sources"].values()) == 0:
                return status
            if time.monotonic() > deadline:
                raise TimeoutError(f"still pending after {timeout}s: {status['sources']}")
            await asyncio.sleep(0.3)

    async def settled(self, users: tuple[str, ...] = ("alice", "bob"), timeout: float = 240.0,
                      quiet: float = 5.0) -> None:
        """Until every user's first pass is done, nothing is queued, and the ledger has not changed for
        ``quiet`` seconds. A change a user just made is indexed before catching up (ADR 0015), so
        finding a new note says nothing about the rest of the first pass."""
        for user in users:
            await self.eventually(lambda user=user: self._first_pass_done(user), timeout=timeout, interval=1.0)
        deadline = time.monotonic() + timeout
        ledger = "SELECT user, doc_type, source_id, version, chunk_count FROM documents"
        last = None
        while True:
            queued = self.db_rows("SELECT count(*) FROM tasks")[0][0]
            rows = set(self.db_rows(ledger))
            if not queued and rows == last:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"not settled after {timeout}s: {queued} task(s) queued")
            last = rows if not queued else None
            await asyncio.sleep(quiet)

    async def _first_pass_done(self, user: str) -> bool:
        try:
            return (await self.status(user))["initial_indexing_progress"] == 100
        except Exception:  # noqa: BLE001 - the app may still be starting
            return False

    async def eventually(self, check: Callable[[], Any], timeout: float = 60.0, interval: float = 0.4) -> Any:
        """Await ``check()`` until it returns something truthy (it may be sync or async)."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if asyncio.iscoroutine(value):
                value = await value
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not met within {timeout}s; last value {value!r}")
            await asyncio.sleep(interval)

    # --- the admin -----------------------------------------------------------------------------------

    def admin_auth(self) -> tuple[str, str]:
        return ("admin", self.app_password("admin"))

    def save_admin_field(self, user: str, field_id: str, value: Any) -> httpx.Response:
        """The call the admin settings page makes when ``user`` changes one field of the app's form."""
        return httpx.post(
            f"{self.nextcloud_url}/ocs/v2.php/settings/api/declarative/value",
            json={"app": APP_ID, "formId": form_of(field_id), "fieldId": field_id, "value": value},
            headers={"OCS-APIRequest": "true", "Accept": "application/json"},
            auth=(user, self.app_password(user)),
            timeout=30,
        )

    def set_admin_field(self, field_id: str, value: Any) -> None:
        """Change one field of the app's admin settings form exactly as the admin page does."""
        response = self.save_admin_field("admin", field_id, value)
        assert response.status_code == 200, (response.status_code, response.text)

    def settings_forms(self, user: str) -> list[dict[str, Any]]:
        """The declarative settings forms ``user`` sees, with values, as Nextcloud's settings pages load them."""
        response = httpx.get(
            f"{self.nextcloud_url}/ocs/v2.php/settings/api/declarative/forms",
            headers={"OCS-APIRequest": "true", "Accept": "application/json"},
            auth=(user, self.app_password(user)),
            timeout=30,
        )
        assert response.status_code == 200, (response.status_code, response.text)
        return [form for form in response.json()["ocs"]["data"] if form["app"] == APP_ID]

    # --- the app's durable state ----------------------------------------------------------------------

    @property
    def storage(self) -> Path:
        return self.workdir / "storage"

    def db_rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Read the app's queue and ledger while it runs (SQLite WAL allows a concurrent reader)."""
        with closing(sqlite3.connect(f"file:{self.storage / 'state.db'}?mode=ro", uri=True)) as db:
            return db.execute(sql, params).fetchall()

    def indexed_files(self, user: str, folder: str) -> list[str]:
        """The locations of ``user``'s files indexed under ``folder`` (``/Name/``), one row per document."""
        rows = self.db_rows("SELECT location FROM documents WHERE user = ? AND doc_type = 'file' AND location LIKE ?",
                            (user, f"{folder}%"))
        return [row[0] for row in rows]

    async def all_indexed(self, user: str, folder: str, expected: dict[str, str], timeout: float = 60.0) -> float:
        """Wait until exactly the files ``expected`` (location -> content) are indexed under ``folder``,
        each once, then find a sample of them by their content as ``user``; returns the seconds until
        indexed. Every search also checks that no document comes back twice."""
        started = time.monotonic()
        while True:
            locations = self.indexed_files(user, folder)
            assert len(locations) == len(set(locations)), f"indexed twice: {locations}"
            if set(locations) == set(expected):
                break
            if time.monotonic() - started > timeout:
                raise AssertionError(f"not indexed within {timeout:.0f}s: missing {sorted(set(expected) - set(locations))}, "
                                     f"unexpected {sorted(set(locations) - set(expected))}")
            await asyncio.sleep(0.5)
        took = time.monotonic() - started
        for location, text in list(expected.items())[:: max(1, len(expected) // 4)]:
            hits = (await self.search(user, text, use_reranking=False, limit=50, path_prefix=folder))["results"]
            ids = [hit["id"] for hit in hits]
            assert len(ids) == len(set(ids)), f"duplicate hits: {ids}"
            assert location in [hit["location"] for hit in hits], (text, [hit["location"] for hit in hits])
        return took

    def log(self) -> str:
        return self.exapp.log_text() if self.exapp else ""
