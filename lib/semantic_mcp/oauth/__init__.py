"""OAuth 2.1 for MCP connector clients: the app is its own authorization server (ADR 0100).

``server`` holds the flows, ``clients`` identifies clients (metadata documents and dynamic
registration), ``binding`` keeps grants to the accounts that made them, ``store`` keeps grants and
hashed tokens in SQLite. The HTTP side lives in
``ex_app/oauth_http.py``.
"""

from .binding import AccountUnconfirmed
from .clients import ClientRegistry, MetadataPolicy
from .errors import OAuthError, RedirectableError
from .server import AccessGrant, AuthorizationRequest, AuthorizationServer
from .store import OAuthStore

__all__ = [
    "AccessGrant", "AccountUnconfirmed", "AuthorizationRequest", "AuthorizationServer", "ClientRegistry",
    "MetadataPolicy", "OAuthError", "OAuthStore", "RedirectableError",
]
