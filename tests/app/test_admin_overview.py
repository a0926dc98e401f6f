"""Admins see indexing across users (issue 40, items 1 and 2) on the fake Nextcloud, as on a real one:
``occ semantic_mcp:status`` and ``occ semantic_mcp:why`` registered through AppAPI's occ command API and
run as AppAPI runs them, the overview page through the proxy for admins only, with the same numbers,
and a notification to the admins when the first indexing pass has finished."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from stack import APP_ID, Stack

STATUS, WHY = "semantic_mcp:status", "semantic_mcp:why"


def occ(stack: Stack, name: str, *, json_output: bool = False, **arguments: str) -> tuple[int, str]:
    return stack.fake.occ(APP_ID, name, arguments, {"output": "json"} if json_output else None)


def occ_json(stack: Stack, name: str, **arguments: str) -> Any:
    code, out = occ(stack, name, json_output=True, **arguments)
    assert code == 0, out
    return json.loads(out)


def page(stack: Stack, viewer: str, **query: str) -> httpx.Response:
    return httpx.get(f"{stack.nextcloud_url}/index.php/apps/app_api/proxy/{APP_ID}/admin/status", params=query,
                     auth=(viewer, stack.app_password(viewer)), timeout=60)


def test_both_commands_are_registered_with_appapi_when_the_app_is_enabled(stack: Stack) -> None:
    commands = stack.fake.exapp(APP_ID).occ_commands
    assert commands[STATUS]["execute_handler"] == "occ/status"  # AppAPI stores it without the leading slash
    assert commands[WHY]["execute_handler"] == "occ/why"
    assert [a["name"] for a in commands[WHY]["arguments"]] == ["user", "item", "question"]
    assert [o["name"] for o in commands[STATUS]["options"]] == ["output"]


def test_status_counts_every_user_per_source_as_each_users_own_status_does(stack: Stack) -> None:
    view = occ_json(stack, STATUS)
    users = {u["user"]: u for u in view["users"]}
    assert {"alice", "bob"} <= set(users)
    own = asyncio.run(stack.status("alice"))
    for doc_type, counts in users["alice"]["sources"].items():
        for key in ("indexed", "pending", "failed", "skipped"):
            assert counts[key] == own["sources"][doc_type][key], (doc_type, key)
        assert sum(counts["skipped_by_reason"].values()) == counts["skipped"]
    assert users["alice"]["indexed"] == sum(c["indexed"] for c in users["alice"]["sources"].values()) > 0
    assert view["totals"]["indexed"] == sum(u["indexed"] for u in view["users"])
    assert view["first_pass"]["phase"] == "finished" and view["first_pass"]["progress_percent"] == 100
    assert view["embedding_model"] == own["embedding_model"]
    assert view["webhooks"]["registered"] > 0 and not view["webhooks"]["missing"]
    assert view["last_reconciliation"] is not None
    assert view["index_bytes_on_disk"] > 100_000  # SQLite state, keyword index, Chroma
    assert view["memory_bytes"]["app"] > 50_000_000  # the model and Chroma are loaded


def test_status_for_people_says_the_same_in_lines(stack: Stack) -> None:
    code, out = occ(stack, STATUS)
    view = occ_json(stack, STATUS)
    assert code == 0
    assert "First indexing pass:  finished" in out
    assert f"Embedding model:      {view['embedding_model']}" in out
    alice = next(u for u in view["users"] if u["user"] == "alice")
    line = next(line for line in out.splitlines() if line.startswith("alice"))
    assert line.split()[1:6] == [str(alice[k]) for k in ("indexed", "pending", "waiting_for_ocr", "failed", "skipped")]


def test_why_an_indexed_file_is_found_names_its_chunks_and_where_it_ranks(stack: Stack) -> None:
    answer = occ_json(stack, WHY, user="alice", item="/Documents/Shared with Bob.md", question="who brings the barbecue")
    assert answer["state"] == "indexed", answer
    assert answer["listed"] is True and answer["item"].startswith("file:")
    assert answer["details"]["chunks"] >= 1 and answer["details"]["indexed_at"]
    question = answer["question"]
    assert question["rank"] == 1 and question["passes_cut_off"] and question["result_position"] == 1, question
    by_id = occ_json(stack, WHY, user="alice", item=answer["item"])  # the same item by its id
    assert by_id["state"] == "indexed" and by_id["path"] == "/Documents/Shared with Bob.md"


def test_why_a_question_the_item_does_not_answer_says_what_the_cut_off_did(stack: Stack) -> None:
    answer = occ_json(stack, WHY, user="alice", item="/Documents/Shared with Bob.md",
                      question="quarterly revenue of the semiconductor division")
    question = answer["question"]
    assert question["rank"] is None or not question["passes_cut_off"], question
    assert "cut-off" in question["sentence"] or "not among" in question["sentence"]


def test_why_a_skipped_item_gives_the_reason_recorded_when_it_was_decided(stack: Stack) -> None:
    # A user of this test's own, so that no other test's counts change.
    stack.fake.add_user("olga", "Olga")
    stack.fake.put_file("olga", "Archive/firmware.bin", bytes(range(256)) * 40)
    stack.fake.put_file("olga", "Archive/minutes.md", "# Minutes\n\nThe board approved the new roof for the depot.\n")

    def skipped() -> list[dict[str, Any]]:
        return asyncio.run(stack.status("olga"))["skipped_examples"]

    examples = asyncio.run(stack.eventually(lambda: asyncio.to_thread(skipped), timeout=60))
    answer = occ_json(stack, WHY, user="olga", item="/Archive/firmware.bin")
    assert answer["state"] == "unsupported", answer
    assert answer["details"]["reason"] == examples[0]["reason"] and examples[0]["reason"] in answer["sentence"]
    assert answer["item"] == examples[0]["id"]
    view = occ_json(stack, STATUS)
    olga = next(u for u in view["users"] if u["user"] == "olga")
    assert olga["sources"]["file"]["skipped_by_reason"] == {examples[0]["reason"].split(":")[0]: 1}


def test_why_a_path_nobody_has_and_a_user_nobody_knows_get_one_sentence_each(stack: Stack) -> None:
    answer = occ_json(stack, WHY, user="alice", item="/Nowhere/contract.pdf")
    assert answer["state"] == "not listed" and answer["listed"] is False
    code, out = occ(stack, WHY, user="mallory", item="/Documents/x.md")
    assert code == 0 and out.startswith("Semantic MCP has nothing for a user 'mallory'"), out
    assert occ_json(stack, WHY, user="mallory", item="/Documents/x.md")["error"].startswith("Semantic MCP has nothing")
    code, out = occ(stack, WHY, user="alice", item="deck_card:not-a-number")
    assert "is not a valid deck_card id" in out


def test_the_page_shows_admins_the_same_numbers_and_answers_why(stack: Stack) -> None:
    view = occ_json(stack, STATUS)
    response = page(stack, "admin")
    assert response.status_code == 200, response.text[:300]
    text = response.text
    assert 'id="users"' in text and 'data-user="alice"' in text
    totals = view["totals"]
    assert f"<td><strong>{totals['indexed']}</strong></td>" in text
    assert view["embedding_model"] in text
    why = page(stack, "admin", user="alice", item="/Documents/Shared with Bob.md", question="who brings the barbecue")
    assert 'id="why"' in why.text and 'data-state="indexed"' in why.text and 'id="why-question"' in why.text


def test_the_page_is_for_admins_only(stack: Stack) -> None:
    assert page(stack, "alice").status_code == 404  # Nextcloud's proxy refuses the ADMIN route to others
    anonymous = httpx.get(f"{stack.nextcloud_url}/index.php/apps/app_api/proxy/{APP_ID}/admin/status", timeout=30)
    assert anonymous.status_code == 404


def test_the_admin_settings_link_to_the_page(stack: Stack) -> None:
    form = next(f for f in stack.settings_forms("admin") if f["id"] == "semantic_mcp_overview")
    assert (form["section_type"], form["section_id"]) == ("admin", "ai")
    assert form["doc_url"].endswith(f"/proxy/{APP_ID}/admin/status")
    assert "semantic_mcp_overview" not in {f["id"] for f in stack.settings_forms("alice")}


def test_admins_are_told_when_the_first_pass_has_finished(stack: Stack) -> None:
    def told() -> list[tuple[str, dict]]:
        return [(user, params) for user, params in stack.fake.notifications(APP_ID)
                if "finished its first indexing pass" in params["subject_params"]["rich_subject"]]

    notices = asyncio.run(stack.eventually(told, timeout=90, interval=1.0))
    assert [user for user, _ in notices] == ["admin"]  # admins only, once
    assert notices[0][1]["subject_params"]["link"].endswith("/admin/status")


def test_the_app_itself_refuses_the_page_to_a_user_who_is_no_admin(stack: Stack) -> None:
    """Should a route ever let more through, the app checks the admin group itself (as the user, Nextcloud's answer)."""
    from fake_nextcloud.exapps import signed_headers

    app = stack.fake.exapp(APP_ID)
    refused = httpx.get(f"{app.url}/admin/status", headers=signed_headers(app, "alice"), timeout=30)
    assert refused.status_code == 403 and "Admins only" in refused.text
    allowed = httpx.get(f"{app.url}/admin/status", headers=signed_headers(app, "admin"), timeout=30)
    assert allowed.status_code == 200


def test_why_a_deck_card_asks_deck_whether_the_user_can_open_it(stack: Stack) -> None:
    (card,), = stack.db_rows("SELECT source_id FROM documents WHERE user = 'alice' AND doc_type = 'deck_card' LIMIT 1")
    answer = occ_json(stack, WHY, user="alice", item=f"deck_card:{card}")
    assert answer["state"] == "indexed" and answer["listed"] is True, answer
    assert answer["details"]["location"]  # its board and stack


def test_why_a_folder_says_its_files_are_indexed_one_by_one(stack: Stack) -> None:
    answer = occ_json(stack, WHY, user="alice", item="/Documents")
    assert answer["state"] == "folder" and answer["listed"] is True, answer


def test_registering_a_command_again_updates_it_as_appapi_does(stack: Stack) -> None:
    """``occ_command`` GET answers AppAPI's row (``ExAppOccCommand::jsonSerialize``); a second POST of the same
    name replaces it in place (insertOrUpdate), so enabling the app again leaves one command, not two."""
    url = f"{stack.nextcloud_url}/ocs/v1.php/apps/app_api/api/v1/occ_command"
    headers = {**stack.fake.appapi_headers(APP_ID), "Accept": "application/json"}
    before = httpx.get(url, params={"name": STATUS, "format": "json"}, headers=headers).json()["ocs"]["data"]
    assert set(before) == {"id", "appid", "name", "description", "hidden", "arguments", "options", "usages",
                           "execute_handler"}
    again = httpx.post(url, params={"format": "json"}, headers=headers, json={**{k: before[k] for k in (
        "name", "description", "hidden", "arguments", "options", "usages")}, "execute_handler": "/occ/status"})
    assert again.status_code == 200
    after = httpx.get(url, params={"name": STATUS, "format": "json"}, headers=headers).json()["ocs"]["data"]
    assert after == before
    missing = httpx.get(url, params={"name": "semantic_mcp:nothing", "format": "json"}, headers=headers)
    assert missing.json()["ocs"]["meta"]["statuscode"] == 404


def test_a_saved_setting_the_app_could_not_use_is_on_the_status_and_the_page(stack: Stack) -> None:
    from ex_app.admin_page import overview_html
    from semantic_mcp.operating.plain_text import status_text

    view = occ_json(stack, STATUS)
    assert view["settings_problem"] is None  # the app uses every saved setting
    sentence = "Semantic MCP keeps using the built-in e5 model because the embedding endpoint did not answer."
    assert f"Settings:             {sentence}" in status_text({**view, "settings_problem": sentence})
    assert sentence in overview_html({**view, "settings_problem": sentence}, {}, "")
