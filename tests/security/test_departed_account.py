"""Threat: an account that is disabled, deleted, or deleted and given to someone new keeps reaching
documents through an OAuth grant made before (issue 21). Also: a grant that never ends.

The authorization server and the account directory run against the fake Nextcloud over real HTTP,
signed as an ExApp, with a clock the tests move. The fake answers as Nextcloud 34.0.1 did when the
accounts were changed with ``occ user:disable`` / ``user:delete`` / ``user:add`` (ADR 0500): OCS as
a disabled or deleted account is 401, AppAPI's user list names disabled accounts and omits deleted
ones, and a re-created uid has a new ``firstLoginTimestamp``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from fake_nextcloud import FakeNextcloud
from fake_nextcloud.exapps import ExApp
from oauth_support import REDIRECT_URI, Clock, clock, pkce  # noqa: F401 (fixture)
from semantic_mcp.nextcloud.accounts import CACHE_SECONDS, AccountDirectory, DataHolder
from semantic_mcp.core.config import AdminSettings
from semantic_mcp.core.documents import DocRef
from semantic_mcp.indexing.state import IndexState
from semantic_mcp.nextcloud.client import NextcloudClient
from semantic_mcp.oauth import AccountUnconfirmed, AuthorizationServer, ClientRegistry, OAuthError, OAuthStore
from semantic_mcp.oauth.binding import GRANT_SECONDS
from semantic_mcp.oauth.server import REFRESH_TOKEN_SECONDS

APP = "semantic_mcp"


@pytest.fixture
def fake() -> Iterator[FakeNextcloud]:
    with FakeNextcloud(webhook_delay=0.01) as nc:  # alice, bob and admin, each logged in once
        nc.state.apps[APP] = ExApp(APP, "http://127.0.0.1:9", "departed-secret", "1.0.0", [], "127.0.0.1",
                                   enabled=True)
        yield nc


@pytest.fixture
async def server(fake: FakeNextcloud, clock: Clock, tmp_path: Path) -> AsyncIterator[AuthorizationServer]:
    nc = NextcloudClient(fake.url, lambda user: fake.appapi_headers(APP, user))
    accounts = AccountDirectory(nc, clock=clock)
    store = OAuthStore(tmp_path / "oauth.db")
    server = AuthorizationServer(store, ClientRegistry(store), AdminSettings, "https://cloud.example.com", APP,
                                 accounts=accounts, clock=clock)
    accounts.holders.append(DataHolder(store.users_with_grants, store.delete_user))
    yield server
    await nc.aclose()


async def connect(server: AuthorizationServer, user: str = "alice") -> tuple[str, dict]:
    """A client registers, ``user`` consents, the code is exchanged: (client id, token answer)."""
    body = {"client_name": "Departed test", "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"}
    client_id = server.clients.register(json.dumps(body).encode())["client_id"]
    verifier, challenge = pkce()
    request, _ = await server.validate_authorization({
        "client_id": client_id, "redirect_uri": REDIRECT_URI, "response_type": "code",
        "code_challenge": challenge, "code_challenge_method": "S256"})
    request_id, csrf = server.begin_consent(user, request)
    redirect = await server.decide(user, request_id, csrf, approve=True)
    code = httpx.URL(redirect).params["code"]
    answer = await server.token({"grant_type": "authorization_code", "code": code, "code_verifier": verifier,
                                 "redirect_uri": REDIRECT_URI, "client_id": client_id})
    return client_id, answer


async def refresh(server: AuthorizationServer, client_id: str, answer: dict) -> dict:
    return await server.token({"grant_type": "refresh_token", "refresh_token": answer["refresh_token"],
                               "client_id": client_id})


def past_the_cache(clock: Clock) -> None:
    clock.now += CACHE_SECONDS + 1


async def test_a_disabled_accounts_client_can_neither_use_nor_refresh_its_tokens(
    server: AuthorizationServer, fake: FakeNextcloud, clock: Clock
) -> None:
    client_id, answer = await connect(server)
    assert (await server.verify(answer["access_token"])).user == "alice"
    fake.set_user_enabled("alice", False)
    past_the_cache(clock)
    assert await server.verify(answer["access_token"]) is None
    with pytest.raises(OAuthError) as refused:
        await refresh(server, client_id, answer)
    assert refused.value.error == "invalid_grant"
    fake.set_user_enabled("alice", True)  # enabling her again does not bring the grant back
    past_the_cache(clock)
    assert await server.verify(answer["access_token"]) is None
    assert server.connected_clients("alice") == []


async def test_a_deleted_accounts_token_stops_working_and_its_grants_are_purged(
    server: AuthorizationServer, fake: FakeNextcloud, clock: Clock
) -> None:
    client_id, answer = await connect(server)
    _, bobs = await connect(server, "bob")
    fake.delete_user("alice")
    past_the_cache(clock)
    assert await server.verify(answer["access_token"]) is None
    with pytest.raises(OAuthError):
        await refresh(server, client_id, answer)
    purged = await server.binding.accounts.sweep(["admin", "bob"])
    assert purged == ["alice"] and "alice" not in server.store.users_with_grants()
    assert (await server.verify(bobs["access_token"])).user == "bob"  # nobody else is touched


async def test_a_recreated_uid_never_inherits_the_old_accounts_grant(
    server: AuthorizationServer, fake: FakeNextcloud, clock: Clock
) -> None:
    """Deleted and created again within one cache period and before any reconciliation: only the
    account identity (its first login) tells the two people apart."""
    client_id, old = await connect(server)
    fake.delete_user("alice")
    fake.add_user("alice", "Another Alice", password="new-alice-password")
    fake.put_file("alice", "/Salary.txt", "The new alice's salary is 7,300 euros.")
    past_the_cache(clock)
    assert await server.verify(old["access_token"]) is None
    with pytest.raises(OAuthError):
        await refresh(server, client_id, old)
    _, new = await connect(server)  # the new person's own consent works, and is hers alone
    assert (await server.verify(new["access_token"])).user == "alice"


async def test_a_recreated_uid_that_never_logged_in_does_not_inherit_either(
    server: AuthorizationServer, fake: FakeNextcloud, clock: Clock
) -> None:
    _, old = await connect(server)
    fake.delete_user("alice")
    fake.add_user("alice", logged_in=False)
    past_the_cache(clock)
    assert await server.verify(old["access_token"]) is None


async def test_refreshing_never_extends_a_grant_beyond_thirty_days(server: AuthorizationServer, clock: Clock) -> None:
    client_id, answer = await connect(server)
    started = clock.now
    while clock.now - started < GRANT_SECONDS - REFRESH_TOKEN_SECONDS / 2:
        clock.now += 86400
        answer = await refresh(server, client_id, answer)
    clock.now = started + GRANT_SECONDS + 1
    with pytest.raises(OAuthError) as refused:
        await refresh(server, client_id, answer)
    assert refused.value.error == "invalid_grant"
    assert await server.verify(answer["access_token"]) is None


async def test_nextcloud_unreachable_refuses_for_now_and_revokes_nothing(
    server: AuthorizationServer, fake: FakeNextcloud, clock: Clock
) -> None:
    """A transient answer is no answer: the client is told to retry (503), its grant survives."""
    client_id, answer = await connect(server)
    past_the_cache(clock)
    fake.set_maintenance(True)
    try:
        with pytest.raises(AccountUnconfirmed):
            await server.verify(answer["access_token"])
        with pytest.raises(OAuthError) as refused:
            await refresh(server, client_id, answer)
        assert refused.value.status == 503
        assert await server.binding.accounts.sweep([]) == []  # an empty list purges nothing unconfirmed
    finally:
        fake.set_maintenance(False)
    await asyncio.wait_for(server.binding.accounts.nc.health.wait_usable(), timeout=30)
    past_the_cache(clock)
    assert (await server.verify(answer["access_token"])).user == "alice"


async def test_a_disabled_account_is_not_purged(server: AuthorizationServer, fake: FakeNextcloud) -> None:
    """Only "no such account" purges: a disabled one is still listed by AppAPI, so its data stays."""
    await connect(server)
    fake.set_user_enabled("alice", False)
    assert await server.binding.accounts.sweep(["admin", "bob"]) == []
    assert "alice" in server.store.users_with_grants()


async def test_an_index_kept_for_a_uid_given_anew_is_purged_at_the_next_sweep(
    fake: FakeNextcloud, clock: Clock, tmp_path: Path
) -> None:
    """Deleted and created again between two reconciliations, the uid is listed both times: only
    its identity shows that the index kept under it is another person's."""
    nc = NextcloudClient(fake.url, lambda user: fake.appapi_headers(APP, user))
    state = IndexState(tmp_path / "state.db")
    accounts = AccountDirectory(nc, identities=state, clock=clock)
    accounts.holders.append(DataHolder(state.users_with_data, state.delete_user))
    try:
        for user in ("alice", "bob"):
            state.record_indexed(DocRef(user, "note", "1"), "v1", "Notes/Diary.md", "Diary", 1, 0)
        listed = ["admin", "alice", "bob"]
        assert await accounts.sweep(listed) == []  # first sight: identities recorded
        fake.delete_user("alice")
        fake.add_user("alice", "Another Alice")
        past_the_cache(clock)
        assert await accounts.sweep(listed) == ["alice"]
        assert state.indexed(DocRef("alice", "note", "1")) is None
        assert state.indexed(DocRef("bob", "note", "1")) is not None
        past_the_cache(clock)
        assert await accounts.sweep(listed) == []  # the new alice is now the one on record
    finally:
        state.close()
        await nc.aclose()


def test_the_fake_answers_for_departed_accounts_as_nextcloud_34_did(fake: FakeNextcloud) -> None:
    """The premises above, as recorded with ``occ`` on 34.0.1 (ADR 0500)."""
    def as_app(user: str, method: str, path: str) -> httpx.Response:
        return httpx.request(method, f"{fake.url}{path}", headers={**fake.appapi_headers(APP, user),
                                                                   "Accept": "application/json", "Depth": "0"})

    users = "/ocs/v2.php/apps/app_api/api/v1/users"
    assert as_app("alice", "GET", "/ocs/v2.php/cloud/user").json()["ocs"]["data"]["firstLoginTimestamp"] > 0
    fake.set_user_enabled("alice", False)
    refused = as_app("alice", "GET", "/ocs/v2.php/cloud/user")
    assert refused.status_code == 401 and refused.json()["ocs"]["meta"]["statuscode"] == 997
    assert as_app("alice", "GET", "/index.php/apps/notes/api/v1/notes").status_code == 401
    assert as_app("alice", "PROPFIND", "/remote.php/dav/files/alice/").status_code == 207  # DAV still answers
    assert httpx.get(f"{fake.url}/ocs/v2.php/cloud/user", auth=fake.auth("alice")).status_code == 401
    assert "alice" in as_app("", "GET", users).json()["ocs"]["data"]
    fake.delete_user("alice")
    assert as_app("alice", "GET", "/ocs/v2.php/cloud/user").status_code == 401
    assert as_app("alice", "PROPFIND", "/remote.php/dav/files/alice/").status_code == 401
    assert "alice" not in as_app("", "GET", users).json()["ocs"]["data"]
    fake.add_user("alice", logged_in=False)
    assert as_app("alice", "GET", "/ocs/v2.php/cloud/user").json()["ocs"]["data"]["firstLoginTimestamp"] == 0


async def test_the_account_check_before_a_search_is_bounded(tmp_path: Path) -> None:
    """A saturated Nextcloud answers the account check late: the search goes on after the bound
    (as re-checks do, ADR 0010) and nothing is purged on a late answer."""
    state = IndexState(tmp_path / "state.db")
    accounts = AccountDirectory(NextcloudClient("http://127.0.0.1:9", lambda user: {}), identities=state)
    purged: list[str] = []
    accounts.holders.append(DataHolder(state.users_with_data, purged.append))

    async def slow_answer(user: str) -> None:
        await asyncio.sleep(30)

    accounts._ask = slow_answer  # type: ignore[method-assign]
    try:
        started = asyncio.get_running_loop().time()
        await accounts.confirm_same_person("alice", timeout=0.2)
        assert asyncio.get_running_loop().time() - started < 2 and purged == []
    finally:
        state.close()
        await accounts.nc.aclose()
