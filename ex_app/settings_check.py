"""Settings tried before they are used (issue 40): an embedding endpoint the admin saves is asked for
one short embedding first; if it does not answer, or its vectors do not fit the index, the app keeps
the previous embedding settings and tells the administrators in one sentence (ADR 0771).

Declarative settings have no validation callback in AppAPI 34: the page stores the value and the app
reads it on its next settings refresh (every few seconds). So the check runs there, and its verdict
goes where AppAPI lets an ExApp speak to an admin: a Nextcloud notification to every administrator
and a warning in Nextcloud's log (and the app's own log).

The page saves each field as the admin leaves it, so an endpoint is often seen half typed (a new URL
with the old model name). The admins are told only when the same settings still fail on the next
refresh; until then the app says it in its own log alone.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from semantic_mcp.core.config import AdminSettings
from semantic_mcp.embedding.backends import make_embedder
from semantic_mcp.nextcloud.client import NextcloudClient
from semantic_mcp.operating.audit import LOG_ENDPOINT, NEXTCLOUD_LEVEL
from semantic_mcp.sources.extract.ocr import installed_languages

from .notices import is_admin, notify

log = logging.getLogger("semantic_mcp.settings")

PROBE_TIMEOUT_SECONDS = 10.0  # one short embedding; a service slower than this to answer one is not usable
RETRY_SECONDS = 60.0  # how often settings the admins were told about are tried again (an endpoint may come up)
EMBEDDING_KEYS = ("embedding_backend", "embedding_url", "embedding_model", "embedding_api_key", "embedding_concurrency")
REMOTE_BACKENDS = ("openai", "ollama")
NOTIFICATION_SUBJECT = "Semantic MCP did not use a saved setting"

Tell = Callable[[str], Awaitable[None]]  # says one sentence to the administrators
IndexShape = Callable[[], Awaitable["tuple[str, int] | None"]]  # the index's (model id, dimension), if open


def embedding_of(settings: AdminSettings) -> tuple[object, ...]:
    return tuple(getattr(settings, key) for key in EMBEDDING_KEYS)


def describe(settings: AdminSettings) -> str:
    """The embedding settings in a few words, for a sentence an admin reads."""
    if settings.embedding_backend in REMOTE_BACKENDS:
        return f"the model {settings.embedding_model or '(no name)'} at {settings.embedding_url or '(no URL)'}"
    return f"the built-in {settings.embedding_backend} model"


def try_endpoint(settings: AdminSettings, index: tuple[str, int] | None) -> str:
    """Embeds one short text with ``settings``' endpoint: "" when it answers with vectors that fit the
    index, otherwise what went wrong, as the middle of a sentence. Blocking (run it in a thread)."""
    url = settings.embedding_url or "(no URL)"
    if not settings.embedding_url or not settings.embedding_model:
        return f"the embedding endpoint needs both a URL and a model name (it has {url!s} and " \
               f"{settings.embedding_model or 'no model name'})"
    try:
        embedder = make_embedder(settings.embedding_backend, **settings.remote_embedder_options(),
                                 timeout=PROBE_TIMEOUT_SECONDS)
        dimension = int(embedder.embed_query("Semantic MCP checks this endpoint").shape[0])
    except Exception as exc:  # noqa: BLE001 - whatever the endpoint does, the admin reads it as one reason
        reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        if reason.startswith("embedding server "):  # "embedding server <url> unreachable: ..." names the URL again
            reason = reason.split(" ", 3)[-1]
        return f"the embedding endpoint {url} did not answer with an embedding ({reason})"
    if index is not None and index[0] == embedder.model_id and index[1] != dimension:
        return (f"the embedding endpoint {url} gives vectors of {dimension} numbers for {settings.embedding_model}, "
                f"but the index holds vectors of {index[1]} for that model")
    return ""


@dataclass
class _Pending:
    """Embedding settings saved but not used, and what became of trying them."""

    values: tuple[object, ...]
    problem: str
    seen: int = 1  # reads of the settings that found them
    told: bool = False
    tried_at: float = 0.0


class SettingsCheck:
    """Decides, at each settings refresh, whether newly saved settings are used (see the module's text)."""

    def __init__(self, index_shape: IndexShape, tell: Tell, *, clock: Callable[[], float] = time.monotonic,
                 retry_seconds: float = RETRY_SECONDS) -> None:
        self.index_shape = index_shape
        self.tell = tell
        self.clock = clock
        self.retry_seconds = retry_seconds
        self.pending: _Pending | None = None
        self.problem = ""  # the sentence the admins were last told, while it still holds ("" when none)

    async def vet(self, current: AdminSettings, saved: AdminSettings) -> AdminSettings:
        """The settings to use: ``saved``, or ``saved`` with ``current``'s embedding settings while the
        saved endpoint fails its try."""
        if saved.ocr_languages != current.ocr_languages or saved.ocr_enabled != current.ocr_enabled:
            await self._check_ocr_languages(saved)
        if embedding_of(saved) == embedding_of(current):
            self.pending, self.problem = None, ""  # back to what runs: nothing to try
            return saved
        if saved.embedding_backend not in REMOTE_BACKENDS:
            self.pending, self.problem = None, ""
            return saved  # a built-in model: in the image, nothing to try
        pending = self.pending if self.pending and self.pending.values == embedding_of(saved) else None
        if pending is not None:
            pending.seen += 1
            if pending.told and self.clock() - pending.tried_at < self.retry_seconds:
                return _keeping(current, saved)
        problem = await asyncio.to_thread(try_endpoint, saved, await self._index())
        if not problem:
            if pending is not None:
                log.info("Embedding settings in use now that %s answers", describe(saved))
            self.pending, self.problem = None, ""
            return saved
        if pending is None:
            pending = self.pending = _Pending(embedding_of(saved), problem)
        pending.problem, pending.tried_at = problem, self.clock()
        sentence = (f"Semantic MCP keeps using {describe(current)} because {problem}: check the embedding "
                    f"settings and save them again.")
        if pending.told:
            log.debug("Saved embedding settings still not used: %s", problem)
        elif pending.seen >= 2:
            pending.told, self.problem = True, sentence
            log.warning("%s", sentence)
            await self.tell(sentence)
        else:
            log.info("Saved embedding settings not used yet: %s", problem)
        return _keeping(current, saved)

    async def _index(self) -> tuple[str, int] | None:
        try:
            return await self.index_shape()
        except Exception as exc:  # noqa: BLE001 - no open index: nothing for the vectors to fit
            log.debug("No index to compare the embedding endpoint with: %s", exc)
            return None

    async def _check_ocr_languages(self, saved: AdminSettings) -> None:
        """OCR languages are free text: tell the admins about those the image cannot read."""
        have = installed_languages()
        missing = [code for code in saved.reading_languages if code not in have]
        if not missing:
            return
        if have:
            sentence = (f"Semantic MCP's image has no OCR language {', '.join(missing)} (it has "
                        f"{', '.join(sorted(have))}), so OCR reads with the others.")
        else:
            sentence = "Semantic MCP's image has no Tesseract, so images and scans are not read."
        log.warning("%s", sentence)
        await self.tell(sentence)


def _keeping(current: AdminSettings, saved: AdminSettings) -> AdminSettings:
    return replace(saved, **{key: getattr(current, key) for key in EMBEDDING_KEYS})


async def tell_admins(nc: NextcloudClient, users: Callable[[], Awaitable[list[str]]], sentence: str) -> None:
    """``sentence`` as a warning in Nextcloud's log and a notification to every administrator. An
    ExApp cannot list a group's members as itself, so each user's own groups are asked as them
    (rare: only a setting the app could not use). Nextcloud may refuse any of it: the app's log has it."""
    try:
        await nc.ocs("", "POST", LOG_ENDPOINT, json={"level": NEXTCLOUD_LEVEL[logging.WARNING], "message": sentence})
        for user in await users():
            if await is_admin(nc, user):
                await notify(nc, user, NOTIFICATION_SUBJECT, sentence)
    except Exception as exc:  # noqa: BLE001 - the sentence is in the app's log already
        log.warning("Could not tell the administrators in Nextcloud (%s)", exc)
