"""Tool results' text as compact JSON without nulls or debug fields: what a client's model reads costs it tokens (issue 35, item 4).

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
        elif isinstance(result, dict) and not result.get("isError") and isinstance(result.get("structuredContent"), dict):
            content = result.get("content") or []
            if len(content) == 1 and isinstance(content[0], dict) and content[0].get("type") == "text":
                content[0]["text"] = compact_text(result["structuredContent"])
        return result
