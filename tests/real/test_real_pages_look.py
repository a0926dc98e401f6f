"""The consent and connected-clients pages dressed as the real Nextcloud 34.0.1 it belongs to (issue 38, ADR 0340): the theming
capability's name and primary colour, its logo loaded by the browser from the public URL (not the host the app
asked), light and dark, and bob's Nextcloud language (set with occ) in the words. Screenshots: tests/artifacts/."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from browser import Chromium, png_colours
from oauth_support import REDIRECT_URI, MetadataHost, ScriptedBrowser, metadata_host, pkce  # noqa: F401
from realstack import RealStack
from test_real_oauth import ARTIFACTS, issuer, oauth_real  # noqa: F401  (module fixture)


def _rgb(hex_colour: str) -> str:
    value = hex_colour.lstrip("#")
    value = "".join(c * 2 for c in value) if len(value) == 3 else value
    return "rgb({}, {}, {})".format(*(int(value[i:i + 2], 16) for i in (0, 2, 4)))


def test_the_consent_page_wears_the_real_instances_theming_in_bobs_language(
    oauth_real: RealStack, metadata_host: MetadataHost, tmp_path: Path
) -> None:
    theming = oauth_real.nc.ocs("GET", "/ocs/v2.php/cloud/capabilities")["capabilities"]["theming"]
    oauth_real.nc.occ("user:setting", "bob", "core", "lang", "de")
    try:
        browser = ScriptedBrowser(oauth_real.nextcloud_url)
        asyncio.run(browser.login("bob", oauth_real.nc.login_password("bob")))
        cookies = [(c.name, c.value, c.path or "/") for c in browser.http.cookies.jar]
        asyncio.run(browser.aclose())
        _, challenge = pkce()
        url = str(httpx.URL(f"{issuer(oauth_real)}/oauth/authorize", params={
            "response_type": "code", "client_id": metadata_host.client("real-look.json", "Real Look Client"),
            "redirect_uri": REDIRECT_URI, "state": "s", "code_challenge": challenge,
            "code_challenge_method": "S256", "scope": "semantic:read"}))
        chrome = Chromium(tmp_path / "profile")
        try:
            for name, value, path in cookies:
                chrome.call("Network.setCookie", url=oauth_real.nextcloud_url, name=name, value=value, path=path)
            chrome.navigate(url)
            chrome.wait_until("!!document.getElementById('client-name')")
            assert chrome.evaluate("document.documentElement.lang") == "de"
            words = chrome.evaluate("document.body.innerText")
            assert "Real Look Client mit" in words and "Die Verbindung gilt 30 Tage" in words
            assert chrome.evaluate("document.querySelector('header .instance').textContent") == theming["name"]
            assert chrome.evaluate("getComputedStyle(document.getElementById('approve')).backgroundColor") == \
                _rgb(theming["color"])
            logo = chrome.evaluate("document.querySelector('header img').src")
            assert logo.startswith(oauth_real.nextcloud_url + "/"), logo
            chrome.wait_until("document.querySelector('header img').naturalWidth > 0", timeout=10)
            assert png_colours(chrome.screenshot(ARTIFACTS / "pages_consent_real_de.png")) > 50
            chrome.call("Emulation.setEmulatedMedia", features=[{"name": "prefers-color-scheme", "value": "dark"}])
            assert chrome.evaluate("getComputedStyle(document.querySelector('main')).backgroundColor") == \
                "rgb(23, 23, 23)"
            assert png_colours(chrome.screenshot(ARTIFACTS / "pages_consent_real_dark.png")) > 50
            chrome.evaluate("document.getElementById('approve').click(); true")
            chrome.wait_for_event("Network.requestWillBeSent",
                                  request__url=lambda u: bool(u) and u.startswith(REDIRECT_URI))
            chrome.navigate(f"{issuer(oauth_real)}/oauth/clients")
            chrome.wait_until("!!document.getElementById('clients')")
            words = chrome.evaluate("document.body.innerText")
            assert "Verbunden am" in words and "Real Look Client" in words and "Trennen" in words
            assert png_colours(chrome.screenshot(ARTIFACTS / "pages_clients_real_dark.png")) > 50
        finally:
            chrome.close()
    finally:
        oauth_real.nc.occ("user:setting", "--delete", "bob", "core", "lang")
