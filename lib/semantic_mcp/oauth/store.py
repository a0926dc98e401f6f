"""Persistent OAuth state in SQLite under APP_PERSISTENT_STORAGE: survives restarts and upgrades.

Secrets (authorization codes, access and refresh tokens, client secrets, consent anti-CSRF
tokens) are stored only as SHA-256 hashes, so a copy of the database grants nothing. A *grant*
is one user's consent to one client; every code and token hangs off a grant, so revoking the
grant ends them all at once.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..stores.migrations import add_column, is_new, migrate

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS clients (          -- registered with RFC 7591 dynamic registration
    client_id TEXT PRIMARY KEY, metadata TEXT NOT NULL, secret_hash TEXT, registered_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS metadata_documents (  -- fetched client ID metadata documents (CIMD)
    url TEXT PRIMARY KEY, metadata TEXT NOT NULL, expires_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS consent_requests (  -- an authorization request shown to a user, awaiting a decision
    id TEXT PRIMARY KEY, user TEXT NOT NULL, csrf_hash TEXT NOT NULL, request TEXT NOT NULL, expires_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS grants (
    id TEXT PRIMARY KEY, user TEXT NOT NULL, client_id TEXT NOT NULL, client_name TEXT NOT NULL,
    redirect_uri TEXT NOT NULL, scope TEXT NOT NULL, resource TEXT NOT NULL,
    created_at REAL NOT NULL, last_used_at REAL, revoked_at REAL,
    account_id TEXT,      -- the account's identity beside its uid (accounts.py); NULL: granted before it was kept
    expires_at REAL       -- absolute end: refreshing never moves it
);
CREATE INDEX IF NOT EXISTS grants_by_user ON grants (user);
CREATE TABLE IF NOT EXISTS codes (
    hash TEXT PRIMARY KEY, grant_id TEXT NOT NULL, redirect_uri TEXT NOT NULL, code_challenge TEXT NOT NULL,
    expires_at REAL NOT NULL, used_at REAL
);
CREATE TABLE IF NOT EXISTS tokens (
    hash TEXT PRIMARY KEY, kind TEXT NOT NULL, grant_id TEXT NOT NULL, scope TEXT NOT NULL,
    expires_at REAL NOT NULL, used_at REAL
);
CREATE INDEX IF NOT EXISTS tokens_by_grant ON tokens (grant_id);
CREATE TABLE IF NOT EXISTS anonymous_requests (  -- registrations and document fetches, for their quotas
    kind TEXT NOT NULL, source TEXT NOT NULL, at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS anonymous_requests_by_kind ON anonymous_requests (kind, at);
"""


UNUSED_REGISTRATION_SECONDS = 86400  # a registration nobody authorized within a day goes (it was a week)
MAX_UNUSED_REGISTRATIONS = 1000
_UNUSED = "client_id NOT IN (SELECT client_id FROM grants)"
# The layouts since the first, in order (stores/migrations.py); append, never change or reorder.
_MIGRATIONS = (add_column("grants", "account_id", "TEXT"), add_column("grants", "expires_at", "REAL"))


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret() -> str:
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Grant:
    id: str
    user: str
    client_id: str
    client_name: str
    redirect_uri: str
    scope: str
    resource: str
    created_at: float
    last_used_at: float | None
    revoked_at: float | None
    account_id: str | None = None
    expires_at: float | None = None

    @property
    def scopes(self) -> frozenset[str]:
        return frozenset(self.scope.split())


@dataclass(frozen=True)
class Code:
    grant: Grant
    redirect_uri: str
    code_challenge: str
    expires_at: float
    used_at: float | None


@dataclass(frozen=True)
class Token:
    kind: str  # "access" | "refresh"
    grant: Grant
    scope: str
    expires_at: float
    used_at: float | None

    @property
    def scopes(self) -> frozenset[str]:
        return frozenset(self.scope.split())


class OAuthStore:
    """All reads and writes are short; one connection behind a lock serves the event loop and threads."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            new = is_new(self._db)
            self._db.executescript(SCHEMA)
            migrate(self._db, _MIGRATIONS, name="OAuth store", new=new)

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- clients

    def add_client(self, client_id: str, metadata: dict[str, Any], secret: str | None, now: float) -> None:
        """Store a registration; past MAX_UNUSED_REGISTRATIONS never-used ones, the oldest of them goes
        (a flood churns only registrations nobody authorized, and never closes registration for anyone)."""
        with self._lock:
            self._db.execute(
                "INSERT INTO clients (client_id, metadata, secret_hash, registered_at) VALUES (?, ?, ?, ?)",
                (client_id, json.dumps(metadata), digest(secret) if secret else None, now),
            )
            self._db.execute(
                f"DELETE FROM clients WHERE client_id IN (SELECT client_id FROM clients WHERE {_UNUSED} "
                "ORDER BY registered_at DESC, rowid DESC LIMIT -1 OFFSET ?)", (MAX_UNUSED_REGISTRATIONS,))

    def client(self, client_id: str) -> tuple[dict[str, Any], str | None] | None:
        rows = self._run("SELECT metadata, secret_hash FROM clients WHERE client_id = ?", (client_id,))
        return (json.loads(rows[0]["metadata"]), rows[0]["secret_hash"]) if rows else None

    def cached_document(self, url: str, now: float) -> dict[str, Any] | None:
        rows = self._run("SELECT metadata FROM metadata_documents WHERE url = ? AND expires_at > ?", (url, now))
        return json.loads(rows[0]["metadata"]) if rows else None

    def cache_document(self, url: str, metadata: dict[str, Any], expires_at: float) -> None:
        self._run(
            "INSERT OR REPLACE INTO metadata_documents (url, metadata, expires_at) VALUES (?, ?, ?)",
            (url, json.dumps(metadata), expires_at),
        )

    def admit_anonymous(self, kind: str, source: str, now: float, window: float, per_source: int,
                        in_total: int | None) -> str | None:
        """Count one anonymous request of ``kind`` from ``source`` unless a quota for the last
        ``window`` seconds is used up; returns which one ("source", "total") or None."""
        with self._lock:
            since = now - window
            total = self._db.execute("SELECT COUNT(*) FROM anonymous_requests WHERE kind = ? AND at > ?",
                                     (kind, since)).fetchone()[0]
            mine = self._db.execute("SELECT COUNT(*) FROM anonymous_requests WHERE kind = ? AND at > ? AND source = ?",
                                    (kind, since, source)).fetchone()[0]
            if mine >= per_source:
                return "source"
            if in_total is not None and total >= in_total:
                return "total"
            self._db.execute("INSERT INTO anonymous_requests (kind, source, at) VALUES (?, ?, ?)", (kind, source, now))
            self._db.execute("DELETE FROM anonymous_requests WHERE at < ?", (now - 86400,))
        return None

    # --- consent requests

    def add_consent_request(self, user: str, request: dict[str, Any], now: float,
                            expires_at: float) -> tuple[str, str]:
        """Returns (request id, anti-CSRF token) for the consent form."""
        request_id, csrf = new_secret(), new_secret()
        self._run("DELETE FROM consent_requests WHERE expires_at < ?", (now,))
        self._run(
            "INSERT INTO consent_requests (id, user, csrf_hash, request, expires_at) VALUES (?, ?, ?, ?, ?)",
            (request_id, user, digest(csrf), json.dumps(request), expires_at),
        )
        return request_id, csrf

    def take_consent_request(self, request_id: str, user: str, csrf: str, now: float) -> dict[str, Any] | None:
        """The request, once: only for its user, with its anti-CSRF token, before it expires."""
        with self._lock:
            row = self._db.execute(
                "DELETE FROM consent_requests WHERE id = ? AND user = ? AND csrf_hash = ? AND expires_at > ? "
                "RETURNING request",
                (request_id, user, digest(csrf), now),
            ).fetchone()
        return json.loads(row["request"]) if row else None

    # --- grants, codes, tokens

    def add_grant(self, user: str, client_id: str, client_name: str, redirect_uri: str, scope: str,
                  resource: str, now: float, *, account_id: str, expires_at: float) -> Grant:
        grant_id = secrets.token_hex(12)
        self._run(
            "INSERT INTO grants (id, user, client_id, client_name, redirect_uri, scope, resource, created_at, "
            "account_id, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (grant_id, user, client_id, client_name, redirect_uri, scope, resource, now, account_id, expires_at),
        )
        return self.grant(grant_id)  # type: ignore[return-value]

    def grant(self, grant_id: str) -> Grant | None:
        rows = self._run("SELECT * FROM grants WHERE id = ?", (grant_id,))
        return Grant(**dict(rows[0])) if rows else None

    def grants_of(self, user: str) -> list[Grant]:
        rows = self._run(
            "SELECT * FROM grants WHERE user = ? AND revoked_at IS NULL ORDER BY created_at", (user,)
        )
        return [Grant(**dict(row)) for row in rows]

    def revoke_grant(self, grant_id: str, now: float) -> None:
        with self._lock:
            self._db.execute("UPDATE grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (now, grant_id))
            self._db.execute("DELETE FROM tokens WHERE grant_id = ?", (grant_id,))

    def bind_grant(self, grant_id: str, account_id: str, expires_at: float) -> None:
        """A grant made before accounts were bound gets the account it was made by, and an end."""
        self._run("UPDATE grants SET account_id = ?, expires_at = COALESCE(expires_at, ?) WHERE id = ?",
                  (account_id, expires_at, grant_id))

    def users_with_grants(self) -> set[str]:
        return {row["user"] for row in self._run("SELECT DISTINCT user FROM grants")}

    def revoke_grants_of(self, user: str, now: float) -> int:
        """Every live grant of ``user`` (a disabled or replaced account); returns how many."""
        ids = [row["id"] for row in self._run("SELECT id FROM grants WHERE user = ? AND revoked_at IS NULL", (user,))]
        for grant_id in ids:
            self.revoke_grant(grant_id, now)
        return len(ids)

    def delete_user(self, user: str) -> None:
        """Forget an account that is gone: its grants, their codes and tokens, its pending consents."""
        with self._lock:
            grants = "SELECT id FROM grants WHERE user = ?"
            self._db.execute(f"DELETE FROM tokens WHERE grant_id IN ({grants})", (user,))
            self._db.execute(f"DELETE FROM codes WHERE grant_id IN ({grants})", (user,))
            self._db.execute("DELETE FROM grants WHERE user = ?", (user,))
            self._db.execute("DELETE FROM consent_requests WHERE user = ?", (user,))

    def touch_grant(self, grant_id: str, now: float) -> None:
        self._run("UPDATE grants SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)",
                  (now, grant_id, now - 60))

    def add_code(self, code: str, grant: Grant, redirect_uri: str, code_challenge: str, expires_at: float) -> None:
        self._run(
            "INSERT INTO codes (hash, grant_id, redirect_uri, code_challenge, expires_at) VALUES (?, ?, ?, ?, ?)",
            (digest(code), grant.id, redirect_uri, code_challenge, expires_at),
        )

    def use_code(self, code: str, now: float) -> Code | None:
        """The code as it was before this use (``used_at`` set means it had been used already)."""
        with self._lock:
            row = self._db.execute("SELECT * FROM codes WHERE hash = ?", (digest(code),)).fetchone()
            if row is None:
                return None
            self._db.execute("UPDATE codes SET used_at = ? WHERE hash = ? AND used_at IS NULL", (now, row["hash"]))
        grant = self.grant(row["grant_id"])
        if grant is None:
            return None
        return Code(grant, row["redirect_uri"], row["code_challenge"], row["expires_at"], row["used_at"])

    def add_token(self, token: str, kind: str, grant: Grant, scope: str, expires_at: float) -> None:
        self._run(
            "INSERT INTO tokens (hash, kind, grant_id, scope, expires_at) VALUES (?, ?, ?, ?, ?)",
            (digest(token), kind, grant.id, scope, expires_at),
        )

    def token(self, token: str, kind: str) -> Token | None:
        rows = self._run("SELECT * FROM tokens WHERE hash = ? AND kind = ?", (digest(token), kind))
        if not rows:
            return None
        grant = self.grant(rows[0]["grant_id"])
        if grant is None:
            return None
        return Token(kind, grant, rows[0]["scope"], rows[0]["expires_at"], rows[0]["used_at"])

    def use_refresh_token(self, token: str, now: float) -> Token | None:
        """Marks a refresh token used (rotation); returns it as it was before this use."""
        with self._lock:
            row = self._db.execute("SELECT * FROM tokens WHERE hash = ? AND kind = 'refresh'", (digest(token),)).fetchone()
            if row is None:
                return None
            self._db.execute("UPDATE tokens SET used_at = ? WHERE hash = ? AND used_at IS NULL", (now, row["hash"]))
        grant = self.grant(row["grant_id"])
        return Token("refresh", grant, row["scope"], row["expires_at"], row["used_at"]) if grant else None

    def delete_token(self, token: str) -> str | None:
        """Deletes an access or refresh token; returns its grant id."""
        with self._lock:
            row = self._db.execute("DELETE FROM tokens WHERE hash = ? RETURNING grant_id", (digest(token),)).fetchone()
        return row["grant_id"] if row else None

    def purge_expired(self, now: float) -> None:
        """Drop what can no longer be used, and registrations nobody authorized within a day."""
        with self._lock:
            self._db.execute(f"DELETE FROM clients WHERE registered_at < ? AND {_UNUSED}",
                             (now - UNUSED_REGISTRATION_SECONDS,))
            self._db.execute("UPDATE grants SET revoked_at = expires_at WHERE expires_at < ? AND revoked_at IS NULL",
                             (now,))
            self._db.execute("DELETE FROM tokens WHERE expires_at < ?", (now,))
            self._db.execute("DELETE FROM codes WHERE expires_at < ?", (now - 86400,))
            self._db.execute("DELETE FROM consent_requests WHERE expires_at < ?", (now,))
            self._db.execute("DELETE FROM metadata_documents WHERE expires_at < ?", (now,))
