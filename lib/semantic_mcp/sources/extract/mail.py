"""E-mail files: .eml through the standard library's ``email`` package, Outlook's .msg through
extract-msg. Both give the headers people search by, the plain-text body (or the HTML one when
there is none), and the names of the attachments, whose content is not read."""

from __future__ import annotations

import email
from email import policy
from email.message import EmailMessage

from .common import OLE, UnsupportedContent
from .text import decode_text, html_text

_HEADERS = ("From", "To", "Cc", "Date")


def eml_text(data: bytes) -> str:
    message = email.message_from_bytes(data, policy=policy.default)
    if not isinstance(message, EmailMessage) or not message.keys():
        raise UnsupportedContent("not an e-mail message (no headers)")
    body = message.get_body(preferencelist=("plain", "html"))
    attachments = [part.get_filename() for part in message.iter_attachments() if part.get_filename()]
    return _mail(str(message.get("Subject", "") or ""), {name: message[name] for name in _HEADERS},
                 _part_text(body) if body is not None else "", attachments)


def msg_text(data: bytes) -> str:
    """An Outlook message (.msg, a Compound File) as :func:`eml_text` reads an .eml."""
    import extract_msg  # only here: the parser process imports it for the first .msg alone

    if not data.startswith(OLE):
        raise UnsupportedContent("not an Outlook message (not a Compound File)")
    message = extract_msg.openMsg(data, delayAttachments=True)
    try:
        body = message.body or ""
        if not body.strip() and message.htmlBody:
            body = html_text(message.htmlBody)
        headers = {"From": message.sender, "To": message.to, "Cc": message.cc,
                   "Date": message.date.isoformat(" ") if message.date else None}
        attachments = [getattr(item, "longFilename", None) or getattr(item, "name", "") for item in message.attachments]
        return _mail(message.subject or "", headers, body, [name for name in attachments if name])
    finally:
        message.close()


def _mail(subject: str, headers: dict[str, object], body: str, attachments: list[str]) -> str:
    lines = [f"# {subject.strip()}"] if subject.strip() else []
    lines.extend(f"{name}: {value}" for name, value in headers.items() if value)
    if body:
        lines.extend(["", body])
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
