"""Query understanding without a model: time and item-type words turned into a soft re-ordering.

Most MCP clients cannot sample, so "When is my next dentist appointment?" must work from the
words alone. :func:`read_intent` finds, in English, German, French and Spanish:

* a *direction*: "next", "upcoming", "nächste", "prochain", "próximo" (upcoming items first,
  soonest first) or "last", "previous", "letzte", "dernier", "último" (past items first, most
  recent first). It applies to dated items: calendar events and Deck cards with a due date;
* a *window*: "today", "yesterday", "last week", "this month", "in March", "on Friday",
  "2026-05", "14.05.2026"... matched against an item's event date, or its last change when it has none;
* *item types*: appointment/meeting -> calendar_event, task/card -> deck_card,
  contact/email/phone -> contact, note -> note, file/PDF/document -> file.

:func:`apply_intent` runs after fusion and verification: it re-orders the candidates by their
fused score plus small boosts (a share of the best score), so a cue decides between results
that are about as relevant, and never lifts an unrelated item over a clear match. Scores are
left as they are; the result ``notes`` say what was understood. When the client's model analysed
the query, its filters take the place of the window and types read here (:meth:`QueryIntent.refined`).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal

from ..documents import DocType

Direction = Literal["upcoming", "past"]

# Boosts, as shares of the best candidate's score: a matching cue moves an item past others that
# score up to this much lower.
TYPE_BOOST = 0.10
WINDOW_BOOST = 0.15
DIRECTION_BOOST = 0.15
TIME_ORDER_BAND = 0.15  # dated items this close to the best are ordered by time alone

# --- vocabulary --------------------------------------------------------------------------------
# Whole words, lower case. German nouns also match at the end of a compound ("Zahnarzttermin").

_UPCOMING = (
    "next upcoming coming forthcoming future soon tomorrow "
    "nächste nächster nächsten nächstes naechste kommende kommender kommenden bevorstehende bevorstehenden "
    "demnächst morgen künftige zukünftige "
    "prochain prochaine prochains prochaines futur future demain bientôt "
    "próximo próxima próximos próximas proximo proxima siguiente siguientes futuro futura"
).split()
_UPCOMING_PHRASES = ("à venir", "que viene", "que vienen", "coming up", "in the future")

_PAST = (
    "last previous past recent recently ago yesterday "
    "letzte letzter letzten letztes vorige voriger vorigen vergangene vergangenen zuletzt gestern "
    "dernier dernière derniers dernières derniere précédent précédente passé passée hier "
    "último última últimos últimas ultimo ultima pasado pasada anterior ayer"
).split()

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
        "contact contacts email e-mail phone telephone "
        "kontakt kontakte telefon telefonnummer handynummer "
        "courriel téléphone "
        "contacto contactos correo teléfono telefono"
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

_MONTHS: dict[str, int] = {}
for _number, _names in enumerate(
    (
        "january januar janvier enero jan",
        "february februar février fevrier febrero feb",
        "march märz maerz mars marzo mar",
        "april avril abril apr",
        "may mai mayo",
        "june juni juin junio jun",
        "july juli juillet julio jul",
        "august août aout agosto aug",
        "september septembre septiembre sept sep",
        "october oktober octobre octubre oct okt",
        "november novembre noviembre nov",
        "december dezember décembre decembre diciembre dec dez",
    ),
    start=1,
):
    for _name in _names.split():
        _MONTHS[_name] = _number
# Abbreviations that are also ordinary words count only after a preposition ("in mar" is odd anyway).
_AMBIGUOUS_MONTHS = {"mar", "jun", "jul", "may", "mai", "sept", "sep", "dec", "dez", "nov", "oct", "okt", "jan",
                     "feb", "apr", "aug"}
_MONTH_PREPOSITIONS = {"in", "im", "en", "de", "del", "of", "during", "für", "pour", "para", "seit", "since"}

_WEEKDAYS: dict[str, int] = {}
for _number, _names in enumerate(
    (
        "monday montag lundi lunes",
        "tuesday dienstag mardi martes",
        "wednesday mittwoch mercredi miércoles miercoles",
        "thursday donnerstag jeudi jueves",
        "friday freitag vendredi viernes",
        "saturday samstag sonnabend samedi sábado sabado",
        "sunday sonntag dimanche domingo",
    )
):
    for _name in _names.split():
        _WEEKDAYS[_name] = _number

_UNITS = {
    "week": "week", "woche": "week", "semaine": "week", "semana": "week",
    "month": "month", "monat": "month", "mois": "month", "mes": "month",
    "year": "year", "jahr": "year", "année": "year", "año": "year",
}
_SPANISH_BEFORE_MES = {"el", "del", "al", "este", "próximo", "proximo", "último", "ultimo", "cada"}
_THIS = {"this", "diese", "dieser", "diesen", "diesem", "cette", "ce", "cet", "esta", "este"}
_DAY_WORDS = {
    "today": 0, "heute": 0, "aujourd'hui": 0, "hoy": 0,
    "tomorrow": 1, "morgen": 1, "demain": 1,
    "yesterday": -1, "gestern": -1, "hier": -1, "ayer": -1,
}

_TOKEN = re.compile(r"[\w'’-]+", re.UNICODE)
_ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_ISO_MONTH = re.compile(r"\b(19\d\d|20\d\d)-(\d{2})\b(?!-)")
_DOTTED_DAY = re.compile(r"\b(\d{1,2})\.(\d{1,2})\.(\d{4})\b")
_SLASHED_DAY = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b")  # day first, as in DE/FR/ES
_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")


@dataclass(frozen=True)
class Window:
    """A span of time the query names: [start, end) in unix seconds, and how to say it."""

    start: int
    end: int
    label: str

    def holds(self, moment: int) -> bool:
        return self.start <= moment < self.end


@dataclass(frozen=True)
class QueryIntent:
    """What the words of a query say about time and item types; empty when they say nothing."""

    now: int
    direction: Direction | None = None
    window: Window | None = None
    doc_types: tuple[DocType, ...] = ()
    # The words that were understood, for the note: what set the direction, the window, the types.
    direction_cues: tuple[str, ...] = ()
    window_cues: tuple[str, ...] = ()
    type_cues: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        return self.direction is None and self.window is None and not self.doc_types

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
        if not parts:
            return []
        words = dict.fromkeys((*self.direction_cues, *self.window_cues, *self.type_cues))
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
    direction = _direction(text, words, direction_cues)
    window = _window(text, words, now, direction, window_cues)
    doc_types = _doc_types(words, type_cues)
    return QueryIntent(int(now.timestamp()), direction, window, doc_types,
                       tuple(direction_cues), tuple(window_cues), tuple(type_cues))


def _direction(text: str, words: list[str], cues: list[str]) -> Direction | None:
    upcoming = [w for w in words if w in _UPCOMING] + [p for p in _UPCOMING_PHRASES if p in text]
    # "hier" is French for yesterday but German for "here": it counts only in French-looking text.
    # Words for both directions ("next week, like last time") cancel out: no direction.
    past = [w for w in words if w in _PAST and w != "hier"]
    if "hier" in words and _looks_french(words):
        past.append("hier")
    if upcoming and not past:
        cues.extend(upcoming)
        return "upcoming"
    if past and not upcoming:
        cues.extend(past)
        return "past"
    return None


def _looks_french(words: list[str]) -> bool:
    return any(w in ("je", "j'ai", "mon", "ma", "mes", "le", "la", "les", "était", "quand", "qu'est-ce") for w in words)


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


def _day(moment: date) -> int:
    return int(datetime(moment.year, moment.month, moment.day, tzinfo=UTC).timestamp())


def _days(first: date, count: int, label: str) -> Window:
    return Window(_day(first), _day(first + timedelta(days=count)), label)


def _month(year: int, month: int, label: str) -> Window:
    last = calendar.monthrange(year, month)[1]
    return _days(date(year, month, 1), last, label)


def _window(text: str, words: list[str], now: datetime, direction: Direction | None, cues: list[str]) -> Window | None:
    today = now.date()
    for pattern, order in ((_ISO_DAY, "ymd"), (_DOTTED_DAY, "dmy"), (_SLASHED_DAY, "dmy")):
        if match := pattern.search(text):
            parts = dict(zip(order, (int(g) for g in match.groups()), strict=True))
            try:
                day = date(parts["y"], parts["m"], parts["d"])
            except ValueError:
                continue
            cues.append(match.group(0))
            return _days(day, 1, f"on {day.isoformat()}")
    if (match := _ISO_MONTH.search(text)) and 1 <= int(match.group(2)) <= 12:
        cues.append(match.group(0))
        return _month(int(match.group(1)), int(match.group(2)), f"in {match.group(0)}")

    for index, word in enumerate(words):
        if word in _DAY_WORDS and not (word == "hier" and not _looks_french(words)):
            # "mañana" is also "morning"; "morgen" is also "morning" (only as "Morgen", rarely in questions).
            day = today + timedelta(days=_DAY_WORDS[word])
            cues.append(word)
            return _days(day, 1, f"on {day.isoformat()}")
        if word == "mes" and _previous(words, index) not in _SPANISH_BEFORE_MES:
            continue  # French "mes" (my), not Spanish "mes" (month)
        if word in _UNITS and (unit_window := _relative_unit(words, index, _UNITS[word], today)):
            cues.append(unit_window[1])
            return unit_window[0]

    for index, word in enumerate(words):
        previous = _previous(words, index)
        if word in _MONTHS and (word not in _AMBIGUOUS_MONTHS or previous in _MONTH_PREPOSITIONS):
            month = _MONTHS[word]
            year_match = _YEAR.search(" ".join(words[index + 1 : index + 3]))
            year = int(year_match.group(1)) if year_match else _month_year(today, month, direction)
            cues.append(word + (f" {year}" if year_match else ""))
            return _month(year, month, f"in {calendar.month_name[month]} {year}")
        if word in _WEEKDAYS:
            day = _weekday(today, _WEEKDAYS[word], direction)
            cues.append(word)
            return _days(day, 1, f"on {calendar.day_name[day.weekday()]} {day.isoformat()}")

    for index, word in enumerate(words):
        if _YEAR.fullmatch(word) and index and words[index - 1] in _MONTH_PREPOSITIONS:
            year = int(word)
            cues.append(f"{words[index - 1]} {word}")
            return Window(_day(date(year, 1, 1)), _day(date(year + 1, 1, 1)), f"in {year}")
    return None


def _previous(words: list[str], index: int) -> str:
    return words[index - 1] if index else ""


def _relative_unit(words: list[str], index: int, unit: str, today: date) -> tuple[Window, str] | None:
    """"next week", "letzte Woche", "la semaine prochaine", "el mes pasado", "this month"..."""
    around = words[max(0, index - 2) : index] + words[index + 1 : index + 3]
    if any(w in _UPCOMING for w in around) or "que viene" in " ".join(words[index : index + 3]):
        shift = 1
    elif any(w in _PAST for w in around):
        shift = -1
    elif any(w in _THIS for w in words[max(0, index - 2) : index]):
        shift = 0
    else:
        return None
    phrase = " ".join(words[max(0, index - 2) : index + 2])
    name = {1: "next", -1: "last", 0: "this"}[shift]
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=shift)
        return _days(monday, 7, f"{name} week ({monday.isoformat()} to {(monday + timedelta(days=6)).isoformat()})"), phrase
    if unit == "month":
        month_index = today.year * 12 + today.month - 1 + shift
        year, month = divmod(month_index, 12)
        return _month(year, month + 1, f"{name} month ({calendar.month_name[month + 1]} {year})"), phrase
    year = today.year + shift
    return Window(_day(date(year, 1, 1)), _day(date(year + 1, 1, 1)), f"{name} year ({year})"), phrase


def _month_year(today: date, month: int, direction: Direction | None) -> int:
    """The year of a month named without one: this year's, unless the direction says otherwise."""
    if direction == "upcoming" and month < today.month:
        return today.year + 1
    if direction == "past" and month > today.month:
        return today.year - 1
    return today.year


def _weekday(today: date, weekday: int, direction: Direction | None) -> date:
    """The named weekday: the most recent one for the past, else the coming one (today included)."""
    if direction == "past":
        return today - timedelta(days=(today.weekday() - weekday) % 7 or 7)
    return today + timedelta(days=(weekday - today.weekday()) % 7)


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
    """``candidates`` (with ``score`` and ``metadata``) re-ordered by score plus the intent's boosts;
    with a direction, the dated items that match it in the leading band (within
    :data:`TIME_ORDER_BAND` of the best) are put in time order among the places they hold: soonest
    first for "next", most recent first for "last".

    Stable: equal keys keep the fused order. Scores are not changed.
    """
    ranked = list(candidates)
    if intent is None or intent.is_empty or not ranked:
        return ranked
    best = max(float(c.score) for c in ranked) or 1.0
    keyed = [(float(c.score) + best * boost(intent, c.metadata), -position, c) for position, c in enumerate(ranked)]
    keyed.sort(key=lambda item: (item[0], item[1]), reverse=True)
    ordered = [c for _, _, c in keyed]
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
