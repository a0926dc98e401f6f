"""The app as its own OAuth 2.1 authorization server, and the checks the MCP endpoint applies to tokens.

Issuer: ``<public Nextcloud URL>/index.php/apps/app_api/proxy/<app id>``; protected resource:
the MCP endpoint, issuer + ``/mcp``. Authorization code with PKCE S256 only; opaque access
tokens (an hour) bound to that resource; rotating refresh tokens, where presenting a used one
again revokes the whole grant (it was stolen or replayed), as does presenting a code twice.
A grant ends 30 days after consent however often it is refreshed, and holds only while its account
does (``binding``, ADR 0500).
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from ..core.config import AdminSettings
from .binding import GRANT_SECONDS, AccountBinding, Accounts, grant_end
from .clients import Client, ClientRegistry, MetadataPolicy
from .errors import OAuthError, RedirectableError
from .store import Grant, OAuthStore, new_secret

ACCESS_TOKEN_SECONDS = 3600
REFRESH_TOKEN_SECONDS = 30 * 86400
CODE_SECONDS = 300
CONSENT_SECONDS = 900
PURGE_SECONDS = 3600
_PKCE = re.compile(r"^[A-Za-z0-9._~-]{43,128}$")


@dataclass(frozen=True)
class AccessGrant:
    """What a valid access token lets its bearer do."""

    user: str
    scopes: frozenset[str]
    client_name: str
    client_id: str = ""


@dataclass(frozen=True)
class AuthorizationRequest:
    """A validated authorization request, waiting for the user's decision."""

    client_id: str
    client_name: str
    redirect_uri: str
    scope: str
    state: str | None
    code_challenge: str

    @property
    def redirect_host(self) -> str:
        parts = urlsplit(self.redirect_uri)
        return parts.netloc or f"{parts.scheme}:"


def _redirect(uri: str, params: dict[str, str | None]) -> str:
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return f"{uri}{'&' if '?' in uri else '?'}{query}"


def pkce_s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


class AuthorizationServer:
    def __init__(
        self,
        store: OAuthStore,
        registry: ClientRegistry,
        settings: Callable[[], AdminSettings],
        public_url: str,
        app_id: str,
        *,
        accounts: Accounts | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.binding = AccountBinding(store, accounts)
        self.clients = registry
        self.settings = settings
        self.public_url = public_url.rstrip("/")
        self.issuer = f"{self.public_url}/index.php/apps/app_api/proxy/{app_id}"
        self.resource = f"{self.issuer}/mcp"
        self.clock = clock
        self._purged_at = 0.0

    @classmethod
    def open(cls, storage: Path, settings: Callable[[], AdminSettings], public_url: str, app_id: str,
             clock: Callable[[], float], accounts: Accounts) -> AuthorizationServer:
        """The server on its SQLite file under the app's persistent storage."""
        store = OAuthStore(storage / "oauth.db")
        return cls(store, ClientRegistry(store, clock=clock), settings, public_url, app_id, accounts=accounts,
                   clock=clock)

    # --- discovery

    @property
    def enabled(self) -> bool:
        return self.settings().oauth_enabled

    def allowed_scopes(self) -> tuple[str, ...]:
        return self.settings().oauth_scopes

    def resource_metadata_url(self) -> str:
        return f"{self.issuer}/.well-known/oauth-protected-resource"

    def resource_metadata(self) -> dict[str, Any]:
        """RFC 9728."""
        return {
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "scopes_supported": list(self.allowed_scopes()),
            "bearer_methods_supported": ["header"],
            "resource_name": "Semantic MCP for Nextcloud",
        }

    def server_metadata(self) -> dict[str, Any]:
        """RFC 8414 (also served as OpenID discovery, which the MCP discovery order includes)."""
        oauth = f"{self.issuer}/oauth"
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{oauth}/authorize",
            "token_endpoint": f"{oauth}/token",
            "revocation_endpoint": f"{oauth}/revoke",
            "scopes_supported": list(self.allowed_scopes()),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            # no client_secret_basic: Nextcloud would take Basic credentials for a login and refuse them
            "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
            "revocation_endpoint_auth_methods_supported": ["none", "client_secret_post"],
            "code_challenge_methods_supported": ["S256"],
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
            **({"registration_endpoint": f"{oauth}/register"} if self.settings().oauth_allow_registration else {}),
        }

    def register(self, body: bytes, source: str = "") -> dict[str, Any]:
        """RFC 7591 dynamic registration, when the admin allows it; ``source`` is the caller's address."""
        self._require_enabled()
        if not self.settings().oauth_allow_registration:
            raise OAuthError("access_denied", "client registration is switched off on this Nextcloud", status=403)
        return self.clients.register(body, source)

    def policy(self) -> MetadataPolicy:
        settings = self.settings()
        return MetadataPolicy(settings.oauth_metadata_hosts, settings.oauth_allow_private_metadata_hosts)

    def _require_enabled(self) -> None:
        if not self.enabled:
            raise OAuthError("access_denied", "OAuth is switched off on this Nextcloud", status=403)

    # --- authorization endpoint

    async def validate_authorization(
        self, params: dict[str, str], source: str = ""
    ) -> tuple[AuthorizationRequest, Client]:
        """Errors about the client or its redirect URI are shown to the user (never redirected to an
        unverified URI); the rest go back to the client as :class:`RedirectableError`."""
        self._require_enabled()
        client_id = params.get("client_id")
        if not client_id:
            raise OAuthError("invalid_request", "client_id is missing")
        client = await self.clients.find(client_id, self.policy(), source)
        redirect_uri = client.redirect_uri_for(params.get("redirect_uri"))
        state = params.get("state")

        def refuse(error: str, description: str) -> RedirectableError:
            return RedirectableError(error, description, redirect_uri, state)

        if params.get("response_type") != "code":
            raise refuse("unsupported_response_type", "only response_type=code is supported")
        challenge = params.get("code_challenge")
        if not challenge:
            raise refuse("invalid_request", "PKCE is required: send code_challenge with code_challenge_method=S256")
        if params.get("code_challenge_method") != "S256" or not re.fullmatch(r"[A-Za-z0-9_-]{43}", challenge):
            raise refuse("invalid_request", "only PKCE S256 is supported (a 43-character base64url challenge)")
        if params.get("resource") and not self._is_our_resource(params["resource"]):
            raise refuse("invalid_target", f"this server issues tokens only for {self.resource}")
        scope = self._granted_scope(params.get("scope"))
        if not scope:
            raise refuse("invalid_scope", f"none of the requested scopes is available; offered: {' '.join(self.allowed_scopes())}")
        request = AuthorizationRequest(client.client_id, client.name, redirect_uri, scope, state, challenge)
        return request, client

    def _is_our_resource(self, resource: str) -> bool:
        return resource.rstrip("/") == self.resource

    def _granted_scope(self, requested: str | None) -> str:
        allowed = self.allowed_scopes()
        wanted = requested.split() if requested else list(allowed)
        return " ".join(scope for scope in allowed if scope in wanted)  # unknown scopes are ignored (RFC 6749 3.3)

    def error_redirect(self, exc: RedirectableError) -> str:
        """Where an authorization error goes: the client's verified redirect URI (RFC 6749 4.1.2.1)."""
        return _redirect(exc.redirect_uri, {"error": exc.error, "error_description": exc.description,
                                            "state": exc.state, "iss": self.issuer})

    def begin_consent(self, user: str, request: AuthorizationRequest) -> tuple[str, str]:
        """Remember the request for the consent form; returns (request id, anti-CSRF token)."""
        now = self.clock()
        return self.store.add_consent_request(user, asdict(request), now, now + CONSENT_SECONDS)

    async def decide(self, user: str, request_id: str, csrf: str, approve: bool) -> str:
        """The user's answer on the consent form; returns where to send the browser."""
        self._require_enabled()
        stored = self.store.take_consent_request(request_id, user, csrf, self.clock())
        if stored is None:
            raise OAuthError("invalid_request", "this consent form has expired or was not issued to you; start again")
        request = AuthorizationRequest(**stored)
        if not approve:
            return _redirect(request.redirect_uri, {"error": "access_denied", "error_description": "the user declined",
                                                    "state": request.state, "iss": self.issuer})
        account = await self.binding.account(user)
        if account.state != "active" or account.identity is None:
            raise OAuthError("access_denied", "this Nextcloud account cannot connect clients")
        now = self.clock()
        grant = self.store.add_grant(user, request.client_id, request.client_name, request.redirect_uri,
                                     request.scope, self.resource, now, account_id=account.identity,
                                     expires_at=now + GRANT_SECONDS)
        code = new_secret()
        self.store.add_code(code, grant, request.redirect_uri, request.code_challenge, self.clock() + CODE_SECONDS)
        return _redirect(request.redirect_uri, {"code": code, "state": request.state, "iss": self.issuer})

    # --- token endpoint

    async def token(self, form: dict[str, str], source: str = "") -> dict[str, Any]:
        self._require_enabled()
        client = await self._authenticate_client(form, source)
        grant_type = form.get("grant_type")
        if form.get("resource") and not self._is_our_resource(form["resource"]):
            raise OAuthError("invalid_target", f"this server issues tokens only for {self.resource}")
        if grant_type == "authorization_code":
            return await self._exchange_code(client, form)
        if grant_type == "refresh_token":
            return await self._refresh(client, form)
        raise OAuthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")

    async def _authenticate_client(self, form: dict[str, str], source: str) -> Client:
        client_id, secret = form.get("client_id"), form.get("client_secret")
        if not client_id:
            raise OAuthError("invalid_client", "client_id is missing", status=401)
        client = await self.clients.find(client_id, self.policy(), source)
        if not client.check_secret(secret):
            raise OAuthError("invalid_client", "client authentication failed", status=401)
        return client

    async def _exchange_code(self, client: Client, form: dict[str, str]) -> dict[str, Any]:
        now = self.clock()
        code_value, verifier = form.get("code"), form.get("code_verifier")
        if not code_value:
            raise OAuthError("invalid_request", "code is missing")
        if not verifier or not _PKCE.match(verifier):
            raise OAuthError("invalid_request", "code_verifier is missing or malformed (PKCE is required)")
        code = self.store.use_code(code_value, now)
        if code is None:
            raise OAuthError("invalid_grant", "unknown authorization code")
        if code.used_at is not None:
            self.store.revoke_grant(code.grant.id, now)  # a replayed code: withdraw everything issued from it
            raise OAuthError("invalid_grant", "authorization code already used; its tokens are revoked")
        if code.expires_at < now or code.grant.revoked_at is not None:
            raise OAuthError("invalid_grant", "authorization code expired")
        if code.grant.client_id != client.client_id:
            raise OAuthError("invalid_grant", "authorization code was issued to another client")
        if form.get("redirect_uri", code.redirect_uri) != code.redirect_uri:
            raise OAuthError("invalid_grant", "redirect_uri differs from the authorization request")
        if not secrets.compare_digest(pkce_s256(verifier), code.code_challenge):
            raise OAuthError("invalid_grant", "PKCE verification failed: code_verifier does not match code_challenge")
        if not await self.binding.holds(code.grant, now):
            raise OAuthError("invalid_grant", "the account that authorized this code is disabled or gone")
        return self._issue(code.grant, code.grant.scope, now)

    async def _refresh(self, client: Client, form: dict[str, str]) -> dict[str, Any]:
        now = self.clock()
        value = form.get("refresh_token")
        if not value:
            raise OAuthError("invalid_request", "refresh_token is missing")
        token = self.store.token(value, "refresh")
        if token is None or token.grant.revoked_at is not None:
            raise OAuthError("invalid_grant", "unknown or revoked refresh token")
        if token.grant.client_id != client.client_id:
            raise OAuthError("invalid_grant", "refresh token was issued to another client")
        if token.used_at is not None:
            self.store.revoke_grant(token.grant.id, now)  # rotation reuse: someone else holds a copy
            raise OAuthError("invalid_grant", "refresh token already used; the grant is revoked")
        if token.expires_at < now or grant_end(token.grant) < now:
            raise OAuthError("invalid_grant", "refresh token expired (a connection lasts 30 days: connect again)")
        if not await self.binding.holds(token.grant, now):
            raise OAuthError("invalid_grant", "the account that authorized this client is disabled or gone")
        requested = form.get("scope")
        if requested and not set(requested.split()) <= token.scopes:
            raise OAuthError("invalid_scope", "a refresh cannot add scopes the user did not grant")
        scope = " ".join(s for s in token.scope.split() if not requested or s in requested.split())
        used = self.store.use_refresh_token(value, now)  # only a request that passed every check rotates
        if used is None or used.used_at is not None:
            self.store.revoke_grant(token.grant.id, now)  # a concurrent use of the same refresh token
            raise OAuthError("invalid_grant", "refresh token already used; the grant is revoked")
        return self._issue(token.grant, scope, now)

    def _issue(self, grant: Grant, scope: str, now: float) -> dict[str, Any]:
        if now - self._purged_at > PURGE_SECONDS:  # housekeeping rides on token traffic, at most hourly
            self.store.purge_expired(now)
            self._purged_at = now
        access, refresh = new_secret(), new_secret()
        end = grant_end(grant)  # no token outlives its grant, however often it is refreshed
        access_ends = min(now + ACCESS_TOKEN_SECONDS, end)
        self.store.add_token(access, "access", grant, scope, access_ends)
        self.store.add_token(refresh, "refresh", grant, scope, min(now + REFRESH_TOKEN_SECONDS, end))
        self.store.touch_grant(grant.id, now)
        return {"access_token": access, "token_type": "Bearer", "expires_in": int(access_ends - now),
                "refresh_token": refresh, "scope": scope}

    # --- revocation (RFC 7009) and the resource side

    async def revoke(self, form: dict[str, str], source: str = "") -> None:
        client = await self._authenticate_client(form, source)
        value = form.get("token")
        if not value:
            raise OAuthError("invalid_request", "token is missing")
        now = self.clock()
        for kind in ("refresh", "access"):
            token = self.store.token(value, kind)
            if token is None or token.grant.client_id != client.client_id:
                continue
            if kind == "refresh":
                self.store.revoke_grant(token.grant.id, now)  # RFC 7009 2.1: its access tokens go too
            else:
                self.store.delete_token(value)
        # unknown tokens: 200 all the same (RFC 7009 2.2)

    async def verify(self, access_token: str) -> AccessGrant | None:
        """A bearer token of ours: unexpired, unrevoked, minted for this resource, its account still enabled
        and the same; scopes as the admin now allows. Raises :class:`AccountUnconfirmed` when Nextcloud
        cannot say."""
        if not self.enabled:
            return None
        token = self.store.token(access_token, "access")
        now = self.clock()
        if token is None or token.expires_at < now or token.grant.revoked_at is not None:
            return None
        if token.grant.resource != self.resource:
            return None
        if not await self.binding.holds(token.grant, now):
            return None
        self.store.touch_grant(token.grant.id, now)
        return AccessGrant(token.grant.user, token.scopes & frozenset(self.allowed_scopes()), token.grant.client_name,
                           token.grant.client_id)

    # --- a user's connected clients

    def connected_clients(self, user: str) -> list[dict[str, Any]]:
        return [
            {
                "id": grant.id,
                "client_name": grant.client_name,
                "client_id": grant.client_id,
                "redirect_host": urlsplit(grant.redirect_uri).netloc or grant.redirect_uri,
                "scopes": grant.scope.split(),
                "connected_at": _iso(grant.created_at),
                "last_used_at": _iso(grant.last_used_at),
                "ends_at": _iso(grant_end(grant)),  # 30 days after consent (binding.py)
            }
            for grant in self.store.grants_of(user)
        ]

    def disconnect(self, user: str, grant_id: str) -> bool:
        grant = self.store.grant(grant_id)
        if grant is None or grant.user != user or grant.revoked_at is not None:
            return False
        self.store.revoke_grant(grant_id, self.clock())
        return True


def _iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))
