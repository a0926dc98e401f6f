"""The fake Nextcloud's webhooks and AppAPI as the real ones behave: registration and delivery quirks, the
ExApp lifecycle, calls made with nc_py_api, and the proxy's routes, headers and buffering. A throwaway
Starlette app plays the ExApp.
"""

from __future__ import annotations

import ast
import base64
import json
import time
from pathlib import Path

import httpx
import pytest
from fake_nextcloud_support import (  # noqa: F401 - fixtures
    NODE,
    RECORDED_34,
    WIRE,
    StubExApp,
    client,
    hrefs,
    registered,
    stub,
)
from fixtures_fake_nextcloud import fake_nc  # noqa: F401  (fixture)

from fake_nextcloud import ExAppError, FakeNextcloud

# ---- webhooks ---------------------------------------------------------------------------------------------


def _register(nc: FakeNextcloud, event: str, uri: str, as_app: str | None = None) -> httpx.Response:
    headers = nc.appapi_headers(as_app) if as_app else nc.auth_headers("admin")
    return httpx.post(
        f"{nc.url}/ocs/v2.php/apps/webhook_listeners/api/v1/webhooks?format=json",
        json={"httpMethod": "POST", "uri": uri, "event": event},
        headers=headers,
    )


def test_webhook_registration_and_event_quirks(registered: StubExApp) -> None:
    nc = registered.fake
    for name in ("NodeCreatedEvent", "NodeWrittenEvent", "NodeRenamedEvent", "BeforeNodeDeletedEvent",
                 "NodeDeletedEvent"):
        assert _register(nc, NODE + name, f"/webhook/{name}", as_app=registered.app_id).status_code == 200
    _register(nc, "OCP\\Calendar\\Events\\CalendarObjectMovedToTrashEvent", f"{registered.server.url}/public/cal")
    registrations = json.loads((RECORDED_34 / "webhook_registration.json").read_text())
    refused = registrations["refused OCA\\Deck\\Event\\SessionCreatedEvent"]
    rejected = _register(nc, "OCA\\Deck\\Event\\SessionCreatedEvent", "http://127.0.0.1:1/x")
    assert (rejected.status_code, rejected.json()) == (refused["status"], refused["body"])
    listing = httpx.get(
        f"{nc.url}/ocs/v2.php/apps/webhook_listeners/api/v1/webhooks?format=json", headers=nc.auth_headers("admin")
    ).json()["ocs"]["data"]
    accepted = registrations["accepted OCA\\Deck\\Event\\CardUpdatedEvent (as admin)"]["body"]["ocs"]["data"]
    assert listing[0].keys() == accepted.keys()
    assert listing[0]["appId"] == registered.app_id and listing[0]["userId"] is None

    with client(nc) as alice:
        note = alice.post("/index.php/apps/notes/api/v1/notes", json={"title": "Hooked", "content": "a"}).json()
        nc.webhooks.flush()
        assert [len(nc.webhooks.events(NODE + n)) for n in ("NodeCreatedEvent", "NodeWrittenEvent")] == [1, 2]
        alice.put(f"/index.php/apps/notes/api/v1/notes/{note['id']}", json={"title": "Hooked 2", "content": "b"})
        nc.put_file("alice", "dir/a.txt", "a")
        nc.webhooks.flush()
        before = len(nc.webhooks.events(NODE + "NodeRenamedEvent"))
        alice.request(
            "MOVE",
            "/remote.php/dav/files/alice/dir",
            headers={"Destination": f"{nc.url}/remote.php/dav/files/alice/dir2"},
        )
        alice.delete("/remote.php/dav/files/alice/dir2/a.txt")
        alice.delete("/remote.php/dav/calendars/alice/personal/dentist-next-week.ics")
    nc.webhooks.flush()
    renamed = nc.webhooks.events(NODE + "NodeRenamedEvent")
    assert renamed[0].payload["event"]["target"]["path"] == "/alice/files/Notes/Hooked 2.md"
    assert len(renamed) - before == 1 and renamed[-1].payload["event"]["source"] == {"path": "/alice/files/dir"}
    assert nc.webhooks.events(NODE + "BeforeNodeDeletedEvent")[-1].payload["event"]["node"]["id"] > 0
    deleted = nc.webhooks.events(NODE + "NodeDeletedEvent")[-1].payload
    assert deleted["event"] == {"node": {"path": "/alice/files/dir2/a.txt"}, "class": NODE + "NodeDeletedEvent"}
    assert deleted["user"] == {"uid": "alice", "displayName": "Alice Test"}
    trashed = nc.webhooks.events("OCP\\Calendar\\Events\\CalendarObjectMovedToTrashEvent")[0].payload["event"]
    reference = json.loads(
        json.loads((WIRE / "webhooks" / "plain_deliveries_rename_delete_update.jsonl").read_text().splitlines()[5])[
            "body"
        ]
    )["event"]
    assert trashed.keys() == reference.keys() and trashed["objectData"].keys() == reference["objectData"].keys()

    via_appapi = next(r for r in registered.received if r["path"] == "/webhook/NodeDeletedEvent")
    recorded_headers = json.loads((WIRE / "webhooks" / "deliveries_received_by_exapp.json").read_text())[
        "POST /webhook/exapp-NodeWrittenEvent"
    ]["headers"]
    assert set(recorded_headers) == set(via_appapi["headers"]) and "content-type" not in via_appapi["headers"]
    assert base64.b64decode(via_appapi["headers"]["authorization-app-api"]) == b"alice:stub-secret"
    plain = next(r for r in registered.received if r["path"] == "/public/cal")
    assert "authorization-app-api" not in plain["headers"] and "content-type" not in plain["headers"]
    assert b"\\/alice\\/" in via_appapi["body"]  # PHP-encoded


def test_webhook_delivery_controls(registered: StubExApp) -> None:
    nc = registered.fake
    _register(nc, NODE + "NodeWrittenEvent", "/webhook/w", as_app=registered.app_id)
    nc.webhooks.pause()
    nc.put_file("alice", "p.txt", "1")
    with pytest.raises(TimeoutError):
        nc.webhooks.flush(timeout=0.2)
    nc.webhooks.resume()
    nc.webhooks.flush()
    assert [d.status for d in nc.webhooks.events()] == [200]
    nc.webhooks.drop_next(1)
    nc.put_file("alice", "p.txt", "2")
    nc.webhooks.duplicate = True
    nc.put_file("alice", "p.txt", "3")
    nc.webhooks.flush()
    assert len(nc.webhooks.events()) == 3 and len(nc.webhooks.dropped) == 1


def test_deck_card_events_as_deck_1_18_sends_them_and_writes_to_shared_files(stub: StubExApp) -> None:
    nc = stub.fake
    events = [f"OCA\\Deck\\Event\\Card{name}Event" for name in ("Created", "Updated", "Deleted")]
    nc.deck_webhooks_supported = False  # Deck 1.16 (Nextcloud 32): not webhook-compatible
    assert _register(nc, events[1], f"{stub.server.url}/deck").status_code == 400
    nc.deck_webhooks_supported = True  # Deck 1.18.3 on Nextcloud 34.0.1, as recorded
    for event in events:
        assert _register(nc, event, f"{stub.server.url}/deck").status_code == 200
    _register(nc, NODE + "NodeWrittenEvent", f"{stub.server.url}/written")
    board = nc.create_board("alice", "Rec board")
    card_id = nc.create_card("alice", nc.create_stack("alice", board, "To do"), "Rec card", "first")
    nc.update_card("alice", card_id, title="Rec card edited", description="second")
    nc.delete_card("alice", card_id)
    with client(nc, "bob") as bob:
        assert bob.put("/remote.php/dav/files/bob/Shared with Bob.md", content=b"bob was here").status_code == 204
    nc.webhooks.flush()
    recorded = [json.loads(json.loads(line)["body"])
                for line in (RECORDED_34 / "webhook_deliveries_deck.jsonl").read_text().splitlines()]
    recorded = {payload["event"]["class"]: payload for payload in recorded}
    for event in events:
        (delivery,) = nc.webhooks.events(event)
        got, want = delivery.payload, recorded[event]
        assert got.keys() == want.keys() and got["event"].keys() == want["event"].keys()
        assert got["event"]["card"].keys() == want["event"]["card"].keys(), event
        assert type(got["event"]["card"]["owner"]) is type(want["event"]["card"]["owner"]), event  # uid, then object
        assert got["event"]["card"]["labels"] == want["event"]["card"]["labels"], event  # null on create
        assert bool(got["event"]["card"]["deletedAt"]) == bool(want["event"]["card"]["deletedAt"]), event
    assert nc.webhooks.events(events[1])[0].payload["event"]["card"]["title"] == "Rec card edited"
    written = nc.webhooks.events(NODE + "NodeWrittenEvent")[-1].payload
    assert written["event"]["node"]["path"] == "/alice/files/Documents/Shared with Bob.md"
    assert written["user"]["uid"] == "bob" and nc.read_file("alice", "Documents/Shared with Bob.md") == b"bob was here"


# ---- AppAPI: lifecycle and proxy -------------------------------------------------------------------------


def test_exapp_lifecycle(registered: StubExApp) -> None:
    nc = registered.fake
    assert registered.paths() == ["GET /heartbeat", "POST /init", "GET /heartbeat", "PUT /enabled"]
    assert nc.init_progress(registered.app_id) == [30, 100]
    reference = json.loads((WIRE / "appapi" / "requests_received_by_exapp.json").read_text())
    for key, index in (("POST /init", 1), ("PUT /enabled", 3)):
        got = registered.received[index]
        assert set(got["headers"]) == set(reference[key]["headers"]) and got["query"] == reference[key]["query"]
        assert base64.b64decode(got["headers"]["authorization-app-api"]) == b":stub-secret"
    _register(nc, NODE + "NodeWrittenEvent", "/webhook/w", as_app=registered.app_id)
    nc.unregister_exapp(registered.app_id)
    assert registered.paths()[-1] == "PUT /enabled" and registered.received[-1]["query"] == "enabled=0"
    assert not nc.webhooks.hooks and registered.app_id not in nc.state.apps
    registered.enable_error = "missing model"
    with pytest.raises(ExAppError, match="missing model"):
        registered.register()


def test_appapi_calls_with_nc_py_api(registered: StubExApp) -> None:
    from nc_py_api import NextcloudApp
    from nc_py_api.ex_app.ui.settings import SettingsField, SettingsFieldType, SettingsForm

    nc = registered.fake
    app = NextcloudApp(
        nextcloud_url=nc.url, app_id=registered.app_id, app_version=registered.version, app_secret=registered.secret
    )
    form = SettingsForm(
        id="semantic",
        section_id="semantic",
        title="Semantic",
        section_type="admin",
        fields=[SettingsField(id="top_k", title="Results", type=SettingsFieldType.NUMBER, default=5)],
    )
    app.ui.settings.register_form(form)
    assert nc.settings_forms(registered.app_id)["semantic"]["fields"][0]["id"] == "top_k"
    nc.set_admin_setting(registered.app_id, "top_k", 8)
    assert app.appconfig_ex.get_value("top_k") == "8" and app.appconfig_ex.get_value("nope") is None
    app.set_user("alice")
    app.preferences_ex.set_value("lang", "de")
    assert app.preferences_ex.get_value("lang") == "de"
    hook = app.webhooks.register("POST", "/webhook/x", NODE + "NodeCreatedEvent")
    assert hook.app_id == registered.app_id and app.users.get_user().user_id == "alice"
    bad = NextcloudApp(nextcloud_url=nc.url, app_id=registered.app_id, app_version=registered.version, app_secret="no")
    with pytest.raises(Exception, match="401"):
        bad.users.get_user("alice")


def test_proxy_routes_and_headers(registered: StubExApp) -> None:
    nc = registered.fake
    alice = nc.auth("alice")
    ok = httpx.post(
        nc.proxy_url(registered.app_id, "mcp") + "?x=1", json={"a": 1}, auth=alice, headers={"Cookie": "c=1"}
    )
    assert ok.status_code == 200 and ok.headers["mcp-session-id"] == "s1"
    seen = ok.json()["headers"]
    assert seen["host"] == f"nc_app_{registered.app_id}:{registered.server.port}" and "cookie" not in seen
    assert base64.b64decode(seen["authorization-app-api"]) == b"alice:stub-secret" and len(seen["aa-request-id"]) == 20
    assert seen["authorization"].startswith("Basic ") and registered.received[-1]["query"] == "x=1"
    reference = json.loads((WIRE / "appapi" / "requests_received_by_exapp.json").read_text())["POST /echo/post"][
        "headers"
    ]
    assert set(reference) - {"user-agent", "accept"} <= set(seen)
    assert httpx.get(f"{nc.url}/apps/app_api/proxy/{registered.app_id}/mcp", auth=alice).status_code == 200
    before = nc.proxy_count(registered.app_id)
    refused = {
        "no credentials on a user route": ("GET", "mcp", None),
        "admin route as a user": ("GET", "admin", alice),
        "the first matching route decides, though a later one is public": ("GET", "first", alice),
        "no route": ("GET", "nothing", alice),
        "verb not allowed": ("PUT", "mcp", alice),
    }
    for why, (method, path, auth) in refused.items():
        assert httpx.request(method, nc.proxy_url(registered.app_id, path), auth=auth).status_code == 404, why
    assert httpx.get(nc.proxy_url(registered.app_id, "public")).status_code == 200
    assert httpx.get(nc.proxy_url(registered.app_id, "escaped")).status_code == 200
    assert httpx.get(nc.proxy_url(registered.app_id, "admin"), auth=nc.auth("admin")).status_code == 200
    assert httpx.get(nc.proxy_url(registered.app_id, "slash")).status_code == 200  # AppAPI 34: "/" + path
    assert httpx.get(nc.proxy_url(registered.app_id, "first"), auth=nc.auth("admin")).status_code == 200
    assert httpx.get(nc.proxy_url(registered.app_id, "firstly")).status_code == 200  # only the second matches
    assert nc.proxy_count(registered.app_id) == before + 6 and nc.proxy_count(registered.app_id, "mcp") == 2


@pytest.mark.parametrize("mode", ["buffered", "streaming"])
def test_proxy_buffering(registered: StubExApp, mode: str) -> None:
    nc = registered.fake
    nc.set_proxy_mode(registered.app_id, mode)
    started = time.monotonic()
    with httpx.stream("GET", nc.proxy_url(registered.app_id, "slow"), auth=nc.auth("alice"), timeout=10) as response:
        waited = time.monotonic() - started
        if mode == "buffered":
            # The PHP proxy waits for the whole answer, and forwards uvicorn's lower-case
            # transfer-encoding header with the body it already de-chunked (proxy_sse_initialize):
            # the client cannot read a streamed answer at all.
            assert waited >= 0.9 and response.headers["transfer-encoding"] == "chunked"
            with pytest.raises(httpx.HTTPError):
                response.read()
            return
        chunks = response.iter_raw()
        first = next(chunks)
        assert time.monotonic() - started < 0.8 and first == b"first\n"
        assert first + b"".join(chunks) == b"first\nsecond\n"


def test_webdav_search_by_file_ids_sees_what_the_user_sees(fake_nc: FakeNextcloud) -> None:  # noqa: F811
    """The by-id lookup the fake uses for SEARCHes of file ids answers as a tree walk would."""

    def by_ids(http: httpx.Client, user: str, ids: list[int], extra: str = "") -> set[str]:
        tests = "".join(f"<d:eq><d:prop><oc:fileid/></d:prop><d:literal>{i}</d:literal></d:eq>" for i in ids)
        where = f"<d:or>{tests}{extra}</d:or>" if len(ids) > 1 or extra else tests
        body = f"""<d:searchrequest xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:basicsearch>
          <d:select><d:prop><oc:fileid/></d:prop></d:select>
          <d:from><d:scope><d:href>/files/{user}</d:href><d:depth>infinity</d:depth></d:scope></d:from>
          <d:where>{where}</d:where></d:basicsearch></d:searchrequest>"""
        found = http.request("SEARCH", "/remote.php/dav/", content=body, headers={"Content-Type": "text/xml"})
        assert found.status_code == 207
        return set(hrefs(found.content))

    with client(fake_nc) as alice, client(fake_nc, "bob") as bob:
        fake_nc.put_file("alice", "Shared/a.txt", "a")
        fake_nc.put_file("alice", "Private/b.txt", "b")
        a, b = fake_nc.file_id("alice", "Shared/a.txt"), fake_nc.file_id("alice", "Private/b.txt")
        assert by_ids(alice, "alice", [a, b, 999_999]) == {
            "/remote.php/dav/files/alice/Shared/a.txt", "/remote.php/dav/files/alice/Private/b.txt"
        }
        assert by_ids(bob, "bob", [a, b]) == set()
        shared = alice.post(
            "/ocs/v2.php/apps/files_sharing/api/v1/shares?format=json",
            data={"path": "/Shared", "shareType": 0, "shareWith": "bob"},
        ).json()["ocs"]["data"]
        assert by_ids(bob, "bob", [a, b]) == {"/remote.php/dav/files/bob/Shared/a.txt"}
        # Any other test in the clause: the general (walking) search answers the same.
        other = "<d:eq><d:prop><d:displayname/></d:prop><d:literal>none</d:literal></d:eq>"
        assert by_ids(bob, "bob", [a, b], other) == {"/remote.php/dav/files/bob/Shared/a.txt"}
        alice.delete(f"/ocs/v2.php/apps/files_sharing/api/v1/shares/{shared['id']}")
        assert by_ids(bob, "bob", [a]) == set()
        assert alice.delete("/remote.php/dav/files/alice/Private/b.txt").status_code == 204
        assert by_ids(alice, "alice", [a, b]) == {"/remote.php/dav/files/alice/Shared/a.txt"}  # b is in the trash


def test_public_routes_and_browser_sessions_as_the_real_proxy(registered: StubExApp) -> None:
    """Wire README, "Public routes" and "Browser sessions"."""
    nc = registered.fake
    public, user_route = nc.proxy_url(registered.app_id, "public"), nc.proxy_url(registered.app_id, "mcp")

    def user_seen(response: httpx.Response) -> str:
        assert response.status_code == 200, response.status_code
        return base64.b64decode(response.json()["headers"]["authorization-app-api"]).decode().split(":")[0]

    assert user_seen(httpx.get(public)) == ""  # anonymous reaches the app with an empty user
    ours = httpx.get(public, headers={"Authorization": "Bearer issued-by-the-app"})
    assert user_seen(ours) == "" and ours.json()["headers"]["authorization"] == "Bearer issued-by-the-app"
    assert user_seen(httpx.get(public, headers=nc.auth_headers("alice", bearer=True))) == "alice"
    before = nc.proxy_count(registered.app_id)
    assert httpx.get(public, auth=("alice", "wrong")).status_code == 401  # refused by Nextcloud itself
    assert nc.proxy_count(registered.app_id) == before

    with httpx.Client(base_url=nc.url, follow_redirects=False) as browser:
        assert browser.get(user_route).status_code == 404  # anonymous on a user route: 404, no login redirect
        back = f"/index.php/apps/app_api/proxy/{registered.app_id}/public?x=1"
        assert browser.get("/index.php/login", params={"redirect_url": back}).status_code == 200
        token = browser.get("/index.php/csrftoken").json()["token"]
        without_origin = browser.post("/index.php/login", data={"user": "alice", "password": nc.password("alice"),
                                                                "requesttoken": token})
        assert without_origin.status_code == 403
        wrong = browser.post("/index.php/login", data={"user": "alice", "password": "nope", "requesttoken": token,
                                                       "redirect_url": back}, headers={"Origin": nc.url})
        assert wrong.status_code == 303 and wrong.headers["location"].startswith("/index.php/login?")
        done = browser.post("/index.php/login", data={"user": "alice", "password": nc.password("alice"),
                                                      "requesttoken": token, "redirect_url": back},
                            headers={"Origin": nc.url})
        assert done.status_code == 303 and done.headers["location"] == back
        assert user_seen(browser.get(back)) == "alice"  # a logged-in session on a public route
        assert user_seen(browser.get(user_route)) == "alice"  # and on a user route
        posted = browser.post(user_route, json={})  # no CSRF token: Nextcloud does not check proxied POSTs
        assert user_seen(posted) == "alice"


def test_headers_to_exclude_only_as_an_array_as_appapi_34_stores_it() -> None:
    """A string (info.xml's form) is stored as [] by AppAPI 32.0.0 and 34.0.0: nothing is excluded."""
    from fake_nextcloud.appapi import _excluded_headers

    assert _excluded_headers({"headers_to_exclude": ["cookie"]}) == ["cookie"]
    assert _excluded_headers({"headers_to_exclude": '["cookie"]'}) == []


def _fake_nextcloud_imports() -> dict[str, set[str]]:
    """Each fake_nextcloud module and the package modules it imports, TYPE_CHECKING imports included."""
    package = Path(__file__).resolve().parents[2] / "fake_nextcloud"
    modules = {path.stem for path in package.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for name in modules:
        imported: set[str] = set()
        for node in ast.walk(ast.parse((package / f"{name}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:  # from .x import y / from . import x, y
                imported |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fake_nextcloud."):
                imported.add(node.module.split(".")[1])
            elif isinstance(node, ast.ImportFrom) and node.module == "fake_nextcloud":
                imported |= {a.name for a in node.names}
            elif isinstance(node, ast.Import):
                imported |= {a.name.split(".")[1] for a in node.names if a.name.startswith("fake_nextcloud.")}
        graph[name] = (imported & modules) - {name}
    return graph


def test_the_fake_nextcloud_modules_import_each_other_without_a_cycle() -> None:
    """Models (files, groupware, deck, notes, webhooks, exapps) take what they use as arguments and
    never import ``state``; only route modules and the server that drives it do (docs/adr/0012)."""
    graph = _fake_nextcloud_imports()
    assert {"state", "deck", "deck_api", "webhooks", "exapps"} <= set(graph)  # the parse found the package

    def reachable(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    reach = {name: reachable(name) for name in graph}
    cycles = {frozenset(n for n in reach[m] if m in reach[n]) for m in graph if m in reach[m]}
    assert not cycles, [sorted(cycle) for cycle in cycles]
