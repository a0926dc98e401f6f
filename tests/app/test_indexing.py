"""Indexing by webhooks through the real app: every source follows creates, edits, renames, moves, deletes and
restores, and duplicated, shuffled and replayed events converge on the truth. Observed as users observe it
(the MCP tools through the AppAPI proxy) or in the fake Nextcloud's own state.
"""

from __future__ import annotations

from typing import Any

from indexing_support import (
    ALICE,
    Doc,
    assert_gone,
    assert_indexed,
    calendar_id,
    deliver,
    emissions,
    indexed_count,
    lookup,
    results,
    stack,  # noqa: F401 - this module's stacks (fixtures)
)
from stack import Stack

from fake_nextcloud.seed import days_from, event_ics


async def test_file_create_edit_rename_move_delete_by_webhooks(stack: Stack) -> None:
    fake = stack.fake
    deliveries = len(fake.webhooks.events())
    before = await indexed_count(stack, ALICE, "file")
    a_id = fake.put_file(ALICE, "Zorbdir/inner/zorblax-plan.md", "Zorblax expedition: pack the quillwort lanterns.")
    b_id = fake.put_file(ALICE, "Zorbdir/inner/deep/zorblax-list.txt", "Zorblax checklist: the brandlewick compass.")
    await stack.wait_idle(ALICE)
    a = Doc(ALICE, "file", f"file:{a_id}", "zorblax quillwort lanterns", "zorblax-plan.md",
            "/Zorbdir/inner/zorblax-plan.md", contains=("quillwort",))
    b = Doc(ALICE, "file", f"file:{b_id}", "zorblax brandlewick compass", "zorblax-list.txt",
            "/Zorbdir/inner/deep/zorblax-list.txt", contains=("brandlewick",))
    await assert_indexed(stack, a, b)
    assert await indexed_count(stack, ALICE, "file") == before + 2

    fake.put_file(ALICE, "Zorbdir/inner/zorblax-plan.md", "Zorblax expedition: pack the marmalite flares.")
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, a.expect(query="zorblax marmalite flares", contains=("marmalite",),
                                         lacks=("quillwort",)))

    fake.move(ALICE, "Zorbdir/inner/zorblax-plan.md", "Zorbdir/inner/zorblax-route.md")
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, a.expect(title="zorblax-route.md", location="/Zorbdir/inner/zorblax-route.md",
                                         contains=("marmalite", "zorblax-route.md")))

    # One event for the folder only: everything below it must follow.
    fake.move(ALICE, "Zorbdir/inner", "Zorbmoved")
    await stack.wait_idle(ALICE)
    a.expect(location="/Zorbmoved/zorblax-route.md", contains=("marmalite", "/Zorbmoved/zorblax-route.md"))
    b.expect(location="/Zorbmoved/deep/zorblax-list.txt", contains=("brandlewick", "/Zorbmoved/deep/"))
    await assert_indexed(stack, a, b)
    under_new = {hit["id"] for hit in await results(stack, ALICE, "zorblax", "file", path_prefix="/Zorbmoved/")}
    assert {a.doc_id, b.doc_id} <= under_new
    assert not await results(stack, ALICE, "zorblax", "file", path_prefix="/Zorbdir/inner")

    fake.delete(ALICE, "Zorbmoved/zorblax-route.md")
    await stack.wait_idle(ALICE)
    assert await indexed_count(stack, ALICE, "file") == before + 1
    await assert_gone(stack, a)

    fake.delete(ALICE, "Zorbmoved")  # a folder: NodeDeletedEvent has only its path
    await stack.wait_idle(ALICE)
    assert await indexed_count(stack, ALICE, "file") == before
    await assert_gone(stack, b)
    sent = fake.webhooks.events()[deliveries:]
    assert sent and all(d.status == 200 for d in sent), [(d.event, d.status) for d in sent if d.status != 200]


async def test_note_create_edit_retitle_move_delete_by_webhooks(stack: Stack) -> None:
    fake = stack.fake
    before = await indexed_count(stack, ALICE, "note")
    n1 = fake.create_note(ALICE, "Fennimore brewing log", "Fennimore: steep the cobblewort for nine minutes.",
                          category="Fenni/Brews")
    n2 = fake.create_note(ALICE, "Fennimore tasting", "Fennimore: the dravelberry blend tasted smoky.",
                          category="Fenni/Brews")
    await stack.wait_idle(ALICE)
    first = Doc(ALICE, "note", f"note:{n1}", "fennimore cobblewort", "Fennimore brewing log", "Fenni/Brews",
                contains=("cobblewort",))
    second = Doc(ALICE, "note", f"note:{n2}", "fennimore dravelberry", "Fennimore tasting", "Fenni/Brews",
                 contains=("dravelberry",))
    await assert_indexed(stack, first, second)
    assert await indexed_count(stack, ALICE, "note") == before + 2

    fake.update_note(ALICE, n1, content="Fennimore: steep the pellucine leaves for four minutes.")
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, first.expect(query="fennimore pellucine", contains=("pellucine",),
                                             lacks=("cobblewort",)))

    fake.update_note(ALICE, n1, title="Fennimore steeping guide")  # Written + Renamed on the .md file
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, first.expect(title="Fennimore steeping guide"))

    fake.update_note(ALICE, n2, category="Fenni/Archive")  # the file moves to another folder
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, second.expect(location="Fenni/Archive"))

    # Renaming the category folder: one event for the folder, both notes below it change category.
    fake.move(ALICE, "Notes/Fenni", "Notes/Fennimore")
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, first.expect(location="Fennimore/Brews"), second.expect(location="Fennimore/Archive"))

    fake.delete_note(ALICE, n1)
    await stack.wait_idle(ALICE)
    assert await indexed_count(stack, ALICE, "note") == before + 1
    await assert_gone(stack, first)

    fake.delete(ALICE, "Notes/Fennimore")  # the whole category folder, with the remaining note
    await stack.wait_idle(ALICE)
    assert await indexed_count(stack, ALICE, "note") == before
    await assert_gone(stack, second)


async def test_calendar_event_create_edit_retitle_delete_restore_by_webhooks(stack: Stack) -> None:
    fake = stack.fake
    before = await indexed_count(stack, ALICE, "calendar_event")
    uri = "glimwick-recital.ics"
    start = days_from(fake.clock.now(), 12, 18)  # the fake's clock, which the app shares

    def ics(summary: str, description: str) -> str:
        return event_ics("glimwick@example.test", summary, start, 90, description, "Old Town Hall")

    fake.put_calendar_object(ALICE, "personal", uri, ics("Glimwick recital", "Bring the ossifrage sheet music."))
    await stack.wait_idle(ALICE)
    event = Doc(ALICE, "calendar_event", calendar_id(uri), "glimwick ossifrage", "Glimwick recital",
                contains=("ossifrage",))
    await assert_indexed(stack, event)
    hit = await lookup(stack, ALICE, event.query, event.doc_id, "calendar_event")
    assert hit["event_start"] == start.isoformat().replace("+00:00", "Z")
    assert await indexed_count(stack, ALICE, "calendar_event") == before + 1

    fake.put_calendar_object(ALICE, "personal", uri, ics("Glimwick recital", "Bring the wimbrel tuning fork."))
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, event.expect(query="glimwick wimbrel", contains=("wimbrel",), lacks=("ossifrage",)))

    fake.put_calendar_object(ALICE, "personal", uri, ics("Glimwick gala concert", "Bring the wimbrel tuning fork."))
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, event.expect(title="Glimwick gala concert", contains=("Glimwick gala concert",)))

    fake.delete_calendar_object(ALICE, "personal", uri)  # into the calendar trash bin
    await stack.wait_idle(ALICE)
    assert await indexed_count(stack, ALICE, "calendar_event") == before
    await assert_gone(stack, event)

    fake.restore_calendar_object(ALICE, "personal", uri)
    await stack.wait_idle(ALICE)
    await assert_indexed(stack, event)
    assert await indexed_count(stack, ALICE, "calendar_event") == before + 1

    fake.delete_calendar_object(ALICE, "personal", uri)
    await stack.wait_idle(ALICE)
    assert await indexed_count(stack, ALICE, "calendar_event") == before
    await assert_gone(stack, event)


# --- 1c. duplicated, shuffled and late events (shared stack) ----------------------------------------


def _burst(fake: Any) -> dict[str, int]:
    """Changes of every event-driven type in quick succession; returns the ids of what was created."""
    ids = {"a": fake.put_file(ALICE, "Chaos/kelp-a.md", "Glimmerkelp first draft: harvest the sporewing.")}
    fake.put_file(ALICE, "Chaos/kelp-a.md", "Glimmerkelp final draft: harvest the thornapple.")
    fake.move(ALICE, "Chaos/kelp-a.md", "Chaos/kelp-b.md")
    ids["c"] = fake.put_file(ALICE, "Chaos/sub/kelp-c.md", "Glimmerkelp appendix: the driftlamp inventory.")
    fake.move(ALICE, "Chaos/sub", "Chaos/moved")
    ids["d"] = fake.put_file(ALICE, "Chaos/kelp-d.md", "Glimmerkelp scrap: the vanishing bramblecoil.")
    fake.delete(ALICE, "Chaos/kelp-d.md")
    ids["e_old"] = fake.put_file(ALICE, "Chaos/kelp-e.md", "Glimmerkelp old memo: the obsolete fernwhistle.")
    fake.delete(ALICE, "Chaos/kelp-e.md")
    ids["e_new"] = fake.put_file(ALICE, "Chaos/kelp-e.md", "Glimmerkelp new memo: the current moonbarrow.")

    ids["n"] = fake.create_note(ALICE, "Glimmerkelp journal", "Glimmerkelp: the tidepool smelled of saffrine.",
                                category="Chaoscat")
    fake.update_note(ALICE, ids["n"], content="Glimmerkelp: the tidepool smelled of cardamoss.")
    fake.update_note(ALICE, ids["n"], title="Glimmerkelp logbook")
    fake.update_note(ALICE, ids["n"], category="Chaoscat2")
    ids["n_gone"] = fake.create_note(ALICE, "Glimmerkelp draft", "Glimmerkelp: a discarded quibblestone idea.")
    fake.delete_note(ALICE, ids["n_gone"])

    def event(uri: str, summary: str, description: str) -> None:
        start = days_from(fake.clock.now(), 30, 9)
        fake.put_calendar_object(ALICE, "personal", uri, event_ics(uri + "@x", summary, start, 60, description))

    event("kelp-1.ics", "Glimmerkelp dive", "Dive at the pelagrine reef.")
    event("kelp-1.ics", "Glimmerkelp night dive", "Dive at the lumenfold reef.")
    event("kelp-2.ics", "Glimmerkelp cancelled", "The gorsewind trip.")
    fake.delete_calendar_object(ALICE, "personal", "kelp-2.ics")
    event("kelp-3.ics", "Glimmerkelp restored", "The halcyra meeting.")
    fake.delete_calendar_object(ALICE, "personal", "kelp-3.ics")
    fake.restore_calendar_object(ALICE, "personal", "kelp-3.ics")
    return ids


async def test_duplicated_shuffled_and_replayed_events_converge_on_the_truth(stack: Stack) -> None:
    """A burst of changes of every event-driven type, delivered twice and in random order; then every
    event of the burst once more, newest first (late duplicates). The index must end as Nextcloud is."""
    fake, hooks = stack.fake, stack.fake.webhooks
    counts = {t: await indexed_count(stack, ALICE, t) for t in ("file", "note", "calendar_event")}
    first_delivery = len(hooks.events())
    hooks.duplicate = hooks.shuffle = True
    try:
        with emissions(stack) as emitted:
            ids = _burst(fake)
        await stack.wait_idle(ALICE)
    finally:
        hooks.duplicate = hooks.shuffle = False

    live = [
        Doc(ALICE, "file", f"file:{ids['a']}", "glimmerkelp thornapple", "kelp-b.md", "/Chaos/kelp-b.md",
            contains=("thornapple",), lacks=("sporewing",)),
        Doc(ALICE, "file", f"file:{ids['c']}", "glimmerkelp driftlamp", "kelp-c.md", "/Chaos/moved/kelp-c.md"),
        Doc(ALICE, "file", f"file:{ids['e_new']}", "glimmerkelp moonbarrow", "kelp-e.md", "/Chaos/kelp-e.md",
            contains=("moonbarrow",)),
        Doc(ALICE, "note", f"note:{ids['n']}", "glimmerkelp cardamoss", "Glimmerkelp logbook", "Chaoscat2",
            contains=("cardamoss",), lacks=("saffrine",)),
        Doc(ALICE, "calendar_event", calendar_id("kelp-1.ics"), "glimmerkelp lumenfold", "Glimmerkelp night dive",
            contains=("lumenfold",), lacks=("pelagrine",)),
        Doc(ALICE, "calendar_event", calendar_id("kelp-3.ics"), "glimmerkelp halcyra", "Glimmerkelp restored"),
    ]
    gone = [
        Doc(ALICE, "file", f"file:{ids['d']}", "glimmerkelp bramblecoil"),
        Doc(ALICE, "file", f"file:{ids['e_old']}", "glimmerkelp fernwhistle"),
        Doc(ALICE, "note", f"note:{ids['n_gone']}", "glimmerkelp quibblestone"),
        Doc(ALICE, "calendar_event", calendar_id("kelp-2.ics"), "glimmerkelp gorsewind"),
    ]
    expected_counts = {"file": counts["file"] + 3, "note": counts["note"] + 1,
                       "calendar_event": counts["calendar_event"] + 2}

    async def assert_truth(when: str) -> None:
        # Counts first: a search would drop (and then remove) what its re-check finds gone.
        status = await stack.status(ALICE)
        actual = {t: status["sources"][t]["indexed"] for t in expected_counts}
        assert actual == expected_counts, f"{when}: indexed counts {actual} != {expected_counts}"
        await assert_indexed(stack, *live)
        await assert_gone(stack, *gone)

    burst = hooks.events()[first_delivery:]
    assert len(burst) == 2 * len(emitted) and all(d.status == 200 for d in burst)
    await assert_truth("after the shuffled, duplicated burst")

    # Late duplicates, newest first: stale content and deletes must not win over what is now true.
    for payload in reversed(emitted):
        response = deliver(stack, payload)
        assert response.status_code == 200, response.text
    await stack.wait_idle(ALICE)
    await assert_truth("after replaying the burst newest first")


# --- 1b. reconciliation alone (private stack, webhooks dropped) ----------------------------------
