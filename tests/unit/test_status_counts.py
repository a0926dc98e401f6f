"""The status counts skipped files, never folders (issue 40): rows an older version recorded for folders go
when the state opens (a migration step), other skipped files stay."""

from __future__ import annotations

from pathlib import Path

from semantic_mcp.core.documents import DocRef
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
