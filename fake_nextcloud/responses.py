"""JSON and OCS answers encoded the way Nextcloud's PHP encodes them.

PHP's ``json_encode`` escapes ``/`` and non-ASCII characters, and Nextcloud's JSONResponse adds
``JSON_HEX_TAG`` (``<`` and ``>`` become ``\\u003C``/``\\u003E``). Clients must cope with those
bytes, so the fake produces them too. Errors are raised as exceptions and rendered by the
handlers in :mod:`fake_nextcloud.app`, so every API family answers failures in its own format.
"""

from __future__ import annotations

import json
import random
import string
from typing import Any
from xml.sax.saxutils import escape

from starlette.requests import Request
from starlette.responses import Response

JSON_TYPE = "application/json; charset=utf-8"


def php_json(data: Any, hex_tag: bool = True) -> bytes:
    """Encode like PHP ``json_encode`` (with ``JSON_HEX_TAG`` unless ``hex_tag`` is false)."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True).replace("/", "\\/")
    if hex_tag:
        text = text.replace("<", "\\u003C").replace(">", "\\u003E")
    return text.encode()


def random_request_id() -> str:
    """Nextcloud's 20-character request id (``X-Request-Id``, AppAPI's ``aa-request-id``)."""
    return "".join(random.choices(string.ascii_letters + string.digits, k=20))


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(php_json(data), status_code=status, headers=headers, media_type=JSON_TYPE)


class JsonError(Exception):
    """An app-framework error (Notes, Deck): a JSON body with a status code."""

    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(status, body)
        self.status = status
        self.body = body
        self.headers = headers or {}


class OcsError(Exception):
    """An OCS failure; rendered as an OCS envelope with ``status: failure``."""

    def __init__(self, status: int, message: str = "") -> None:
        super().__init__(status, message)
        self.status = status
        self.message = message


async def request_params(request: Request) -> dict[str, Any]:
    """Parameters from the query string and a JSON or form body, as Nextcloud's IRequest merges them."""
    params: dict[str, Any] = dict(request.query_params)
    body = await request.body()
    if not body:
        return params
    if "json" in request.headers.get("content-type", "") or body.lstrip()[:1] in (b"{", b"["):
        try:
            decoded = json.loads(body)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            params.update(decoded)
        return params
    form = await request.form()
    params.update({k: v for k, v in form.items() if isinstance(v, str)})
    return params


def ocs_version(request: Request) -> int:
    return 1 if request.url.path.startswith("/ocs/v1.php") else 2


def _wants_json(request: Request) -> bool:
    return request.query_params.get("format") == "json" or "application/json" in request.headers.get("accept", "")


def _xml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "".join(f"<{k}>{_xml_value(v)}</{k}>" for k, v in value.items())
    if isinstance(value, list):
        return "".join(f"<element>{_xml_value(v)}</element>" for v in value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else ""
    return escape(str(value))


def ocs_response(request: Request, data: Any = None, status: int = 200, message: str | None = None) -> Response:
    """Wrap ``data`` in the OCS envelope of the request's API version and format.

    v1 always answers HTTP 200 (except 401) with ``statuscode`` 100 on success; v2 mirrors the
    HTTP status in ``statuscode``, except 401 ("Current user is not logged in"), which is 997 in both
    (seen on 34.0.1). Both answer XML unless JSON is asked for.
    """
    ok = 200 <= status < 300
    message = ("OK" if ok else "") if message is None else message
    if ocs_version(request) == 1:
        meta = {
            "status": "ok" if ok else "failure",
            "statuscode": 100 if ok else 997 if status == 401 else status,
            "message": message,
            "totalitems": "",
            "itemsperpage": "",
        }
        http_status = 401 if status == 401 else 200
    else:
        meta = {"status": "ok" if ok else "failure", "statuscode": 997 if status == 401 else status, "message": message}
        http_status = status
    envelope = {"ocs": {"meta": meta, "data": [] if data is None else data}}
    if _wants_json(request):
        return Response(php_json(envelope), status_code=http_status, media_type=JSON_TYPE)
    body = f'<?xml version="1.0"?>\n<ocs>{_xml_value(envelope["ocs"])}</ocs>\n'
    return Response(body.encode(), status_code=http_status, media_type="application/xml; charset=utf-8")
