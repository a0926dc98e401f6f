"""What admins see and use (issue 40): ``occ semantic_mcp:status`` and ``occ semantic_mcp:why``, the admin
page with the same numbers and the same "why", a link to it in the admin settings, and notifications.

* The occ commands are AppAPI ExApp commands (``api/v1/occ_command``), registered when the app is
  enabled. ``occ <name>`` makes AppAPI POST ``{"occ": {"arguments", "options"}}`` to the handler,
  signed as the app itself, and print the body. AppAPI prints only "command executeHandler failed"
  for any status but 200, so a request the admin must correct is answered 200 with its sentence.
* The page is served through AppAPI's proxy on a route for admins only (info.xml: ``ADMIN``, which
  Nextcloud checks); the app checks again that the caller is in the ``admin`` group.
* Notifications go to every admin (AppAPI's ``api/v1/notification``, one per admin, signed as
  them): when the first indexing pass finishes, and when items failed since the last notice.
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from nc_py_api import AsyncNextcloudApp, NextcloudException
from nc_py_api.ex_app.ui.settings import SettingsForm
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from semantic_mcp.engine import Engine
from semantic_mcp.nextcloud.client import CredentialsRefused, NextcloudClient, Unavailable
from semantic_mcp.operating.overview import FirstPassWatch, build_overview, first_pass, state_counts
from semantic_mcp.operating.plain_text import status_text, why_text
from semantic_mcp.operating.why import WhyError, explain

from .admin_page import overview_html, why_html
from .notices import is_admin, notify
from .pages import Speech, Theming, render
from .upkeep import guarded

log = logging.getLogger("semantic_mcp")

OCC_STATUS_PATH, OCC_WHY_PATH, PAGE_PATH = "/occ/status", "/occ/why", "/admin/status"
OVERVIEW_FORM_ID = "semantic_mcp_overview"
NOTIFY_CHECK_SECONDS = float(os.environ.get("ADMIN_NOTIFY_CHECK_SECONDS", "15"))
FAILURE_NOTICE_SECONDS = 3600.0  # at most one notice of new failures an hour
ADMINS_SECONDS = 3600.0

_OUTPUT = {"name": "output", "shortcut": None, "mode": "required", "default": "plain",
           "description": "plain (for people, the default) or json (for scripts)"}
OCC_COMMANDS: list[dict[str, Any]] = [
    {"name": "semantic_mcp:status", "callback_url": OCC_STATUS_PATH, "options": [_OUTPUT],
     "description": "Indexing across users: per user and source indexed, pending, failed, skipped; the first "
                    "pass's progress; webhooks, model, disk and memory",
     "usages": ["", "--output=json"]},
    {"name": "semantic_mcp:why", "callback_url": OCC_WHY_PATH, "options": [_OUTPUT],
     "description": "Why an item is or is not found: listed, excluded, too large, unsupported, waiting, failed "
                    "or indexed; with a question, where it ranks and what the cut-off did",
     "arguments": [
         {"name": "user", "mode": "required", "description": "the Nextcloud user id"},
         {"name": "item", "mode": "required",
          "description": "a path in the user's files, a file id, or an id as search shows it (note:45, deck_card:7)"},
         {"name": "question", "mode": "optional", "default": "",
          "description": "a question: where the item ranks for it and what the cut-off did"}],
     "usages": ["alice /Documents/contract.pdf", "alice file:123 \"when does the lease end\" --output=json"]},
]


def overview_form(issuer: str) -> SettingsForm:
    """A section in the admin settings whose help link opens the overview page (no fields of its own)."""
    return SettingsForm(
        id=OVERVIEW_FORM_ID, section_id="ai", section_type="admin", priority=9,
        title="Semantic MCP: indexing across users",
        description=(f"How far indexing is, for whom, what failed and why an item is not found: the overview page "
                     f"at {issuer}{PAGE_PATH} (the help link next to this title; admins only). On the command line: "
                     "occ semantic_mcp:status and occ semantic_mcp:why <user> <path-or-id> [question]."),
        doc_url=f"{issuer}{PAGE_PATH}", fields=[])


async def register_occ_commands(nc: AsyncNextcloudApp, engine: Engine) -> list[str]:
    """Register (or update) both commands; returns the problems the admin must fix."""
    problems = []
    for command in OCC_COMMANDS:
        try:
            await guarded(engine.health, "register an occ command", lambda command=command: nc.occ_commands.register(**command))
        except (Unavailable, CredentialsRefused) as exc:
            log.warning("occ command %s not registered yet (%s): enabling the app again registers it", command["name"], exc)
        except NextcloudException as exc:
            problems.append(f"occ command {command['name']}: {exc}")
    return problems


def _wants_json(options: dict[str, Any] | None) -> bool:
    return str((options or {}).get("output") or "plain").lower() in ("json", "json_pretty")


class AdminViews:
    """The occ handlers, the page, and the notices; one :class:`FirstPassWatch` for all of them."""

    def __init__(self, engine: Engine, nc: NextcloudClient, public_url: str, issuer: str,
                 settings_problem: Callable[[], str] = lambda: "") -> None:
        self.settings_problem = settings_problem  # a saved setting the app could not use (settings_check.py)
        self.engine = engine
        self.nc = nc
        self.watch = FirstPassWatch(clock=time.time)
        self.theming = Theming(nc, public_url)
        self.speech = Speech(nc)
        self.page_url = f"{issuer}{PAGE_PATH}"
        self._admins: tuple[float, list[str]] = (float("-inf"), [])

    def routes(self) -> list[Route]:
        return [Route(OCC_STATUS_PATH, self.occ_status, methods=["POST"]),
                Route(OCC_WHY_PATH, self.occ_why, methods=["POST"]),
                Route(PAGE_PATH, self.page, methods=["GET"])]

    async def overview(self) -> dict[str, Any]:
        view = await asyncio.to_thread(build_overview, self.engine, self.watch)
        return {**view, "settings_problem": self.settings_problem() or None}

    # --- occ --------------------------------------------------------------------------------

    async def occ_status(self, request: Request) -> Response:
        occ = await _occ_input(request)
        view = await self.overview()
        if _wants_json(occ.get("options")):
            return PlainTextResponse(json.dumps(view, indent=2) + "\n")
        return PlainTextResponse(status_text(view))

    async def occ_why(self, request: Request) -> Response:
        occ = await _occ_input(request)
        args = occ.get("arguments") or {}
        as_json = _wants_json(occ.get("options"))
        try:
            answer = await explain(self.engine, str(args.get("user") or ""), str(args.get("item") or ""),
                                   str(args.get("question") or ""))
        except WhyError as exc:
            return PlainTextResponse(json.dumps({"error": str(exc)}) + "\n" if as_json else f"{exc}\n")
        return PlainTextResponse(json.dumps(answer, indent=2) + "\n" if as_json else why_text(answer))

    # --- the page ---------------------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        user = str(request.scope.get("username") or "")
        look = await self.theming.look()
        words = await self.speech.words(user, request.headers.get("accept-language", ""))
        if not await self.is_admin(user):
            body = "<h1>Admins only</h1><p>This overview is for Nextcloud's admins. Ask one of them.</p>"
            return render(look, words, "Admins only", body, status=403)
        query = request.query_params
        why = ""
        if query.get("user") or query.get("item"):
            try:
                answer = await explain(self.engine, query.get("user", ""), query.get("item", ""), query.get("question", ""))
                why = why_html(answer)
            except WhyError as exc:
                why = f'<p class="notice" id="why-error">{html.escape(str(exc))}</p>'
        body = overview_html(await self.overview(), dict(query), why)
        return render(look, words, "Semantic MCP: indexing across users", body,
                      head='<meta http-equiv="refresh" content="60">' if not why else "")

    async def is_admin(self, user: str) -> bool:
        return await is_admin(self.nc, user)

    # --- notices ----------------------------------------------------------------------------

    async def admins(self, users: Callable[[], Awaitable[list[str]]]) -> list[str]:
        """Nextcloud's admins (members of ``admin``): each user's own groups, asked as them, kept an hour."""
        since, known = self._admins
        if time.monotonic() - since < ADMINS_SECONDS and known:
            return known
        found = [user for user in await users() if await self.is_admin(user)]
        self._admins = (time.monotonic(), found)
        return found

    async def notify_admins(self, users: Callable[[], Awaitable[list[str]]], subject: str) -> int:
        sent = 0
        for admin in await self.admins(users):
            try:
                await notify(self.nc, admin, subject, link=self.page_url)
                sent += 1
            except Exception as exc:  # noqa: BLE001 - the page and occ still say it
                log.warning("Could not notify %r: %s", admin, exc)
        return sent

    async def notify_forever(self, users: Callable[[], Awaitable[list[str]]]) -> None:
        """Tell the admins once the first indexing pass finished, and when items failed (once an hour at most)."""
        state = self.engine.state
        last_failure_notice = float("-inf")
        while True:
            await asyncio.sleep(NOTIFY_CHECK_SECONDS)
            await self.engine.health.wait_usable()
            try:
                counts = await asyncio.to_thread(state_counts, self.engine.deployment.storage / "state.db")
                totals = {key: sum(c[key] for sources in counts.values() for c in sources.values())
                          for key in ("indexed", "pending", "failed", "skipped")}
                finished = first_pass(self.engine, self.watch, counts)["phase"] == "finished"
                if finished and not state.get_meta("admins_told_first_pass"):
                    subject = (f"Semantic MCP finished its first indexing pass: {totals['indexed']} item(s) indexed for "
                               f"{len(counts)} user(s), {totals['skipped']} skipped, {totals['failed']} failed.")
                    if await self.notify_admins(users, subject):
                        state.set_meta("admins_told_first_pass", str(time.time()))
                told = int(state.get_meta("admins_told_failed") or 0)
                if totals["failed"] < told:  # retried and indexed since: count new failures from here
                    state.set_meta("admins_told_failed", str(totals["failed"]))
                elif totals["failed"] > told and time.monotonic() - last_failure_notice >= FAILURE_NOTICE_SECONDS:
                    subject = (f"Semantic MCP could not index {totals['failed'] - told} more item(s) "
                               f"({totals['failed']} failed in all): the overview says which and why.")
                    if await self.notify_admins(users, subject):
                        state.set_meta("admins_told_failed", str(totals["failed"]))
                        last_failure_notice = time.monotonic()
            except Exception:  # this loop must not end; the next round tries again
                log.exception("Checking whether to notify the admins failed")


async def _occ_input(request: Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError:
        return {}
    occ = body.get("occ") if isinstance(body, dict) else None
    return occ if isinstance(occ, dict) else {}
