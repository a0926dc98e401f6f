"""OAuth error responses (RFC 6749 section 5.2 and friends) as exceptions."""

from __future__ import annotations


class OAuthError(Exception):
    """An error the client is told about: ``error`` is the RFC code, ``description`` says why."""

    def __init__(self, error: str, description: str, *, status: int = 400) -> None:
        super().__init__(f"{error}: {description}")
        self.error = error
        self.description = description
        self.status = status

    def as_json(self) -> dict[str, str]:
        return {"error": self.error, "error_description": self.description}


class RedirectableError(OAuthError):
    """An authorization error reported to the client's (already validated) redirect URI."""

    def __init__(self, error: str, description: str, redirect_uri: str, state: str | None) -> None:
        super().__init__(error, description)
        self.redirect_uri = redirect_uri
        self.state = state
