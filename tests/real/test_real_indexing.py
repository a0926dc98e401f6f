"""Indexing on a real Nextcloud 34: changes made through Nextcloud's own APIs reach search.

Notes, files, calendar events and (Deck 1.18) Deck cards arrive through real webhook_listeners
deliveries; contacts and shares (for their recipient) have no events and arrive through
reconciliation, which the admin setting makes frequent here.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

from realstack import RealStack
from semantic_mcp.sources.examples import (
    DECK_SAMPLE_IMAGE,
    EXAMPLE_CARD_REASON,
    EXAMPLE_CONTACT_REASON,
    EXAMPLE_EVENT_REASON,
)


async def found(real: RealStack, user: str, query: str, title: str, **args) -> bool:
    return title in await real.titles(user, query, **args)


async def gone(real: RealStack, user: str, query: str, title: str, **args) -> bool:
    return not await found(real, user, query, title, **args)


async def locations(real: RealStack, user: str, query: str) -> list[str]:
    return [hit["location"] for hit in (await real.search(user, query))["results"]]


async def test_notes_created_edited_renamed_and_deleted_through_the_notes_api(real: RealStack) -> None:
    alice = real.user("alice")
    note_id = alice.create_note("Quokka feeding plan", "Feed the quokkas at seven with fresh leaves.")
    await real.eventually(lambda: found(real, "alice", "when are the quokkas fed", "Quokka feeding plan"))
    alice.update_note(note_id, content="# Quokka feeding plan\n\nFeed the quokkas at nine with apple slices.")
    await real.eventually(lambda: _excerpt_has(real, "alice", "quokka apple slices", "apple slices"))
    alice.update_note(note_id, title="Quokka diet")
    await real.eventually(lambda: found(real, "alice", "quokka apple slices", "Quokka diet"))
    assert "Quokka feeding plan" not in await real.titles("alice", "quokka apple slices")
    alice.delete_note(note_id)
    await real.eventually(lambda: gone(real, "alice", "quokka apple slices", "Quokka diet"), timeout=30)


async def _excerpt_has(real: RealStack, user: str, query: str, text: str) -> bool:
    return any(text in hit["excerpt"] for hit in (await real.search(user, query))["results"])


async def test_files_put_moved_folder_moved_and_deleted_over_webdav(real: RealStack) -> None:
    alice = real.user("alice")
    alice.mkdir("Research")
    alice.put_file("Research/axolotl.md", "# Axolotl care\n\nAxolotls need water below 20 degrees Celsius.")
    await real.eventually(lambda: found(real, "alice", "axolotl water temperature", "axolotl.md"))
    alice.move("Research/axolotl.md", "Research/axolotl-care.md")
    await real.eventually(lambda: found(real, "alice", "axolotl water temperature", "axolotl-care.md"))
    alice.move("Research", "Biology")  # one event, for the folder only
    await real.eventually(
        lambda: _location_is(real, "alice", "axolotl water temperature", "/Biology/axolotl-care.md"), timeout=90
    )
    alice.delete("Biology/axolotl-care.md")
    await real.eventually(lambda: gone(real, "alice", "axolotl water temperature", "axolotl-care.md"), timeout=30)


async def test_one_upload_is_downloaded_once(real: RealStack) -> None:
    """One upload sends NodeCreatedEvent and NodeWrittenEvent, the second often after the first is
    indexed: it finds the version indexed still current and downloads nothing (ADR 0530, "Later").
    Counted in the PHP server's request log; before, every upload was downloaded twice here."""
    alice = real.user("alice")
    alice.mkdir("Once")
    log = real.nc.dir / "logs" / "php.log"
    start = log.stat().st_size
    alice.put_file("Once/okapi.md", "# Okapi\n\nOkapis browse on leaves in the Ituri rainforest.")
    await real.eventually(lambda: found(real, "alice", "okapi rainforest leaves", "okapi.md"))
    await asyncio.sleep(8)  # the second delivery follows within a second or two

    with log.open("rb") as lines:
        lines.seek(start)
        requests = [line for line in lines if b"/remote.php/dav/files/alice/Once/okapi.md" in line]
    assert sum(b"]: PUT " in line for line in requests) == 1, requests
    assert sum(b"]: GET " in line for line in requests) == 1, requests


async def _location_is(real: RealStack, user: str, query: str, location: str) -> bool:
    return location in await locations(real, user, query)


async def test_calendar_events_created_changed_and_deleted_over_caldav(real: RealStack) -> None:
    alice = real.user("alice")
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(days=9)
    uid = alice.put_event("Orthodontist check-up", start, description="Bring the retainer.")
    await real.eventually(lambda: found(real, "alice", "orthodontist appointment", "Orthodontist check-up"))
    alice.put_event("Orthodontist check-up moved", start + timedelta(days=1), uid=uid)
    await real.eventually(lambda: found(real, "alice", "orthodontist appointment", "Orthodontist check-up moved"))
    alice.delete_event(uid)  # Nextcloud moves it to the calendar's trash bin: MovedToTrash, not Deleted
    await real.eventually(lambda: gone(real, "alice", "orthodontist appointment", "Orthodontist check-up moved"),
                          timeout=30)


async def test_a_deck_card_created_edited_and_deleted_is_found_within_seconds_through_deck_events(
    real: RealStack,
) -> None:
    """Deck 1.18.3 sends card events webhook_listeners accepts: no reconciliation (15 minutes apart
    here) is needed, where on Deck 1.16 (Nextcloud 32) a card waited for the next one."""
    hooks = real.nc.ocs("GET", "/ocs/v2.php/apps/webhook_listeners/api/v1/webhooks")  # as admin
    assert {f"OCA\\Deck\\Event\\Card{n}Event" for n in ("Created", "Updated", "Deleted")} <= {
        hook["event"] for hook in hooks if hook["appId"] == "semantic_mcp"}
    alice, log_before = real.user("alice"), len(real.log())
    card = alice.create_card("Garden", "Prune the wisteria", "Cut back the long shoots after flowering.")
    await real.eventually(lambda: found(real, "alice", "wisteria pruning", "Prune the wisteria"), timeout=20)
    edited = time.monotonic()
    alice.update_card(card, "Prune the wisteria and the quince", "Cut back the quince's water shoots in winter.")
    await real.eventually(lambda: found(real, "alice", "quince water shoots", "Prune the wisteria and the quince"),
                          timeout=20)
    print(f"Deck card edit found {time.monotonic() - edited:.1f} s after the edit")
    alice.delete_card(card)
    await real.eventually(lambda: gone(real, "alice", "quince water shoots", "Prune the wisteria and the quince"),
                          timeout=20)
    assert "Reconciliation deck_card" not in real.log()[log_before:]  # the events did it


async def test_contacts_arrive_by_reconciliation(real: RealStack, frequent_reconciliation) -> None:
    alice = real.user("alice")
    alice.put_contact("Ingrid Halvorsen", email="ingrid@fjord.example", phone="+47 555 0101", note="Sailing coach")
    await real.eventually(lambda: found(real, "alice", "sailing coach phone number", "Ingrid Halvorsen"), timeout=90)


async def test_a_share_reaches_its_recipient_and_an_unshare_removes_it_at_once(
    real: RealStack, frequent_reconciliation
) -> None:
    alice = real.user("alice")
    alice.put_file("pelican-survey.md", "# Pelican survey\n\nWe counted 312 pelicans at the estuary.")
    await real.eventually(lambda: found(real, "alice", "how many pelicans", "pelican-survey.md"))
    assert "pelican-survey.md" not in await real.titles("bob", "how many pelicans were counted")
    share_id = real.share("alice", "/pelican-survey.md", "bob")
    await real.eventually(lambda: found(real, "bob", "how many pelicans", "pelican-survey.md"), timeout=90)
    alice.unshare(share_id)
    # No event tells bob's index; the re-check as bob drops it from the very next search.
    assert "pelican-survey.md" not in await real.titles("bob", "how many pelicans")


async def test_a_contact_in_an_unshared_address_book_disappears_and_contacts_are_rechecked_without_errors(
    real: RealStack, frequent_reconciliation
) -> None:
    alice = real.user("alice")
    alice.put_contact("Priya Raman", email="priya@harbour.example", note="Harbour master, Lisbon")
    alice.share_address_book("bob")
    await real.eventually(lambda: found(real, "bob", "harbour master in Lisbon", "Priya Raman"), timeout=90)
    # Each user's address books are reconciled in turn: alice's own copy may come a pass later.
    await real.eventually(lambda: found(real, "alice", "harbour master in Lisbon", "Priya Raman"), timeout=90)
    assert "Could not re-check" not in real.log() and "HEAD /remote.php/dav/addressbooks" not in real.log()
    alice.share_address_book("bob", remove=True)
    assert "Priya Raman" not in await real.titles("bob", "harbour master in Lisbon")
    assert "Priya Raman" in await real.titles("alice", "harbour master in Lisbon")


async def test_decks_welcome_board_stays_out_of_search(real: RealStack) -> None:
    """Deck creates its welcome board on a user's first request to Deck (alice's own, before the app is
    registered: RealStack.start): four cards explaining Deck and a sample image in her files. They are
    Deck's examples, not her content: recognised by their untranslated descriptions and the image's
    name and size, and left out like Nextcloud's example files (ADR 0201)."""
    skipped = real.db_rows("SELECT source_id FROM skipped WHERE user = 'alice' AND doc_type = 'deck_card' "
                           "AND reason = ?", (EXAMPLE_CARD_REASON,))
    assert skipped, "no card of Deck's welcome board was recognised"
    indexed = {title for (title,) in real.db_rows(
        "SELECT title FROM documents WHERE user = 'alice' AND doc_type = 'deck_card'")}
    assert not indexed & set(WELCOME_CARDS)
    titles = await real.titles("alice", "how do I drag cards left and right between lists")
    assert not set(titles) & set(WELCOME_CARDS)
    # The sample image is the size the app knows it by (so a Deck update that changes it shows here).
    name, size = DECK_SAMPLE_IMAGE
    answer = real.user("alice").http.request("PROPFIND", real.user("alice").dav_path(f"/Deck/{name}"),
                                             headers={"Depth": "0"})
    assert answer.status_code == 207 and f"<d:getcontentlength>{size}</d:getcontentlength>" in answer.text


async def test_nextclouds_example_event_and_contact_stay_out_of_search(real: RealStack) -> None:
    """Nextcloud 34 puts an example event and an example contact ("Leon Green") in the calendar and the
    address book it makes at an account's first login: the admin's here, as nc-kit's setup logged in. They are
    recognised by their texts as the dav app wrote them (digests the app ships) and left out (ADR 0201)."""
    skipped = dict(real.db_rows("SELECT doc_type, reason FROM skipped WHERE user = 'admin' AND reason IN (?, ?)",
                                (EXAMPLE_EVENT_REASON, EXAMPLE_CONTACT_REASON)))
    assert skipped == {"calendar_event": EXAMPLE_EVENT_REASON, "contact": EXAMPLE_CONTACT_REASON}
    titles = {title for (title,) in real.db_rows("SELECT title FROM documents WHERE user = 'admin'")}
    assert not titles & {"Example event - open me!", "Leon Green"}
    assert not set(await real.titles("admin", "example event open me")) & {"Example event - open me!"}


WELCOME_CARDS = ("1. Open to learn more about boards and cards", "2. Drag cards left and right, up and down",
                 "3. Apply rich formatting and link content", "4. Share, comment and collaborate!")
