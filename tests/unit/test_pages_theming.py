"""The pages' look and language without a browser (issue 38): theming from the OCS capability, asked once and
kept; values that could break out of the style sheet refused; URLs moved to the public host; the user's
Nextcloud language before the browser's; dates in the user's locale; both languages hold every text."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from ex_app.page_text import DE, EN, format_date
from ex_app.pages import Look, Speech, Theming, from_accept_language, look_from_capabilities
from semantic_mcp.oauth.binding import GRANT_SECONDS

RECORDED = Path(__file__).resolve().parents[2] / "fake_nextcloud" / "data" / "capabilities.json"


class FakeOcs:
    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str]] = []

    async def ocs(self, user: str, method: str, path: str, **_: Any) -> Any:
        self.calls.append((user, path))
        answer = self.answers[path]
        if isinstance(answer, Exception):
            raise answer
        return answer


def recorded_theming() -> dict[str, Any]:
    return json.loads(RECORDED.read_text().replace("{base_url}", "http://nextcloud:8080"))["capabilities"]["theming"]


def test_the_look_comes_from_the_capability_on_the_public_host() -> None:
    look = look_from_capabilities(recorded_theming(), "https://cloud.example.com")
    assert look == Look(name="Nextcloud", color="#00679e", color_text="#ffffff",
                        logo="https://cloud.example.com/core/img/logo/logo.svg?v=0",
                        background="https://cloud.example.com/apps/theming/img/background/jo-myoung-hee-fluid.webp",
                        home="https://cloud.example.com")


def test_values_that_are_not_plain_colours_never_reach_the_style_sheet() -> None:
    theming = {**recorded_theming(), "color": "red;}body{display:none", "color-text": "#fff", "name": "  ",
               "background-plain": True}
    look = look_from_capabilities(theming, "https://cloud.example.com")
    assert (look.color, look.color_text, look.name, look.background) == ("#00679e", "#fff", "Nextcloud", "")


def test_theming_is_asked_once_and_a_failure_is_asked_again_later() -> None:
    now = [0.0]
    nc = FakeOcs({"/ocs/v2.php/cloud/capabilities": RuntimeError("down")})
    theming = Theming(nc, "https://cloud.example.com", clock=lambda: now[0])  # type: ignore[arg-type]
    assert asyncio.run(theming.look()).name == "Nextcloud"  # the default look while Nextcloud does not answer
    nc.answers["/ocs/v2.php/cloud/capabilities"] = {"capabilities": {"theming": {**recorded_theming(), "name": "Acme"}}}
    assert asyncio.run(theming.look()).name == "Nextcloud" and len(nc.calls) == 1
    now[0] = 61.0
    assert asyncio.run(theming.look()).name == "Acme"
    now[0] = 1000.0
    assert asyncio.run(theming.look()).name == "Acme" and len(nc.calls) == 2


def test_the_users_nextcloud_language_comes_before_the_browsers() -> None:
    nc = FakeOcs({"/ocs/v2.php/cloud/user": {"id": "bob", "language": "de_DE", "locale": "de_AT"}})
    speech = Speech(nc)  # type: ignore[arg-type]
    words = asyncio.run(speech.words("bob", "en-US,en;q=0.9"))
    assert (words.language, words.locale) == ("de", "de_AT")
    assert asyncio.run(speech.words("", "fr-FR,de;q=0.8,en;q=0.5")).language == "de"  # anonymous: the browser's
    nc.answers["/ocs/v2.php/cloud/user"] = {"id": "eve", "language": "fr", "locale": ""}
    assert asyncio.run(Speech(nc).words("eve", "de")).language == "de"  # type: ignore[arg-type]
    assert from_accept_language("de;q=0.2, en;q=0.9") == "en" and from_accept_language("") == "en"


def test_dates_in_the_users_locale() -> None:
    day = 1795824000.0  # 2026-11-28 00:00 UTC
    assert format_date(day, "en", "") == "November 28, 2026"
    assert format_date(day, "en", "en_GB") == "28 November 2026"
    assert format_date(day, "de", "de_DE") == "28. November 2026"


def test_the_pages_state_the_lifetime_grants_have() -> None:
    assert GRANT_SECONDS == 30 * 86400  # the texts say "30 days" / "30 Tage"
    assert "30 days" in EN["lifetime"] and "30 Tage" in DE["lifetime"]


def test_both_languages_hold_every_text_with_the_same_placeholders() -> None:
    assert EN.keys() == DE.keys()
    for key in EN:
        assert sorted(part.split("}")[0] for part in EN[key].split("{")[1:]) == \
            sorted(part.split("}")[0] for part in DE[key].split("{")[1:]), key
