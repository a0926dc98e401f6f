"""Nextcloud's example files (the skeleton every new account gets) stay out of search by default.

Real files: ``fake_nextcloud/data/skeleton`` holds Nextcloud 32.0.1's skeleton text files byte for
byte, copied into alice's home as a first login does, beside her own files in the same folders.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest
from semantic_mcp.core.documents import Skipped, SourceDocument
from semantic_mcp.sources.base import SourceOptions
from semantic_mcp.sources.examples import NEXTCLOUD_32_SKELETON, is_nextcloud_example
from stack import APP_ID, Stack

from fake_nextcloud.groupware import text_value
from fake_nextcloud.skeleton import put_skeleton, skeleton_files

OWN_TEMPLATE = "Templates/Packing list.md"
OWN_TEMPLATE_TEXT = "# Packing list\n\nPassport, charger, hiking boots and the quillwort tea for the trip.\n"


def test_the_vendored_skeleton_files_are_nextclouds_own() -> None:
    files = skeleton_files()
    assert len(files) == 8 and all(is_nextcloud_example(path, len(body)) for path, body in files.items())


@pytest.mark.parametrize(
    ("path", "size", "example"),
    [
        ("/Templates credits.md", 3168, True),
        ("Templates/Letter.odt", 15961, True),
        ("/Templates/Letter.odt", 15962, False),  # edited: the user's now
        ("/Templates/My letter.odt", 15961, False),  # the user's own template
        ("/Archive/Templates credits.md", 3168, False),  # moved by the user
        ("/Readme.md", 197, True),
        ("/Deck/Nextcloud sample image - add your image here!.jpg", 192_699, True),  # Deck's welcome board's
        ("/Deck/Nextcloud sample image - add your image here!.jpg", 192_700, False),
    ],
)
def test_recognised_by_path_and_size(path: str, size: int, example: bool) -> None:
    assert is_nextcloud_example(path, size) is example


def test_the_manifest_is_the_whole_skeleton() -> None:
    assert len(NEXTCLOUD_32_SKELETON) == 61
    assert sum(path.startswith("/Templates/") for path in NEXTCLOUD_32_SKELETON) == 43


@pytest.fixture(scope="module")
def skeleton_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = Stack(tmp_path_factory.mktemp("skeleton_stack"), profile="minimal").start()
    put_skeleton(running.fake, "alice")
    running.fake.put_file("alice", OWN_TEMPLATE, OWN_TEMPLATE_TEXT)
    # An example the user edited is theirs.
    running.fake.put_file("alice", "Readme.md", skeleton_files()["Readme.md"] + b"\nMy own line about the quillwort tea.\n")
    try:
        yield running
    finally:
        running.stop()


async def locations(stack: Stack, query: str) -> list[str]:
    return [hit["location"] for hit in (await stack.search("alice", query, limit=10))["results"]]


async def test_example_files_stay_out_and_own_files_in_templates_are_found(skeleton_stack: Stack) -> None:
    await skeleton_stack.wait_idle("alice")
    examples = {"/" + path for path in skeleton_files()} - {"/Readme.md"}  # the edited Readme is alice's
    found = await locations(skeleton_stack, "meeting notes agenda tasks template")
    assert found and not examples & set(found), found
    assert "/Templates credits.md" not in await locations(skeleton_stack, "templates credits open source community")
    assert (await locations(skeleton_stack, "quillwort tea"))[:2] in (
        ["/Templates/Packing list.md", "/Readme.md"], ["/Readme.md", "/Templates/Packing list.md"])


async def test_the_admin_can_index_them(skeleton_stack: Stack) -> None:
    await skeleton_stack.wait_idle("alice")
    skeleton_stack.fake.set_admin_setting(APP_ID, "index_nextcloud_examples", "1")
    try:
        await skeleton_stack.eventually(
            lambda: _top_is(skeleton_stack, "templates credits open source community", "/Templates credits.md"),
            timeout=60)
    finally:
        skeleton_stack.fake.set_admin_setting(APP_ID, "index_nextcloud_examples", "")
    await skeleton_stack.eventually(
        lambda: _absent(skeleton_stack, "templates credits open source community", "/Templates credits.md"),
        timeout=60)


async def _top_is(stack: Stack, query: str, location: str) -> bool:
    found = await locations(stack, query)
    return bool(found) and found[0] == location


async def _absent(stack: Stack, query: str, location: str) -> bool:
    return location not in await locations(stack, query)


async def test_an_unchanged_card_of_decks_welcome_board_is_skipped_and_an_edited_one_indexed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cards are recognised by their descriptions, which Deck does not translate (the real tier checks
    the digests against Deck 1.18.3's own board); the admin's example setting brings them back."""
    from semantic_mcp.sources import examples
    from semantic_mcp.sources.deck import DeckSource, _Placed

    welcome = "## Welcome to Nextcloud Deck!\n\nNextcloud Deck is a kanban style project management app."
    monkeypatch.setattr(examples, "DECK_EXAMPLE_DESCRIPTIONS",
                        frozenset({hashlib.sha256(welcome.encode()).hexdigest()}))

    def source(description: str, *, index_examples: bool = False) -> DeckSource:
        deck = DeckSource(SourceOptions(index_examples=index_examples))
        card = {"id": 7, "title": "1. Open to learn more", "description": description, "lastModified": 1}

        async def find(*_: object) -> _Placed:
            return _Placed({"id": 1, "title": "Welcome to Nextcloud Deck!"}, {"id": 2, "title": "To do"}, card)

        monkeypatch.setattr(deck, "_find", find)
        return deck

    skipped = await source(welcome).fetch(None, "alice", "7")  # type: ignore[arg-type]
    assert isinstance(skipped, Skipped) and skipped.reason == examples.EXAMPLE_CARD_REASON
    edited = await source(welcome + "\nMy own line.").fetch(None, "alice", "7")  # type: ignore[arg-type]
    assert isinstance(edited, SourceDocument)
    shown = await source(welcome, index_examples=True).fetch(None, "alice", "7")  # type: ignore[arg-type]
    assert isinstance(shown, SourceDocument)


# Nextcloud 34.0.1's example event as its dav app writes it in English (ExampleEventService).
EXAMPLE_EVENT_DESCRIPTION = (
    "Welcome to Nextcloud Calendar!\n\nThis is a sample event - explore the flexibility of planning with Nextcloud"
    " Calendar by making any edits you want!\n\nWith Nextcloud Calendar, you can:\n- Create, edit, and manage events"
    " effortlessly.\n- Create multiple calendars and share them with teammates, friends, or family.\n- Check"
    " availability and display your busy times to others.\n- Seamlessly integrate with apps and devices via CalDAV.\n-"
    " Customize your experience: schedule recurring events, adjust notifications and other settings."
)


def _example_event(description: str) -> str:
    escaped = text_value(description)
    return ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Sabre//Sabre VObject 4.5.6//EN\r\nBEGIN:VEVENT\r\n"
            "UID:3jRUlzdUQSj0UlgV15hFxPEU3lPFHSrx\r\nDTSTAMP:20261125T182944Z\r\nSUMMARY:Example event - open me!\r\n"
            f"DTSTART:20261202T100000Z\r\nDTEND:20261202T110000Z\r\nDESCRIPTION:{escaped}\r\n"
            "END:VEVENT\r\nEND:VCALENDAR\r\n")


def test_nextclouds_example_event_is_skipped_until_edited_or_the_setting_brings_it_back() -> None:
    """Recognised by its description (the English text or one of 34.0.1's translations; the real tier
    checks the admin's own example event), whatever its random UID and its date."""
    from datetime import UTC, datetime

    from semantic_mcp.sources.calendar import CalendarSource, document_from_ics
    from semantic_mcp.sources.examples import CALENDAR_EXAMPLE_DESCRIPTIONS, EXAMPLE_EVENT_REASON

    def parse(description: str, index_examples: bool = False) -> SourceDocument | Skipped:
        return document_from_ics("admin", "personal/3jRU.ics", _example_event(description), '"e"', "Personal", 0,
                                 datetime(2026, 11, 26, tzinfo=UTC), index_examples)

    skipped = parse(EXAMPLE_EVENT_DESCRIPTION)
    assert isinstance(skipped, Skipped) and skipped.reason == EXAMPLE_EVENT_REASON
    assert isinstance(parse(EXAMPLE_EVENT_DESCRIPTION + "\nBring the slides."), SourceDocument)
    assert isinstance(parse(EXAMPLE_EVENT_DESCRIPTION, index_examples=True), SourceDocument)
    assert len(CALENDAR_EXAMPLE_DESCRIPTIONS) == 37  # English and the 36 distinct translations of 34.0.1
    assert CalendarSource(SourceOptions(index_examples=True)).parser_args()[-1] is True


def test_nextclouds_example_contact_is_skipped_until_edited_or_the_setting_brings_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Recognised by its properties (all but those Nextcloud writes anew: UID, REV, the translated NOTE) and
    its note; the real tier checks the digest against the admin's own example contact."""
    from semantic_mcp.sources import examples
    from semantic_mcp.sources.contacts import ContactsSource, document_from_vcard, parse_vcard

    card = ("BEGIN:VCARD\r\nVERSION:3.0\r\nPRODID:-//Sabre//Sabre VObject 4.5.6//EN\r\nUID:{uid}\r\nFN:Leon Green\r\n"
            "EMAIL;TYPE=HOME:{email}\r\nREV;VALUE=DATE-AND-OR-TIME:{rev}\r\nNOTE:{note}\r\nEND:VCARD\r\n")
    shipped = card.format(uid="cffff367", email="leon@example.com", rev="20250108T160752Z", note="")
    monkeypatch.setattr(examples, "CONTACT_EXAMPLE_PROPERTIES", examples.contact_properties_digest(parse_vcard(shipped)))

    def parse(note: str = "This is an example contact", email: str = "leon@example.com",
              index_examples: bool = False) -> SourceDocument | Skipped:
        text = card.format(uid="8d1cba4c", email=email, rev="20261125T182944Z", note=note)
        return document_from_vcard("contacts/default", text, '"e"', "Contacts", 0, index_examples)

    skipped = parse()
    assert isinstance(skipped, Skipped) and skipped.reason == examples.EXAMPLE_CONTACT_REASON
    assert isinstance(parse(note="Dies ist ein Beispielkontakt"), Skipped)  # the German account's note
    assert isinstance(parse(note="Met him at the harbour"), SourceDocument)
    assert isinstance(parse(email="leon@green.example"), SourceDocument)
    assert isinstance(parse(index_examples=True), SourceDocument)
    assert ContactsSource(SourceOptions(index_examples=True)).parser_args() == (True,)
