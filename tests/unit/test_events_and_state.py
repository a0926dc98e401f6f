"""The durable queue and webhook planning, on the real payloads recorded from Nextcloud 32."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from semantic_mcp.core.documents import DocRef
from semantic_mcp.indexing.events import MalformedEvent, plan_event
from semantic_mcp.indexing.state import IndexState
from semantic_mcp.indexing.turns import MIN_TURN

WIRE = Path(__file__).resolve().parents[3] / "shared" / "nextcloud-32-wire"


def recorded_deliveries() -> list[dict]:
    exapp = json.loads((WIRE / "webhooks" / "deliveries_received_by_exapp.json").read_text())
    bodies = [entry["body_json"] for entry in exapp.values() if entry.get("body_json")]
    for line in (WIRE / "webhooks" / "plain_deliveries_rename_delete_update.jsonl").read_text().splitlines():
        if line.strip():
            bodies.append(json.loads(json.loads(line)["body"]))
    return [body for body in bodies if body.get("event")]


@pytest.fixture
def state(tmp_path: Path) -> IndexState:
    return IndexState(tmp_path / "state.db")


def test_queue_coalesces_bursts_and_keeps_newer_generation(state: IndexState) -> None:
    ref = DocRef("alice", "note", "22")
    for _ in range(3):  # one note save: Created + Written + Written
        state.enqueue([ref], "upsert")
    [task] = state.claim(10)
    state.enqueue([ref], "upsert")  # a newer event while the worker is busy
    state.complete(task)
    [again] = state.claim(10)  # the newer event is not lost
    assert again.ref == ref and again.generation > task.generation
    state.complete(again)
    assert state.pending_count() == 0


def test_a_change_a_user_just_made_goes_before_any_catching_up(state: IndexState) -> None:
    state.enqueue([DocRef("big", "file", str(i)) for i in range(500)], "upsert")  # a backfill
    state.enqueue([DocRef("new", "note", "7")], "upsert", urgent=True)  # an edit, by its event
    state.enqueue([DocRef("big", "file", "499")], "upsert", urgent=True)  # an event for a queued file
    first = state.claim(4)
    assert {t.ref.source_id for t in first[:2]} == {"7", "499"}
    [note] = [t for t in first if t.ref.source_id == "7"]
    state.enqueue([DocRef("new", "note", "7")], "upsert")  # listed again by a reconciliation meanwhile
    state.complete(note)
    assert state.claim(1)[0].ref.source_id == "7"  # still urgent


def test_users_take_turns_so_a_big_backfill_holds_nobody_up(state: IndexState) -> None:
    turn = MIN_TURN  # a user's documents in a turn are written together: one Chroma write (ADR 0569)
    state.enqueue([DocRef("big", "file", str(i)) for i in range(2000)], "upsert")
    state.enqueue([DocRef("new", "file", str(i)) for i in range(2 * turn)], "upsert")
    assert [t.ref.user for t in state.claim(2 * turn)] == ["big", "new"] * turn
    for n in range(40):  # a small organisation: everyone served once before anyone twice
        state.enqueue([DocRef(f"user{n:02d}", "file", str(i)) for i in range(turn + 1)], "upsert")
    turns = [[t.ref.user for t in state.claim(2 * turn)] for _ in range(21)]
    assert all(len(each) == 2 * turn and len(set(each)) == 2 for each in turns)
    served = [user for each in turns for user in set(each)]
    assert len(set(served)) == len(served) == 42
    assert set(turns[-1]) == {"big", "new"}  # served before: after everyone who never was
    round_two = {task.ref.user for task in state.claim(2 * turn)}  # a task left each: room for 2 × turn users
    assert round_two == {f"user{n:02d}" for n in range(2 * turn)}


def test_users_with_a_few_tasks_leave_room_for_the_next_in_line(state: IndexState) -> None:
    for n in range(10):  # the end of a backfill: many users, a task or two each
        state.enqueue([DocRef(f"user{n}", "file", str(i)) for i in range(n % 2 + 1)], "upsert")
    batch = state.claim(4 * MIN_TURN)
    assert len(batch) == 15 and len({task.ref.user for task in batch}) == 10  # one batch, not one user's
    state.enqueue([DocRef("big", "file", str(i)) for i in range(100)], "upsert")
    state.enqueue([DocRef("small", "file", str(i)) for i in range(3)], "upsert")
    assert sorted(t.ref.user for t in state.claim(2 * MIN_TURN)) == ["big"] * (2 * MIN_TURN - 3) + ["small"] * 3
    assert [t.ref.user for t in state.claim(4)] == ["big"] * 4  # a small batch: one user's turn


def test_a_queue_from_before_priorities_keeps_its_tasks(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    IndexState(path).enqueue([DocRef("alice", "file", "1")], "upsert")
    with sqlite3.connect(path) as db:  # the table as the previous release created it
        db.execute("DROP INDEX tasks_turns")
        db.execute("ALTER TABLE tasks DROP COLUMN priority")
        db.execute("PRAGMA user_version = 0")  # a file from before versioned migrations
    state = IndexState(path)
    assert [t.ref.source_id for t in state.claim(5)] == ["1"]


def test_interrupted_tasks_resume_after_restart(tmp_path: Path) -> None:
    first = IndexState(tmp_path / "state.db")
    first.enqueue([DocRef("alice", "file", "30"), DocRef("bob", "file", "31")], "upsert")
    assert len(first.claim(10)) == 2  # then the process dies without completing
    first.close()
    second = IndexState(tmp_path / "state.db")
    assert second.claim(10) == []  # still marked running until recovery
    assert second.recover(max_attempts=5) == 2
    assert {t.ref.source_id for t in second.claim(10)} == {"30", "31"}


def test_a_task_that_takes_the_process_down_is_counted_and_dead_lettered(tmp_path: Path) -> None:
    """The attempt is spent when the task is taken, so a document that kills or hangs the app
    (out of memory, a parser in an endless loop, then ``kill -9``) cannot do it after every restart."""
    path = tmp_path / "state.db"
    IndexState(path).enqueue([DocRef("alice", "file", "66"), DocRef("alice", "file", "67")], "upsert")
    for restart in range(3):
        state = IndexState(path)
        state.recover(max_attempts=3)
        state._db.execute("UPDATE tasks SET not_before = 0")
        taken = state.claim(10)
        for task in taken:  # 67 is fine; 66 takes the process down every time
            if task.ref.source_id == "67":
                state.complete(task)
        state.close()
    state = IndexState(path)
    assert state.recover(max_attempts=3) == 0
    assert state.pending_count() == 0
    [dead] = state.status("alice")["dead_letters"]
    assert dead["source_id"] == "66" and dead["attempts"] == 3
    assert "the app stopped while indexing it, 3 times" in dead["reason"]
    assert state.requeue_dead_letters() == 0  # the catch-up after a restart does not bring it back
    assert state.refused_versions("alice", "file") == {"66": ""}  # nor does reconciliation, unless it changes


def test_a_document_refused_by_its_own_fault_is_tried_again_only_in_a_new_version(state: IndexState) -> None:
    hostile, unlucky = DocRef("alice", "file", "70"), DocRef("alice", "file", "71")
    state.enqueue([hostile, unlucky], "upsert")
    for task in state.claim(10):
        refused = "v1" if task.ref == hostile else None  # a parser's bound, or Nextcloud's timeout
        assert state.retry_later(task, "boom", max_attempts=1, backoff=0, refused=refused)
    assert state.refused_versions("alice", "file") == {"70": "v1"}
    assert state.requeue_dead_letters() == 1 and [t.ref for t in state.claim(10)] == [unlucky]
    state.enqueue([hostile], "upsert")  # an event: the user saved it again
    [task] = [t for t in state.claim(10) if t.ref == hostile]
    state.complete(task)
    assert state.refused_versions("alice", "file") == {}
    assert [d["source_id"] for d in state.status("alice")["dead_letters"]] == ["71"]


def test_an_attempt_nextcloud_could_not_be_asked_for_is_given_back(state: IndexState) -> None:
    state.enqueue([DocRef("alice", "file", "5")], "upsert")
    [task] = state.claim(1)
    state.release(task)
    [again] = state.claim(1)
    assert again.attempts == 1


def test_repeated_failure_goes_to_dead_letters_with_reason(state: IndexState) -> None:
    ref = DocRef("alice", "file", "99")
    state.enqueue([ref], "upsert")
    dead = False
    for _ in range(3):
        [task] = state.claim(1) or [None]
        if task is None:  # backoff: make it ready now
            state._db.execute("UPDATE tasks SET not_before = 0")
            [task] = state.claim(1)
        dead = state.retry_later(task, "boom: broken PDF", max_attempts=3, backoff=0)
    assert dead
    assert state.pending_count() == 0
    status = state.status("alice")
    assert status["dead_letters"][0]["reason"] == "boom: broken PDF"


def test_disable_user_forgets_everything_of_theirs_only(state: IndexState) -> None:
    state.record_indexed(DocRef("alice", "note", "1"), "e1", "/Notes/a.md", "a", 1, 0)
    state.record_indexed(DocRef("bob", "note", "2"), "e2", "/Notes/b.md", "b", 1, 0)
    state.set_user_enabled("alice", False)
    assert state.indexed(DocRef("alice", "note", "1")) is None
    assert state.indexed(DocRef("bob", "note", "2")) is not None
    assert state.user_choice("alice") is False


@pytest.mark.parametrize("payload", recorded_deliveries(), ids=lambda p: p["event"]["class"].rsplit("\\", 1)[-1])
def test_every_recorded_delivery_is_planned(state: IndexState, payload: dict) -> None:
    plan = plan_event(payload, state, "Notes")
    assert plan.user == "alice"
    assert plan.ignored is None or "needs no indexing" in plan.ignored


def test_written_note_is_a_note_and_plain_file_is_a_file(state: IndexState) -> None:
    def written(path: str, file_id: int) -> dict:
        return {"event": {"node": {"id": file_id, "path": path}, "class": "OCP\\Files\\Events\\Node\\NodeWrittenEvent"},
                "user": {"uid": "alice"}, "time": 1}
    note = plan_event(written("/alice/files/Notes/Test/First note.md", 22), state, "Notes")
    assert note.upserts == [(DocRef("alice", "note", "22"), None)]
    file = plan_event(written("/alice/files/testdir/hello.txt", 30), state, "Notes")
    assert file.upserts == [(DocRef("alice", "file", "30"), None)]


def test_folder_move_refreshes_everything_below_it(state: IndexState) -> None:
    state.record_indexed(DocRef("alice", "file", "69"), "e", "/testdir/renamed.txt", "renamed.txt", 1, 0)
    state.record_indexed(DocRef("alice", "file", "70"), "e", "/testdir/sub/deep.md", "deep.md", 1, 0)
    state.record_indexed(DocRef("alice", "file", "71"), "e", "/testdirectory/other.txt", "other.txt", 1, 0)
    payload = {"event": {"source": {"path": "/alice/files/testdir"}, "target": {"id": 29, "path": "/alice/files/moved-dir"},
                         "class": "OCP\\Files\\Events\\Node\\NodeRenamedEvent"}, "user": {"uid": "alice"}, "time": 1}
    plan = plan_event(payload, state, "Notes")
    refreshed = {ref.source_id for ref, _ in plan.upserts}
    assert {"69", "70"} <= refreshed and "71" not in refreshed  # a sibling with a common prefix is untouched


def test_delete_without_id_finds_the_document_by_path(state: IndexState) -> None:
    state.record_indexed(DocRef("alice", "file", "69"), "e", "/moved-dir/renamed.txt", "renamed.txt", 1, 0)
    state.record_indexed(DocRef("bob", "file", "69"), "e", "/renamed.txt", "renamed.txt", 1, 0)  # shared with bob
    payload = {"event": {"node": {"path": "/alice/files/moved-dir/renamed.txt"},
                         "class": "OCP\\Files\\Events\\Node\\NodeDeletedEvent"}, "user": {"uid": "alice"}, "time": 1}
    plan = plan_event(payload, state, "Notes")
    assert plan.deletes == [DocRef("alice", "file", "69")]
    assert plan.upserts == [(DocRef("bob", "file", "69"), None)]  # bob's copy is re-checked as bob


def test_calendar_trash_is_a_delete_and_create_carries_the_icalendar(state: IndexState) -> None:
    created = next(p for p in recorded_deliveries() if p["event"]["class"].endswith("CalendarObjectCreatedEvent"))
    plan = plan_event(created, state, "Notes")
    [(ref, hint)] = plan.upserts
    assert ref == DocRef("alice", "calendar_event", "personal/test-event-0002.ics")
    assert "BEGIN:VCALENDAR" in hint["ics"] and hint["etag"]
    trashed = json.loads(json.dumps(created))
    trashed["event"]["class"] = "OCP\\Calendar\\Events\\CalendarObjectMovedToTrashEvent"
    assert plan_event(trashed, state, "Notes").deletes == [ref]


@pytest.mark.parametrize(
    "payload, reason",
    [
        ({}, "missing 'event'"),
        ({"event": {}}, "missing 'class'"),
        ({"event": {"class": "OCP\\Files\\Events\\Node\\NodeWrittenEvent"}}, "missing 'node'"),
        ({"event": {"class": "OCP\\Files\\Events\\Node\\NodeWrittenEvent", "node": {"id": 1}}}, "missing 'path'"),
        ({"event": {"class": "OCP\\Calendar\\Events\\CalendarObjectCreatedEvent", "calendarData": {}}}, "missing"),
        ("not an object", "missing 'event'"),
    ],
)
def test_malformed_events_are_refused_with_a_reason(state: IndexState, payload: object, reason: str) -> None:
    with pytest.raises(MalformedEvent, match=reason):
        plan_event(payload, state, "Notes")


def test_unknown_event_class_is_ignored_not_an_error(state: IndexState) -> None:
    plan = plan_event({"event": {"class": "OCA\\Other\\Event\\SomethingHappened"}}, state, "Notes")
    assert plan.ignored and "unsupported event class" in plan.ignored


def test_an_event_does_not_count_as_opting_in(state: IndexState) -> None:
    state.note_event("carol")
    assert state.user_choice("carol") is None  # the admin's default still applies to carol
    state.set_user_enabled("carol", False)
    state.note_event("carol")
    assert state.user_choice("carol") is False


def test_a_batch_is_sized_to_take_about_two_seconds() -> None:
    from semantic_mcp.indexing.pipeline import MAX_BATCH, MIN_BATCH, next_batch_size

    assert next_batch_size(8, 8, 0.1) == 16  # a fast embedder: grows, at most twofold a batch
    assert next_batch_size(32, 32, 0.1) == MAX_BATCH
    assert next_batch_size(8, 8, 8.0) == MIN_BATCH  # the local model at ~1 s a document: shrinks at once
    assert next_batch_size(8, 3, 0.1) == 8  # the queue ran short: nothing learned
