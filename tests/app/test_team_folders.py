"""Team folders (groupfolders) through the real app on the fake Nextcloud, which sends what Nextcloud 34
sends: one event, for the writer alone. Every member finds what any member writes within seconds; a
member an ACL denies, or a non-member, never does; a member removed, a file moved out and a folder
deleted leave nothing behind. The fan-out itself (events -> members) is checked without the app first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpx import HTTPXMock
from stack import APP_ID, Stack

from fake_nextcloud import FakeNextcloud
from semantic_mcp.core.documents import DocRef
from semantic_mcp.indexing.events import plan_event
from semantic_mcp.indexing.state import IndexState
from semantic_mcp.nextcloud.client import NextcloudClient
from semantic_mcp.sources.team_folders import mount_at, team_folder_mounts

ALICE, BOB, OUTSIDER = "alice", "bob", "admin"  # admin is in no team here: the non-member
FOLDER = "Team Projects"
WRITE = "OCP\\Files\\Events\\Node\\NodeWrittenEvent"


# --- the fan-out, without the app ------------------------------------------------------------------


def _written(user: str, path: str, file_id: int) -> dict[str, Any]:
    return {"event": {"class": WRITE, "node": {"id": file_id, "path": f"/{user}/files{path}"}}, "user": {"uid": user}}


def test_a_write_into_a_team_folder_refreshes_every_member_known(tmp_path: Path) -> None:
    state = IndexState(tmp_path / "state.db")
    state.set_team_folders(ALICE, {"1": f"/{FOLDER}"})
    state.set_team_folders(BOB, {"1": f"/{FOLDER}", "2": "/Board"})
    state.set_team_folders("carol", {"2": "/Board"})  # another folder's member only

    plan = plan_event(_written(ALICE, f"/{FOLDER}/q2.md", 229), state, notes_folder="Notes")
    assert [ref for ref, _ in plan.upserts] == [DocRef(ALICE, "file", "229"), DocRef(BOB, "file", "229")]

    outside = plan_event(_written(ALICE, "/Team Projects.md", 230), state, notes_folder="Notes")
    assert [ref for ref, _ in outside.upserts] == [DocRef(ALICE, "file", "230")]  # a name that only starts alike


def test_learning_team_folders_says_when_they_changed(tmp_path: Path) -> None:
    state = IndexState(tmp_path / "state.db")
    assert state.set_team_folders(BOB, {"1": f"/{FOLDER}"}) is True
    assert state.set_team_folders(BOB, {"1": f"/{FOLDER}"}) is False
    assert state.team_folder_members("1") == [BOB]
    assert state.set_team_folders(BOB, {}) is True  # removed from the group: a full listing follows
    assert state.team_folder_members("1") == []


# Shaped as Nextcloud 34.0.1 with groupfolders 22.0.6 answers a depth-1 PROPFIND of alice's files root: the team
# folder's entry as recorded (trimmed), the others with the 404 propstat Sabre gives a prop a node lacks.
ROOT_ANSWER = b"""<?xml version="1.0"?>
<d:multistatus xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns" xmlns:oc="http://owncloud.org/ns"
 xmlns:nc="http://nextcloud.org/ns">
<d:response><d:href>/remote.php/dav/files/alice/</d:href><d:propstat><d:prop><oc:fileid>2</oc:fileid></d:prop>
<d:status>HTTP/1.1 200 OK</d:status></d:propstat><d:propstat><d:prop><nc:group-folder-id/></d:prop>
<d:status>HTTP/1.1 404 Not Found</d:status></d:propstat></d:response>
<d:response><d:href>/remote.php/dav/files/alice/Documents/</d:href><d:propstat><d:prop><oc:fileid>5</oc:fileid>
</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat><d:propstat><d:prop><nc:group-folder-id/></d:prop>
<d:status>HTTP/1.1 404 Not Found</d:status></d:propstat></d:response>
<d:response><d:href>/remote.php/dav/files/alice/Team%20Projects/</d:href><d:propstat><d:prop>
<oc:fileid>223</oc:fileid><nc:group-folder-id>1</nc:group-folder-id></d:prop>
<d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
</d:multistatus>"""


async def test_a_users_team_folders_are_read_from_their_files_root(httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(method="PROPFIND", url="https://cloud.test/remote.php/dav/files/alice/", status_code=207,
                            content=ROOT_ANSWER)
    client = NextcloudClient("https://cloud.test", lambda user: {"X-Test-User": user})
    try:
        assert await team_folder_mounts(client, ALICE) == {"1": f"/{FOLDER}"}
    finally:
        await client.aclose()
    sent = httpx_mock.get_request()
    assert sent.headers["Depth"] == "1" and b"<nc:group-folder-id/>" in sent.content
    assert mount_at({"1": f"/{FOLDER}"}, f"/{FOLDER}/HR/salaries.md") == "1"
    assert mount_at({"1": f"/{FOLDER}"}, "/Team Projects 2/a.md") is None


# --- through the app -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def teamed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, int]]:
    """A private stack whose first indexing pass already sees alice's and bob's team folder (the app
    learns team folders at reconciliation: a folder made or given sends no event); reconciliation then
    runs every 15 minutes, so what follows reaches bob by the fanned-out event alone."""
    made: dict[str, int] = {}

    def make_folder(fake: FakeNextcloud) -> None:
        made["id"] = fake.create_team_folder(FOLDER, {ALICE, BOB})
        fake.put_file(ALICE, f"{FOLDER}/charter.md", "Quillomber charter: the team meets on Thursdays.")

    own = Stack(tmp_path_factory.mktemp("teamed"), profile="minimal").start(before_app=make_folder)
    try:
        yield own, made["id"]
    finally:
        own.stop()


async def ids(stack: Stack, user: str, query: str) -> list[str]:
    found = (await stack.search(user, query, limit=10, use_reranking=False))["results"]
    return [hit["id"] for hit in found]


async def eventually_found(stack: Stack, user: str, query: str, doc_id: str, timeout: float = 30.0) -> float:
    """Seconds until ``user`` finds ``doc_id``."""
    start = time.monotonic()
    await stack.eventually(lambda: _has(stack, user, query, doc_id), timeout=timeout)
    return time.monotonic() - start


async def _has(stack: Stack, user: str, query: str, doc_id: str) -> bool:
    return doc_id in await ids(stack, user, query)


async def eventually_lost(stack: Stack, user: str, query: str, doc_id: str, timeout: float = 30.0) -> None:
    async def gone() -> bool:
        return doc_id not in await ids(stack, user, query)

    await stack.eventually(gone, timeout=timeout)


async def test_the_first_pass_indexes_the_folder_for_both_members_and_counts_it(teamed: tuple[Stack, int]) -> None:
    stack, _ = teamed
    charter = f"file:{stack.fake.file_id(ALICE, f'{FOLDER}/charter.md')}"
    for member in (ALICE, BOB):
        hits = (await stack.search(member, "quillomber charter Thursdays", limit=10, use_reranking=False))["results"]
        assert [hit.get("shared_by") for hit in hits if hit["id"] == charter] == ["team folder"]
        status = await stack.status(member)
        assert status["sources"]["file"]["team_folders"] == [
            {"name": FOLDER, "path": f"/{FOLDER}", "id": str(teamed[1]), "indexed": 1, "stored_once": 1}]
    assert charter not in await ids(stack, OUTSIDER, "quillomber charter Thursdays")
    assert (await stack.status(OUTSIDER))["sources"]["file"]["team_folders"] == []


async def test_a_members_write_reaches_the_other_member_from_one_event(teamed: tuple[Stack, int]) -> None:
    stack, _ = teamed
    before = len(stack.fake.webhooks.events(WRITE))
    file_id = stack.fake.put_file(ALICE, f"{FOLDER}/q2.md", "Brindlewort quarterly plan: ship the harbour sensors.")
    stack.flush_events(10)
    writes = [d for d in stack.fake.webhooks.events(WRITE)[before:] if d.payload["event"]["node"]["id"] == file_id]
    assert {d.payload["event"]["node"]["path"] for d in writes} == {f"/{ALICE}/files/{FOLDER}/q2.md"}  # alice's alone
    seconds = await eventually_found(stack, BOB, "brindlewort quarterly plan", f"file:{file_id}")
    assert seconds < 20
    await eventually_found(stack, ALICE, "brindlewort quarterly plan", f"file:{file_id}")
    assert f"file:{file_id}" not in await ids(stack, OUTSIDER, "brindlewort quarterly plan")

    bobs = stack.fake.put_file(BOB, f"{FOLDER}/minutes.md", "Scrollvane minutes: bob took the notes.")
    await eventually_found(stack, ALICE, "scrollvane minutes", f"file:{bobs}")


async def test_an_acl_denied_member_never_finds_the_subfolder(teamed: tuple[Stack, int]) -> None:
    stack, folder_id = teamed
    fake = stack.fake
    fake.mkdir(ALICE, f"{FOLDER}/HR")
    fake.deny_team_folder_read(folder_id, "HR", BOB)
    secret = fake.put_file(ALICE, f"{FOLDER}/HR/salaries.md", "Ferndapple salaries: the pay bands for next year.")
    await eventually_found(stack, ALICE, "ferndapple salaries pay bands", f"file:{secret}")
    stack.flush_events(10)
    await asyncio.sleep(3)  # bob's fanned-out task has run: it found nothing as bob
    assert f"file:{secret}" not in await ids(stack, BOB, "ferndapple salaries pay bands")

    # Denied after bob indexed it: hidden from bob's very next search (every hit is re-checked as him).
    fake.mkdir(ALICE, f"{FOLDER}/Board")
    minutes = fake.put_file(ALICE, f"{FOLDER}/Board/vote.md", "Glimmerquay board vote: approved unanimously.")
    await eventually_found(stack, BOB, "glimmerquay board vote", f"file:{minutes}")
    fake.deny_team_folder_read(folder_id, "Board", BOB)
    assert f"file:{minutes}" not in await ids(stack, BOB, "glimmerquay board vote")
    assert f"file:{minutes}" in await ids(stack, ALICE, "glimmerquay board vote")


async def test_a_file_moved_in_reaches_the_members_and_moved_out_leaves_them(teamed: tuple[Stack, int]) -> None:
    stack, _ = teamed
    fake = stack.fake
    file_id = fake.put_file(ALICE, "Drafts/lantern.md", "Marrowlantern draft: alice's own until she files it.")
    await eventually_found(stack, ALICE, "marrowlantern draft", f"file:{file_id}")
    assert f"file:{file_id}" not in await ids(stack, BOB, "marrowlantern draft")

    fake.move(ALICE, "Drafts/lantern.md", f"{FOLDER}/lantern.md")
    await eventually_found(stack, BOB, "marrowlantern draft", f"file:{file_id}")

    fake.move(ALICE, f"{FOLDER}/lantern.md", "Drafts/lantern.md")
    assert f"file:{file_id}" not in await ids(stack, BOB, "marrowlantern draft")  # at once: re-checked as bob
    await eventually_found(stack, ALICE, "marrowlantern draft", f"file:{file_id}")


async def test_an_admin_excludes_the_team_folder_by_its_path_for_every_member(teamed: tuple[Stack, int]) -> None:
    stack, _ = teamed
    charter = f"file:{stack.fake.file_id(ALICE, f'{FOLDER}/charter.md')}"
    before = {member: (await stack.status(member))["sources"]["file"] for member in (ALICE, BOB)}
    stack.fake.set_admin_setting(APP_ID, "excluded_paths", f"/{FOLDER}/*")
    try:
        for member in (ALICE, BOB):
            in_folder = before[member]["team_folders"][0]["indexed"]

            async def left(member: str = member, in_folder: int = in_folder) -> bool:
                now = (await stack.status(member))["sources"]["file"]
                expected = before[member]["indexed"] - in_folder
                return now["team_folders"][0]["indexed"] == 0 and now["indexed"] == expected

            await stack.eventually(left, timeout=60)
            assert charter not in await ids(stack, member, "quillomber charter Thursdays")
    finally:
        stack.fake.set_admin_setting(APP_ID, "excluded_paths", "")
    for member in (ALICE, BOB):
        await eventually_found(stack, member, "quillomber charter Thursdays", charter, timeout=60)


async def test_a_removed_member_and_a_deleted_folder_leave_nothing(teamed: tuple[Stack, int]) -> None:
    """Last in the module: it removes bob and then the folder, and reconciles every 1.5 s."""
    stack, folder_id = teamed
    fake = stack.fake
    kept = fake.put_file(ALICE, f"{FOLDER}/roster.md", "Thistlecomb roster: who is on call in June.")
    await eventually_found(stack, BOB, "thistlecomb roster on call", f"file:{kept}")
    bob_files = (await stack.status(BOB))["sources"]["file"]
    bob_own = bob_files["indexed"] - bob_files["team_folders"][0]["indexed"]

    fake.set_team_folder_members(folder_id, {ALICE})  # bob leaves the group: no event
    assert f"file:{kept}" not in await ids(stack, BOB, "thistlecomb roster on call")  # at once
    stack.fake.set_admin_setting(APP_ID, "reconcile_interval_minutes", "0.025")

    async def bob_has_none() -> bool:
        status = (await stack.status(BOB))["sources"]["file"]
        return status["team_folders"] == [] and status["indexed"] == bob_own

    await stack.eventually(bob_has_none, timeout=60)
    assert f"file:{kept}" in await ids(stack, ALICE, "thistlecomb roster on call")

    alice_files = (await stack.status(ALICE))["sources"]["file"]
    in_folder = alice_files["team_folders"][0]["indexed"]
    assert in_folder >= 4
    fake.delete_team_folder(folder_id)

    async def alice_has_none_of_it() -> bool:
        status = (await stack.status(ALICE))["sources"]["file"]
        return status["team_folders"] == [] and status["indexed"] == alice_files["indexed"] - in_folder

    await stack.eventually(alice_has_none_of_it, timeout=60)
    assert f"file:{kept}" not in await ids(stack, ALICE, "thistlecomb roster on call")
