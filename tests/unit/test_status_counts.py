"""The status counts skipped files, never folders, and forgets skipped files deleted since (issue 40):
rows an older version recorded for folders go when the state opens (a migration step), other skipped files stay."""

from __future__ import annotations

from pathlib import Path

from semantic_mcp.core.documents import DocRef
from semantic_mcp.indexing.events import plan_event
from semantic_mcp.indexing.state import IndexState


def test_folders_once_counted_as_skipped_are_forgotten_when_the_state_opens(tmp_path: Path) -> None:
    state = IndexState(tmp_path / "state.db")
    state.record_skipped(DocRef("alice", "file", "12"), "e1", "folder")
    state.record_skipped(DocRef("alice", "file", "13"), "e2", "an image: reading text in images (OCR) is off")
    assert state.status("alice")["per_type"]["file"]["skipped"] == 2
    state._db.execute("PRAGMA user_version = 2")  # written by a version before the clean-up (its third step)
    state.close()

    reopened = IndexState(tmp_path / "state.db")
    assert reopened.status("alice")["per_type"]["file"]["skipped"] == 1
    assert [row["source_id"] for row in reopened.status("alice")["skipped"]] == ["13"]


def test_a_skipped_file_deleted_is_no_longer_counted(tmp_path: Path) -> None:
    """Issue 40: NodeDeletedEvent names a path, no id; a skipped file is found by the path it was skipped at
    (its folder's too), its delete queued, and once Nextcloud confirms it gone it leaves the counts."""
    state = IndexState(tmp_path / "state.db")
    state.record_skipped(DocRef("alice", "file", "12"), "e1", "empty", "/Inbox/empty.txt")
    state.record_skipped(DocRef("alice", "file", "13"), "e2", "empty", "/Inbox/old/blank.txt")
    state.record_skipped(DocRef("alice", "file", "14"), "e3", "empty", "/Inboxes/kept.txt")
    deleted = {"event": {"node": {"path": "/alice/files/Inbox"}, "class": "OCP\\Files\\Events\\Node\\NodeDeletedEvent"},
               "user": {"uid": "alice"}, "time": 1}
    plan = plan_event(deleted, state, "Notes")
    assert sorted(plan.deletes, key=str) == [DocRef("alice", "file", "12"), DocRef("alice", "file", "13")]
    for ref in plan.deletes:  # what the pipeline does once the delete is confirmed (NotFound)
        state.forget(ref)
    assert state.status("alice")["per_type"]["file"]["skipped"] == 1
    assert [row["source_id"] for row in state.status("alice")["skipped"]] == ["14"]
