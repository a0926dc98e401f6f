"""What the last check of our webhook registrations found: the Nextcloud side of the app's health, which the
shell's upkeep loop fills and the sync status reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class WebhookHealth:
    """What the last check of our webhook registrations found (the shell checks; the sync status reports it,
    with ``checked_at`` as ISO time)."""

    checked_at: float | None = None
    registered: int = 0
    missing: list[str] = field(default_factory=list)
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"checked_at": self.checked_at, "registered": self.registered,
                "missing": list(self.missing), "error": self.error}
