"""Nextcloud's search bar on a real Nextcloud 34.0.1: the companion app ``semantic_search`` and the ExApp.

Everything goes through the server's own Unified Search endpoint
(``/ocs/v2.php/search/providers/semantic_search/search``), as the search bar calls it: the
companion's provider asks the ExApp through AppAPI's ``exAppRequest`` and opens every hit as the
user in PHP before it is shown. The kit's web UI does not render (its core JavaScript is absent),
so its OCS answer is what is tested.
"""

from __future__ import annotations

import asyncio
import base64
import re
import signal
import time
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from realstack import SECRET, RealStack

from fake_nextcloud.exapp_process import APP_ID

PROVIDER = "/ocs/v2.php/search/providers/semantic_search/search"
BUDGET = 2.0  # Provider::BUDGET_SECONDS
NOTE = ("Heron migration log", "Counted 57 grey herons at the salt marsh; they fly south in late September.")
FILE = ("Greenhouse budget.md", "# Greenhouse budget\n\nGlass panels cost 3,400 euros and the irrigation pump 620 euros.")
CARD = ("Repair the compost bin", "The compost bin lid is cracked; buy new hinges at the hardware store.")
EVENT = ("Piano recital", "Emma plays Chopin at the conservatory.")
CONTACT = ("Ingrid Svensson", "Beekeeper who sells honey at the Saturday market.")
KAYAK_NOTES = [(f"Kayak trip {day}", f"Paddle the kayak along the river on {day}, lunch at the weir.")
               for day in ("Monday", "Tuesday", "Wednesday", "Thursday")]
BOB_NOTE = ("Heron photos", "Bob's photos of herons at the lake, taken with the long lens.")

# Each source's item: (by meaning, by a word in it, its title as Nextcloud names it).
FINDS = {
    "note": ("birds flying south for the winter", "herons", NOTE[0]),
    "file": ("how much will the glasshouse cost", "irrigation", FILE[0]),
    "deck_card": ("fix the broken lid of the garden waste container", "hinges", CARD[0]),
    "calendar_event": ("classical music performance", "conservatory", EVENT[0]),
    "contact": ("who keeps bees and sells their produce", "beekeeper", CONTACT[0]),
}


@pytest.fixture(scope="module", autouse=True)
def content(real: RealStack) -> None:
    real.set_admin_field("reconcile_interval_minutes", 0.05)  # contacts and shares reach the index
    alice = real.user("alice")
    alice.create_note(*NOTE)
    alice.put_file(FILE[0], FILE[1], "text/markdown")
    alice.create_card("Garden", *CARD)
    alice.put_event(EVENT[0], datetime(2027, 3, 14, 18, 0, tzinfo=UTC), description=EVENT[1])
    alice.put_contact(CONTACT[0], note=CONTACT[1])
    for note in KAYAK_NOTES:
        alice.create_note(*note)
    real.user("bob").create_note(*BOB_NOTE)
    for doc_type, (_meaning, word, title) in FINDS.items():
        asyncio.run(real.eventually(lambda word=word, title=title: title in bar_titles(real, "alice", word), timeout=120))
    asyncio.run(real.eventually(lambda: BOB_NOTE[0] in bar_titles(real, "bob", "herons"), timeout=60))
    asyncio.run(real.eventually(lambda: len(bar_titles(real, "alice", "kayak", limit=10)) >= 4, timeout=60))


def bar(real: RealStack, user: str, term: str, **params: Any) -> dict[str, Any]:
    """The search bar's answer for ``user``: ``{name, isPaginated, entries, cursor}``."""
    response = httpx.get(real.nc.url + PROVIDER, params={"term": term, "format": "json", **params},
                         auth=(user, real.app_password(user)), headers={"OCS-APIRequest": "true"}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()["ocs"]["data"]


def bar_titles(real: RealStack, user: str, term: str, **params: Any) -> list[str]:
    return [entry["title"] for entry in bar(real, user, term, **params)["entries"]]


def entry_for(real: RealStack, user: str, term: str, title: str) -> dict[str, Any] | None:
    return next((e for e in bar(real, user, term, limit=10)["entries"] if e["title"] == title), None)


@pytest.mark.parametrize("doc_type", list(FINDS))
def test_each_sources_item_is_found_by_meaning_and_by_a_word_with_nextclouds_title_icon_and_place(
    real: RealStack, doc_type: str
) -> None:
    meaning, word, title = FINDS[doc_type]
    for term in (meaning, word):
        entry = entry_for(real, "alice", term, title)
        assert entry is not None, (term, bar_titles(real, "alice", term, limit=10), _closest(real, term))
        assert entry["attributes"]["type"] == doc_type
        assert entry["icon"] and entry["resourceUrl"].startswith(real.nc.url + "/index.php/")
    entry = entry_for(real, "alice", word, title)
    if doc_type == "calendar_event":  # the event's time, in alice's (default UTC) time zone
        assert "2027" in entry["subline"] and "6:00" in entry["subline"], entry["subline"]
    if doc_type == "deck_card":  # the board and stack it is on
        assert "Garden" in entry["subline"], entry["subline"]


def _closest(real: RealStack, term: str) -> list[tuple[str, float]]:
    """What the MCP search finds for ``term`` whatever the cut-off, for a failure's message."""
    hits = asyncio.run(real.search("alice", term, score_threshold=0, limit=5))["results"]
    return [(hit["title"], hit["score"]) for hit in hits]


@pytest.mark.parametrize("doc_type", list(FINDS))
def test_links_resolve_for_the_user(real: RealStack, doc_type: str) -> None:
    _meaning, word, title = FINDS[doc_type]
    entry = entry_for(real, "alice", word, title)
    assert entry is not None
    auth = ("alice", real.app_password("alice"))
    url = entry["resourceUrl"]
    if doc_type == "calendar_event":  # the Calendar app is not in the kit: its link names the event's DAV path
        dav_path = base64.b64decode(url.rsplit("/", 1)[1]).decode()
        url = real.nc.url + "/remote.php/dav" + dav_path.removeprefix("/remote.php/dav")
    elif doc_type == "contact":  # nor is the Contacts app: the card its link names is in alice's address book
        url = f"{real.nc.url}/remote.php/dav/addressbooks/users/alice/{entry['attributes']['id']}"
    response = httpx.get(url, auth=auth, follow_redirects=True, timeout=30)
    assert response.status_code == 200, (url, response.status_code)


def test_a_title_that_is_the_term_comes_first(real: RealStack) -> None:
    assert bar_titles(real, "alice", NOTE[0])[0] == NOTE[0]
    assert bar_titles(real, "alice", "Greenhouse budget")[0] == FILE[0]


def test_pages_follow_the_cursor_without_repeating(real: RealStack) -> None:
    first = bar(real, "alice", "kayak", limit=2)
    assert first["isPaginated"] and len(first["entries"]) == 2, first
    second = bar(real, "alice", "kayak", limit=2, cursor=first["cursor"])
    assert second["entries"], second
    ids = [e["attributes"]["id"] for e in first["entries"] + second["entries"]]
    assert len(ids) == len(set(ids)), ids
    whole = [e["attributes"]["id"] for e in bar(real, "alice", "kayak", limit=4)["entries"]]
    assert ids[:2] == whole[:2]


def test_bob_never_sees_alices_items_and_alice_never_bobs(real: RealStack) -> None:
    alice_titles = {title for _m, _w, title in FINDS.values()}
    for _meaning, word, _title in FINDS.values():
        assert not alice_titles & set(bar_titles(real, "bob", word, limit=20))
    assert BOB_NOTE[0] in bar_titles(real, "bob", "herons")
    assert BOB_NOTE[0] not in bar_titles(real, "alice", "herons", limit=20)


def test_a_share_that_ends_disappears_at_once(real: RealStack) -> None:
    share = real.share("alice", "/" + FILE[0], "bob")
    asyncio.run(real.eventually(lambda: FILE[0] in bar_titles(real, "bob", "irrigation"), timeout=90))
    real.user("alice").unshare(share)
    # No wait for the index: the companion opens every hit as bob before it is shown.
    assert FILE[0] not in bar_titles(real, "bob", "irrigation", limit=20)


def test_a_deleted_item_never_shows_though_still_indexed(real: RealStack) -> None:
    """Gone to the trash bin: a file, and an event (Nextcloud's calendar backend still returns a trashed
    event by its uri; the companion must not count it as openable)."""
    alice = real.user("alice")
    alice.put_file("Kiln schedule.md", "# Kiln schedule\n\nThe pottery kiln fires on Thursdays at 900 degrees.")
    uid = alice.put_event("Glaze workshop", datetime(2027, 4, 2, 9, 0, tzinfo=UTC), description="Celadon glazes.")
    asyncio.run(real.eventually(lambda: "Kiln schedule.md" in bar_titles(real, "alice", "pottery kiln"), timeout=90))
    asyncio.run(real.eventually(lambda: "Glaze workshop" in bar_titles(real, "alice", "celadon"), timeout=90))
    alice.delete("Kiln schedule.md")
    alice.delete_event(uid)
    assert "Kiln schedule.md" not in bar_titles(real, "alice", "pottery kiln", limit=20)
    assert "Glaze workshop" not in bar_titles(real, "alice", "celadon", limit=20)


def test_the_recheck_endpoint_answers_only_the_exapp_for_its_signed_user(real: RealStack) -> None:
    entry = entry_for(real, "alice", "herons", NOTE[0])
    bob_entry = entry_for(real, "bob", "herons", BOB_NOTE[0])
    items = [f"note:{entry['attributes']['id']}", f"note:{bob_entry['attributes']['id']}", "file:999999",
             f"deck_card:{entry_for(real, 'alice', 'hinges', CARD[0])['attributes']['id']}"]
    url = real.nc.url + "/ocs/v2.php/apps/semantic_search/api/v1/check"
    signed = {"AUTHORIZATION-APP-API": base64.b64encode(f"alice:{SECRET}".encode()).decode(), "EX-APP-ID": APP_ID,
              "EX-APP-VERSION": "0.1.0", "AA-VERSION": "34.0.0", "OCS-APIRequest": "true"}
    answer = httpx.post(url, params={"format": "json"}, json={"items": items}, headers=signed, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.json()["ocs"]["data"]["readable"] == {items[0]: True, items[1]: False, items[2]: False,
                                                        items[3]: True}
    plain = httpx.post(url, params={"format": "json"}, json={"items": items}, timeout=30,
                       auth=("alice", real.app_password("alice")), headers={"OCS-APIRequest": "true"})
    assert plain.status_code == 403


async def test_the_exapp_says_whether_the_companion_is_there_and_rechecks_through_it(real: RealStack) -> None:
    assert (await real.status("alice"))["companion_app"]["state"] == "installed"
    before = (await real.status("alice"))["verification"]["checked"]
    assert NOTE[0] in await real.titles("alice", "grey herons at the salt marsh")
    assert (await real.status("alice"))["verification"]["checked"] > before
    real.set_companion(False)
    try:
        await real.eventually(lambda: _companion_state(real, "not installed"), timeout=30)
        assert NOTE[0] in await real.titles("alice", "grey herons at the salt marsh")  # per-source checks again
    finally:
        real.set_companion(True)
    await real.eventually(lambda: _companion_state(real, "installed"), timeout=30)


async def _companion_state(real: RealStack, state: str) -> bool:
    return (await real.status("alice"))["companion_app"]["state"] == state


def test_the_bar_answers_within_budget_when_the_exapp_is_slow_or_stopped(real: RealStack) -> None:
    process = real.exapp.process
    process.send_signal(signal.SIGSTOP)  # accepts connections (the kernel does), answers nothing: slow
    try:
        started = time.monotonic()
        answer = bar(real, "alice", "herons")
        took = time.monotonic() - started
    finally:
        process.send_signal(signal.SIGCONT)
    # The provider gave up at its budget (its own measure, in the log line), the whole answer soon after.
    assert answer["entries"] == [] and took < BUDGET + 2.5, (took, answer)
    assert _gave_up_after(real) <= BUDGET + 0.5
    real.stop_exapp()
    try:
        started = time.monotonic()
        assert bar(real, "alice", "herons")["entries"] == []
        assert time.monotonic() - started < BUDGET + 2.5
        assert _gave_up_after(real) < BUDGET  # nothing listens: refused at once
    finally:
        real.start_exapp()
    asyncio.run(real.eventually(lambda: NOTE[0] in bar_titles(real, "alice", "herons"), timeout=60))


def _gave_up_after(real: RealStack) -> float:
    """The seconds the provider's last "shows nothing" warning in Nextcloud's log says it waited."""
    messages = [str(entry.get("message")) for entry in real.nc.log_lines()[-50:]
                if entry.get("app") == "semantic_search" and entry.get("level") == 2]
    found = [re.search(r"Semantic Search shows nothing: .*after ([\d.]+) s", message) for message in messages]
    seconds = [float(match.group(1)) for match in found if match]
    assert seconds, messages
    return seconds[-1]


async def test_a_user_with_indexing_off_gets_nothing(real: RealStack) -> None:
    result = await real.call("bob", "nc_disable_vector_sync")
    assert not result.is_error, real.failure(result)
    try:
        assert bar(real, "bob", "herons")["entries"] == []
        assert bar(real, "bob", BOB_NOTE[0])["entries"] == []
    finally:
        result = await real.call("bob", "nc_enable_vector_sync")
        assert not result.is_error, real.failure(result)
