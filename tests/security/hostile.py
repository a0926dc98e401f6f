"""Hostile documents, built small: each is a few bytes to a few kilobytes that stand for far more work.

Every builder here reproduces an attack a user (or anyone sharing with one) can mount just by saving
a document where the app indexes it. They are used by the security tests of this folder.
"""

from __future__ import annotations

import io
import zipfile

from fake_nextcloud.seed import vcard

DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
ODT_MIME = "application/vnd.oasis.opendocument.text"

_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_DOCX_PARTS = {
    "[Content_Types].xml": (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/word/document.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
    ),
    "_rels/.rels": (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Target="word/document.xml" '
        'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"/></Relationships>'
    ),
}


def _zip(parts: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def docx(body_xml: str) -> bytes:
    return _zip({**_DOCX_PARTS, "word/document.xml": f'<?xml version="1.0"?><w:document {_W}><w:body>{body_xml}'
                                                      "</w:body></w:document>"})


def slow_docx(paragraphs: int = 400_000) -> bytes:
    """About 4 KB that python-docx walks for minutes: hundreds of thousands of empty paragraphs."""
    return docx("<w:p/>" * paragraphs)


def greedy_docx(megabytes: int = 50) -> bytes:
    """A zip bomb under the archive size check: ~150 KB that python-docx holds as ``megabytes`` of
    text, several times over, while reading it."""
    run = "<w:r><w:t>" + "word " * 200 + "</w:t></w:r>"
    return docx("<w:p>" + run * (megabytes * 1_000_000 // len(run)) + "</w:p>")


def odt(body_xml: str, extra: dict[str, bytes] | None = None) -> bytes:
    content = (
        '<?xml version="1.0"?><office:document-content '
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0">'
        f"<office:body><office:text>{body_xml}</office:text></office:body></office:document-content>"
    )
    return _zip({"mimetype": ODT_MIME, "content.xml": content, **(extra or {})})


def odt_repeat_bomb(before: str, after: str, count: int) -> bytes:
    """The issue's few-hundred-byte ODT: one ``<text:s text:c="count"/>`` stands for ``count`` spaces."""
    return odt(f'<text:p>{before}<text:s text:c="{count}"/>{after}</text:p>')


def ods_repeat_bomb(header: str, cell: str, count: int) -> bytes:
    """A spreadsheet row repeated ``count`` times, each of ``count`` cells of ``cell`` followed by
    ``count`` spaces: LibreOffice writes identical rows and cells once with a count, so can anyone."""
    content = (
        '<?xml version="1.0"?><office:document-content '
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:spreadsheet>'
        f'<table:table table:name="Bomb"><table:table-row><table:table-cell><text:p>{header}</text:p>'
        f'</table:table-cell></table:table-row><table:table-row table:number-rows-repeated="{count}">'
        f'<table:table-cell table:number-columns-repeated="{count}"><text:p>{cell}<text:s text:c="{count}"/>'
        "</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet></office:body>"
        "</office:document-content>"
    )
    return _zip({"mimetype": "application/vnd.oasis.opendocument.spreadsheet", "content.xml": content})


def odt_zip_bomb(megabytes: int = 100) -> bytes:
    """A classic zip bomb: ``megabytes`` of zeros in the archive, about a thousandth of that on disk."""
    return odt("<text:p>bomb</text:p>", {"padding.bin": b"\0" * (megabytes * 1024 * 1024)})


def slow_html(tags: int = 30_000) -> bytes:
    """Unclosed tags that Python's HTMLParser (3.11) rescans again and again: ~90 KB, hours of work."""
    return b"<a " * tags


def pdf_page_tree_bomb(fanout: int = 10, depth: int = 8) -> bytes:
    """About 1 KB claiming ``fanout ** depth`` pages: every level of the page tree lists the next
    level ``fanout`` times."""
    objects = {1: "<< /Type /Catalog /Pages 2 0 R >>", 3: "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] >>"}
    child, count = 3, 1
    for number in range(4, 4 + depth):
        count *= fanout
        objects[number] = f"<< /Type /Pages /Kids [{' '.join([f'{child} 0 R'] * fanout)}] /Count {count} >>"
        child = number
    objects[2] = f"<< /Type /Pages /Kids [{child} 0 R] /Count {count} >>"
    out, offsets = b"%PDF-1.4\n", {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += f"{number} 0 obj\n{objects[number]}\nendobj\n".encode()
    xref, size = len(out), max(objects) + 1
    out += f"xref\n0 {size}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offsets[n]:010d} 00000 n \n".encode() for n in range(1, size))
    return out + f"trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()


def event(uid: str, summary: str, *lines: str, start: str = "20261201T090000Z") -> str:
    body = [f"UID:{uid}", "DTSTAMP:20260101T000000Z", f"DTSTART:{start}", f"SUMMARY:{summary}", *lines]
    return "\r\n".join(["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//security tests//EN", "BEGIN:VEVENT", *body,
                        "END:VEVENT", "END:VCALENDAR", ""])


def billion_instance_event(uid: str = "every-second") -> str:
    """A daily event at every hour, minute and second since 1900: about four billion instances
    before today, which a naive expansion walks one by one."""
    every = ";".join(f"{part}={','.join(map(str, range(n)))}" for part, n in
                     (("BYHOUR", 24), ("BYMINUTE", 60), ("BYSECOND", 60)))
    return event(uid, "Tick", f"RRULE:FREQ=DAILY;{every}", start="19000101T000000Z")


def tagged_contact(uid: str, name: str, category: str) -> str:
    return vcard(uid, name, f"{uid}@example.com").replace("END:VCARD", f"CATEGORIES:{category}\r\nEND:VCARD")
