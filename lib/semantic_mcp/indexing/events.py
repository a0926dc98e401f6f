"""Turn webhook_listeners deliveries into queue work.

Events are late, duplicated and out of order, so nothing here trusts an event's content as the
truth: a change event only says "look at this document again" (the pipeline fetches the current
version and compares versions), and a delete is only acted on for what the ledger knows (and the
pipeline confirms it with Nextcloud first).
Quirks handled (all observed on Nextcloud 32): NodeDeletedEvent has no id, only a path
(BeforeNodeDeletedEvent has the id); moving a folder fires one NodeRenamedEvent for the folder
only; notes are files; calendar deletes arrive as CalendarObjectMovedToTrashEvent. On Nextcloud
34 a write into a team folder fires one event, for the writer: its members are found here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..core.documents import DocRef, DocType
from ..sources.files import is_in_notes_folder, is_note_path, user_relative_path
from ..sources.team_folders import mount_at
from .state import IndexState

log = logging.getLogger(__name__)

FILE_EVENTS = "OCP\\Files\\Events\\Node\\"
CALENDAR_EVENTS = "OCP\\Calendar\\Events\\"
DECK_EVENTS = "OCA\\Deck\\Event\\"


class MalformedEvent(ValueError):
    """The delivery is not a webhook_listeners payload we can act on; the message says why."""


@dataclass
class Plan:
    """What one event asks for: documents to refresh, documents to remove, users to reconcile."""

    user: str = ""
    upserts: list[tuple[DocRef, dict[str, Any] | None]] = field(default_factory=list)
    deletes: list[DocRef] = field(default_factory=list)
    reconcile: list[tuple[str, DocType]] = field(default_factory=list)
    ignored: str | None = None  # why nothing was done (unknown class, unsupported path...)
    unexpected: bool = False  # an event class this app never registers for: worth a log line


def _require(mapping: Any, key: str, where: str) -> Any:
    if not isinstance(mapping, dict) or key not in mapping:
        raise MalformedEvent(f"missing '{key}' in {where}")
    return mapping[key]


def event_class(payload: Any) -> str:
    event = _require(payload, "event", "payload")
    cls = _require(event, "class", "event")
    if not isinstance(cls, str):
        raise MalformedEvent("event.class is not a string")
    return cls


def plan_event(payload: Any, state: IndexState, notes_folder: str) -> Plan:
    """Map one delivery to queue work. Raises MalformedEvent for payloads missing what they need."""
    cls = event_class(payload)
    event = payload["event"]
    short = cls.rsplit("\\", 1)[-1]
    if cls.startswith(FILE_EVENTS):
        return _plan_file_event(short, event, state, notes_folder)
    if cls.startswith(CALENDAR_EVENTS):
        return _plan_calendar_event(short, event, payload)
    if cls.startswith(DECK_EVENTS):
        return _plan_deck_event(short, event, payload, state)
    return Plan(ignored=f"unsupported event class {cls!r}", unexpected=True)


def _file_type(rel_path: str, notes_folder: str) -> DocType:
    return "note" if is_note_path(rel_path, notes_folder) else "file"


def _node(event: dict[str, Any], key: str) -> tuple[str, str, int | None]:
    """(owner, user-relative path, file id or None) of ``event[key]``."""
    node = _require(event, key, "event")
    path = _require(node, "path", f"event.{key}")
    if not isinstance(path, str) or not path.startswith("/"):
        raise MalformedEvent(f"event.{key}.path is not an absolute path")
    owner = path.split("/")[1]
    rel = user_relative_path(path, owner)
    file_id = node.get("id")
    if file_id is not None and not isinstance(file_id, int | str):
        raise MalformedEvent(f"event.{key}.id is not an id")
    return owner, rel or "", int(file_id) if file_id is not None else None


def _notes_below(state: IndexState, owner: str, rel_path: str, notes_folder: str) -> list[DocRef]:
    """Indexed notes at or below a folder of the notes folder. A note's location is its category
    (its folder below the notes folder), not a path, so the path becomes a category prefix."""
    if not is_in_notes_folder(rel_path, notes_folder):
        return []
    category = rel_path[len(notes_folder.strip("/")) + 1 :].strip("/")
    if not category:  # the notes folder itself
        return [DocRef(owner, "note", source_id) for source_id in state.indexed_versions(owner, "note")]
    return [doc.ref for doc in state.under_location(owner, category) if doc.ref.doc_type == "note"]


def _refresh_everyone(plan: Plan, state: IndexState, owner: str, rel: str, doc_type: DocType, file_id: int) -> None:
    """Refresh the owner's document and every other user's copy (shares, and every member of a team
    folder it is in: the event names the writer alone): each is fetched and checked as that user, so
    a member an ACL denies gets nothing indexed."""
    team_folder = mount_at(state.team_folders(owner), rel)
    members = state.team_folder_members(team_folder) if team_folder else []
    users = {owner, *state.holders(doc_type, str(file_id)), *members}
    plan.upserts.extend((DocRef(user, doc_type, str(file_id)), None) for user in sorted(users))


def _plan_file_event(short: str, event: dict[str, Any], state: IndexState, notes_folder: str) -> Plan:
    if short in ("NodeCreatedEvent", "NodeWrittenEvent", "NodeTouchedEvent", "NodeCopiedEvent"):
        owner, rel, file_id = _node(event, "target" if short == "NodeCopiedEvent" else "node")
        plan = Plan(user=owner)
        if file_id is None or not rel:
            plan.ignored = "no file id or not under files/"
            return plan
        _refresh_everyone(plan, state, owner, rel, _file_type(rel, notes_folder), file_id)
        return plan

    if short == "NodeRenamedEvent":
        owner, source_rel, _ = _node(event, "source")
        _, target_rel, file_id = _node(event, "target")
        plan = Plan(user=owner)
        # A folder move fires one event for the folder only: refresh everything indexed below it.
        for doc in state.under_location(owner, source_rel):
            if doc.location != source_rel:  # and the other users' copies: a team folder's members
                ref = doc.ref
                plan.upserts.extend((DocRef(user, ref.doc_type, ref.source_id), None)
                                    for user in sorted({owner, *state.holders(ref.doc_type, ref.source_id)}))
        plan.upserts.extend((ref, None) for ref in _notes_below(state, owner, source_rel, notes_folder))
        if file_id is not None and target_rel:
            new_type = _file_type(target_rel, notes_folder)
            old_type: DocType = "file" if new_type == "note" else "note"
            plan.deletes.append(DocRef(owner, old_type, str(file_id)))  # moved into/out of the notes folder
            _refresh_everyone(plan, state, owner, target_rel, new_type, file_id)
        return plan

    if short == "BeforeNodeDeletedEvent":
        owner, rel, file_id = _node(event, "node")
        plan = Plan(user=owner)
        if file_id is not None:
            for doc_type in ("note", "file"):
                plan.deletes.append(DocRef(owner, doc_type, str(file_id)))
                # Users the file was shared with: re-check as them (they lose it with the owner's delete).
                plan.upserts.extend(
                    (DocRef(user, doc_type, str(file_id)), None)
                    for user in state.holders(doc_type, str(file_id))
                    if user != owner
                )
        return plan

    if short == "NodeDeletedEvent":
        # No id in this event: find what was indexed at (or, for a folder, below) the path.
        owner, rel, _ = _node(event, "node")
        plan = Plan(user=owner)
        below = [doc.ref for doc in state.under_location(owner, rel)] + _notes_below(state, owner, rel, notes_folder)
        for ref in state.skipped_under(owner, rel):  # not indexed, but counted: forgotten once the delete is confirmed
            plan.deletes.append(ref)
        for ref in below:
            plan.deletes.append(ref)
            plan.upserts.extend(
                (DocRef(user, ref.doc_type, ref.source_id), None)
                for user in state.holders(ref.doc_type, ref.source_id)
                if user != owner
            )
        return plan

    return Plan(ignored=f"file event {short} needs no indexing")


def _event_user(payload: dict[str, Any]) -> str:
    user = payload.get("user")
    uid = user.get("uid") if isinstance(user, dict) else None
    if not isinstance(uid, str) or not uid:
        raise MalformedEvent("missing user.uid")
    return uid


def _plan_calendar_event(short: str, event: dict[str, Any], payload: dict[str, Any]) -> Plan:
    calendar = _require(event, "calendarData", "event")
    principal = str(calendar.get("principaluri") or "")
    owner = principal.rsplit("/", 1)[-1] if principal.startswith("principals/users/") else _event_user(payload)
    plan = Plan(user=owner)
    if short == "CalendarObjectMovedEvent":
        plan.reconcile.append((owner, "calendar_event"))  # source and target calendars both changed
        return plan
    obj = _require(event, "objectData", "event")
    cal_uri = _require(calendar, "uri", "event.calendarData")
    obj_uri = _require(obj, "uri", "event.objectData")
    ref = DocRef(owner, "calendar_event", f"{cal_uri}/{obj_uri}")
    if short in ("CalendarObjectDeletedEvent", "CalendarObjectMovedToTrashEvent"):
        plan.deletes.append(ref)
    elif short in ("CalendarObjectCreatedEvent", "CalendarObjectUpdatedEvent", "CalendarObjectRestoredEvent"):
        data = obj.get("calendardata")
        hint = None
        if isinstance(data, str):
            hint = {
                "ics": data,
                "etag": str(obj.get("etag") or ""),
                "calendar": str(calendar.get("{DAV:}displayname") or cal_uri),
                "modified": int(obj.get("lastmodified") or payload.get("time") or 0),
            }
        plan.upserts.append((ref, hint))
    else:
        plan.ignored = f"calendar event {short} needs no indexing"
    return plan


def _plan_deck_event(short: str, event: dict[str, Any], payload: dict[str, Any], state: IndexState) -> Plan:
    """Deck >= 1.18 (Nextcloud 34) card events; older Deck is covered by reconciliation."""
    user = _event_user(payload)
    card = _require(event, "card", "event")
    card_id = str(_require(card, "id", "event.card"))
    plan = Plan(user=user)
    users = sorted({user, *state.holders("deck_card", card_id)})
    if short == "CardDeletedEvent":
        plan.deletes.extend(DocRef(u, "deck_card", card_id) for u in users)
    elif short in ("CardCreatedEvent", "CardUpdatedEvent"):
        plan.upserts.extend((DocRef(u, "deck_card", card_id), None) for u in users)
    else:
        plan.ignored = f"deck event {short} needs no indexing"
    return plan
