"""Deck: boards, stacks, cards, labels and sharing through ACLs, serialized as Deck's REST API
answers them (the routes are in :mod:`fake_nextcloud.deck_api`).

Deck 1.18 (Nextcloud 34) publishes card events webhook_listeners accepts; older Deck (1.16 on 32)
has none, so apps must poll: ``State.deck_webhooks_supported`` switches between the two. Deck also
exposes each board as a read-only CalDAV calendar of its cards' due dates; :meth:`Deck.calendar`.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .clock import Clock
from .groupware import Collection, DavObject, Emit, text_value
from .responses import JsonError

DEFAULT_LABELS = (("Finished", "31CC7C"), ("To review", "317CCC"), ("Action needed", "FF7A66"), ("Later", "F1DB50"))
DENIED = JsonError(403, {"status": 403, "message": "Permission denied"})
DECK_EVENT = "OCA\\Deck\\Event\\"
CALENDAR_ID_OFFSET = 100_000


def etag_of(last_modified: int) -> str:
    return hashlib.md5(str(last_modified).encode()).hexdigest()


def deck_date(value: str | None) -> str | None:
    """Deck answers dates as ``2026-12-31T12:00:00+00:00``."""
    if not value:
        return None
    parsed = datetime.fromisoformat(str(value))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).isoformat()


@dataclass
class Label:
    id: int
    title: str
    color: str
    board_id: int


@dataclass
class Acl:
    id: int
    board_id: int
    participant: str
    edit: bool = False
    share: bool = False
    manage: bool = False


@dataclass
class Board:
    id: int
    title: str
    owner: str
    color: str
    last_modified: int
    archived: bool = False
    deleted_at: int = 0
    labels: list[Label] = field(default_factory=list)
    acl: list[Acl] = field(default_factory=list)


@dataclass
class Stack:
    id: int
    title: str
    board_id: int
    order: int
    last_modified: int
    deleted_at: int = 0


@dataclass
class Card:
    id: int
    title: str
    stack_id: int
    owner: str
    created_at: int
    last_modified: int
    description: str = ""
    type: str = "plain"
    order: int = 999
    duedate: str | None = None
    archived: bool = False
    done: str | None = None
    deleted_at: int = 0
    labels: list[int] = field(default_factory=list)


class Deck:
    """All boards. Callers hold the state lock.

    ``webhooks_supported`` is asked at each card change, so a test can switch it at runtime."""

    def __init__(
        self, emit: Emit, display_name: Callable[[str], str], webhooks_supported: Callable[[], bool], clock: Clock
    ) -> None:
        self._emit = emit
        self.clock = clock
        self._display_name = display_name
        self._webhooks_supported = webhooks_supported
        self._ids = {kind: itertools.count(1) for kind in ("board", "stack", "card", "label", "acl")}
        self.boards: dict[int, Board] = {}
        self.stacks: dict[int, Stack] = {}
        self.cards: dict[int, Card] = {}

    # ---- model ---------------------------------------------------------------------------


    def drop_user(self, uid: str) -> None:
        """A deleted account's boards (and their stacks and cards) go; shares with it end."""
        gone = {board_id for board_id, board in self.boards.items() if board.owner == uid}
        for board_id in gone:
            del self.boards[board_id]
        for stack_id in [i for i, stack in self.stacks.items() if stack.board_id in gone]:
            del self.stacks[stack_id]
        for card_id in [i for i, card in self.cards.items() if card.stack_id not in self.stacks]:
            del self.cards[card_id]
        for board in self.boards.values():
            board.acl = [acl for acl in board.acl if acl.participant != uid]
    def permissions(self, uid: str, board: Board) -> dict[str, bool] | None:
        if board.owner == uid:
            return dict.fromkeys(("PERMISSION_READ", "PERMISSION_EDIT", "PERMISSION_MANAGE", "PERMISSION_SHARE"), True)
        acl = next((a for a in board.acl if a.participant == uid), None)
        if acl is None:
            return None
        return {"PERMISSION_READ": True, "PERMISSION_EDIT": acl.edit, "PERMISSION_MANAGE": acl.manage,
                "PERMISSION_SHARE": acl.share}

    def visible_boards(self, uid: str) -> list[Board]:
        return [b for b in self.boards.values() if self.permissions(uid, b) is not None]

    def board_for(self, uid: str, board_id: int, need: str = "PERMISSION_READ") -> Board:
        board = self.boards.get(board_id)
        perms = self.permissions(uid, board) if board else None
        if board is None or perms is None or not perms[need] or board.deleted_at:
            raise DENIED
        return board

    def card_for(self, uid: str, card_id: int, need: str = "PERMISSION_READ", allow_deleted: bool = False) -> Card:
        """Like Deck, the board in the URL is ignored: access follows the card's own board."""
        card = self.cards.get(card_id)
        if card is None:
            raise DENIED
        self.board_for(uid, self.stacks[card.stack_id].board_id, need)
        if card.deleted_at and not allow_deleted:
            raise JsonError(403, {"status": 403, "message": "Card is deleted"})
        return card

    def stack_for(self, uid: str, stack_id: int, need: str = "PERMISSION_READ") -> Stack:
        stack = self.stacks.get(stack_id)
        if stack is None:
            raise DENIED
        self.board_for(uid, stack.board_id, need)
        return stack

    def create_board(self, owner: str, title: str, color: str = "0082c9") -> Board:
        board = Board(next(self._ids["board"]), title, owner, color, int(self.clock.time()))
        board.labels = [Label(next(self._ids["label"]), t, c, board.id) for t, c in DEFAULT_LABELS]
        self.boards[board.id] = board
        return board

    def update_board(self, board: Board, **fields: Any) -> Board:
        for key, value in fields.items():
            setattr(board, key, value)
        self._touch(board=board)
        return board

    def add_acl(
        self, board: Board, participant: str, edit: bool = False, share: bool = False, manage: bool = False
    ) -> Acl:
        acl = Acl(next(self._ids["acl"]), board.id, participant, edit, share, manage)
        board.acl.append(acl)
        self._touch(board=board)
        return acl

    def create_stack(self, board: Board, title: str, order: int = 0) -> Stack:
        stack = Stack(next(self._ids["stack"]), title, board.id, order, int(self.clock.time()))
        self.stacks[stack.id] = stack
        self._touch(board=board)
        return stack

    def create_card(self, actor: str, stack: Stack, title: str, **fields: Any) -> Card:
        now = int(self.clock.time())
        card = Card(next(self._ids["card"]), title, stack.id, actor, now, now)
        self._apply(card, fields)
        self.cards[card.id] = card
        self._touch(card=card)
        self._card_event("CardCreatedEvent", actor, card)
        return card

    def update_card(self, actor: str, card: Card, **fields: Any) -> Card:
        self._apply(card, fields)
        self._touch(card=card)
        self._card_event("CardUpdatedEvent", actor, card)
        return card

    def delete_card(self, actor: str, card: Card) -> Card:
        card.deleted_at = int(self.clock.time())
        self._touch(card=card)
        self._card_event("CardDeletedEvent", actor, card)
        return card

    def set_label(self, actor: str, card: Card, label_id: int, assigned: bool) -> None:
        board = self.boards[self.stacks[card.stack_id].board_id]
        if not any(label.id == label_id for label in board.labels):
            raise DENIED
        if assigned and label_id not in card.labels:
            card.labels.append(label_id)
        if not assigned and label_id in card.labels:
            card.labels.remove(label_id)
        self.update_card(actor, card)

    @staticmethod
    def _apply(card: Card, fields: dict[str, Any]) -> None:
        for key, value in fields.items():
            if key == "duedate":
                value = deck_date(value)
            setattr(card, key, value)

    def _touch(self, card: Card | None = None, board: Board | None = None) -> None:
        now = int(self.clock.time())
        if card is not None:
            card.last_modified = now
            stack = self.stacks[card.stack_id]
            stack.last_modified = now
            board = self.boards[stack.board_id]
        if board is not None:
            board.last_modified = now

    def _card_event(self, name: str, actor: str, card: Card) -> None:
        if self._webhooks_supported():
            self._emit(DECK_EVENT + name, actor, {"card": self.event_card_json(card, name), "class": DECK_EVENT + name})

    def event_card_json(self, card: Card, event: str) -> dict:
        """``Card::jsonSerialize()`` as Deck 1.18.3's card events carry it (recorded on 34.0.1,
        tests/recordings/nextcloud-34): the entity, not the API's answer. A new card's owner is
        still the bare uid and its labels and assignees null; later events carry them resolved."""
        api = self.card_json(card)
        created = event == "CardCreatedEvent"
        return {
            **{key: api[key] for key in ("id", "title", "description")}, "color": None, "descriptionPrev": None,
            **{key: api[key] for key in ("stackId", "type", "lastModified", "lastEditor", "createdAt")},
            "labels": None if created else api["labels"], "assignedUsers": None, "attachments": [],
            "attachmentCount": 0, "owner": card.owner if created else api["owner"], "order": card.order,
            "archived": card.archived, "done": card.done, "duedate": card.duedate, "startdate": None,
            "notified": False, "deletedAt": card.deleted_at, "commentsUnread": 0, "commentsCount": 0,
            "dependentCards": None, "relatedStack": None, "relatedBoard": None, "ETag": api["ETag"],
        }

    # ---- JSON as Deck serializes it --------------------------------------------------------

    def user_json(self, uid: str) -> dict:
        return {"primaryKey": uid, "uid": uid, "displayname": self._display_name(uid), "type": 0}

    @staticmethod
    def label_json(label: Label, card_id: int | None = None) -> dict:
        return {
            "id": label.id,
            "title": label.title,
            "color": label.color,
            "boardId": label.board_id,
            "cardId": card_id,
            "lastModified": 0,
            "ETag": etag_of(0),
        }

    def card_json(self, card: Card, attachments: list | None = None) -> dict:
        board = self.boards[self.stacks[card.stack_id].board_id]
        labels = [self.label_json(lb, card.id) for lb in board.labels if lb.id in card.labels]
        return {
            "id": card.id,
            "title": card.title,
            "description": card.description,
            "stackId": card.stack_id,
            "type": card.type,
            "lastModified": card.last_modified,
            "lastEditor": None,
            "createdAt": card.created_at,
            "labels": labels,
            "assignedUsers": [],
            "attachments": attachments,
            "attachmentCount": 0,
            "owner": self.user_json(card.owner),
            "order": card.order,
            "archived": card.archived,
            "done": card.done,
            "duedate": card.duedate,
            "deletedAt": card.deleted_at,
            "commentsUnread": 0,
            "commentsCount": 0,
            "ETag": etag_of(card.last_modified),
            "overdue": self._overdue(card),
            "referenceData": None,
        }

    def _overdue(self, card: Card) -> int:
        if not card.duedate:
            return 0
        due = datetime.fromisoformat(card.duedate)
        now = self.clock.now()
        if due < now:
            return 3
        days = (due.date() - now.date()).days
        return 2 if days == 0 else 1 if days == 1 else 0

    def live_cards(self, stack: Stack) -> list[Card]:
        cards = [c for c in self.cards.values() if c.stack_id == stack.id and not c.deleted_at]
        return sorted(cards, key=lambda c: (c.order, c.id))

    def stack_json(self, stack: Stack, with_cards: bool) -> dict:
        data: dict[str, Any] = {"id": stack.id, "title": stack.title, "boardId": stack.board_id,
                                "deletedAt": stack.deleted_at, "lastModified": stack.last_modified}
        if with_cards:
            data["cards"] = [self.card_json(c) for c in self.live_cards(stack)]
        data.update(order=stack.order, ETag=etag_of(stack.last_modified))
        return data

    def board_stacks(self, board: Board) -> list[Stack]:
        stacks = [s for s in self.stacks.values() if s.board_id == board.id and not s.deleted_at]
        return sorted(stacks, key=lambda s: (s.order, s.id))

    def board_json(self, board: Board, uid: str, details: bool = True) -> dict:
        data: dict[str, Any] = {
            "id": board.id,
            "title": board.title,
            "owner": self.user_json(board.owner),
            "color": board.color,
            "archived": board.archived,
            "labels": [self.label_json(lb) for lb in board.labels],
            "acl": [self.acl_json(a) for a in board.acl],
            "permissions": self.permissions(uid, board),
            "users": [self.user_json(u) for u in [board.owner, *(a.participant for a in board.acl)]],
            "shared": 0 if board.owner == uid else 1,
        }
        if details:
            data["stacks"] = [self.stack_json(s, with_cards=False) for s in self.board_stacks(board)]
        data.update(
            activeSessions=[],
            deletedAt=board.deleted_at,
            lastModified=board.last_modified,
            settings={"notify-due": "assigned", "calendar": True},
            ETag=etag_of(board.last_modified),
        )
        return data

    def acl_json(self, acl: Acl) -> dict:
        return {
            "id": acl.id,
            "participant": self.user_json(acl.participant),
            "type": 0,
            "boardId": acl.board_id,
            "permissionEdit": acl.edit,
            "permissionShare": acl.share,
            "permissionManage": acl.manage,
            "owner": False,
        }

    # ---- CalDAV view -----------------------------------------------------------------------

    def calendar(self, uid: str, board: Board) -> Collection:
        """The board's read-only calendar as ``uid`` sees it: one VTODO per card with a due date."""
        cal = Collection(CALENDAR_ID_OFFSET + board.id, uid, f"app-generated--deck--board-{board.id}",
                         f"Deck: {board.title}", "deck", ("VTODO",), sync_token=None, read_only=True)
        for stack in self.board_stacks(board):
            for card in self.live_cards(stack):
                if card.duedate:
                    uri = f"card-{card.id}.ics"
                    cal.objects[uri] = DavObject(card.id, uri, self._vtodo(card, stack), card.last_modified)
        return cal

    @staticmethod
    def _vtodo(card: Card, stack: Stack) -> str:
        stamp = datetime.fromtimestamp(card.last_modified, UTC).strftime("%Y%m%dT%H%M%SZ")
        due = datetime.fromisoformat(card.duedate or "").astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
        lines = [
            "BEGIN:VCALENDAR",
            "VERSION:2.0",
            "PRODID:-//Sabre//Sabre VObject 4.5.6//EN",
            "CALSCALE:GREGORIAN",
            "BEGIN:VTODO",
            f"UID:deck-card-{card.id}",
            f"DTSTAMP:{stamp}",
            f"SUMMARY:{text_value(card.title)}",
            f"DESCRIPTION:{text_value(card.description)}",
            f"DUE:{due}",
            f"STATUS:{'COMPLETED' if card.done else 'NEEDS-ACTION'}",
            f"RELATED-TO:deck-stack-{stack.id}",
            f"CATEGORIES:{text_value(stack.title)}",
            "END:VTODO",
            "END:VCALENDAR",
        ]
        return "\r\n".join(lines) + "\r\n"
