"""Tool errors in one plain sentence a person (or a client's model) can act on (issue 35).

The SDK reports a rejected argument as pydantic's multi-line message with a link to pydantic's docs, and
prefixes every failure with "Error executing tool <name>:". :class:`PlainErrorServer` rewrites both: a
validation error becomes a sentence naming the argument and the allowed values, an anticipated failure
keeps its own sentence, and anything unexpected says so without internals (the log has the traceback).
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import Field, StringConstraints, ValidationError

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2000

# A query: surrounding blanks dropped, so "   " is as empty as "" and says so.
Query = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUERY_CHARS)]

def query_field(description: str) -> Any:
    return Field(description=f"{description} (at most {MAX_QUERY_CHARS} characters)")


def plain_validation_error(error: ValidationError) -> str:
    """The first rejected argument as one sentence."""
    first = error.errors()[0]
    field = str(first["loc"][0]) if first["loc"] else "arguments"
    name = field
    kind, ctx, value = first["type"], first.get("ctx") or {}, first.get("input")
    if kind == "string_too_short":
        if field == "query":
            return "The query is empty: say in a few words what to look for."
        if field == "id":
            return "That id is too short: use the id of a search result, for example 'note:42'."
        return f"{name} is empty: give a value of at least {ctx.get('min_length', 1)} character(s)."
    if kind == "string_too_long":
        return f"The {name} is too long: at most {ctx.get('max_length')} characters, shorten it and try again."
    if kind in ("less_than_equal", "less_than"):
        return f"{name} is too large: at most {ctx.get('le', ctx.get('lt'))}."
    if kind in ("greater_than_equal", "greater_than"):
        return f"{name} is too small: at least {ctx.get('ge', ctx.get('gt'))}."
    if kind in ("literal_error", "enum"):
        return f"{value!r} is not a valid {name}: use {ctx.get('expected', 'one of the listed values')}."
    if kind == "missing":
        return f"{name} is missing: the tool needs it."
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"{name} has the wrong type: {first['msg'].lower()}."
    return f"{name} was not accepted: {first['msg']}."


class PlainErrorServer(MCPServer):
    """An MCP server whose tool errors read as one plain sentence."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, (ValueError, LookupError, PermissionError, TimeoutError)) and str(cause):
                raise ToolError(_sentence(str(cause))) from cause  # our own code's anticipated failures
            log.error("Tool %s failed unexpectedly", name, exc_info=cause)
            raise ToolError(f"Semantic MCP could not run {name} because of an internal error; try again, and if it "
                            "keeps failing ask your Nextcloud admin to look at the app's log.") from cause
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(plain_validation_error(cause)) from cause
            message = str(exc).removeprefix(f"Error executing tool {name}: ")
            if message.startswith("Unknown tool"):
                raise
            raise ToolError(_sentence(message)) from cause


def _sentence(message: str) -> str:
    message = message.strip()
    return message[:1].upper() + message[1:] + ("" if message.endswith((".", "!", "?")) else ".")
