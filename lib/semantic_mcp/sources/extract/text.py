"""Plain text, HTML and RTF: text with markup at most."""

from __future__ import annotations

import codecs
import re
from html.parser import HTMLParser

from striprtf.striprtf import rtf_to_text

from .common import UnsupportedContent

# --- plain text -------------------------------------------------------------------------------

_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def decode_text(data: bytes) -> str:
    """Decode a text file whatever its encoding: BOM, else UTF-8, else Windows-1252, else Latin-1.

    Latin-1 maps every byte, so legacy files always decode (possibly with a few odd characters)
    instead of being skipped. NUL bytes outside UTF-16 mean the "text" is really binary.
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data.decode(encoding, errors="replace")
    if b"\x00" in data:
        raise UnsupportedContent("binary content in a text file")
    for encoding in ("utf-8", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


# --- HTML -------------------------------------------------------------------------------------


class _HtmlToText(HTMLParser):
    """Keeps the visible text, headings as ``#`` lines, list items as ``-`` lines, cells separated by ``|``."""

    _HIDDEN = {"script", "style", "noscript", "template", "title", "svg"}
    _BLOCKS = {"p", "div", "section", "article", "header", "footer", "main", "nav", "aside", "ul", "ol",
               "table", "tr", "blockquote", "pre", "dl", "dt", "dd", "figure", "figcaption", "hr", "br"}
    _HEADINGS = {f"h{level}": level for level in range(1, 7)}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden_depth = 0
        self._pre_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._HIDDEN:
            self._hidden_depth += 1
        elif tag in self._HEADINGS:
            self.parts.append("\n\n" + "#" * self._HEADINGS[tag] + " ")
        elif tag == "li":
            self.parts.append("\n- ")
        elif tag in ("td", "th"):
            self.parts.append(" | ")
        elif tag in self._BLOCKS:
            self.parts.append("\n")
        if tag == "pre":
            self._pre_depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self._HIDDEN:
            self._hidden_depth = max(0, self._hidden_depth - 1)
        elif tag in self._HEADINGS or tag in self._BLOCKS:
            self.parts.append("\n")
        if tag == "pre":
            self._pre_depth = max(0, self._pre_depth - 1)

    def handle_data(self, data: str) -> None:
        if self._hidden_depth:
            return
        self.parts.append(data if self._pre_depth else re.sub(r"\s+", " ", data))


def html_text(data: bytes) -> str:
    parser = _HtmlToText()
    parser.feed(decode_text(data))
    parser.close()
    lines = (line.strip() for line in "".join(parser.parts).split("\n"))
    return "\n".join(line.removeprefix("| ") for line in lines)


# --- RTF --------------------------------------------------------------------------------------


def rtf_text(data: bytes) -> str:
    """RTF through striprtf; RTF is 7-bit by design (other characters are escaped), so Latin-1 reads any file."""
    if not data.lstrip().startswith(b"{\\rtf"):
        raise UnsupportedContent("not an RTF document")
    return rtf_to_text(data.decode("latin-1"), errors="replace")
