"""The app's browser pages (consent, connected clients, errors) dressed as the Nextcloud they belong to.

* :class:`Theming`: the instance's name, colours, logo and background from the OCS capabilities'
  ``theming`` block, asked once as the app and kept (an hour; a minute after a failure, meanwhile
  Nextcloud's default look). Its URLs name the host Nextcloud was reached by, so only their paths
  are kept, under the public URL the browser uses.
* :class:`Speech`: the user's language and locale from ``/ocs/v2.php/cloud/user`` (kept ten minutes),
  else the browser's ``Accept-Language``; English or German (:mod:`ex_app.page_text`).
* :func:`render`: one page in Nextcloud's guest layout (the login page's background, logo and a
  card), light or dark as the browser prefers (``prefers-color-scheme``), with a link back.
"""

from __future__ import annotations

import html
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from starlette.responses import HTMLResponse

from semantic_mcp.nextcloud.client import NextcloudClient

from .page_text import TEXTS

log = logging.getLogger(__name__)

THEMING_SECONDS = 3600.0
THEMING_RETRY_SECONDS = 60.0
SPEECH_SECONDS = 600.0
_COLOUR = re.compile(r"#[0-9a-fA-F]{3}(?:[0-9a-fA-F]{3})?")


@dataclass(frozen=True)
class Look:
    name: str = "Nextcloud"
    color: str = "#00679e"
    color_text: str = "#ffffff"
    logo: str = ""  # absolute, on the public URL
    background: str = ""  # an image, or "" for the plain colour
    home: str = ""  # Nextcloud's start page


def _colour(value: Any, default: str) -> str:
    """Only a plain hex colour reaches the style sheet (the value comes from Nextcloud, but CSS is no place to trust)."""
    return value if isinstance(value, str) and _COLOUR.fullmatch(value) else default


def _on_public(url: Any, public_url: str) -> str:
    """The theming URL's path and query under the public URL (Nextcloud names the host the app asked)."""
    if not isinstance(url, str) or not url:
        return ""
    parts = urlsplit(url)
    if not parts.path.startswith("/"):
        return ""
    return f"{public_url}{parts.path}" + (f"?{parts.query}" if parts.query else "")


def look_from_capabilities(theming: dict[str, Any], public_url: str) -> Look:
    default = Look(home=public_url)
    name = theming.get("name")
    return Look(
        name=name.strip()[:80] if isinstance(name, str) and name.strip() else default.name,
        color=_colour(theming.get("color"), default.color),
        color_text=_colour(theming.get("color-text"), default.color_text),
        logo=_on_public(theming.get("logo"), public_url),
        background="" if theming.get("background-plain") else _on_public(theming.get("background"), public_url),
        home=public_url,
    )


class Theming:
    def __init__(self, nc: NextcloudClient | None, public_url: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.nc = nc
        self.public_url = public_url.rstrip("/")
        self.clock = clock
        self._look: Look | None = None
        self._until = 0.0

    async def look(self) -> Look:
        if self._look is not None and self.clock() < self._until:
            return self._look
        try:
            if self.nc is None:
                raise RuntimeError("no Nextcloud client")
            data = await self.nc.ocs("", "GET", "/ocs/v2.php/cloud/capabilities")
            self._look = look_from_capabilities(data["capabilities"]["theming"], self.public_url)
            self._until = self.clock() + THEMING_SECONDS
        except Exception as exc:  # noqa: BLE001 - a page must render whatever Nextcloud answered
            log.info("Could not read Nextcloud's theming (the pages use the default look): %s", exc)
            self._look = self._look or Look(home=self.public_url)
            self._until = self.clock() + THEMING_RETRY_SECONDS
        return self._look


@dataclass(frozen=True)
class Words:
    language: str  # a key of TEXTS
    locale: str  # Nextcloud's locale setting ("" when the user chose none)

    def __call__(self, key: str, **values: str) -> str:
        """The text under ``key``; values are escaped here, the texts' own markup is ours."""
        return self.raw(key, **{name: html.escape(value) for name, value in values.items()})

    def raw(self, key: str, **markup: str) -> str:
        """The text under ``key`` with values that are markup already (the caller escaped what they hold)."""
        text = TEXTS[self.language].get(key) or TEXTS["en"][key]
        return text.format(**markup)


def _supported(language: str) -> str | None:
    base = language.strip().lower().replace("-", "_").split("_")[0]
    return base if base in TEXTS else None


def from_accept_language(header: str) -> str:
    """The first language the browser lists that the pages speak (quality values in their order)."""
    ranked = []
    for position, item in enumerate(header.split(",")):
        tag, _, params = item.partition(";")
        quality = 1.0
        if params.strip().startswith("q="):
            try:
                quality = float(params.strip()[2:])
            except ValueError:
                quality = 0.0
        ranked.append((-quality, position, tag))
    for _, _, tag in sorted(ranked):
        if (language := _supported(tag)) is not None:
            return language
    return "en"


class Speech:
    """Which language the pages speak to a user: Nextcloud's setting for them, else their browser's."""

    def __init__(self, nc: NextcloudClient | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.nc = nc
        self.clock = clock
        self._cache: dict[str, tuple[float, tuple[str, str]]] = {}

    async def words(self, user: str, accept_language: str) -> Words:
        browser = from_accept_language(accept_language)
        if not user or self.nc is None:
            return Words(browser, "")
        cached = self._cache.get(user)
        if cached is None or self.clock() - cached[0] > SPEECH_SECONDS:
            try:
                data = await self.nc.ocs(user, "GET", "/ocs/v2.php/cloud/user")
                setting = (str(data.get("language") or ""), str(data.get("locale") or ""))
            except Exception as exc:  # noqa: BLE001 - the browser's language will do
                log.info("Could not read %r's language setting: %s", user, exc)
                return Words(browser, "")
            cached = (self.clock(), setting)
            self._cache[user] = cached
        language, locale = cached[1]
        return Words(_supported(language) or browser, locale)


STYLE = """
:root { --primary: %(color)s; --primary-text: %(color_text)s; --main-bg: #ffffff; --text: #222222;
        --muted: #6b6b6b; --border: #dbdbdb; --button-bg: #f0f0f0; --code-bg: #f0f0f0; }
@media (prefers-color-scheme: dark) {
  :root { --main-bg: #171717; --text: #ebebeb; --muted: #a8a8a8; --border: #3b3b3b; --button-bg: #2a2a2a;
          --code-bg: #2a2a2a; color-scheme: dark; }
}
* { box-sizing: border-box; }
body { margin: 0; min-height: 100vh; display: flex; flex-direction: column; align-items: center; gap: 18px;
       padding: 40px 12px; color: var(--text); background: var(--primary) %(background)s center / cover fixed;
       font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", Ubuntu, Cantarell, sans-serif;
       font-size: 15px; line-height: 1.5; }
header { display: flex; flex-direction: column; align-items: center; gap: 8px; color: var(--primary-text); }
header img { height: 56px; max-width: 180px; }
header .instance { font-size: 1.1em; font-weight: 600; text-shadow: 0 1px 4px rgba(0,0,0,.3); }
main { background: var(--main-bg); border-radius: 16px; padding: 28px 32px; max-width: 640px; width: 100%;
       box-shadow: 0 0 10px rgba(0,0,0,.25); }
main:has(table) { max-width: 860px; }  /* the connected clients' columns */
h1 { font-size: 1.35em; margin: 0 0 14px; }
a { color: var(--primary); } @media (prefers-color-scheme: dark) { a { color: #8fc9ff; } }
.muted { color: var(--muted); font-size: .93em; }
ul { padding-left: 22px; } li { margin: 6px 0; }
code { background: var(--code-bg); padding: 1px 5px; border-radius: 4px; word-break: break-all; font-size: .9em; }
.actions { display: flex; gap: 12px; margin-top: 22px; }
button { font: inherit; padding: 9px 20px; border-radius: 20px; border: 1px solid var(--border);
         background: var(--button-bg); color: var(--text); cursor: pointer; font-weight: 600; }
button.primary { background: var(--primary); color: var(--primary-text); border-color: var(--primary); }
table { border-collapse: collapse; width: 100%; } td, th { text-align: left; padding: 8px 6px;
        border-bottom: 1px solid var(--border); vertical-align: top; }
th { font-size: .85em; color: var(--muted); font-weight: 600; }
.notice { border-left: 4px solid var(--primary); padding: 6px 12px; }
.back { color: var(--primary-text); text-shadow: 0 1px 4px rgba(0,0,0,.35); }
"""


def content_security_policy(look: Look) -> str:
    """Styles inline; images only from the public Nextcloud (logo, background); nothing else."""
    origins = {f"{p.scheme}://{p.netloc}" for p in (urlsplit(u) for u in (look.logo, look.background, look.home))
               if p.scheme in ("http", "https") and p.netloc}
    images = " ".join(sorted(origins)) or "'none'"
    return f"default-src 'none'; style-src 'unsafe-inline'; img-src {images}; frame-ancestors 'none'"


def render(look: Look, words: Words, title: str, body: str, *, status: int = 200, head: str = "",
           headers: dict[str, str] | None = None) -> HTMLResponse:
    """A whole page: ``body`` is markup built with :class:`Words` (escaped values), ``title`` plain text."""
    style = STYLE.replace("%(color)s", look.color).replace("%(color_text)s", look.color_text).replace(
        "%(background)s", f'url("{html.escape(look.background, quote=True)}")' if look.background else "")
    logo = (f'<img src="{html.escape(look.logo, quote=True)}" alt="{html.escape(look.name, quote=True)}">'
            if look.logo else "")
    back = (f'<a class="back" id="back" href="{html.escape(look.home or "/", quote=True)}">← '
            f'{words("back", instance=look.name)}</a>')
    document = f"""<!DOCTYPE html>
<html lang="{words.language}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">{head}
<title>{html.escape(title)} - {html.escape(look.name)}</title><style>{style}</style></head>
<body><header>{logo}<span class="instance">{html.escape(look.name)}</span></header>
<main>{body}</main>{back}</body></html>"""
    return HTMLResponse(document, status_code=status,
                        headers={**(headers or {}), "Content-Security-Policy": content_security_policy(look)})
