"""Log lines that say what happened and nothing an attacker chose to make them say.

Many messages carry strings from outside: a client's error text, a tool name, an id from a webhook,
a document title. One with a newline would start a forged line ("… ERROR semantic_mcp: admin
logged in"), terminal escapes would rewrite what an admin sees, and a megabyte of text would fill
the disk. So every record is rendered by :class:`SafeFormatter`: control and bidi characters
escaped, the message bounded. One place, for every logger the app configures, so no call site can
forget it; tracebacks are the app's own and keep their lines.
"""

from __future__ import annotations

import logging
import re

MAX_MESSAGE_CHARS = 2000
# C0 and C1 controls (newline, carriage return, escape …), line and paragraph separators, bidi overrides.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` on one line, unsafe characters escaped (``\\n``, ``\\x1b``, ``\\u202e``), at most ``limit`` long."""
    text = _UNSAFE.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit} more characters)"
    return text


class SafeFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        original = record.msg, record.args
        record.msg, record.args = printable(record.getMessage()), None
        try:
            return super().format(record)
        finally:
            record.msg, record.args = original


# Libraries that log one line per HTTP request at INFO: most of an admin's log, and nothing to act on.
# The MCP SDK's are one per session opened, timed out or ended, and a second line for a tool's error,
# which the audit record already holds (issue 40).
CHATTY_LIBRARIES = ("httpx", "httpcore", "urllib3", "niquests", "mcp")


def configure_logging(level: str) -> None:
    """The root logger as the app runs it: one line per record, through :class:`SafeFormatter`.
    HTTP clients' request lines only when debugging (``APP_LOG_LEVEL=DEBUG``), their warnings always."""
    logging.basicConfig(level=level)
    for name in CHATTY_LIBRARIES:
        logging.getLogger(name).setLevel(logging.DEBUG if level.upper() == "DEBUG" else logging.WARNING)
    for handler in logging.getLogger().handlers:
        handler.setFormatter(SafeFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
