"""Indexing by reconciliation alone (a stack whose webhooks are lost), shares that arrive and leave, users kept
apart whatever the query, and admin settings (sources, exclusions) that apply live.
"""

from __future__ import annotations

import asyncio
from typing import Any

from indexing_support import (  # noqa: F401 - this module's stacks (fixtures)
    ALICE,
    BOB,
    Doc,
    apply_setting,
    assert_gone,
    assert_indexed,
    calendar_id,
    contact_id,
    eventually_count,
    eventually_gone,
    eventually_indexed,
    indexed_count,
    polled,
    restore_from_trash,
    results,
    set_setting,
    stack,
)
from stack import Stack

from fake_nextcloud.seed import days_from, event_ics, vcard


async def _file_by_reconciliation(stack: Stack) -> None:
    fake = stack.fake
    before = await indexed_count(stack, ALICE, "file")
    a_id = fake.put_file(ALICE, "Orbit/inner/plumbob-notes.md", "Plumbob survey: the vexillary tower leans north.")
    b_id = fake.put_file(ALICE, "Orbit/inner/deep/plumbob-map.txt", "Plumbob map: the quernstone bridge.")
    a = Doc(ALICE, "file", f"file:{a_id}", "plumbob vexillary tower", "plumbob-notes.md",
            "/Orbit/inner/plumbob-notes.md", contains=("vexillary",))
    b = Doc(ALICE, "file", f"file:{b_id}", "plumbob quernstone bridge", "plumbob-map.txt",
            "/Orbit/inner/deep/plumbob-map.txt")
    await eventually_indexed(stack, a, b, what="file: created")

    fake.put_file(ALICE, "Orbit/inner/plumbob-notes.md", "Plumbob survey: the gallimaufry tower leans south.")
    await eventually_indexed(stack, a.expect(query="plumbob gallimaufry tower", contains=("gallimaufry",),
                                             lacks=("vexillary",)), what="file: edited")

    fake.move(ALICE, "Orbit/inner/plumbob-notes.md", "Orbit/inner/plumbob-survey.md")
    await eventually_indexed(stack, a.expect(title="plumbob-survey.md", location="/Orbit/inner/plumbob-survey.md"),
                             what="file: renamed")

    fake.move(ALICE, "Orbit/inner", "Orbital")
    await eventually_indexed(stack, a.expect(location="/Orbital/plumbob-survey.md"),
                             b.expect(location="/Orbital/deep/plumbob-map.txt"), what="file: folder moved")

    fake.delete(ALICE, "Orbital/plumbob-survey.md")
    await eventually_count(stack, ALICE, "file", before + 1)
    await assert_gone(stack, a)  # counted first: removed by reconciliation, not by a search's re-check

    restore_from_trash(stack, ALICE, a_id)
    await eventually_indexed(stack, a, what="file: restored from the trash bin")
    await eventually_count(stack, ALICE, "file", before + 2)


async def _note_by_reconciliation(stack: Stack) -> None:
    fake = stack.fake
    before = await indexed_count(stack, ALICE, "note")
    n = fake.create_note(ALICE, "Plumbob ledger", "Plumbob ledger: owe the tinsmith three florins.",
                         category="Plumcat/Sub")
    note = Doc(ALICE, "note", f"note:{n}", "plumbob tinsmith florins", "Plumbob ledger", "Plumcat/Sub",
               contains=("tinsmith",))
    await eventually_indexed(stack, note, what="note: created")

    fake.update_note(ALICE, n, content="Plumbob ledger: owe the wheelwright two crowns.")
    await eventually_indexed(stack, note.expect(query="plumbob wheelwright crowns", contains=("wheelwright",),
                                                lacks=("tinsmith",)), what="note: edited")

    fake.update_note(ALICE, n, title="Plumbob accounts")
    await eventually_indexed(stack, note.expect(title="Plumbob accounts"), what="note: retitled")

    fake.move(ALICE, "Notes/Plumcat", "Notes/Plumfolder")
    await eventually_indexed(stack, note.expect(location="Plumfolder/Sub"), what="note: category folder moved")

    fake.delete_note(ALICE, n)
    await eventually_count(stack, ALICE, "note", before)
    await assert_gone(stack, note)  # counted first: removed by reconciliation, not by a search's re-check


async def _calendar_by_reconciliation(stack: Stack) -> None:
    fake = stack.fake
    before = await indexed_count(stack, ALICE, "calendar_event")
    uri, start = "plumbob-fair.ics", days_from(fake.clock.now(), 20, 15)

    def put(summary: str, description: str) -> None:
        fake.put_calendar_object(ALICE, "personal", uri, event_ics("plumbob-fair@x", summary, start, 60, description))

    put("Plumbob fair", "Judge the gourdling contest.")
    event = Doc(ALICE, "calendar_event", calendar_id(uri), "plumbob gourdling contest", "Plumbob fair",
                contains=("gourdling",))
    await eventually_indexed(stack, event, what="calendar: created")

    put("Plumbob fair", "Judge the turnipshire contest.")
    await eventually_indexed(stack, event.expect(query="plumbob turnipshire", contains=("turnipshire",),
                                                 lacks=("gourdling",)), what="calendar: edited")

    put("Plumbob harvest fair", "Judge the turnipshire contest.")
    await eventually_indexed(stack, event.expect(title="Plumbob harvest fair"), what="calendar: retitled")

    fake.delete_calendar_object(ALICE, "personal", uri)
    await eventually_count(stack, ALICE, "calendar_event", before)
    await assert_gone(stack, event)  # counted first: removed by reconciliation, not by a search's re-check

    fake.restore_calendar_object(ALICE, "personal", uri)
    await eventually_indexed(stack, event, what="calendar: restored")
    await eventually_count(stack, ALICE, "calendar_event", before + 1)


async def _deck_card_by_reconciliation(stack: Stack) -> None:
    fake = stack.fake
    before = await indexed_count(stack, ALICE, "deck_card")
    board = fake.create_board(ALICE, "Quokka board")
    backlog = fake.create_stack(ALICE, board, "Backlog", 0)
    shipped = fake.create_stack(ALICE, board, "Shipped", 1)
    card_id = fake.create_card(ALICE, backlog, "Quokka kettle", "Descale the snorkelwort valve.")
    card = Doc(ALICE, "deck_card", f"deck_card:{card_id}", "quokka snorkelwort valve", "Quokka kettle",
               "Quokka board / Backlog", contains=("snorkelwort",))
    await eventually_indexed(stack, card, what="deck: created")

    fake.update_card(ALICE, card_id, description="Replace the brindlecone gasket.")
    await eventually_indexed(stack, card.expect(query="quokka brindlecone gasket", contains=("brindlecone",),
                                                lacks=("snorkelwort",)), what="deck: edited")

    fake.update_card(ALICE, card_id, title="Quokka teapot")
    await eventually_indexed(stack, card.expect(title="Quokka teapot"), what="deck: retitled")

    fake.update_card(ALICE, card_id, stack_id=shipped)
    await eventually_indexed(stack, card.expect(location="Quokka board / Shipped"), what="deck: moved to a stack")

    fake.delete_card(ALICE, card_id)
    await eventually_count(stack, ALICE, "deck_card", before)
    await assert_gone(stack, card)  # counted first: removed by reconciliation, not by a search's re-check


async def _contact_by_reconciliation(stack: Stack) -> None:
    fake = stack.fake
    before = await indexed_count(stack, ALICE, "contact")
    uri = "ximena.vcf"

    def put(name: str, note: str) -> None:
        fake.put_contact(ALICE, "contacts", uri, vcard("ximena-1", name, "ximena@example.test", "Wobblecorp", note))

    put("Ximena Quarrington", "Sells hand-made flumphorns.")
    contact = Doc(ALICE, "contact", contact_id(uri), "Ximena Quarrington flumphorns", "Ximena Quarrington",
                  contains=("flumphorns",))
    await eventually_indexed(stack, contact, what="contact: created")

    put("Ximena Quarrington", "Repairs antique tintinnabula.")
    await eventually_indexed(stack, contact.expect(query="Ximena tintinnabula", contains=("tintinnabula",),
                                                   lacks=("flumphorns",)), what="contact: edited")

    put("Ximena Volkova", "Repairs antique tintinnabula.")
    await eventually_indexed(stack, contact.expect(query="Ximena Volkova tintinnabula", title="Ximena Volkova"),
                             what="contact: renamed")

    fake.delete_contact(ALICE, "contacts", uri)
    await eventually_count(stack, ALICE, "contact", before)
    await assert_gone(stack, contact)  # counted first: removed by reconciliation, not by a search's re-check


async def test_every_source_follows_changes_by_reconciliation_alone(polled: Stack) -> None:
    """Webhooks are lost (a stopped worker; Deck and contacts have none on 32 anyway): every change of
    every source type still reaches the index, by reconciliation. The five run concurrently."""
    hooks = polled.fake.webhooks
    delivered, dropped = len(hooks.events()), len(hooks.dropped)
    scenarios = {
        "file": _file_by_reconciliation,
        "note": _note_by_reconciliation,
        "calendar_event": _calendar_by_reconciliation,
        "deck_card": _deck_card_by_reconciliation,
        "contact": _contact_by_reconciliation,
    }
    outcomes = await asyncio.gather(*(run(polled) for run in scenarios.values()), return_exceptions=True)
    failed = {name: f"{type(o).__name__}: {o}" for name, o in zip(scenarios, outcomes, strict=True) if o is not None}
    assert not failed, failed
    assert len(hooks.events()) == delivered  # nothing reached the app by webhook...
    assert len(hooks.dropped) > dropped  # ...though Nextcloud fired events for files, notes and calendars


# --- 4. isolation and sharing ------------------------------------------------------------------


async def test_alice_content_never_reaches_bob_whatever_the_query_or_filter(stack: Stack) -> None:
    fake = stack.fake
    secret_file = fake.put_file(ALICE, "Hushvault/hushwhisper-codes.md", "Hushwhisper: the vault code is glissando.")
    secret_note = fake.create_note(ALICE, "Hushwhisper diary", "Hushwhisper: met the glissando courier at dawn.")
    await stack.wait_idle(ALICE)
    # What alice has that bob must never get: everything of hers these searches find, but the shared file.
    alice_only: dict[str, str] = {}
    for query in ("Hushwhisper glissando", "Project Phoenix billing", "Meeting notes Q3 planning",
                  "Write release notes", "Dentist appointment Dr. Weber", "Carol Jones Acme Corp"):
        alice_only.update({hit["id"]: hit["title"] for hit in await results(stack, ALICE, query, limit=8)})
    shared = {hit["id"] for hit in await results(stack, BOB, "Garden party barbecue salads", "file")}
    assert shared, "bob should see the file alice shares with him"
    for doc_id in shared:
        alice_only.pop(doc_id, None)
    assert {f"file:{secret_file}", f"note:{secret_note}"} <= alice_only.keys()
    assert {"note", "file", "deck_card", "calendar_event", "contact"} <= {i.partition(":")[0] for i in alice_only}

    probes: list[tuple[str, dict[str, Any]]] = [
        ("hushwhisper-codes.md", {}),  # her exact titles
        ("Hushwhisper diary", {"doc_types": ["note"]}),
        ("Hushwhisper glissando vault code", {"limit": 50}),
        ("Hushwhisper glissando", {"path_prefix": "/Hushvault/"}),  # her folder
        ("Project plan.md Project Phoenix", {"path_prefix": "/Documents/"}),  # a folder both have
        ("Project Phoenix billing", {"doc_types": ["file"], "limit": 50}),
        ("Meeting notes", {"doc_types": ["note"], "limit": 50}),
        ("Write release notes", {"doc_types": ["deck_card"]}),
        ("Dentist appointment", {"doc_types": ["calendar_event"]}),
        ("Carol Jones", {"doc_types": ["contact"]}),
        ("Carol Jones Acme Corp carol@example.test", {"limit": 50}),
    ]
    leaked, bob_found = [], 0
    for query, args in probes:
        for hit in await results(stack, BOB, query, **args):
            bob_found += 1
            if hit["id"] in alice_only or hit["title"] in alice_only.values():
                leaked.append((query, args, hit["id"], hit["title"]))
    assert not leaked, leaked
    assert bob_found > 0  # bob's own content is searched: the empty answers are not a broken search
    assert not await results(stack, BOB, "Hushwhisper glissando", path_prefix="/Hushvault/")


async def test_a_share_reaches_the_recipient_by_reconciliation_and_leaves_with_the_unshare(polled: Stack) -> None:
    fake = polled.fake
    file_id = fake.put_file(ALICE, "Zshare/garnet-recipe.md", "Garnetwhisk recipe: fold the sorrelbloom in.")
    mine = Doc(ALICE, "file", f"file:{file_id}", "garnetwhisk sorrelbloom", "garnet-recipe.md",
               "/Zshare/garnet-recipe.md")
    await eventually_indexed(polled, mine, what="alice's file indexed")
    bob_files = await indexed_count(polled, BOB, "file")
    theirs = Doc(BOB, "file", f"file:{file_id}", "garnetwhisk sorrelbloom", "garnet-recipe.md",
                 "/garnet-recipe.md", contains=("sorrelbloom",))
    assert await theirs.check_gone(polled) == []

    share_id = fake.share(ALICE, "Zshare/garnet-recipe.md", BOB)  # fires no event for bob
    await eventually_indexed(polled, theirs, what="the shared file in bob's index")
    await eventually_count(polled, BOB, "file", bob_files + 1)

    fake.unshare(share_id)
    assert await theirs.check_gone(polled) == []  # at once: every hit is re-checked as bob
    await eventually_count(polled, BOB, "file", bob_files)  # and then removed from bob's index
    await assert_indexed(polled, mine)  # alice keeps hers


# --- 5. admin settings apply without a restart -----------------------------------------------------


async def test_switching_contacts_off_and_on_applies_live(polled: Stack) -> None:
    fake = polled.fake
    fake.put_contact(ALICE, "contacts", "yorick.vcf",
                     vcard("yorick-1", "Yorick Plimsoll", "yorick@example.test", "Plimsoll Ropes", "Sells hawsers."))
    carol = Doc(ALICE, "contact", contact_id("carol.vcf"), "Carol Jones Acme Corp", "Carol Jones")
    yorick = Doc(ALICE, "contact", contact_id("yorick.vcf"), "Yorick Plimsoll hawsers", "Yorick Plimsoll")
    await eventually_indexed(polled, carol, yorick)
    assert await indexed_count(polled, ALICE, "contact") == 2
    try:
        await apply_setting(polled, "index_contacts", "false")
        status = await polled.status(ALICE)
        assert status["sources"]["contact"]["enabled_by_admin"] is False
        # Removed from the index by the app itself, not only when a search happens to meet them.
        await eventually_count(polled, ALICE, "contact", 0, timeout=30)
        for query in ("Carol Jones Acme Corp", "Yorick Plimsoll"):
            assert "contact" not in [hit["doc_type"] for hit in await results(polled, ALICE, query, limit=20)]
            assert not await results(polled, ALICE, query, "contact")
    finally:
        set_setting(polled, "index_contacts", "true")
    await eventually_indexed(polled, carol, yorick, what="contacts back after switching them on again")
    fake.delete_contact(ALICE, "contacts", "yorick.vcf")
    await eventually_count(polled, ALICE, "contact", 1)


async def test_excluded_paths_and_the_exclusion_tag_skip_files_with_a_reason(polled: Stack) -> None:
    fake = polled.fake
    old = fake.put_file(ALICE, "Vault/zircon-old.md", "Zirconquill ledger: the old harbour accounts.")
    later = fake.put_file(ALICE, "Open/zircon-tagged-later.md", "Zirconquill memo: the lighthouse rota.")
    old_doc = Doc(ALICE, "file", f"file:{old}", "zirconquill harbour accounts", "zircon-old.md")
    later_doc = Doc(ALICE, "file", f"file:{later}", "zirconquill lighthouse rota", "zircon-tagged-later.md")
    await eventually_indexed(polled, old_doc, later_doc)
    tag = fake.create_tag("no-ai")  # the default exclusion tag
    fake.tag_file(ALICE, "Open/zircon-tagged-later.md", tag)  # no event the app listens to: reconciliation
    await eventually_gone(polled, later_doc, what="an indexed file tagged no-ai leaves the index")

    fake.webhooks.set_dropping(False)  # so the new files below are fetched (and skipped) at once
    try:
        # A long interval from here on: what is listed below must not be re-listed before it is checked.
        await apply_setting(polled, "reconcile_interval_minutes", "15")
        await apply_setting(polled, "excluded_paths", "/Vault/*, *.log")
        await eventually_gone(polled, old_doc, timeout=20, what="an indexed file excluded since leaves at once")
        new = fake.put_file(ALICE, "Vault/zircon-new.md", "Zirconquill secret: the smuggler's cove map.")
        log_file = fake.put_file(ALICE, "Open/zircon-debug.log", "Zirconquill trace: the brass gearwheel.")
        tagged = fake.put_file(ALICE, "Open/zircon-private.md", "Zirconquill diary: the moth orchid.")
        fake.tag_file(ALICE, "Open/zircon-private.md", tag)  # before the events are delivered
        status = await polled.wait_idle(ALICE)
        reasons = {s["id"]: s["reason"] for s in status["skipped_examples"]}
        assert reasons.get(f"file:{new}") == "excluded by the path pattern '/Vault/*'", reasons
        assert reasons.get(f"file:{log_file}") == "excluded by the path pattern '*.log'", reasons
        assert reasons.get(f"file:{tagged}") == "tagged 'no-ai'", reasons
        log = polled.log()
        assert f"Not indexing file:{new} for alice: excluded by the path pattern '/Vault/*'" in log
        assert f"Not indexing file:{tagged} for alice: tagged 'no-ai'" in log
        await assert_gone(polled, Doc(ALICE, "file", f"file:{new}", "zirconquill smuggler cove"),
                          Doc(ALICE, "file", f"file:{log_file}", "zirconquill brass gearwheel"),
                          Doc(ALICE, "file", f"file:{tagged}", "zirconquill moth orchid"))
    finally:
        fake.webhooks.set_dropping(True)
        set_setting(polled, "excluded_paths", "")
        set_setting(polled, "reconcile_interval_minutes", "0.025")


# --- 3. bad input (shared stack) -----------------------------------------------------------------
