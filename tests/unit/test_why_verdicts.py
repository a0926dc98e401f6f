"""``occ semantic_mcp:why`` reads an item's state rows (operating/why.py): each state says its own facts, and
the first pass's time left comes from the pace seen since it began (operating/overview.py), on an injected clock."""

from __future__ import annotations

import pytest

from semantic_mcp.core.documents import DocRef
from semantic_mcp.operating.overview import FirstPassWatch, reason_kind
from semantic_mcp.operating.why import WhyError, _verdict, parse_target

REF = DocRef("alice", "file", "42")


def task(**row: object) -> dict[str, object]:
    return {"action": "upsert", "priority": 1, "attempts": 0, "last_error": None, "enqueued_at": 1_700_000_000.0,
            "running": 0, "not_before": 0, "ahead_for_user": 3, "ahead_in_lane": 10, "in_lane": 25, **row}


def test_a_queued_item_says_where_it_is_in_its_lane() -> None:
    state, sentence, details = _verdict(None, REF, {"tasks": task()})  # type: ignore[arg-type]
    assert state == "waiting"
    assert "4 of this user's items in the catching-up lane" in sentence and "10 item(s) of all users" in sentence
    assert details["place_for_user"] == 4 and details["in_lane"] == 25


def test_a_retried_item_says_its_error_and_next_try() -> None:
    _, sentence, details = _verdict(None, REF, {"tasks": task(attempts=2, last_error="HTTP 503",  # type: ignore[arg-type]
                                                              not_before=1_700_000_600.0, priority=2)})
    assert "OCR lane" in sentence and "attempt 2 failed (HTTP 503), next try 2023-11-14T22:23:20" in sentence
    assert details["next_try"].startswith("2023-11-14T22:23:20")


def test_a_failed_item_says_why_and_when_it_is_tried_again() -> None:
    dead = {"reason": "parser ran out of memory", "attempts": 3, "at": 1_700_000_000.0}
    state, sentence, _ = _verdict(None, REF, {"dead_letters": dead})  # type: ignore[arg-type]
    assert state == "failed" and "after 3 attempt(s): parser ran out of memory" in sentence
    assert "when the app restarts" in sentence
    _, refused, _ = _verdict(None, REF, {"dead_letters": dead, "refused": {"version": "e1"}})  # type: ignore[arg-type]
    assert "when the item changes (the document itself" in refused


@pytest.mark.parametrize(("reason", "state"), [
    ("excluded by the path pattern '/Private/*'", "excluded"),
    ("tagged 'no-index'", "excluded"),
    ("too large: 90000000 bytes, the limit is 50000000", "too large"),
    ("unsupported file type application/octet-stream", "unsupported"),
])
def test_a_skipped_item_says_which_rule(reason: str, state: str) -> None:
    found, sentence, details = _verdict(None, REF, {"skipped": {"reason": reason, "at": 1.0, "version": "e"}})  # type: ignore[arg-type]
    assert found == state and reason in sentence and details["reason"] == reason


def test_targets_are_ids_or_paths() -> None:
    assert parse_target("note:45") == (DocRef("", "note", "45"), None)
    assert parse_target("123") == (DocRef("", "file", "123"), None)
    assert parse_target("Documents/a b.pdf") == (None, "/Documents/a b.pdf")
    with pytest.raises(WhyError):
        parse_target("  ")


def test_alike_skip_reasons_count_together() -> None:
    assert reason_kind("too large: 9 bytes, the limit is 5") == "too large"
    assert reason_kind("excluded by the path pattern '*.tmp'") == "excluded by the path pattern '*.tmp'"
    assert reason_kind("Nextcloud's example event (admin setting: index examples)") == "Nextcloud's example event"


def test_the_time_left_follows_the_pace_since_the_pass_began() -> None:
    now = [1000.0]
    watch = FirstPassWatch(clock=lambda: now[0])
    assert watch.observe(False, 0) is None  # still listing content
    assert watch.observe(True, 400) is None  # the first look: no pace yet
    now[0] += 60
    assert watch.observe(True, 300) == pytest.approx(180.0)  # 100 done in 60 s: 300 more need 180 s
    now[0] += 30
    assert watch.observe(False, 0) == 0.0
