"""Contacts (CardDAV): one document per vCard, polled with sync-collection (there are no contact events).

The vCard reader is a small one on purpose: indexing needs a dozen properties as text, and vCard
3.0 and 4.0 share the syntax that matters (line folding, ``NAME;PARAM=a,b:value``, backslash
escapes, ``;``-separated structured values). Anything that is not a vCard gives Skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..core.documents import SourceDocument, Skipped
from ..nextcloud.client import DavEntry, strip_etag
from .base import compose_gist, compose_text
from .dav_sync import DavSyncSource
from .examples import EXAMPLE_CONTACT_REASON, is_contact_example


class ContactsSource(DavSyncSource):
    """The user's address books, without the server's and apps' generated ones (the system address
    book lists every account on the server, not the user's contacts)."""

    doc_type = "contact"
    home_template = "/remote.php/dav/addressbooks/users/{user}/"
    collection_type = "addressbook"
    multiget_report = "card:addressbook-multiget"
    data_prop = "card:address-data"

    def keeps(self, uri: str, entry: DavEntry) -> bool:
        return uri != "z-server-generated--system" and not uri.startswith("z-app-generated--")

    parser = f"{__name__}:parse_contact"

    def parser_args(self) -> tuple:
        return (self.options.index_examples,)


@dataclass
class VCardProperty:
    name: str  # upper case, without group: "EMAIL" for "item1.EMAIL"
    params: dict[str, list[str]] = field(default_factory=dict)  # upper-case keys; bare 2.1 params are TYPEs
    value: str = ""  # raw: unescape with components()

    @property
    def types(self) -> list[str]:
        return [kind.lower() for kind in self.params.get("TYPE", [])]

    def components(self) -> list[str]:
        """The value split at unescaped ``;`` (structured N, ADR, ORG) and unescaped."""
        return _split_escaped(self.value, ";")

    def text(self) -> str:
        """The value as one unescaped text (``;`` kept)."""
        return ";".join(self.components())


def parse_vcard(text: str) -> list[VCardProperty]:
    """Read the first vCard in ``text``; ValueError when there is none.

    Folded lines (CRLF or LF followed by a space or tab) are joined first. Lines without a
    ``:`` are ignored rather than failing the whole card, as clients write odd lines.
    """
    unfolded = re.sub(r"\r?\n[ \t]", "", text.replace("\r\n", "\n"))
    properties: list[VCardProperty] = []
    for line in unfolded.split("\n"):
        head_value = _split_unquoted(line, ":", maxsplit=1)
        if len(head_value) != 2:
            continue
        head, value = head_value
        name, *raw_params = _split_unquoted(head, ";")
        prop = VCardProperty(name.rpartition(".")[2].strip().upper(), _params(raw_params), value)
        if prop.name == "END" and value.strip().upper() == "VCARD":
            break
        properties.append(prop)
    else:
        raise ValueError("no END:VCARD")
    if not properties or properties[0].name != "BEGIN" or properties[0].value.strip().upper() != "VCARD":
        raise ValueError("does not start with BEGIN:VCARD")
    return properties[1:]


def _params(raw: list[str]) -> dict[str, list[str]]:
    params: dict[str, list[str]] = {}
    for item in raw:
        key, sep, values = item.partition("=")
        if not sep:  # vCard 2.1: ";HOME;VOICE"
            key, values = "TYPE", key
        # TYPE="work,voice" is how many clients write a list, so quotes do not protect commas here.
        params.setdefault(key.strip().upper(), []).extend(
            value.strip() for value in values.replace('"', "").split(",") if value.strip()
        )
    return params


def _split_unquoted(text: str, separator: str, maxsplit: int = -1) -> list[str]:
    """Split at ``separator`` outside double quotes (parameter values may quote ``:`` and ``;``)."""
    parts: list[str] = []
    start, quoted = 0, False
    for index, char in enumerate(text):
        if char == '"':
            quoted = not quoted
        elif char == separator and not quoted and maxsplit != len(parts):
            parts.append(text[start:index])
            start = index + 1
    return [*parts, text[start:]]


def _split_escaped(value: str, separator: str) -> list[str]:
    """Split at unescaped ``separator`` and resolve ``\\n``, ``\\,``, ``\\;`` and ``\\\\``."""
    parts, current, chars = [], [], iter(value)
    for char in chars:
        if char == "\\":
            escaped = next(chars, "")
            current.append("\n" if escaped in ("n", "N") else escaped)
        elif char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    return [*parts, "".join(current)]


_NOISE_TYPES = {"internet", "pref", "voice", "x400"}


def document_from_vcard(
    source_id: str, vcard_text: str, etag: str, book_name: str, modified: int, index_examples: bool = False
) -> SourceDocument | Skipped:
    """Turn one vCard into a document: name first, then what people search contacts by. Nextcloud's
    example contact is Skipped unless ``index_examples``."""
    try:
        props = parse_vcard(vcard_text)
    except ValueError as exc:
        return Skipped("contact", source_id, f"invalid vCard: {exc}", version=strip_etag(etag))
    by_name: dict[str, list[VCardProperty]] = {}
    for prop in props:
        by_name.setdefault(prop.name, []).append(prop)

    def values(name: str) -> list[VCardProperty]:
        return by_name.get(name, [])

    def single(name: str) -> str:
        return next((prop.text().strip() for prop in values(name) if prop.text().strip()), "")

    organization = " / ".join(part for prop in values("ORG")[:1] for part in prop.components() if part)
    emails = _typed(values("EMAIL"))
    name = single("FN") or _name_from_n(values("N")) or organization or single("EMAIL") or "(unnamed contact)"
    uid = single("UID")
    book_uri = source_id.partition("/")[0]
    heading, note = f"Contact: {name}", "\n".join(prop.text() for prop in values("NOTE"))
    if not index_examples and is_contact_example(props, note):
        return Skipped("contact", source_id, EXAMPLE_CONTACT_REASON, version=strip_etag(etag))
    # The ways to reach them, also carried by every chunk: a hit answers "how do I reach ..." itself.
    reach = {"email": emails, "phone": _typed(values("TEL")),
             "address": "; ".join(_address(prop) for prop in values("ADR")), "company": organization}
    text = compose_text(
        heading,
        [
            ("Nickname", single("NICKNAME")),
            ("Organization", organization),
            ("Job title", single("TITLE")),
            ("Email", emails),
            ("Phone", reach["phone"]),
            ("Address", reach["address"]),
            ("Birthday", _birthday(single("BDAY"))),
            ("Address book", book_name),
        ],
        note,
    )
    return SourceDocument(
        doc_type="contact",
        source_id=source_id,
        title=name,
        text=text,
        gist=compose_gist(heading, note),
        modified=modified,
        version=strip_etag(etag),
        link=f"/apps/contacts/direct/contact/{uid}~{book_uri}" if uid else "/apps/contacts/",
        location=book_name,
        extra={**({"uid": uid} if uid else {}), **{key: value[:200] for key, value in reach.items() if value}},
        tags=tuple(category for prop in values("CATEGORIES") for category in _split_escaped(prop.value, ",") if category),
    )


def parse_contact(_user: str, source_id: str, vcard_text: str, etag: str, book_name: str, modified: int,
                  index_examples: bool = False) -> SourceDocument | Skipped:
    """:func:`document_from_vcard` with the arguments every DAV source's parser takes (the user unused)."""
    return document_from_vcard(source_id, vcard_text, etag, book_name, modified, index_examples)


def _name_from_n(props: list[VCardProperty]) -> str:
    """``N:Family;Given;Additional;Prefix;Suffix`` read as "Prefix Given Additional Family Suffix"."""
    if not props:
        return ""
    parts = props[0].components() + [""] * 5
    family, given, additional, prefix, suffix = parts[:5]
    return " ".join(part for part in (prefix, given, additional, family, suffix) if part.strip())


def _typed(props: list[VCardProperty]) -> str:
    """``+1555 (cell); +1666 (work)``: values with their meaningful TYPEs; ``tel:``/``mailto:`` URIs unwrapped."""
    rendered = []
    for prop in props:
        value = re.sub(r"(?i)^(tel|mailto):", "", prop.text().strip())
        kinds = [kind for kind in prop.types if kind not in _NOISE_TYPES and not kind.startswith("x-")]
        if value:
            rendered.append(f"{value} ({', '.join(kinds)})" if kinds else value)
    return "; ".join(rendered)


def _address(prop: VCardProperty) -> str:
    """``ADR:PO box;extended;street;city;region;postal code;country`` as one line."""
    line = ", ".join(part.replace("\n", ", ") for part in prop.components() if part.strip())
    kinds = [kind for kind in prop.types if kind not in _NOISE_TYPES]
    return f"{line} ({', '.join(kinds)})" if kinds and line else line


def _birthday(value: str) -> str:
    """``19900115``/``1990-01-15``/``1990-01-15T00:00:00`` -> ``1990-01-15``; ``--0115`` -> ``--01-15`` (no year)."""
    if match := re.fullmatch(r"(\d{4})-?(\d{2})-?(\d{2})(T.*)?", value):
        return "-".join(match.group(1, 2, 3))
    if match := re.fullmatch(r"--(\d{2})-?(\d{2})", value):
        return f"--{match.group(1)}-{match.group(2)}"
    return value
