"""The circuit breaker and metrics around sampling: after repeated failures a user's requests skip it."""

from __future__ import annotations

from semantic_mcp.search.sampling import Fallback, SamplingGate


def test_breaker_opens_after_repeated_failures_per_user_and_closes_on_success() -> None:
    gate = SamplingGate("re-ranking", failure_threshold=3, cooldown_seconds=60)
    for _ in range(3):
        assert gate.blocked("alice") is None
        assert isinstance(gate.failure("alice", "timeout", latency_ms=100), Fallback)
    assert "paused after 3 failed attempts" in gate.blocked("alice")
    assert gate.blocked("bob") is None  # another user's client is not punished
    gate.success("bob", latency_ms=50)
    assert gate.metrics.failures == 3 and gate.metrics.successes == 1
    assert gate.metrics.mean_latency_ms == 87.5
    assert gate.status("alice")["last_failure"] == "timeout"
    assert gate.status("bob")["last_failure"] is None  # alice's client's failure is hers alone


def test_breaker_cools_down() -> None:
    gate = SamplingGate("query analysis", failure_threshold=1, cooldown_seconds=0)
    gate.failure("alice", "garbage")
    assert gate.blocked("alice") is None
    gate.success("alice")
    gate.failure("alice", "garbage")  # a success resets the count: one new failure re-opens at threshold 1 only
    assert gate.metrics.fallbacks == 2
