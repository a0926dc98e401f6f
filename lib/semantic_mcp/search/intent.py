"""Query understanding without a model: time and item-type words turned into a soft re-ordering.

Most MCP clients cannot sample, so "When is my next dentist appointment?" must work from the
words alone. :func:`read_intent` finds, in English, German, French and Spanish:

* a *direction*: "next", "upcoming", "nächste", "prochain", "próximo" (upcoming items first,
  soonest first) or "last", "previous", "letzte", "dernier", "último" (past items first, most
  recent first). It applies to dated items: calendar events and Deck cards with a due date;
* a *window*: "today", "yesterday", "last week", "this month", "in March", "on Friday",
  "2026-05", "14.05.2026"... matched against an item's event date, or its last change when it has none;
* *item types*: appointment/meeting -> calendar_event, task/card -> deck_card,
  contact/email/phone -> contact, note -> note, file/PDF/document -> file;
* for a question that names contacts, the *role* of the person ("plumber", "Klempner", "plombier"):
  contacts holding that role in any of those languages are favoured (search/roles.py).

The time words (direction and window) are read by search/time_words.py.

:func:`apply_intent` runs after fusion and verification: it re-orders the candidates by their
fused score plus small boosts (a share of the best score), so a cue decides between results
that are about as relevant, and never lifts an unrelated item over a clear match. The search then
reports the scores in that order (search/score_order.py); the result ``notes`` say what was understood. When the client's model analysed
the query, its filters take the place of the window and types read here (:meth:`QueryIntent.refined`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from ..core.documents import DocType
from .item_fields import Due, read_due
from .roles import holds_role, read_roles
from .time_words import Direction, Window, read_direction, read_window

# Boosts, as shares of the best candidate's score: a matching cue moves an item past others that
# score up to this much lower.
TYPE_BOOST = 0.10
WINDOW_BOOST = 0.15
DIRECTION_BOOST = 0.15
TIME_ORDER_BAND = 0.15  # dated items this close to the best are ordered by time alone

# --- vocabulary --------------------------------------------------------------------------------
# Whole words, lower case. German nouns also match at the end of a compound ("Zahnarzttermin").

_TYPE_WORDS: dict[DocType, tuple[str, ...]] = {
    "calendar_event": (
        "appointment appointments meeting meetings event events calendar "
        "termin termine terminen besprechung besprechungen treffen veranstaltung kalender sitzung "
        "rendez-vous rdv réunion réunions événement événements calendrier "
        "cita citas reunión reuniones evento eventos calendario"
    ).split(),
    "deck_card": (
        "task tasks card cards todo to-do deck "
        "aufgabe aufgaben karte karten "
        "tâche tâches carte cartes "
        "tarea tareas tarjeta tarjetas"
    ).split(),
    "contact": (
        "contact contacts email e-mail phone telephone reach "
        "kontakt kontakte kontaktieren kontaktiere telefon telefonnummer handynummer erreichen erreiche "
        "courriel téléphone joindre contacter "
        "contacto contactos correo teléfono telefono contactar"
    ).split(),
    "note": "note notes notiz notizen nota notas".split(),
    "file": (
        "file files pdf document documents docx spreadsheet "
        "datei dateien dokument dokumente "
        "fichier fichiers "
        "archivo archivos fichero ficheros documento documentos"
    ).split(),
}
# Compound endings worth matching inside German nouns, by type.
_GERMAN_SUFFIXES: dict[DocType, tuple[str, ...]] = {
    "calendar_event": ("termin", "termine", "besprechung", "treffen"),
    "deck_card": ("aufgabe", "aufgaben"),
    "contact": ("telefonnummer", "handynummer", "adresse"),
    "note": ("notiz", "notizen"),
    "file": ("datei", "dokument"),
}

_TOKEN = re.compile(r"[\w'’-]+", re.UNICODE)




@dataclass(frozen=True)
class QueryIntent:
    """What the words of a query say about time and item types; empty when they say nothing."""

    now: int
    direction: Direction | None = None
    window: Window | None = None
    doc_types: tuple[DocType, ...] = ()
    due: Due | None = None  # overdue cards, or cards due soon, asked for: they come first (item_fields.py)
    roles: tuple[str, ...] = ()  # the role of the contact asked for (search/roles.py)
    # The words that were understood, for the note: what set the direction, the window, the types.
    direction_cues: tuple[str, ...] = ()
    window_cues: tuple[str, ...] = ()
    type_cues: tuple[str, ...] = ()
    due_cues: tuple[str, ...] = ()
    role_cues: tuple[str, ...] = ()

    def names_role_of(self, candidate: Any) -> bool:
        """Whether ``candidate`` (with ``metadata`` and ``text``) is a contact holding the role the question names
        (search/roles.py): the one its kind vouches for (``calibration.default_cut``'s ``preferred``, ADR 0722)."""
        return (bool(self.roles) and candidate.metadata.get("doc_type") == "contact"
                and holds_role(self.roles, candidate.text or "", candidate.metadata))

    @property
    def is_empty(self) -> bool:
        return self.direction is None and self.window is None and not self.doc_types and self.due is None

    def refined(self, *, doc_types: Sequence[str] | None, dated: bool) -> QueryIntent:
        """This intent once the client's model analysed the query: its type and date filters already
        select what the words here would only have favoured, so only the direction (an ordering,
        which the analysis cannot express) is kept where the model set them."""
        refined = self
        if doc_types:
            refined = replace(refined, doc_types=(), type_cues=())
        if dated:
            refined = replace(refined, window=None, window_cues=())
        return refined

    def notes(self) -> list[str]:
        parts = []
        if self.direction == "upcoming":
            parts.append("upcoming items first, soonest first")
        elif self.direction == "past":
            parts.append("past items first, most recent first")
        if self.window is not None:
            parts.append(f"items dated {self.window.label} favoured")
        if self.doc_types:
            parts.append(f"{' and '.join(t.replace('_', ' ') + 's' for t in self.doc_types)} favoured")
        if self.roles:
            parts.append(f"contacts who are a {' or '.join(self.roles)} first")
        if self.due == "overdue":
            parts.append("cards past their due date and not done first, by due date")
        elif self.due == "soon":
            parts.append("cards due within a week and not done first, soonest first")
        if not parts:
            return []
        words = dict.fromkeys((*self.direction_cues, *self.window_cues, *self.type_cues, *self.due_cues,
                               *self.role_cues))
        cues = ", ".join(f"'{cue}'" for cue in words)
        return [f"Read from the query ({cues}): {'; '.join(parts)}"]


def read_intent(query: str, now: datetime) -> QueryIntent:
    """The time and item-type cues in ``query``, relative to ``now`` (a UTC day grid)."""
    now = now.astimezone(UTC)
    text = query.lower().replace("’", "'")
    words = _TOKEN.findall(text)
    direction_cues: list[str] = []
    window_cues: list[str] = []
    type_cues: list[str] = []
    direction = read_direction(text, words, direction_cues)
    window = read_window(text, words, now, direction, window_cues)
    doc_types = _doc_types(words, type_cues)
    due, due_cue = read_due(text)
    if due is not None:  # "past their due date", "due next week": the due dates order them, not the direction
        direction, direction_cues = None, []
    roles, role_cues = read_roles(words) if "contact" in doc_types else ((), ())
    return QueryIntent(int(now.timestamp()), direction, window, doc_types, due, roles,
                       tuple(direction_cues), tuple(window_cues), tuple(type_cues), (due_cue,) if due_cue else (),
                       role_cues)


def _doc_types(words: list[str], cues: list[str]) -> tuple[DocType, ...]:
    found: list[DocType] = []
    for doc_type, vocabulary in _TYPE_WORDS.items():
        hits = [w for w in words if w in vocabulary]
        hits += [w for w in words if w not in vocabulary and len(w) > 8
                 and any(w.endswith(s) for s in _GERMAN_SUFFIXES[doc_type])]
        if hits:
            found.append(doc_type)
            cues.extend(hits)
    return tuple(found)


# --- applying an intent to ranked candidates -----------------------------------------------------


def _event_time(metadata: dict[str, Any]) -> int | None:
    value = metadata.get("event_start")
    return int(value) if value is not None else None


def _dated(metadata: dict[str, Any]) -> int | None:
    """The moment a window is matched against: the event or due date, else the last change."""
    event = _event_time(metadata)
    if event is not None:
        return event
    modified = metadata.get("modified")
    return int(modified) if modified else None


def _matches_direction(intent: QueryIntent, metadata: dict[str, Any]) -> bool:
    start = _event_time(metadata)
    if intent.direction is None or start is None:
        return False
    end = int(metadata.get("event_end") or start)
    upcoming = end >= intent.now  # an appointment under way is still the next one
    return (intent.direction == "upcoming") == upcoming


def boost(intent: QueryIntent, metadata: dict[str, Any]) -> float:
    """How much ``intent`` favours an item, as a share of the best candidate's score."""
    total = 0.0
    if intent.doc_types and metadata.get("doc_type") in intent.doc_types:
        total += TYPE_BOOST
    if intent.window is not None and (moment := _dated(metadata)) is not None and intent.window.holds(moment):
        total += WINDOW_BOOST
    if _matches_direction(intent, metadata):
        total += DIRECTION_BOOST
    return total


def apply_intent(candidates: Iterable[Any], intent: QueryIntent | None) -> list[Any]:
    """``candidates`` (with ``score``, ``metadata`` and ``text``) re-ordered by score plus the intent's boosts,
    the contacts holding the role the question names first;
    with a direction, the dated items that match it in the leading band (within
    :data:`TIME_ORDER_BAND` of the best) are put in time order among the places they hold: soonest
    first for "next", most recent first for "last".

    Stable: equal keys keep the fused order. Scores are not changed here (search/score_order.py reports them).
    """
    ranked = list(candidates)
    if intent is None or intent.is_empty or not ranked:
        return ranked
    best = max(float(c.score) for c in ranked) or 1.0
    keyed = [(float(c.score) + best * boost(intent, c.metadata), -position, c) for position, c in enumerate(ranked)]
    keyed.sort(key=lambda item: (item[0], item[1]), reverse=True)
    ordered = [c for _, _, c in keyed]
    if intent.roles:  # the contact holding the role asked for is the answer, whatever the language (search/roles.py)
        ordered.sort(key=lambda c: not intent.names_role_of(c))
    if intent.direction is None:
        return ordered
    # The dated items that match the direction and lie in the leading band swap places among
    # themselves into time order; every other item keeps its place.
    floor = keyed[0][0] - best * TIME_ORDER_BAND
    slots = [i for i, (key, _, c) in enumerate(keyed) if key >= floor and _matches_direction(intent, c.metadata)]
    timed = sorted((ordered[i] for i in slots), key=lambda c: abs(_event_time(c.metadata) - intent.now))
    for slot, candidate in zip(slots, timed, strict=True):
        ordered[slot] = candidate
    return ordered
