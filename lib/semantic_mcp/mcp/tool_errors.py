"""Tool-call errors in one plain sentence a person (or the client's model) can act on.

The SDK reports rejected arguments as pydantic's raw text ("1 validation error for ... For further
information visit https://errors.pydantic.dev/...") prefixed with "Error executing tool NAME:". This
middleware checks the arguments first against the same schema and answers with one sentence per call;
for errors the tools raise themselves it only drops the SDK's prefix.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent
from pydantic import ValidationError


def plain_argument_error(exc: ValidationError) -> str:
    """The first problem of ``exc`` as one sentence naming the argument and the limit."""
    err = exc.errors()[0]
    name = ".".join(str(part) for part in err["loc"] if isinstance(part, str)) or "the arguments"  # no list index
    kind, limits = err["type"], err.get("ctx") or {}
    if kind == "missing":
        return f"{name} is required."
    if kind == "string_too_short":
        return f"{name} is empty; give at least {limits.get('min_length', 1)} character(s)."
    if kind == "string_too_long":
        return f"{name} is too long: the limit is {limits.get('max_length'):,} characters."
    if kind in ("greater_than_equal", "greater_than"):
        return f"{name} must be at least {limits.get('ge', limits.get('gt'))}."
    if kind in ("less_than_equal", "less_than"):
        return f"{name} must be at most {limits.get('le', limits.get('lt'))}."
    if kind in ("literal_error", "enum"):
        return f"{name} must be one of {limits.get('expected')}."
    if kind.startswith(("int_", "float_")):
        return f"{name} must be a number."
    if kind.startswith("bool"):
        return f"{name} must be true or false."
    if kind.startswith("string"):
        return f"{name} must be text."
    return f"{name} is not valid: {err['msg']}."


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


class PlainToolErrors:
    """Middleware: argument and tool errors of tools/call as one plain sentence."""

    def __init__(self, server: MCPServer) -> None:
        self._server = server

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        params = ctx.params or {}
        name, arguments = str(params.get("name")), params.get("arguments") or {}
        tool = self._server._tool_manager.get_tool(name)
        if tool is not None and isinstance(arguments, dict):
            query = arguments.get("query")
            if isinstance(query, str) and query and not query.strip():
                return _error("query is blank; say what to look for.")
            try:
                tool.fn_metadata.validate_arguments(arguments)
            except ValidationError as exc:
                return _error(plain_argument_error(exc))
            except Exception:  # a validator that crashes: the SDK's own call reports it
                pass
        result = await call_next(ctx)
        prefix = f"Error executing tool {name}: "
        if isinstance(result, CallToolResult) and result.is_error:
            for part in result.content:
                if isinstance(part, TextContent) and part.text.startswith(prefix):
                    part.text = part.text[len(prefix):]
        elif isinstance(result, dict) and result.get("isError"):  # the SDK may hand the result on serialised
            for part in result.get("content", []):
                if isinstance(part, dict) and str(part.get("text", "")).startswith(prefix):
                    part["text"] = part["text"][len(prefix):]
        return result
