"""E-mail files (.eml) through the standard library's ``email`` package: the headers people search
by, the plain-text body (or the HTML one when there is none), and the names of the attachments,
whose content is not read."""

from __future__ import annotations

import email
from email import policy
from email.message import EmailMessage

from .common import UnsupportedContent
from .text import decode_text, html_text

_HEADERS = ("From", "To", "Cc", "Date")


def eml_text(data: bytes) -> str:
    message = email.message_from_bytes(data, policy=policy.default)
    if not isinstance(message, EmailMessage) or not message.keys():
        raise UnsupportedContent("not an e-mail message (no headers)")
    subject = str(message.get("Subject", "") or "").strip()
    lines = [f"# {subject}"] if subject else []
    lines.extend(f"{name}: {message[name]}" for name in _HEADERS if message.get(name))
    body = message.get_body(preferencelist=("plain", "html"))
    if body is not None:
        lines.extend(["", _part_text(body)])
    attachments = [part.get_filename() for part in message.iter_attachments() if part.get_filename()]
    if attachments:
        lines.extend(["", "Attachments: " + ", ".join(attachments)])
    return "\n".join(lines)


def _part_text(part: EmailMessage) -> str:
    try:
        content = part.get_content()
    except LookupError:  # a charset Python does not know: read the bytes as any text file
        content = decode_text(part.get_payload(decode=True) or b"")
    if not isinstance(content, str):
        return ""
    return html_text(content.encode("utf-8")) if part.get_content_subtype() == "html" else content
