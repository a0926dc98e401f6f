"""The consent page in a real browser (headless Chromium): an anonymous visit goes through Nextcloud's
login form and back, the page renders who is asking and where the browser goes next, and clicking
Allow sends the browser to the client with a code that works. Keeps a screenshot in tests/artifacts/."""

from __future__ import annotations

from pathlib import Path

import httpx

from browser import Chromium, png_colours
from oauth_support import REDIRECT_URI, MetadataHost, pkce, query_of
from stack import Stack
from test_oauth import issuer, metadata_host, oauth_stack, tls  # noqa: F401  (module fixtures)

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def test_the_consent_page_in_headless_chromium(oauth_stack: Stack, metadata_host: MetadataHost, tmp_path: Path) -> None:
    client_id = metadata_host.client("browser-client.json", "Browser Test Client")
    verifier, challenge = pkce()
    url = httpx.URL(f"{issuer(oauth_stack)}/oauth/authorize", params={
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI, "state": "from-browser",
        "code_challenge": challenge, "code_challenge_method": "S256", "scope": "semantic:read",
    })
    chrome = Chromium(tmp_path / "profile")
    try:
        chrome.navigate(str(url))  # anonymous: the app sends the browser to Nextcloud's login first
        chrome.wait_until("location.pathname === '/index.php/login' && !!document.getElementById('user')")
        chrome.evaluate(
            f"document.getElementById('user').value = 'alice';"
            f"document.getElementById('password').value = {oauth_stack.app_password('alice')!r};"
            "document.forms.login.submit(); true"
        )
        chrome.wait_until("!!document.getElementById('client-name')")
        assert chrome.evaluate("document.getElementById('client-name').textContent") == "Browser Test Client"
        assert chrome.evaluate("document.getElementById('redirect-host').textContent") == "127.0.0.1:8765"
        assert "semantic:read" in chrome.evaluate("document.getElementById('scopes').innerText")
        assert "semantic:write" not in chrome.evaluate("document.body.innerText")
        png = chrome.screenshot(ARTIFACTS / "oauth_consent.png")
        assert png_colours(png) > 50, "the screenshot looks blank"
        chrome.evaluate("document.getElementById('approve').click(); true")
        sent = chrome.wait_for_event("Network.requestWillBeSent",
                                     request__url=lambda u: bool(u) and u.startswith(REDIRECT_URI))
    finally:
        chrome.close()
    answer = query_of(sent["request"]["url"])
    assert answer["state"] == "from-browser" and answer["iss"] == issuer(oauth_stack)
    token = httpx.post(f"{issuer(oauth_stack)}/oauth/token", data={
        "grant_type": "authorization_code", "code": answer["code"], "code_verifier": verifier,
        "redirect_uri": REDIRECT_URI, "client_id": client_id})
    assert token.status_code == 200 and token.json()["scope"] == "semantic:read"
