"""A compromised MCP client: it holds a user's valid credentials and sends whatever it likes.

May: do what its user may (scopes permitting). May not: forge or flood the app's log with what it
says (its sampling errors, tool names), replay an earlier round's request state (test_search_tools),
exceed its user's quotas (test_an_anonymous_caller), or read other users' status (test_another_user).
"""

from __future__ import annotations

import logging
from typing import Any

from mcp_types import ErrorData
from stack import Stack

from semantic_mcp.core.logsafe import MAX_MESSAGE_CHARS, SafeFormatter

USER = "mallory"
FORGED = "2026-11-25 09:00:00,000 ERROR semantic_mcp: admin password reset by alice"


async def test_what_a_client_says_cannot_forge_a_log_line(stack: Stack) -> None:
    # A user of its own: the three failures open this user's sampling breaker for minutes, and the
    # shared stack's other tests sample as alice.
    stack.fake.add_user(USER, "Mallory")
    stack.fake.create_note(USER, "Dentist appointment", "The dentist appointment is on Tuesday at nine.")
    await stack.eventually(lambda: _indexed(stack))

    async def hostile_model(context: Any, params: Any) -> ErrorData:
        return ErrorData(code=-1, message=f"declined\n{FORGED}\r\n\x1b[2J\u202e{'x' * 10_000}")

    before = len(stack.log())
    for _ in range(3):  # the third failure opens the breaker, which logs the reason again
        await stack.call(USER, "nc_semantic_search_answer", {"query": "dentist appointment",
                                                                "use_query_analysis": False},
                         sampling_callback=hostile_model, mode="legacy", direct=True)  # errors reach the app
    written = stack.log()[before:]
    assert "declined\\n2026-11-25" in written  # logged, escaped, on its own record's line
    assert not any(line.startswith(FORGED) for line in written.splitlines())
    assert "\x1b" not in written and "\u202e" not in written
    assert all(len(line) < MAX_MESSAGE_CHARS + 200 for line in written.splitlines() if "declined" in line)


async def _indexed(stack: Stack) -> bool:
    return "Dentist appointment" in await stack.titles(USER, "dentist appointment")


def test_the_formatter_keeps_tracebacks_but_escapes_messages() -> None:
    formatter = SafeFormatter("%(levelname)s %(message)s")
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "tool %s\nrefused", ("evil\r\nINFO ok",), None)
        import sys
        record.exc_info = sys.exc_info()
    text = formatter.format(record)
    first, *rest = text.splitlines()
    assert first == "ERROR tool evil\\r\\nINFO ok\\nrefused"
    assert rest[0].startswith("Traceback") and "ValueError: boom" in text
