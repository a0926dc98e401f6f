"""A cross-site attacker against the connected-clients page: Nextcloud checks no CSRF token on
requests it proxies, so the page's form carries its own. It used to be one fixed value per user,
good forever once seen (in a page, a log, a browser's history); now each page shown gets its own,
used once, for an hour (ex_app/form_tokens.py; second review, issue 36)."""

from __future__ import annotations

import pytest
from oauth_support import consent_form
from test_oauth import Flow, browser, flow, metadata_host, oauth_stack, tls  # noqa: F401 (fixtures)

from ex_app.form_tokens import FormTokens


async def test_each_page_has_its_own_token_and_a_token_works_once(flow: Flow) -> None:
    first, second = ([await flow.tokens(), await flow.tokens()])
    page = await flow.browser.http.get(f"{flow.base}/oauth/clients")
    again = await flow.browser.http.get(f"{flow.base}/oauth/clients")
    token, other = consent_form(page.text)["csrf_token"], consent_form(again.text)["csrf_token"]
    assert token != other
    grants = [g["id"] for g in (await flow.stack.status("alice"))["connected_clients"] if g["client_id"] == flow.client_id]
    done = await flow.browser.http.post(f"{flow.base}/oauth/clients", data={"grant_id": grants[0], "csrf_token": token})
    assert done.status_code == 200 and "Disconnected" in done.text
    replayed = await flow.browser.http.post(f"{flow.base}/oauth/clients", data={"grant_id": grants[1], "csrf_token": token})
    assert replayed.status_code == 400 and "expired" in replayed.text
    assert [flow.mcp_status(first["access_token"]), flow.mcp_status(second["access_token"])].count(200) == 1


@pytest.fixture
def now() -> list[float]:
    return [1_800_000_000.0]


def test_a_token_expires_after_an_hour(now: list[float]) -> None:
    tokens = FormTokens(b"key", "connected-clients", clock=lambda: now[0])
    token = tokens.issue("alice")
    now[0] += 3601
    assert not tokens.redeem("alice", token)


def test_a_token_is_the_users_own_and_cannot_be_made_up(now: list[float]) -> None:
    tokens = FormTokens(b"key", "connected-clients", clock=lambda: now[0])
    token = tokens.issue("alice")
    issued, nonce, mac = token.split(".")
    assert not tokens.redeem("bob", token)
    assert not tokens.redeem("alice", f"{int(issued) + 1}.{nonce}.{mac}")
    assert not tokens.redeem("alice", "")
    assert not FormTokens(b"other key", "connected-clients", clock=lambda: now[0]).redeem("alice", token)
    assert not FormTokens(b"key", "consent", clock=lambda: now[0]).redeem("alice", token)
    assert tokens.redeem("alice", token) and not tokens.redeem("alice", token)
