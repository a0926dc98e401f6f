"""The admin settings page and user isolation on a real Nextcloud 34.

Settings are changed with the OCS call the admin page itself makes
(``POST /ocs/v2.php/settings/api/declarative/value``); a real server stores an unticked checkbox
as ``""``, which once read as "not set" and kept every switch on.
"""

from __future__ import annotations

import asyncio

import pytest

from realstack import RealStack
from scripted_model import ScriptedModel

CONTACT = "Tomasz Wierzbicki"
ALICE_SECRET = ("Project Osprey tender", "The Osprey tender closes on 14 March; our bid is 88,500 euros.")


@pytest.fixture(scope="module", autouse=True)
def content(real: RealStack) -> None:
    real.set_admin_field("reconcile_interval_minutes", 0.05)
    alice = real.user("alice")
    alice.put_contact(CONTACT, email="tomasz@kayak.example", note="Kayak instructor in Gdansk")
    alice.create_note(*ALICE_SECRET)
    asyncio.run(real.eventually(lambda: _found(real, "alice", "kayak instructor", CONTACT), timeout=90))
    asyncio.run(real.eventually(lambda: _found(real, "alice", "Osprey tender bid", ALICE_SECRET[0]), timeout=60))


async def _found(real: RealStack, user: str, query: str, title: str) -> bool:
    return title in await real.titles(user, query)


async def test_a_source_switched_off_and_on_in_the_admin_page(real: RealStack) -> None:
    real.set_admin_field("index_contacts", False)  # stored by Nextcloud as ""
    try:
        await real.eventually(lambda: _not_found(real, "alice", "kayak instructor", CONTACT), timeout=30)
        await real.eventually(lambda: _no_contacts_indexed(real, "alice"), timeout=60)  # and they leave the index
    finally:
        real.set_admin_field("index_contacts", True)  # stored as "1"
    await real.eventually(lambda: _found(real, "alice", "kayak instructor", CONTACT), timeout=90)


async def _no_contacts_indexed(real: RealStack, user: str) -> bool:
    sources = (await real.status(user))["sources"]
    return "contact" not in sources or sources["contact"]["indexed"] == 0


async def _not_found(real: RealStack, user: str, query: str, title: str) -> bool:
    return not await _found(real, user, query, title)


async def test_query_analysis_switched_off_and_on_in_the_admin_page(real: RealStack) -> None:
    async def asked_for_analysis() -> bool:
        model = ScriptedModel(analysis="{}")
        result = await real.call("alice", "nc_semantic_search", {"query": "Osprey tender bid"}, sampling_callback=model)
        assert not result.is_error, real.failure(result)
        return "analysis" in model.kinds()

    real.set_admin_field("query_analysis", False)
    try:
        await real.eventually(lambda: _negate(asked_for_analysis()), timeout=30)
    finally:
        real.set_admin_field("query_analysis", True)
    await real.eventually(asked_for_analysis, timeout=30)


async def _negate(value) -> bool:
    return not await value


async def test_index_every_user_by_default_switched_off_and_on(real: RealStack) -> None:
    real.set_admin_field("users_enabled_by_default", False)
    try:
        await real.eventually(lambda: _enabled_is(real, "bob", False), timeout=30)
    finally:
        real.set_admin_field("users_enabled_by_default", True)
    await real.eventually(lambda: _enabled_is(real, "bob", True), timeout=30)


async def _enabled_is(real: RealStack, user: str, value: bool) -> bool:
    return (await real.status(user))["enabled"] is value


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"doc_types": ["note"]},
        {"doc_types": ["contact"]},
        {"path_prefix": "/"},
        {"path_prefix": "/alice"},
        {"path_prefix": "../alice/files"},
        {"score_threshold": 0.0, "limit": 50},
        {"modified_after": "2000-01-01"},
    ],
    ids=["plain", "notes", "contacts", "root", "alice-path", "traversal", "everything", "dated"],
)
async def test_bob_never_receives_alices_items_whatever_he_asks(real: RealStack, args: dict) -> None:
    for query in (ALICE_SECRET[1], "Osprey tender 88,500 euros", "alice", CONTACT, "kayak instructor Gdansk"):
        result = await real.call("bob", "nc_semantic_search", {"query": query, "use_query_analysis": False, **args})
        hits = result.structured_content["results"] if not result.is_error else []
        titles = {hit["title"] for hit in hits}
        assert ALICE_SECRET[0] not in titles and CONTACT not in titles, (query, args, titles)
        assert all("88,500" not in hit["excerpt"] and "Gdansk" not in hit["excerpt"] for hit in hits)


async def test_bob_cannot_open_alices_item_by_its_id(real: RealStack) -> None:
    hit = next(h for h in (await real.search("alice", "Osprey tender bid"))["results"] if h["title"] == ALICE_SECRET[0])
    result = await real.call("bob", "nc_get_document", {"id": hit["id"]})
    assert result.is_error or "88,500" not in str(result.structured_content)
    assert "88,500" not in "".join(getattr(block, "text", "") for block in result.content)


def test_only_admins_see_and_save_the_admin_form_and_a_user_cannot_save_any_declarative_value(real: RealStack) -> None:
    """Nextcloud 32.0.1 and 34.0.1 quirk the personal form is built around (``ex_app/settings_form.py``): a user
    who is not a (sub-)admin gets 403 saving any declarative value, a personal form's included."""
    assert [form["section_type"] for form in real.settings_forms("alice")] == ["personal"]
    assert {form["section_type"] for form in real.settings_forms("admin")} == {"admin", "personal"}
    refused = real.save_admin_field("alice", "index_notes", False)
    assert refused.status_code == 403 and refused.json()["ocs"]["meta"]["message"] == ""
