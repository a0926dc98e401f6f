"""Tool output sized for a client's model, which pays tokens for what it reads (issue 35, item 4, ADR 0301):
a result's text as compact JSON without nulls or debug fields, and lean schemas in tools/list.

The SDK renders a tool's structured output into the text block with ``indent=2`` and every null field.
The text is rewritten here from the structured content, which stays whole for clients that read it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcp_types import CallToolResult, TextContent


# Diagnostics for people tuning the search, not for a model answering a question: the raw cosine, the
# keyword share (both folded into score) and the ~190-character method string. They stay in the
# structured content, and come in the text too when the call asks with explain=true.
DEBUG_FIELDS = frozenset({"similarity", "keyword_match", "search_method"})


def without_nulls(value: Any, *, explain: bool = False) -> Any:
    """``value`` with null fields and (unless ``explain``) DEBUG_FIELDS dropped: they tell a model nothing it needs."""
    if isinstance(value, dict):
        return {key: without_nulls(item, explain=explain) for key, item in value.items()
                if item is not None and (explain or key not in DEBUG_FIELDS)}
    if isinstance(value, list):
        return [without_nulls(item, explain=explain) for item in value]
    return value


def _header_repeats(line: str, said: set[str]) -> bool:
    """A line that only restates what the hit says already: the title, the place, or 'Label: <one of them>'."""
    text = line.strip().lstrip("#").strip()
    label, sep, value = text.partition(": ")
    return text in said or (bool(sep) and len(label) <= 20 and value.strip() in said)


def lean_excerpt(excerpt: str, title: str, location: str) -> str:
    """An excerpt without the lines that restate the hit's own fields (the indexed text opens with its title,
    a header such as 'Note: <title>', 'Path: <place>', 'Calendar: <place>', then often '# <title>'), and
    without blank lines."""
    said = {s for s in (title, location) if s}
    lean = "\n".join(line for line in excerpt.split("\n") if line.strip() and not _header_repeats(line, said))
    if title and lean.startswith(title) and len(lean) > len(title):  # a first line that opens with the title
        lean = lean[len(title):].lstrip(" \n:-–—")
    return lean or excerpt


_SECONDS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d):\d\d(?:\.\d+)?Z$")


def _to_the_minute(value: Any) -> Any:
    """'2026-11-28T09:35:43Z' as '2026-11-28T09:35Z': seconds tell a model nothing about a date."""
    if isinstance(value, list):
        return [_to_the_minute(item) for item in value]
    return _SECONDS.sub(r"\1Z", value) if isinstance(value, str) else value


def lean_hit(hit: dict[str, Any]) -> dict[str, Any]:
    """A search hit said once: the kind only where the id does not say it, a file's place as its folder
    (the title is its name) and no empty place, the excerpt without what those fields say, and times to the
    minute."""
    title, location, doc_type = hit.get("title"), hit.get("location"), hit.get("doc_type")
    if not isinstance(title, str) or not isinstance(hit.get("excerpt"), str):
        return hit
    hit = dict(hit)
    place = location if isinstance(location, str) else ""
    hit["excerpt"] = lean_excerpt(hit["excerpt"], title, place)
    if isinstance(doc_type, str) and str(hit.get("id", "")).startswith(doc_type + ":"):
        del hit["doc_type"]
    for key in ("modified", "event_start", "event_end", "following"):
        if key in hit:
            hit[key] = _to_the_minute(hit[key])
    if title and place.endswith("/" + title):
        hit["location"] = place[: -len(title)]
    elif location == "":  # e.g. a note without a category
        del hit["location"]
    return hit


def _lean(value: Any) -> Any:
    if isinstance(value, dict):
        value = {key: _lean(item) for key, item in value.items()}
        if "excerpt" in value and "title" in value:
            value = lean_hit(value)
        if value.get("reranked") is False:  # the usual case, said by saying nothing
            del value["reranked"]
        results = value.get("results", value.get("sources"))
        if isinstance(results, list) and value.get("total_found") == len(results):  # nothing was cut
            del value["total_found"]
        return value
    if isinstance(value, list):
        return [_lean(item) for item in value]
    return value


def compact_text(structured: dict[str, Any], *, explain: bool = False) -> str:
    return json.dumps(_lean(without_nulls(structured, explain=explain)), ensure_ascii=False, separators=(",", ":"))


def _explained(ctx: Any) -> bool:
    arguments = (ctx.params or {}).get("arguments")
    return isinstance(arguments, dict) and arguments.get("explain") is True


class CompactResultText:
    """Middleware: a successful tools/call result's one text block becomes compact JSON of its structured content."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method != "tools/call":
            return result
        if isinstance(result, CallToolResult):
            if not result.is_error and result.structured_content is not None and len(result.content) == 1 \
                    and isinstance(result.content[0], TextContent):
                result.content[0].text = compact_text(result.structured_content, explain=_explained(ctx))
        elif isinstance(result, dict) and not result.get("isError") \
                and isinstance(result.get("structuredContent"), dict):
            content = result.get("content") or []
            if len(content) == 1 and isinstance(content[0], dict) and content[0].get("type") == "text":
                content[0]["text"] = compact_text(result["structuredContent"], explain=_explained(ctx))
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
