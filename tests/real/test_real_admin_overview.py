"""An admin answers "how far is indexing, for whom, what failed, why isn't X found" on the real Nextcloud 34.0.1
with occ and the page alone (issue 40, items 1, 2 and 6): ``occ semantic_mcp:status`` and ``occ semantic_mcp:why``
registered through AppAPI and run with the kit's own occ, the overview page rendered in headless Chromium with an
admin's Nextcloud session (and refused to a user who is no admin), and the admins' notification when the first
indexing pass has finished, read from Nextcloud's notifications API. Screenshot: tests/artifacts/."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from browser import Chromium, png_colours
from oauth_support import ScriptedBrowser
from realstack import RealStack

from fake_nextcloud.exapp_process import APP_ID

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
CONTRACT = "/Admin check/Depot lease.md"
BIG, FIRMWARE = "/Admin check/gannets.txt", "/Admin check/firmware.bin"
TEXT = "# Depot lease\n\nThe depot lease with Harbour Estates ends on 30 June 2031; notice is due six months before.\n"


def status(real: RealStack) -> dict[str, Any]:
    return json.loads(real.nc.occ("semantic_mcp:status", "--output=json"))


def why(real: RealStack, *args: str) -> dict[str, Any]:
    return json.loads(real.nc.occ("semantic_mcp:why", *args, "--output=json"))


@pytest.fixture(scope="module", autouse=True)
def content(real: RealStack) -> None:
    alice = real.user("alice")
    alice.mkdir("/Admin check")
    real.set_admin_field("max_file_size_mb", 1)
    time.sleep(3)  # the app reads its settings every second here
    alice.put_file(CONTRACT, TEXT, "text/markdown")
    alice.put_file(BIG, "The gannet colony count, line after line.\n" * 30_000, "text/plain")  # 1.3 MB
    alice.put_file(FIRMWARE, bytes(range(256)) * 40, "application/octet-stream")
    seen: list[Any] = []

    async def decided() -> bool:
        seen[:] = [why(real, "alice", CONTRACT), why(real, "alice", BIG)]
        return seen[0]["state"] == "indexed" and seen[1]["state"] == "too large"
    try:
        asyncio.run(real.eventually(decided, timeout=120, interval=2.0))
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last answers: {seen}") from None


def counts_apart(view: dict[str, Any], own: dict[str, Any], user: str) -> list[tuple[str, str, int, int]]:
    theirs = next(u for u in view["users"] if u["user"] == user)["sources"]
    return [(doc_type, key, counts[key], own["sources"][doc_type][key])
            for doc_type, counts in theirs.items() for key in ("indexed", "failed", "skipped")
            if counts[key] != own["sources"][doc_type][key]]


def test_occ_status_counts_every_user_as_their_own_status_does(real: RealStack) -> None:
    seen: list[Any] = []

    async def alike() -> bool:
        # Both read one state; the fixture's settings change starts a full pass that rewrites the skipped
        # rows while it runs, so the two reads agree once that pass is over, not at every instant.
        view = status(real)
        seen[:] = [view, counts_apart(view, await real.status("alice"), "alice")]
        return not seen[1]
    try:
        asyncio.run(real.eventually(alike, timeout=60, interval=2.0))
    except AssertionError:
        raise AssertionError(f"occ and alice's own status still differ: {seen[1]}") from None
    view, own = seen[0], asyncio.run(real.status("alice"))
    users = {u["user"]: u for u in view["users"]}
    assert {"admin", "alice", "bob"} <= set(users)
    files = users["alice"]["sources"]["file"]
    assert files["skipped"] >= 1 and sum(files["skipped_by_reason"].values()) == files["skipped"]
    assert view["first_pass"]["phase"] == "finished"
    assert view["webhooks"]["registered"] >= 12 and not view["webhooks"]["missing"]
    assert view["nextcloud"]["reachable"] and view["embedding_model"] == own["embedding_model"]
    assert view["index_bytes_on_disk"] > 1_000_000 and view["memory_bytes"]["app"] > 100_000_000


def test_occ_status_for_people(real: RealStack) -> None:
    out = real.nc.occ("semantic_mcp:status")
    assert out.startswith("Semantic MCP: indexing across users\nFirst indexing pass:  finished")
    assert "Webhooks:             12 registered" in out and "Skipped, by reason:" in out
    assert any(line.startswith("alice ") for line in out.splitlines())


def test_occ_why_an_indexed_file_and_where_it_ranks_for_a_question(real: RealStack) -> None:
    answer = why(real, "alice", CONTRACT, "when does the depot lease end")
    assert answer["state"] == "indexed" and answer["listed"] is True, answer
    assert answer["details"]["chunks"] >= 1 and answer["details"]["location"] == CONTRACT
    assert answer["question"]["rank"] == 1 and answer["question"]["passes_cut_off"], answer["question"]
    out = real.nc.occ("semantic_mcp:why", "alice", CONTRACT, "when does the depot lease end")
    assert f"({CONTRACT}): indexed" in out and "passes the cut-off: result 1" in out


def test_occ_why_a_file_the_app_does_not_index_says_why(real: RealStack) -> None:
    big = why(real, "alice", BIG)
    assert big["state"] == "too large" and "the limit is 1048576" in big["sentence"], big
    # A file of a format the app cannot read is left out of the listing, so only its event records it as
    # skipped; without that record, why gives the files source's decision on it as it is now.
    firmware = why(real, "alice", FIRMWARE)
    assert firmware["listed"] is True and firmware["state"] == "unsupported", firmware
    assert "unsupported file type" in firmware["sentence"]
    folder = why(real, "alice", "/Admin check")
    assert folder["state"] == "folder", folder
    gone = why(real, "bob", CONTRACT)  # alice's file: bob has nothing there
    assert gone["state"] == "not listed" and gone["listed"] is False


def test_occ_why_for_an_unknown_user_says_what_to_give(real: RealStack) -> None:
    out = real.nc.occ("semantic_mcp:why", "mallory", "/x.md")
    assert out.startswith("Semantic MCP has nothing for a user 'mallory'")


def test_the_admins_are_notified_that_the_first_pass_finished(real: RealStack) -> None:
    def notices() -> list[dict[str, Any]]:
        return [n for n in real.nc.ocs("GET", "/ocs/v2.php/apps/notifications/api/v2/notifications", "admin")
                if n["app"] == APP_ID and "first indexing pass" in n["subject"]]

    found = asyncio.run(real.eventually(notices, timeout=90, interval=2.0))
    assert found[0]["link"].endswith(f"/proxy/{APP_ID}/admin/status")
    assert not [n for n in real.nc.ocs("GET", "/ocs/v2.php/apps/notifications/api/v2/notifications", "alice")
                if n["app"] == APP_ID]  # admins only


def test_the_admin_settings_link_to_the_page(real: RealStack) -> None:
    forms = real.nc.ocs("GET", "/ocs/v2.php/settings/api/declarative/forms", "admin")
    form = next(f for f in forms if f["id"] == "semantic_mcp_overview")
    assert (form["section_type"], form["section_id"], form["fields"]) == ("admin", "ai", [])
    assert form["doc_url"] == f"{real.nextcloud_url}/index.php/apps/app_api/proxy/{APP_ID}/admin/status"


def test_the_page_is_refused_to_a_user_who_is_no_admin(real: RealStack) -> None:
    url = f"{real.nextcloud_url}/index.php/apps/app_api/proxy/{APP_ID}/admin/status"
    assert httpx.get(url, auth=("alice", real.app_password("alice")), timeout=60).status_code == 404
    assert httpx.get(url, auth=("admin", real.app_password("admin")), timeout=60).status_code == 200


def test_the_page_in_headless_chromium_with_an_admins_session(real: RealStack, tmp_path: Path) -> None:
    browser = ScriptedBrowser(real.nextcloud_url)
    asyncio.run(browser.login("admin", real.nc.login_password("admin")))
    cookies = [(c.name, c.value, c.path or "/") for c in browser.http.cookies.jar]
    asyncio.run(browser.aclose())
    view = status(real)
    chrome = Chromium(tmp_path / "profile")
    try:
        for name, value, path in cookies:
            chrome.call("Network.setCookie", url=real.nextcloud_url, name=name, value=value, path=path)
        page = f"{real.nextcloud_url}/index.php/apps/app_api/proxy/{APP_ID}/admin/status"
        chrome.navigate(page)
        chrome.wait_until("!!document.getElementById('users')")
        words = chrome.evaluate("document.body.innerText")
        assert "Semantic MCP: indexing across users" in words and view["embedding_model"] in words
        cells = chrome.evaluate("Array.from(document.querySelectorAll('#totals td')).map(td => td.innerText)")
        assert cells[1] == str(view["totals"]["indexed"]), cells
        assert png_colours(chrome.screenshot(ARTIFACTS / "admin_overview_real.png")) > 50
        chrome.evaluate("document.querySelector('#why-form [name=user]').value = 'alice';"
                        f"document.querySelector('#why-form [name=item]').value = {CONTRACT!r};"
                        "document.querySelector('#why-form [name=question]').value = 'when does the depot lease end';"
                        "document.getElementById('why-form').submit(); true")
        chrome.wait_until("!!document.getElementById('why')")
        assert chrome.evaluate("document.getElementById('why').dataset.state") == "indexed"
        assert "passes the cut-off" in chrome.evaluate("document.getElementById('why-question').innerText")
        chrome.evaluate("document.getElementById('why').scrollIntoView({block: 'center'}); true")
        assert png_colours(chrome.screenshot(ARTIFACTS / "admin_why_real.png")) > 50
    finally:
        chrome.close()
