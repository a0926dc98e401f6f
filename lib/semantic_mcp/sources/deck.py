"""Deck cards: polled through Deck's REST API (Deck publishes no webhook-compatible events).

Listing walks boards, then each board's stacks, which embed their cards: one request per board.
There is no cheap "changed since" (``If-Modified-Since`` on ``/boards`` answers 500 on Nextcloud
32), so every listing is complete and unchanged cards are recognised by their ETag.

Archived cards are not indexed: Deck leaves them out of ``/stacks`` as its UI hides them, so they
are absent from listings and fetch reports them gone. Cards on archived or deleted boards likewise.

The source id is the card id. Deck's card URL also names the board and stack, so the source
remembers where it last saw each card (``_places``) to go straight to the right board; when it
does not know (after a restart, or the card moved), fetch walks the boards.
"""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..core.documents import IndexedAs, Skipped, SourceDocument, valid_source_id
from ..nextcloud.client import NextcloudClient, NotFound, Transient
from .base import Listing, Source, SourceOptions, checked_id, compose_gist, compose_text, owner_extra
from .examples import EXAMPLE_CARD_REASON, is_deck_example_card

DECK_API = "/index.php/apps/deck/api/v1.0"
_HEADERS = {"OCS-APIRequest": "true", "Accept": "application/json"}  # never If-Modified-Since: see module doc


@dataclass(frozen=True)
class _Placed:
    """A card with the board and stack it sits on: the text and the link need all three."""

    board: dict[str, Any]
    stack: dict[str, Any]
    card: dict[str, Any]

    @property
    def version(self) -> str:
        """The card's ETag plus a digest of what the text shows: the board and stack titles (renaming
        a stack does not change its cards' ETags) and the card's fields (Deck's ETag is the MD5 of
        ``lastModified`` in seconds, so two edits within one second would share it)."""
        card = self.card
        shown = [
            self.board.get("title"), self.stack.get("title"), card.get("title"), card.get("description"),
            card.get("duedate"), card.get("done"), [label.get("title") for label in card.get("labels") or []],
            [_user_name(assignment) for assignment in card.get("assignedUsers") or []],
        ]
        digest = zlib.crc32(json.dumps(shown, default=str).encode())
        return f"{card.get('ETag') or card.get('lastModified') or ''}-{digest:08x}"

    def carried(self) -> dict[str, Any]:
        """What a task carries of it (ADR 0530): the card, and of its board and stack what the text,
        the link and the owner need."""
        board, stack = self.board, self.stack
        return {"board": {"id": board.get("id"), "title": board.get("title"), "owner": board.get("owner")},
                "stack": {"id": stack.get("id"), "title": stack.get("title")}, "card": self.card}

    @classmethod
    def from_carried(cls, card_id: int, listed: Mapping[str, Any] | None) -> _Placed | None:
        """Back from :meth:`carried`; None without it, or when it is not that card."""
        parts = [listed.get(key) for key in ("board", "stack", "card")] if listed else []
        if not parts or not all(isinstance(part, dict) for part in parts) or parts[2].get("id") != card_id:
            return None
        return cls(*parts)


class DeckSource(Source):
    doc_type = "deck_card"

    def __init__(self, options: SourceOptions | None = None) -> None:
        super().__init__(options)
        self._places: dict[tuple[str, int], tuple[int, int]] = {}  # (user, card id) -> (board id, stack id)

    async def list_changes(self, nc: NextcloudClient, user: str, cursor: str | None, *, full: bool) -> Listing:
        listing = Listing(complete=True)
        for board in await self._boards(nc, user):
            for placed in await self._cards_of(nc, user, board):
                listing.items[str(placed.card["id"])] = placed.version
                listing.known[str(placed.card["id"])] = placed.carried()
        return listing

    async def fetch(
        self, nc: NextcloudClient, user: str, source_id: str, *, listed: Mapping[str, Any] | None = None,
        ocr_lane: str | None = None,  # no text in images here
        indexed: IndexedAs | None = None,  # its content comes with its metadata: nothing to save
    ) -> SourceDocument | Skipped:
        """The card as the listing read it (``listed``: no request), else found on the user's boards.
        A card changed since is indexed as listed, under the version listed: the next listing sees
        its new version and queues it again; one gone since is removed by that listing."""
        card_id = int(checked_id("deck_card", source_id))
        placed = _Placed.from_carried(card_id, listed) or await self._find(nc, user, card_id)
        if not self.options.index_examples and is_deck_example_card(placed.card.get("description") or ""):
            return Skipped(self.doc_type, source_id, EXAMPLE_CARD_REASON, version=placed.version)
        return document_from_card(source_id, placed)

    async def can_read(self, nc: NextcloudClient, user: str, source_id: str) -> bool:
        """One card request when the card's place is known, else a walk like fetch.

        Deck checks access on the card itself (a wrong board id in the path still answers 200
        for one's own card; another user's card answers 403), so a stale place is harmless.
        """
        place = self._places.get((user, int(checked_id("deck_card", source_id))))
        if place is None:
            return await super().can_read(nc, user, source_id)
        board_id, stack_id = place
        path = f"{DECK_API}/boards/{board_id}/stacks/{stack_id}/cards/{source_id}"
        try:
            card = (await nc.request(user, "GET", path, headers=_HEADERS)).json()
        except NotFound:
            return False
        return not card.get("deletedAt")  # a card in Deck's undo window is deleted for the user

    async def readable(
        self, nc: NextcloudClient, user: str, source_ids: Sequence[str], *, slots: asyncio.Semaphore, timeout: float
    ) -> dict[str, bool | None]:
        """One request per board the hits are on: its stacks embed its live cards.

        A card not on the board it was last seen on (moved, or its place unknown after a restart)
        is looked for on the user's other boards, once for all such cards.
        """
        ids = list(dict.fromkeys(source_ids))
        verdicts: dict[str, bool | None] = {i: False for i in ids if not valid_source_id("deck_card", i)}
        wanted = {int(i) for i in ids if i not in verdicts}

        async def live_cards(board: dict[str, Any]) -> set[int]:
            async with slots:
                return {placed.card["id"] for placed in await self._cards_of(nc, user, board)}

        async def check() -> set[int]:
            by_board: dict[int, set[int]] = {}
            for card_id in wanted:
                if (place := self._places.get((user, card_id))) is not None:
                    by_board.setdefault(place[0], set()).add(card_id)
            found: set[int] = set()
            for cards in await asyncio.gather(*(live_cards({"id": board}) for board in by_board)):
                found |= cards & wanted
            if missing := wanted - found:
                async with slots:
                    boards = [b for b in await self._boards(nc, user) if b["id"] not in by_board]
                for cards in await asyncio.gather(*(live_cards(board) for board in boards)):
                    found |= cards & missing
            return found

        try:
            found = await asyncio.wait_for(check(), timeout)
        except (Transient, TimeoutError):
            return {**verdicts, **dict.fromkeys(map(str, wanted))}
        return {**verdicts, **{str(card_id): card_id in found for card_id in wanted}}

    async def _find(self, nc: NextcloudClient, user: str, card_id: int) -> _Placed:
        """Walk the boards for a card, the board it was last seen on first."""
        boards = await self._boards(nc, user)
        last_board = self._places.get((user, card_id), (None, None))[0]
        for board in sorted(boards, key=lambda board: board["id"] != last_board):
            for placed in await self._cards_of(nc, user, board):
                if placed.card["id"] == card_id:
                    return placed
        raise NotFound(f"deck card {card_id} not found for {user!r}", 404)

    async def _boards(self, nc: NextcloudClient, user: str) -> list[dict[str, Any]]:
        response = await nc.request(user, "GET", f"{DECK_API}/boards", headers=_HEADERS, params={"details": "true"})
        return [board for board in response.json() if not board.get("archived") and not board.get("deletedAt")]

    async def _cards_of(self, nc: NextcloudClient, user: str, board: dict[str, Any]) -> list[_Placed]:
        """The live cards of one board; a board that became unreadable meanwhile has none."""
        try:
            response = await nc.request(user, "GET", f"{DECK_API}/boards/{board['id']}/stacks", headers=_HEADERS)
        except NotFound:
            return []
        placed = [
            _Placed(board, stack, card)
            for stack in response.json()
            for card in stack.get("cards") or []
            if not card.get("archived") and not card.get("deletedAt")
        ]
        for item in placed:
            self._places[(user, item.card["id"])] = (board["id"], item.stack["id"])
        return placed



def document_from_card(source_id: str, placed: _Placed) -> SourceDocument:
    """Turn a card, with the board and stack it sits on, into a document."""
    board, stack, card = placed.board, placed.stack, placed.card
    due = _parse_time(card.get("duedate"))
    labels = ", ".join(label["title"] for label in card.get("labels") or [] if label.get("title"))
    assigned = ", ".join(_user_name(assignment) for assignment in card.get("assignedUsers") or [])
    location = f"{board['title']} / {stack['title']}"
    heading, description = f"Deck card: {card['title']}", card.get("description") or ""
    text = compose_text(
        heading,
        [
            ("Board", location),
            ("Due", due.strftime("%Y-%m-%d %H:%M %Z").strip() if due else None),
            ("Labels", labels),
            ("Assigned to", assigned),
            ("Done", "yes" if card.get("done") else None),
        ],
        description,
    )
    return SourceDocument(
        doc_type="deck_card",
        source_id=source_id,
        title=card["title"],
        text=text,
        gist=compose_gist(heading, labels and f"Labels: {labels}", description),
        modified=int(card.get("lastModified") or 0),
        version=placed.version,
        link=f"/apps/deck/#/board/{board['id']}/card/{card['id']}",
        location=location,
        event_start=int(due.timestamp()) if due else None,
        extra={"board_id": str(board["id"]), "stack_id": str(stack["id"]),
               **({"done": "1"} if card.get("done") else {}),  # an overdue question leaves done cards out
               **owner_extra((board.get("owner") or {}).get("uid"))},
        tags=tuple(label["title"] for label in card.get("labels") or [] if label.get("title")),
    )


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _user_name(assignment: dict[str, Any]) -> str:
    participant = assignment.get("participant") or {}
    return participant.get("displayname") or participant.get("uid") or ""
