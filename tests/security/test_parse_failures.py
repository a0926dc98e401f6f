"""A file that costs a parser its whole bound: the same version is not tried a third time (issue 36)."""

from __future__ import annotations

from semantic_mcp.sources.parse_failures import GIVE_UP_AFTER, ParseFailures


def test_failures_are_counted_by_item_and_version_and_forgotten_oldest_first() -> None:
    failures = ParseFailures(capacity=2)
    assert failures.record("file", "7", "etag-a", "parsing took longer than 60 s (stopped)") == 1
    assert failures.record("file", "7", "etag-a", "parsing took longer than 60 s (stopped)") == GIVE_UP_AFTER
    assert failures.reason("file", "7", "etag-a") == "parsing took longer than 60 s (stopped)"
    assert failures.reason("file", "7", "etag-b") is None  # a new version is tried afresh
    failures.record("file", "8", "x", "r")
    failures.record("file", "9", "y", "r")
    assert failures.reason("file", "7", "etag-a") is None  # bounded
    assert failures.record("file", "10", "", "r") == 1 and failures.reason("file", "10", "") is None
