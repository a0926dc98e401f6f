"""The trade or role of the person a question asks to reach, in the languages the app reads (ADR 0722).

"Wie erreiche ich den Klempner?" names a contact (search/intent.py) and a trade. The embedding model
(multilingual e5-small) does not tie "Klempner", "plombier" or "fontanero" to "Miller Plumbing": for the
German question every contact on the demo is about as close (0.80-0.81), and the one with a German name
came first. The words do: a role here is one trade under its words in English, German, French and
Spanish, and a contact whose name, organisation or text holds any of them holds that role, whatever the
language of the question or of the contact. A German noun also matches at the end of a compound
("Sanitärinstallateur", "Hauszahnarzt").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

# A role: its words, whole and lower case, in English, German, French and Spanish (nouns and the trade's name).
ROLES: dict[str, tuple[str, ...]] = {
    "plumber": ("plumber plumbers plumbing "
                "klempner klempnerin klempnerei installateur installateurin sanitär "
                "plombier plombière plombiers plomberie "
                "fontanero fontanera fontaneros fontanería plomero plomera").split(),
    "electrician": ("electrician electricians electrical "
                    "elektriker elektrikerin elektroinstallateur "
                    "électricien électricienne électriciens "
                    "electricista electricistas").split(),
    "dentist": ("dentist dentists dental orthodontist "
                "zahnarzt zahnärztin zahnarztpraxis kieferorthopäde "
                "dentiste dentistes orthodontiste "
                "dentista dentistas odontólogo ortodoncista").split(),
    "doctor": ("doctor doctors physician gp "
               "arzt ärztin hausarzt hausärztin "
               "médecin médecins docteur "
               "médico médica médicos").split(),
    "lawyer": ("lawyer lawyers attorney solicitor "
               "anwalt anwältin rechtsanwalt rechtsanwältin "
               "avocat avocate avocats "
               "abogado abogada abogados").split(),
    "accountant": ("accountant accountants accounting bookkeeper "
                   "steuerberater steuerberaterin buchhalter buchhalterin "
                   "comptable comptables expert-comptable "
                   "contable contador contadora gestor gestoría").split(),
    "mechanic": ("mechanic mechanics garage "
                 "mechaniker mechanikerin werkstatt autowerkstatt "
                 "mécanicien mécanicienne garagiste "
                 "mecánico mecánica taller").split(),
    "carpenter": ("carpenter joiner carpentry "
                  "schreiner tischler zimmermann schreinerei tischlerei "
                  "menuisier charpentier menuiserie "
                  "carpintero carpintera carpintería").split(),
    "painter": ("painter decorator "
                "maler malerin "
                "peintre "
                "pintor pintora").split(),
    "locksmith": ("locksmith "
                  "schlüsseldienst schlosser "
                  "serrurier "
                  "cerrajero cerrajera").split(),
    "gardener": ("gardener landscaper "
                 "gärtner gärtnerin "
                 "jardinier jardinière paysagiste "
                 "jardinero jardinera").split(),
    "hairdresser": ("hairdresser barber "
                    "friseur friseurin "
                    "coiffeur coiffeuse "
                    "peluquero peluquera").split(),
    "vet": ("vet veterinarian veterinary "
            "tierarzt tierärztin "
            "vétérinaire "
            "veterinario veterinaria").split(),
    "landlord": ("landlord landlady "
                 "vermieter vermieterin hausverwaltung "
                 "propriétaire bailleur "
                 "casero casera arrendador").split(),
}
_COMPOUND_MIN = 9  # a German compound is at least this long; shorter words match whole only
_WORD = re.compile(r"[\w'’-]+", re.UNICODE)


def _roles_of(words: Iterable[str]) -> dict[str, list[str]]:
    """The roles ``words`` (lower case) hold, with the words that held each."""
    found: dict[str, list[str]] = {}
    for word in words:
        for role, vocabulary in ROLES.items():
            if word in vocabulary or (len(word) >= _COMPOUND_MIN and any(
                    word.endswith(v) for v in vocabulary if len(v) >= 6)):
                found.setdefault(role, []).append(word)
    return found


def read_roles(words: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The roles a query's ``words`` (lower case) name, and the words that named them."""
    found = _roles_of(words)
    return tuple(found), tuple(word for cues in found.values() for word in cues)


def holds_role(roles: Iterable[str], text: str, metadata: Mapping[str, Any]) -> bool:
    """Whether an item (its chunk ``text``, title and organisation) holds one of ``roles``, in any language."""
    wanted = set(roles)
    if not wanted:
        return False
    said = " ".join([text or "", str(metadata.get("title") or ""), str(metadata.get("company") or "")]).lower()
    return bool(wanted.intersection(_roles_of(_WORD.findall(said))))
