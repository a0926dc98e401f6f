"""Who is calling an MCP tool, as established by the ExApp shell from the HTTP request."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Principal:
    user: str
    scopes: frozenset[str]
    # False behind a buffering proxy (AppAPI's PHP proxy): server-initiated requests sent during a
    # call never reach such a caller before the call ends.
    streaming: bool = True
    # Through which client, for the audit record: an OAuth client's name and id, or "app-password".
    client: str = ""
    client_id: str = ""


PrincipalOf = Callable[[Any], Principal | None]  # from the HTTP request the MCP message arrived on
