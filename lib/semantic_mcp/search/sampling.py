"""Asking the MCP client's model (sampling) on every path a client can reach us by, and falling back.

Paths, as observed through a real Nextcloud 32 (see the project README):

* 2026-07-28 clients: the request goes back inside an ``InputRequiredResult`` and the client
  retries with the answer. Works through AppAPI's buffering proxy. We return the SDK's ``Sample``
  marker and the framework does the rounds (the state is sealed and bound to the user).
* 2025-11-25 clients on a streaming path (HaRP, the app's own port): a server-initiated
  ``sampling/createMessage`` mid-call.
* 2025-11-25 clients behind the buffering PHP proxy: that request sits in the proxy's buffer and
  the client never sees it. We bound the wait with a short timeout, then remember that this
  session has no working back-channel so later calls fall back at once.
* No sampling capability, a decline, an error, a timeout, or a breaker opened by repeated
  failures: a :class:`Fallback` with a reason, never an error for the tool call.

Each purpose (query analysis, re-ranking, answering) has its own gate with metrics and a
circuit breaker per user, visible through the status tool.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Sample
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import CreateMessageRequest, CreateMessageResult, TextContent
from mcp_types.version import is_version_at_least

from ..core.principal import Principal

log = logging.getLogger(__name__)

INPUT_REQUIRED_VERSION = "2026-07-28"


@dataclass(frozen=True)
class Fallback:
    """Sampling did not happen or did not give a usable answer; ``reason`` is shown to the user."""

    reason: str


@dataclass(frozen=True)
class Sampled:
    text: str
    model: str
    stop_reason: str | None


@dataclass
class GateMetrics:
    attempts: int = 0
    successes: int = 0
    failures: int = 0
    fallbacks: int = 0
    total_latency_ms: float = 0.0

    @property
    def mean_latency_ms(self) -> float | None:
        timed = self.successes + self.failures
        return round(self.total_latency_ms / timed, 1) if timed else None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "mean_latency_ms": self.mean_latency_ms}


MAX_REMEMBERED_FAILURES = 10_000  # users whose last failure is kept (a bound for a long-running process)


@dataclass
class _Breaker:
    consecutive_failures: int = 0
    open_until: float = 0.0


@dataclass
class SamplingGate:
    """Timeout, circuit breaker (per user) and metrics for one purpose of sampling."""

    purpose: str
    failure_threshold: int = 3
    cooldown_seconds: float = 300.0
    metrics: GateMetrics = field(default_factory=GateMetrics)
    _breakers: dict[str, _Breaker] = field(default_factory=lambda: defaultdict(_Breaker))
    # Per user: a failure reason can name the user's client and what it said, so only its user sees it.
    _last_failures: dict[str, str] = field(default_factory=dict)

    def status(self, user: str) -> dict[str, Any]:
        """Server-wide counts (no one's identity) and ``user``'s own last failure."""
        return {**self.metrics.as_dict(), "last_failure": self._last_failures.get(user)}

    def blocked(self, user: str) -> str | None:
        breaker = self._breakers[user]
        if breaker.open_until > time.monotonic():
            return f"{self.purpose} paused after {breaker.consecutive_failures} failed attempts"
        return None

    def success(self, user: str, latency_ms: float | None = None) -> None:
        self.metrics.successes += 1
        self.metrics.total_latency_ms += latency_ms or 0.0
        self._breakers[user] = _Breaker()

    def failure(self, user: str, reason: str, latency_ms: float | None = None) -> Fallback:
        self.metrics.failures += 1
        self.metrics.total_latency_ms += latency_ms or 0.0
        if len(self._last_failures) >= MAX_REMEMBERED_FAILURES and user not in self._last_failures:
            self._last_failures.pop(next(iter(self._last_failures)))
        self._last_failures[user] = reason
        breaker = self._breakers[user]
        breaker.consecutive_failures += 1
        if breaker.consecutive_failures >= self.failure_threshold:
            breaker.open_until = time.monotonic() + self.cooldown_seconds
            log.warning("Sampling for %s: breaker open for %s after repeated failures (%s)", self.purpose, user, reason)
        return self.fallback(reason)

    def fallback(self, reason: str) -> Fallback:
        self.metrics.fallbacks += 1
        log.debug("Sampling for %s not used: %s", self.purpose, reason)  # every search of a client without it
        return Fallback(reason)


class _SessionMemory:
    """MCP sessions (by ``Mcp-Session-Id``) whose server-initiated requests never reached the client."""

    def __init__(self, ttl: float = 3600.0, size: int = 10_000) -> None:
        self.ttl = ttl
        self.size = size
        self._until: dict[str, float] = {}

    def __contains__(self, session_id: str | None) -> bool:
        return session_id is not None and self._until.get(session_id, 0.0) > time.monotonic()

    def add(self, session_id: str | None) -> None:
        if session_id is None:
            return
        now = time.monotonic()
        if len(self._until) >= self.size:
            self._until = {key: until for key, until in self._until.items() if until > now}
        self._until[session_id] = now + self.ttl


_no_back_channel = _SessionMemory()


def _session_id(ctx: Context) -> str | None:
    headers = ctx.headers
    return headers.get("mcp-session-id") if headers is not None else None


def uses_input_required(ctx: Context) -> bool:
    version = ctx.protocol_version
    return version is not None and is_version_at_least(version, INPUT_REQUIRED_VERSION)


def unavailable(ctx: Context, gate: SamplingGate, caller: Principal) -> str | None:
    """Why a sampling request could not reach the client's model on this call, or None if it can."""
    capabilities = ctx.client_capabilities
    if capabilities is None or capabilities.sampling is None:
        return "the MCP client does not support sampling"
    if blocked := gate.blocked(caller.user):
        return blocked
    if uses_input_required(ctx):
        return None
    if not caller.streaming:
        return (
            "this request came through AppAPI's buffering proxy, which cannot carry a sampling request mid-call "
            "(a client on MCP protocol 2026-07-28, or the HaRP proxy, can)"
        )
    if _session_id(ctx) in _no_back_channel:
        return "this connection did not deliver an earlier sampling request (buffering proxy)"
    return None


async def ask(
    ctx: Context, gate: SamplingGate, caller: Principal, request: Sample, *, legacy_timeout: float
) -> Sample | Sampled | Fallback:
    """Route one sampling request by protocol era; see the module docstring for the paths.

    On 2026-07-28 the returned :class:`Sample` marker must be returned from a ``Resolve``
    resolver, which turns it into an input-required round; the answer comes back as a
    ``CreateMessageResult`` to be read with :func:`read_result`.
    """
    user = caller.user
    if reason := unavailable(ctx, gate, caller):
        return gate.fallback(reason)
    gate.metrics.attempts += 1
    if uses_input_required(ctx):
        return request
    session = ctx.session
    started = time.monotonic()
    try:
        with anyio.fail_after(legacy_timeout):
            result = await session.send_request(
                CreateMessageRequest(params=request.params),
                CreateMessageResult,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
    except TimeoutError:
        _no_back_channel.add(_session_id(ctx))
        return gate.failure(
            user,
            f"no answer from the client within {legacy_timeout:g}s (a buffering proxy holds server requests; "
            "a client on protocol 2026-07-28 or the HaRP proxy avoids this)",
            (time.monotonic() - started) * 1000,
        )
    except MCPError as exc:
        return gate.failure(user, f"the client refused or failed: {exc.error.message}", (time.monotonic() - started) * 1000)
    sampled = read_result(result)
    if isinstance(sampled, Fallback):
        return gate.failure(user, sampled.reason, (time.monotonic() - started) * 1000)
    gate.success(user, (time.monotonic() - started) * 1000)
    return sampled


def read_result(value: Any) -> Sampled | Fallback:
    """Normalize what a sampling round produced (a marker's result or our own) to text or a fallback."""
    if isinstance(value, Sampled | Fallback):
        return value
    if isinstance(value, CreateMessageResult):
        blocks = value.content if isinstance(value.content, list) else [value.content]
        text = "".join(block.text for block in blocks if isinstance(block, TextContent)).strip()
        if not text:
            return Fallback("the client's model returned no text")
        return Sampled(text=text, model=value.model, stop_reason=value.stop_reason)
    return Fallback(f"unexpected sampling result {type(value).__name__}")


def settle(gate: SamplingGate, user: str, value: Any) -> Sampled | Fallback:
    """Read a resolver's outcome and book it: in the input-required flow the answer arrives here."""
    outcome = read_result(value)
    if isinstance(value, CreateMessageResult):  # came through an input-required round
        if isinstance(outcome, Fallback):
            return gate.failure(user, outcome.reason)
        gate.success(user)
    return outcome
