"""Tool output sized for a client's model, which pays tokens for what it reads (issue 35, item 4, ADR 0300):
a result's text as compact JSON without nulls or debug fields, and lean schemas in tools/list.

The SDK renders a tool's structured output into the text block with ``indent=2`` and every null field.
The text is rewritten here from the structured content, which stays whole for clients that read it.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_types import CallToolResult, TextContent


# Diagnostics for people tuning the search, not for a model answering a question: the raw cosine, the
# keyword share (both folded into score) and the ~190-character method string. They stay in the
# structured content.
DEBUG_FIELDS = frozenset({"similarity", "keyword_match", "search_method"})


def without_nulls(value: Any) -> Any:
    """``value`` with null fields and DEBUG_FIELDS dropped: they tell a model nothing it needs."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items()
                if item is not None and key not in DEBUG_FIELDS}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def _excerpt_after_title(value: Any) -> Any:
    """A hit's excerpt without the title it often opens with (indexed text starts with it): said once is enough."""
    if isinstance(value, dict):
        value = {key: _excerpt_after_title(item) for key, item in value.items()}
        title, excerpt = value.get("title"), value.get("excerpt")
        if isinstance(title, str) and title and isinstance(excerpt, str) and excerpt.startswith(title) \
                and len(excerpt) > len(title):
            value["excerpt"] = excerpt[len(title):].lstrip(" \n:-–—#")
        return value
    if isinstance(value, list):
        return [_excerpt_after_title(item) for item in value]
    return value


def compact_text(structured: dict[str, Any]) -> str:
    return json.dumps(_excerpt_after_title(without_nulls(structured)), ensure_ascii=False, separators=(",", ":"))


class CompactResultText:
    """Middleware: a successful tools/call result's one text block becomes compact JSON of its structured content."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method != "tools/call":
            return result
        if isinstance(result, CallToolResult):
            if not result.is_error and result.structured_content is not None and len(result.content) == 1 \
                    and isinstance(result.content[0], TextContent):
                result.content[0].text = compact_text(result.structured_content)
        elif isinstance(result, dict) and not result.get("isError") \
                and isinstance(result.get("structuredContent"), dict):
            content = result.get("content") or []
            if len(content) == 1 and isinstance(content[0], dict) and content[0].get("type") == "text":
                content[0]["text"] = compact_text(result["structuredContent"])
        return result


def lean_schema(schema: Any, *, optional_as_absent: bool = True) -> Any:
    """A JSON schema without pydantic's generated titles (the property name, capitalised) and, for arguments
    (``optional_as_absent``), an optional ``anyOf [X, null]`` given as X (leaving it out is the same as null):
    the same contract, fewer tokens. Output schemas keep their nulls: clients validate results against them."""
    if isinstance(schema, list):
        return [lean_schema(item, optional_as_absent=optional_as_absent) for item in schema]
    if not isinstance(schema, dict):
        return schema
    lean = {key: lean_schema(value, optional_as_absent=optional_as_absent) for key, value in schema.items()
            if not (key == "title" and isinstance(value, str))}
    if isinstance(schema.get("properties"), dict):  # a property may itself be called "title": keep the names
        lean["properties"] = {name: lean_schema(value, optional_as_absent=optional_as_absent)
                              for name, value in schema["properties"].items()}
    options = lean.get("anyOf")
    if optional_as_absent and isinstance(options, list) and len(options) == 2 and {"type": "null"} in options \
            and lean.get("default", 0) is None:
        [kept] = [option for option in options if option != {"type": "null"}]
        lean = {**{k: v for k, v in lean.items() if k not in ("anyOf", "default")}, **kept}
    return lean


class LeanToolList:
    """Middleware: tools/list with lean input and output schemas (see lean_schema)."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method != "tools/list":
            return result
        for tool in result.get("tools", []) if isinstance(result, dict) else result.tools:
            if isinstance(tool, dict):
                for key in ("inputSchema", "outputSchema"):
                    if isinstance(tool.get(key), dict):
                        tool[key] = lean_schema(tool[key], optional_as_absent=key == "inputSchema")
            else:
                tool.input_schema = lean_schema(tool.input_schema)
                if tool.output_schema is not None:
                    tool.output_schema = lean_schema(tool.output_schema, optional_as_absent=False)
        return result
