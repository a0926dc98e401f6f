"""Any MCP request of a user asks Nextcloud again, in the background, about the items their searches
returned lately whose re-check verdict is half the re-check window old (ADR 0780).

A client opens its session (``initialize``) before it searches. Asking then, before the user's first
search, means that search finds fresh verdicts instead of waiting, inside a proxied request that
holds a PHP worker, for a re-check that needs another worker. This is asked at a quiet time too: a
burst of clients after a pause is when no worker is left for a re-check, and Nextcloud is counted as
busy only once searches queue. At most one such request per user every half window.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from semantic_mcp.search.verify import Verifier


class AskAhead:
    """ASGI middleware for ``/mcp``; runs where ``scope["username"]`` is known (inside the auth guards)."""

    def __init__(self, app: ASGIApp, *, verifier: Verifier) -> None:
        self.app = app
        self.verifier = verifier

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("username") if scope["type"] == "http" and scope["path"] == "/mcp" else None
        if user:
            self.verifier.ask_ahead(user)
        await self.app(scope, receive, send)
