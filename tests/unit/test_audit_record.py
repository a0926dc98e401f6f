"""The audit record of tool calls (lib/semantic_mcp/operating/audit.py): one parseable line per call, no
content, and a log endpoint that fails or hangs never costs a call its answer."""

from __future__ import annotations

import asyncio
import logging
import re
import shlex
from types import SimpleNamespace
from typing import Any

import pytest

from semantic_mcp.operating import audit
from semantic_mcp.operating.audit import AuditTrail, NextcloudLogHandler, tool_call_line
from semantic_mcp.core.principal import Principal


def parse(line: str) -> dict[str, str]:
    """What a log shipper's logfmt parser makes of a line (shlex reads the same quoting)."""
    event, *pairs = shlex.split(line)
    return {"event": event, **dict(pair.split("=", 1) for pair in pairs)}


def test_a_line_parses_back_to_its_fields_even_with_quotes_newlines_and_spaces() -> None:
    line = tool_call_line(user="alice", client='Evil "client"\nERROR forged', client_id="c-1",
                          tool="nc_semantic_search", outcome="ok", results=5, ms=184, query="the q3 contract")
    assert "\n" not in line
    assert parse(line) == {"event": "tool_call", "user": "alice", "client": 'Evil "client"\\nERROR forged',
                           "client_id": "c-1", "tool": "nc_semantic_search", "outcome": "ok", "results": "5",
                           "ms": "184", "query": "the q3 contract"}


class Ctx(SimpleNamespace):
    method: str
    params: dict[str, Any]
    request: Any


def trail(principal: Principal | None, queries: bool = False) -> AuditTrail:
    ticks = iter([10.0, 10.25])
    return AuditTrail(lambda _request: principal, lambda _name: "semantic:read", lambda: queries,
                      clock=lambda: next(ticks))


ALICE = Principal(user="alice", scopes=frozenset({"semantic:read"}), client="Claude", client_id="abc")


def run(middleware: AuditTrail, result: Any, arguments: dict[str, Any] | None = None) -> None:
    async def call_next(_ctx: Any) -> Any:
        if isinstance(result, Exception):
            raise result
        return result

    ctx = Ctx(method="tools/call", params={"name": "nc_semantic_search", "arguments": arguments or {}}, request=None)
    asyncio.run(middleware(ctx, call_next))


def test_a_served_call_is_recorded_with_client_count_and_time_but_not_the_query(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="semantic_mcp.audit")
    served = SimpleNamespace(structured_content={"results": [{"text": "secret contract text"}] * 3}, is_error=False)
    run(trail(ALICE), served, {"query": "salary of bob"})
    [record] = caplog.records
    assert record.levelno == logging.INFO
    assert parse(record.getMessage()) == {"event": "tool_call", "user": "alice", "client": "Claude", "client_id": "abc",
                                          "tool": "nc_semantic_search", "outcome": "ok", "results": "3", "ms": "250"}
    assert "secret" not in record.getMessage() and "salary" not in record.getMessage()


def test_the_query_is_recorded_only_when_the_admin_says_so(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="semantic_mcp.audit")
    run(trail(ALICE, queries=True), SimpleNamespace(structured_content={"results": []}), {"query": "salary of bob"})
    assert parse(caplog.records[0].getMessage())["query"] == "salary of bob"


def test_a_refusal_for_scope_is_a_warning_so_nextclouds_default_level_keeps_it(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="semantic_mcp.audit")
    read_nothing = Principal(user="bob", scopes=frozenset(), client=audit.APP_PASSWORD)
    run(trail(read_nothing), SimpleNamespace(structured_content=None, is_error=True))
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    fields = parse(record.getMessage())
    assert (fields["user"], fields["client"], fields["outcome"], fields["reason"]) == ("bob", "app-password", "refused", "scope")


def test_a_call_that_raises_is_recorded_as_an_error_and_still_raises(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="semantic_mcp.audit")
    with pytest.raises(ValueError):
        run(trail(ALICE), ValueError("bad filter"))
    fields = parse(caplog.records[0].getMessage())
    assert (fields["outcome"], fields["reason"]) == ("error", "ValueError")


# --- sending to Nextcloud ----------------------------------------------------------------------------


def record_through(handler: NextcloudLogHandler, message: str, level: int = logging.INFO) -> None:
    handler.handle(logging.LogRecord("semantic_mcp.audit", level, __file__, 1, message, None, None))


def test_records_reach_nextcloud_in_order_at_nextclouds_levels() -> None:
    sent: list[tuple[int, str]] = []

    async def send(level: int, message: str) -> None:
        sent.append((level, message))

    async def scenario() -> None:
        handler = NextcloudLogHandler(send, lambda: asyncio.sleep(0), bound=10)
        handler.start()
        record_through(handler, "tool_call user=alice outcome=ok")
        record_through(handler, "tool_call user=bob outcome=refused", logging.WARNING)
        await asyncio.wait_for(handler.flushed(), 2)
        await handler.stop()

    asyncio.run(scenario())
    assert sent == [(1, "tool_call user=alice outcome=ok"), (2, "tool_call user=bob outcome=refused")]


def test_a_failing_or_hanging_log_endpoint_never_holds_up_a_call_and_memory_stays_bounded() -> None:
    attempts = 0

    async def down(_level: int, _message: str) -> None:
        nonlocal attempts
        attempts += 1
        raise ConnectionError("Nextcloud is down")

    async def scenario() -> NextcloudLogHandler:
        handler = NextcloudLogHandler(down, lambda: asyncio.sleep(0), bound=5, retry_seconds=0.01)
        handler.start()
        loop = asyncio.get_running_loop()
        started = loop.time()
        for number in range(50):
            record_through(handler, f"tool_call n={number}")
        assert loop.time() - started < 0.5  # emitting is a queue append, whatever the endpoint does
        await asyncio.sleep(0.1)
        await handler.stop(flush_seconds=0.05)
        return handler

    handler = asyncio.run(scenario())
    assert attempts >= 2  # kept trying
    assert handler.dropped == 45 and handler.sent == 0
    assert [message for _, message in handler._queue] == [f"tool_call n={n}" for n in range(45, 50)]  # the newest kept


def test_a_record_waits_while_nextcloud_is_away_and_goes_once_it_answers() -> None:
    sent: list[str] = []
    usable = None

    async def send(_level: int, message: str) -> None:
        sent.append(message)

    async def scenario() -> None:
        nonlocal usable
        usable = asyncio.Event()
        handler = NextcloudLogHandler(send, usable.wait)
        handler.start()
        record_through(handler, "tool_call user=alice outcome=ok")
        await asyncio.sleep(0.05)
        assert sent == []
        usable.set()
        await asyncio.wait_for(handler.flushed(), 2)
        await handler.stop()

    asyncio.run(scenario())
    assert sent == ["tool_call user=alice outcome=ok"]


def test_tool_call_lines_are_one_greppable_word_first() -> None:
    line = tool_call_line(user="alice", client=audit.APP_PASSWORD, client_id=None, tool="nc_get_document",
                          outcome="ok", results=1, ms=3)
    assert re.match(r"^tool_call user=alice client=app-password tool=nc_get_document outcome=ok results=1 ms=3$", line)


def test_a_token_of_a_disabled_account_is_recorded_as_refused_with_its_client(
        tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    from semantic_mcp.nextcloud.accounts import Account
    from semantic_mcp.oauth.binding import AccountBinding
    from semantic_mcp.oauth.store import OAuthStore

    class Disabled:
        async def account(self, user: str) -> Account:
            return Account(user, "disabled")

    store = OAuthStore(tmp_path / "oauth.db")
    grant = store.add_grant("carol", "cid-7", "VS Code", "http://127.0.0.1/cb", "semantic:read", "res", 100.0,
                            account_id="1", expires_at=10_000.0)
    caplog.set_level(logging.INFO, logger="semantic_mcp.audit")
    assert asyncio.run(AccountBinding(store, Disabled()).holds(grant, 200.0)) is False
    [record] = [r for r in caplog.records if r.name == "semantic_mcp.audit"]
    assert record.levelno == logging.WARNING
    fields = parse(record.getMessage())
    assert (fields["user"], fields["client"], fields["client_id"], fields["outcome"], fields["reason"]) == (
        "carol", "VS Code", "cid-7", "refused", "account")


def test_a_quota_refusal_is_recorded_with_the_user_and_client(caplog: pytest.LogCaptureFixture) -> None:
    async def quota(_scope: Any, _receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 429, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def sink(_message: Any) -> None:
        return None

    caplog.set_level(logging.INFO, logger="semantic_mcp.audit")
    scope = {"type": "http", "path": "/mcp", "username": "dave", "oauth_client": ("ChatGPT", "cid-9")}
    asyncio.run(audit.QuotaRefusals(quota)(scope, None, sink))
    [record] = caplog.records
    fields = parse(record.getMessage())
    assert record.levelno == logging.WARNING
    assert (fields["user"], fields["client"], fields["client_id"], fields["tool"], fields["reason"]) == (
        "dave", "ChatGPT", "cid-9", "-", "quota")
