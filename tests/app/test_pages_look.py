"""The app's own pages look like the Nextcloud they belong to (issue 38), in a real browser (headless Chromium):
the instance's name, logo and primary colour from its theming capability, light and dark as the browser prefers,
the user's Nextcloud language (English, German) and locale for dates, the client's powers in plain words first,
the 30-day lifetime, a link back to Nextcloud, and a next step on every error. Screenshots in tests/artifacts/
(img/screenshots/, which info.xml lists, holds copies of them and of the real tier's)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from browser import Chromium, png_colours
from oauth_support import REDIRECT_URI, MetadataHost, pkce
from stack import Stack
from test_oauth import issuer, metadata_host, oauth_stack, tls  # noqa: F401  (module fixtures)

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
PRIMARY = "rgb(0, 103, 158)"  # the recorded capability's "color": #00679e
DARK_MAIN = "rgb(23, 23, 23)"  # Nextcloud's dark main background, #171717


def authorize_url(stack: Stack, client_id: str, scope: str = "semantic:read semantic:write") -> str:
    _, challenge = pkce()
    return str(httpx.URL(f"{issuer(stack)}/oauth/authorize", params={
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI, "state": "s",
        "code_challenge": challenge, "code_challenge_method": "S256", "scope": scope}))


def log_in(chrome: Chromium, stack: Stack, user: str, url: str) -> None:
    """An anonymous browser goes through Nextcloud's login form and comes back to ``url``."""
    chrome.navigate(url)
    chrome.wait_until("location.pathname === '/index.php/login' && !!document.getElementById('user')")
    chrome.evaluate(f"document.getElementById('user').value = {user!r};"
                    f"document.getElementById('password').value = {stack.app_password(user)!r};"
                    "document.forms.login.submit(); true")


def dark(chrome: Chromium, on: bool) -> None:
    chrome.call("Emulation.setEmulatedMedia",
                features=[{"name": "prefers-color-scheme", "value": "dark" if on else "light"}])


def style(chrome: Chromium, selector: str, prop: str) -> str:
    return chrome.evaluate(f"getComputedStyle(document.querySelector({selector!r}))[{prop!r}]")


def text(chrome: Chromium) -> str:
    return chrome.evaluate("document.body.innerText")


def shot(chrome: Chromium, name: str) -> None:
    assert png_colours(chrome.screenshot(ARTIFACTS / name)) > 50, f"{name} looks blank"


@pytest.fixture()
def chrome(tmp_path: Path) -> Iterator[Chromium]:
    browser = Chromium(tmp_path / "profile")
    try:
        yield browser
    finally:
        browser.close()


def test_consent_and_clients_pages_in_english_light_and_dark(oauth_stack: Stack, metadata_host: MetadataHost,
                                                             chrome: Chromium) -> None:
    client_id = metadata_host.client("look-en.json", "Look Test Client")
    log_in(chrome, oauth_stack, "alice", authorize_url(oauth_stack, client_id))
    chrome.wait_until("!!document.getElementById('client-name')")
    words = text(chrome)
    # what the client may do comes first, in plain words; the scope ids only after them
    lead = chrome.evaluate("document.getElementById('scopes').innerText")
    assert lead.index("search and read your notes") < lead.index("semantic:read")
    assert "switch the indexing of your content on and off" in lead
    assert "Connect Look Test Client to Nextcloud?" in words
    assert "The connection lasts 30 days, until" in words
    # the instance's look: its name, its logo (loaded from Nextcloud), its primary colour on the Allow button
    assert chrome.evaluate("document.querySelector('header .instance').textContent") == "Nextcloud"
    assert chrome.evaluate("document.querySelector('header img').naturalWidth") > 0
    assert style(chrome, "#approve", "backgroundColor") == PRIMARY
    assert chrome.evaluate("document.getElementById('back').href").rstrip("/") == oauth_stack.nextcloud_url
    assert style(chrome, "main", "backgroundColor") == "rgb(255, 255, 255)"
    shot(chrome, "pages_consent_light.png")
    dark(chrome, True)
    assert style(chrome, "main", "backgroundColor") == DARK_MAIN
    shot(chrome, "pages_consent_dark.png")
    dark(chrome, False)

    chrome.evaluate("document.getElementById('approve').click(); true")
    chrome.wait_for_event("Network.requestWillBeSent", request__url=lambda u: bool(u) and u.startswith(REDIRECT_URI))
    chrome.navigate(f"{issuer(oauth_stack)}/oauth/clients")
    chrome.wait_until("!!document.getElementById('clients')")
    words = text(chrome)
    for heading in ("Connected on", "Last used", "Ends on", "Look Test Client", "search and read, switch indexing"):
        assert heading in words
    assert "T" not in chrome.evaluate("document.querySelector('#clients tr:nth-child(2) td:nth-child(3)').innerText"), \
        "the date is written for people, not as an ISO timestamp"
    assert f"{issuer(oauth_stack)}/mcp" in words
    shot(chrome, "pages_clients_light.png")
    dark(chrome, True)
    shot(chrome, "pages_clients_dark.png")


def test_the_pages_speak_german_to_a_german_user(oauth_stack: Stack, metadata_host: MetadataHost,
                                                 chrome: Chromium) -> None:
    bob = oauth_stack.fake.state.users["bob"]
    bob.language = "de"
    try:
        client_id = metadata_host.client("look-de.json", "Look Test Client")
        log_in(chrome, oauth_stack, "bob", authorize_url(oauth_stack, client_id, "semantic:read"))
        chrome.wait_until("!!document.getElementById('client-name')")
    finally:
        bob.language = "en"
    words = text(chrome)
    assert chrome.evaluate("document.documentElement.lang") == "de"
    assert "Look Test Client mit Nextcloud verbinden?" in words
    assert "durchsuchen und lesen" in words and "Die Verbindung gilt 30 Tage, bis zum" in words
    assert "Erlauben" in words and "Zurück zu Nextcloud" in words
    end = oauth_stack.now() + timedelta(days=30)
    assert f"{end.day}. " in chrome.evaluate("document.getElementById('lifetime').innerText")
    assert ("Januar Februar März April Mai Juni Juli August September Oktober November Dezember".split()[end.month - 1]
            in words)
    shot(chrome, "pages_consent_de.png")


def test_an_error_page_gives_a_next_step(oauth_stack: Stack, chrome: Chromium) -> None:
    chrome.navigate(authorize_url(oauth_stack, "no-such-client"))  # refused before anyone needs to log in
    chrome.wait_until("!!document.getElementById('next-step')")
    words = text(chrome)
    assert "This connection cannot be completed" in words and "unknown client_id" in words
    assert "Remove the server in your MCP client, add it again and connect." in words
    assert chrome.evaluate("!!document.getElementById('back')")
    shot(chrome, "pages_error_light.png")
    dark(chrome, True)
    assert style(chrome, "main", "backgroundColor") == DARK_MAIN
    shot(chrome, "pages_error_dark.png")
