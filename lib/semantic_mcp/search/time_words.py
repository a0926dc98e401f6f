"""Time read from a query's words: a direction ("next", "last") and a window ("in March", "next week").

Part of the query understanding of search/intent.py, in English, German, French and Spanish: the window
is matched against an item's event or due date, or its last change when it has none.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

Direction = Literal["upcoming", "past"]

# Whole words, lower case.
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


def _day(moment: date) -> int:
    return int(datetime(moment.year, moment.month, moment.day, tzinfo=UTC).timestamp())


def _days(first: date, count: int, label: str) -> Window:
    return Window(_day(first), _day(first + timedelta(days=count)), label)


def _month(year: int, month: int, label: str) -> Window:
    last = calendar.monthrange(year, month)[1]
    return _days(date(year, month, 1), last, label)


def read_window(text: str, words: list[str], now: datetime, direction: Direction | None, cues: list[str]) -> Window | None:
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
        if word in _DAY_WORDS and not (word == "hier" and not looks_french(words)):
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



def read_direction(text: str, words: list[str], cues: list[str]) -> Direction | None:
    upcoming = [w for w in words if w in _UPCOMING] + [p for p in _UPCOMING_PHRASES if p in text]
    # "hier" is French for yesterday but German for "here": it counts only in French-looking text.
    # Words for both directions ("next week, like last time") cancel out: no direction.
    past = [w for w in words if w in _PAST and w != "hier"]
    if "hier" in words and looks_french(words):
        past.append("hier")
    if upcoming and not past:
        cues.extend(upcoming)
        return "upcoming"
    if past and not upcoming:
        cues.extend(past)
        return "past"
    return None


def looks_french(words: list[str]) -> bool:
    return any(w in ("je", "j'ai", "mon", "ma", "mes", "le", "la", "les", "était", "quand", "qu'est-ce") for w in words)
