"""The ExApp as AppAPI and MCP clients see it: lifecycle, signatures, the proxied MCP endpoint."""

from __future__ import annotations

import base64
import http.client
import time
from pathlib import Path

import httpx
import pytest

from fake_nextcloud.exapps import AA_VERSION
from stack import APP_ID, Stack


def test_registration_reported_real_init_progress_and_registered_what_it_needs(stack: Stack) -> None:
    progress = stack.fake.init_progress(APP_ID)
    assert progress[-1] == 100
    assert len(set(progress)) >= 3 and progress == sorted(progress)  # stepwise, not a single jump to 100
    hooks = [hook for hook in stack.fake.webhooks.hooks.values() if hook.app_id == APP_ID]
    events = {hook.event.rsplit("\\", 1)[-1] for hook in hooks}
    assert {"NodeWrittenEvent", "NodeRenamedEvent", "NodeDeletedEvent", "BeforeNodeDeletedEvent",
            "CalendarObjectCreatedEvent", "CalendarObjectMovedToTrashEvent"} <= events
    assert {"CardCreatedEvent", "CardUpdatedEvent", "CardDeletedEvent"} <= events  # Deck 1.18 (Nextcloud 34)
    assert all(hook.uri.startswith("/") for hook in hooks)  # relative: delivered through AppAPI as the user
    forms = stack.fake.settings_forms(APP_ID)
    assert any(form["section_type"] == "admin" for form in forms.values())


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("user", ["alice", "bob"])
async def test_mcp_through_the_proxy_on_both_protocol_generations(stack: Stack, mode: str, user: str) -> None:
    async with stack.client(user, mode=mode) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"nc_semantic_search", "nc_semantic_search_answer", "nc_get_vector_sync_status"} <= tools
        status = await client.call_tool("nc_get_vector_sync_status", {})
    assert status.structured_content["user"] == user
    assert status.structured_content["sources"]["note"]["indexed"] > 0


async def test_basic_auth_with_an_app_password_works_too(stack: Stack) -> None:
    result = await stack.call("bob", "nc_get_vector_sync_status", bearer=False)
    assert result.structured_content["user"] == "bob"


def test_unauthenticated_calls_get_the_oauth_challenge_and_wrong_passwords_never_reach_the_app(stack: Stack) -> None:
    """The MCP route is public (OAuth discovery starts with the app's 401); Nextcloud still refuses a
    wrong app password itself."""
    anonymous = httpx.post(stack.mcp_url, json={})
    assert anonymous.status_code == 401 and "resource_metadata=" in anonymous.headers["www-authenticate"]
    unknown = httpx.post(stack.mcp_url, json={}, headers={"Authorization": "Bearer not-a-password"})
    assert unknown.status_code == 401 and 'error="invalid_token"' in unknown.headers["www-authenticate"]
    before = stack.fake.proxy_count(APP_ID)
    assert httpx.post(stack.mcp_url, json={}, auth=("alice", "wrong-password")).status_code == 401
    assert stack.fake.proxy_count(APP_ID) == before


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"authorization-app-api": base64.b64encode(b"alice:wrong-secret").decode(), "ex-app-id": APP_ID,
         "ex-app-version": "0.1.0"},
        {"authorization-app-api": "not base64!", "ex-app-id": APP_ID, "ex-app-version": "0.1.0"},
        {"authorization-app-api": base64.b64encode(b"alice").decode(), "ex-app-id": APP_ID},
    ],
    ids=["missing", "wrong-secret", "garbage", "no-secret"],
)
@pytest.mark.parametrize("path", ["/mcp", "/init", "/webhooks/nextcloud"])
def test_forged_or_missing_appapi_headers_are_rejected(stack: Stack, headers: dict, path: str) -> None:
    response = httpx.post(f"{stack.exapp.url}{path}", headers=headers, json={})
    assert response.status_code == 401
    assert stack.exapp.secret not in stack.log()


def test_signature_for_another_app_id_is_rejected(stack: Stack) -> None:
    token = base64.b64encode(f"alice:{stack.exapp.secret}".encode()).decode()
    response = httpx.put(f"{stack.exapp.url}/enabled?enabled=0",
                         headers={"authorization-app-api": token, "ex-app-id": "other_app", "ex-app-version": "1"})
    assert response.status_code == 401


def test_heartbeat_is_open_and_mcp_has_no_trailing_slash_redirect(stack: Stack) -> None:
    assert httpx.get(f"{stack.exapp.url}/heartbeat").json() == {"status": "ok"}
    # Asked on the app's own port (the proxy would not forward "mcp/"): no redirect to another path,
    # whose Location would be wrong outside the proxy path.
    signed = {"authorization-app-api": base64.b64encode(f"alice:{stack.exapp.secret}".encode()).decode(),
              "ex-app-id": APP_ID, "ex-app-version": "0.1.0", "aa-version": AA_VERSION}
    for path in ("/mcp", "/mcp/"):
        response = httpx.post(f"{stack.exapp.url}{path}", headers=signed, json={}, follow_redirects=False)
        assert response.status_code not in (301, 302, 307, 308), (path, response.headers.get("location"))


def test_the_app_runs_on_asyncios_loop_even_where_uvloop_is_installed(stack: Stack) -> None:
    """uvloop 0.23 closed live connections' descriptors under concurrent searches, then aborted the
    process (docs/adr/0565); the image does not ship it, and the test venv, which does, must not use it."""
    pytest.importorskip("uvloop")
    maps = Path(f"/proc/{stack.exapp.process.pid}/maps").read_text()
    assert "uvloop" not in maps


def test_an_idle_connection_a_proxy_keeps_for_reuse_still_serves_after_5_seconds(stack: Stack) -> None:
    """Proxies keep idle upstream connections for about 5 s (httpx's pool, HAProxy's purge delay), as
    uvicorn does by default: a request sent just as the app closed the connection failed in the proxy."""
    host, port = stack.exapp.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("GET", "/heartbeat")
        assert connection.getresponse().read() == b'{"status":"ok"}'
        first = connection.sock
        time.sleep(6)
        connection.request("GET", "/heartbeat")  # on the same socket: http.client reconnects only once it is None
        assert connection.getresponse().read() == b'{"status":"ok"}' and connection.sock is first
    finally:
        connection.close()


def test_no_credentials_in_the_logs(stack: Stack) -> None:
    log = stack.log()
    for user in ("alice", "bob"):
        assert stack.fake.password(user) not in log
    assert stack.exapp.secret not in log


def test_disable_and_enable_remove_and_restore_registrations_and_an_older_deck_is_polled(tmp_path) -> None:
    own = Stack(tmp_path, profile="minimal").start()
    try:
        assert any(h.app_id == APP_ID for h in own.fake.webhooks.hooks.values())
        own.fake.disable_exapp(APP_ID)
        assert not any(h.app_id == APP_ID for h in own.fake.webhooks.hooks.values())
        assert not own.fake.settings_forms(APP_ID)
        own.fake.deck_webhooks_supported = False  # Deck 1.16, as on Nextcloud 32: its card events are refused
        own.fake.enable_exapp(APP_ID)
        events = {h.event.rsplit("\\", 1)[-1] for h in own.fake.webhooks.hooks.values() if h.app_id == APP_ID}
        assert "NodeWrittenEvent" in events and not any(event.startswith("Card") for event in events)
        assert "polling Deck instead" in own.log()
        assert own.fake.settings_forms(APP_ID)
        own.fake.unregister_exapp(APP_ID)
        assert not any(h.app_id == APP_ID for h in own.fake.webhooks.hooks.values())
    finally:
        own.stop()


def test_the_event_stream_get_is_refused_through_the_buffering_proxy(stack: Stack) -> None:
    """Through AppAPI's PHP proxy a GET stream never ends and holds a PHP worker: 405 at once."""
    headers = {**stack.auth_headers("alice"), "Accept": "text/event-stream"}
    assert httpx.get(stack.mcp_url, headers=headers, timeout=10).status_code == 405


async def test_a_source_switched_off_and_on_through_the_admin_page(stack: Stack) -> None:
    """The admin page stores an unticked checkbox as "" (and a ticked one as "1")."""
    async def carol_found() -> bool:
        return "Carol Jones" in await stack.titles("alice", "Carol Jones")

    assert await carol_found()
    stack.set_admin_field("index_contacts", False)
    try:
        assert stack.fake.app_config(APP_ID)["index_contacts"] == ""
        await stack.eventually(lambda: _negated(carol_found()), timeout=20)
    finally:
        stack.set_admin_field("index_contacts", True)
    assert stack.fake.app_config(APP_ID)["index_contacts"] == "1"
    await stack.eventually(carol_found, timeout=60)


async def _negated(check) -> bool:
    return not await check


async def test_contact_hits_are_rechecked_with_a_request_nextcloud_answers(stack: Stack) -> None:
    """A real Nextcloud 32 answers HEAD on a contact with 500; the re-check must not depend on it."""
    before = (await stack.status("alice"))["verification"]
    hits = (await stack.search("alice", "Carol Jones Acme Corp Berlin conference", doc_types=["contact"]))["results"]
    assert hits and hits[0]["title"] == "Carol Jones"
    after = (await stack.status("alice"))["verification"]
    assert after["checked"] > before["checked"]
    assert after["unverified_served"] == before["unverified_served"] and after["withheld"] == before["withheld"]


def test_only_admins_see_and_save_the_admin_form_and_users_see_the_personal_one(stack: Stack) -> None:
    """As Nextcloud 32.0.1 (tests/real repeats it there): the listing follows the section type, and a
    user who is not an admin gets an OCS 403 saving any declarative value."""
    assert [form["section_type"] for form in stack.settings_forms("alice")] == ["personal"]
    assert {form["section_type"] for form in stack.settings_forms("admin")} == {"admin", "personal"}
    refused = stack.save_admin_field("alice", "index_notes", False)
    assert refused.status_code == 403 and refused.json()["ocs"]["meta"]["message"] == ""


async def test_a_deck_card_arrives_changes_and_goes_through_deck_events(stack: Stack) -> None:
    """Deck 1.18 (Nextcloud 34) sends card events; reconciliation is 15 minutes away on this stack."""
    fake, log_before = stack.fake, len(stack.log())
    card_id = fake.create_card("alice", fake.create_stack("alice", fake.create_board("alice", "Wombats"), "To do"),
                               "Wombat burrow", "Dig the glimmerfern tunnel.")

    async def found(query: str, title: str) -> bool:
        return title in await stack.titles("alice", query)

    await stack.eventually(lambda: found("glimmerfern tunnel", "Wombat burrow"), timeout=30)
    fake.update_card("alice", card_id, title="Wombat den", description="Line the den with brindleweed.")
    await stack.eventually(lambda: found("brindleweed den", "Wombat den"), timeout=30)
    fake.delete_card("alice", card_id)
    await stack.eventually(lambda: _negated(found("brindleweed den", "Wombat den")), timeout=30)
    assert "Reconciliation deck_card" not in stack.log()[log_before:]


def test_deployed_through_harp_the_nextcloud_proxy_url_still_counts_as_buffering(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through HaRP (HP_SHARED_KEY set), Nextcloud's proxy URL still relays through PHP, which marks
    what it forwards with X-Origin-IP; only HaRP's own /exapps/ path (no such header) streams.
    Seen on Nextcloud 34 + HaRP: a 2025-11-25 client failed to initialize through the PHP proxy."""
    from starlette.datastructures import Headers

    from ex_app.appapi import behind_buffering_proxy

    monkeypatch.setenv("HP_SHARED_KEY", "harp-key")
    assert behind_buffering_proxy(Headers({"x-origin-ip": "203.0.113.5"}))
    assert not behind_buffering_proxy(Headers({"ex-app-id": "semantic_mcp"}))
