"""A sharer on a real Nextcloud 32.0.1: a note alice shares with bob, writable, arrives among bob's
notes. The Notes API lists it as one of bob's (``readonly: false``); it was indexed as bob's own,
so when Nextcloud could not re-check a search in time (ADR 0010: bob's own burst of searches is
enough) it was served to him, also after alice ended the share. Here re-checks are made to time out
(``RECHECK_TIMEOUT_SECONDS``), which is what a saturated Nextcloud does to them. Since ADR 0781 a
shared hit is served on a verdict Nextcloud gave within the re-check window, and the companion's word
that the share ended withdraws it at once.
"""

from __future__ import annotations

import asyncio

import pytest

from realstack import RealStack

NOTE = ("Heron budget", "The heron budget for the wetland survey is 41,700 euros.")
QUERY = "heron wetland survey budget"


@pytest.fixture(scope="module")
def share_id(real: RealStack) -> int:
    real.set_admin_field("reconcile_interval_minutes", 0.05)  # a share fires no event for bob: reconciliation finds it
    alice, bob = real.user("alice"), real.user("bob")
    alice.create_note(*NOTE)
    # Nextcloud 32.0.1 puts a file shared from alice's Notes/ at the same path in bob's files when he
    # has that folder (file_target "/Notes/…"): straight among his notes, writable (OCS default 19).
    # Where it lands at his root instead, he keeps it with his notes, as a Notes user would.
    name = f"{NOTE[0]}.md"
    for _ in range(3):  # on nc-kit's SQLite a share made while busy may never reach bob (realstack.share)
        share = alice.share(f"/Notes/{name}", "bob")
        if not bob.exists(f"Notes/{name}") and bob.exists(name):
            bob.move(name, f"Notes/{name}")
        if bob.exists(f"Notes/{name}"):
            break
        alice.unshare(share)
    else:
        raise AssertionError("bob never received the shared note")
    asyncio.run(real.eventually(lambda: _bobs_hit(real), timeout=120))
    return share


async def _bobs_hit(real: RealStack) -> dict | None:
    hits = (await real.search("bob", QUERY))["results"]
    return next((h for h in hits if h["title"] == NOTE[0] and h["doc_type"] == "note"), None)


async def _companion_heard(real: RealStack) -> bool:
    return (await real.status("bob"))["companion_app"]["access_changes"] == "heard at once"


async def test_a_writable_note_shared_with_bob_names_alice_as_its_owner(real: RealStack, share_id: int) -> None:
    hit = await _bobs_hit(real)
    assert hit is not None and hit["shared_by"] == "alice"  # as Nextcloud says it (oc:owner-id of the note's file)


async def test_bob_never_gets_it_unchecked_after_the_unshare(
    real: RealStack, share_id: int, rechecks_time_out: None,
) -> None:
    withheld = await real.search("bob", QUERY)  # the app just restarted: no verdict kept yet
    assert NOTE[0] not in [h["title"] for h in withheld["results"]]
    assert any("withheld" in note for note in withheld["notes"]), withheld["notes"]
    # The question that search sent outlives it; its answer, given as bob, serves his next searches while
    # Nextcloud is busy, because the companion tells the app at once when a share ends (ADR 0781).
    await real.eventually(lambda: _companion_heard(real), timeout=30)
    await real.eventually(lambda: _bobs_hit(real), timeout=20, interval=0.5)
    real.user("alice").unshare(share_id)  # the companion's listener tells the app before this answers
    for _ in range(5):  # the index still has it (bob's listing has not run yet): it must stay withheld
        assert NOTE[0] not in await real.titles("bob", QUERY)
    assert (await real.status("bob"))["verification"]["access_changes"] >= 1
