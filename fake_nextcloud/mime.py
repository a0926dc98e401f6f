"""The MIME type the fake Nextcloud reports for a file: Nextcloud's own mapping by extension
(resources/config/mimetypemapping.dist.json, Nextcloud 34) for every type the app reads, so the
app sees the names a real server gives; the host's guess only for the rest."""

from __future__ import annotations

import mimetypes

_MIME = {
    ".md": "text/markdown",
    ".txt": "text/plain",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".odt": "application/vnd.oasis.opendocument.text",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".xlsm": "application/vnd.ms-excel.sheet.macroEnabled.12",
    ".ods": "application/vnd.oasis.opendocument.spreadsheet",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".pptm": "application/vnd.ms-powerpoint.presentation.macroEnabled.12",
    ".odp": "application/vnd.oasis.opendocument.presentation",
    ".rtf": "text/rtf",
    ".epub": "application/epub+zip",
    ".eml": "message/rfc822",
    ".msg": "application/vnd.ms-outlook",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".webp": "image/webp",
    ".gif": "image/gif",
    ".bmp": "image/bmp",
    ".heic": "image/heic",
    ".ics": "text/calendar",
    ".vcf": "text/vcard",
    ".csv": "text/csv",
    ".json": "application/json",
}


def mimetype_for(name: str, is_dir: bool = False) -> str:
    if is_dir:
        return "httpd/unix-directory"
    dot = name.rfind(".")
    ext = name[dot:].lower() if dot > 0 else ""
    return _MIME.get(ext) or mimetypes.guess_type(name)[0] or "application/octet-stream"
