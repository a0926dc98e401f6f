"""Which of the measured languages a text is written in, or None: for the cross-language offset.

e5 scores a question and an item in two different languages lower than the same pair in one
language (bench/RESULTS-crosslang.md), so the search adds the calibration's ``other_language_bonus``
to a chunk in another language than the question (docs/adr/0280-cross-language-offset.md). Only
EN, DE, FR and ES are named: the offset is measured between them and nowhere else.

A language is named only when two independent cues agree: py3langid's naive Bayes over character
n-grams (all its 97 languages, so Portuguese is not taken for Spanish) puts one of the four first,
and the text holds at least one of that language's grammatical words. Text without grammar
(letter salad, codes, a bare name or a keyword list like "Kaution Wohnung") gets None, so a
random-token query never gets the offset, whatever n-grams it happens to share with a language.
"""

from __future__ import annotations

import re
import threading

# Enough of a document to tell its language; classifying costs about 3 ms per 1000 characters.
SAMPLE_CHARS = 1500
# Distinct words from which a document without grammatical words is still taken to be in py3langid's language.
TELEGRAPHIC_WORDS = 8
# Words left once the capitalised ones are set aside, from which those alone are classified (:func:`_without_names`).
NAMED_WORDS_LEFT = 8

# Articles, prepositions, pronouns and auxiliaries: words a sentence in the language can hardly do
# without. Words shared with another of the four ("de", "la", "in") are fine: py3langid decides
# between them, this list only requires that the text has grammar at all.
_GRAMMAR: dict[str, frozenset[str]] = {
    "en": frozenset("the a an of to in on at by for from with into over and or not is are was were be my our "
                    "your his her their it this that what when where who how which do does did i we you they".split()),
    "de": frozenset("der die das den dem des ein eine einen einem einer ist sind war waren wir ich du sie es und "
                    "oder mit für von zu zum zur im am auf aus bei beim nach vor über wann wo wer wie was welche "
                    "mein meine unser unsere nicht auch".split()),
    "fr": frozenset("le la les un une des du de au aux en à par est sont était et ou pour avec sans dans sur chez "
                    "qui que quoi quand où comment quel quelle mon ma mes notre nos je nous vous il elle ce pas".split()),
    "es": frozenset("el la los las un una unos unas del de al a en es son era y o para con sin por sobre que qué "
                    "quién cuándo dónde cómo cuál mi mis nuestro nuestra yo tú él ella se lo le hay".split()),
}
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")

_lock = threading.Lock()  # py3langid loads its model on first use, into a module global


def _classify(text: str) -> str:
    import py3langid

    with _lock:
        return str(py3langid.classify(text)[0])


def _words(text: str) -> set[str]:
    """Whole words of letters: a code's letters ("A8F3") are not the article "a". "l'entretien", "qu'il":
    the part before the apostrophe is the grammatical word."""
    tokens = (token.strip(".,;:!?¿¡()[]{}\"«»“”") for token in text.lower().split())
    return {part for token in tokens if _WORD.fullmatch(token) for part in re.split(r"['’]", token) if part}


def detect_language(text: str) -> str | None:
    """A question's language: "en", "de", "fr" or "es" when ``text`` is clearly written in it, else None."""
    return _detect(text, telegraphic=False)


def document_language(text: str) -> str | None:
    """A document's language, as :func:`detect_language`, but a note in telegraphic style ("Bremsbeläge
    erneuert, Ölwechsel, Gesamtbetrag 612,40 €") counts too: ``TELEGRAPHIC_WORDS`` words or more are
    enough without a grammatical word. Not for questions: a long enough string of random tokens would
    then get a language too, and with it the offset."""
    return _detect(text, telegraphic=True)


def _without_names(sample: str) -> str:
    """``sample`` without its capitalised words when ``NAMED_WORDS_LEFT`` others remain: names carry the
    n-grams of where a person or place comes from, not of the language the text is written in. An English
    abstract of a German actor ("Peter van Eyck, born Götz von Eick (… Pomerania, Germany …) was a
    German-American actor") read as German and took the other-language offset (ADR 0721)."""
    rest = [word for word in sample.split() if not word[:1].isupper()]
    return " ".join(rest) if len(rest) >= NAMED_WORDS_LEFT else sample


def _detect(text: str, telegraphic: bool) -> str | None:
    sample = text[:SAMPLE_CHARS]
    words = _words(sample)
    if not words:
        return None
    language = _classify(_without_names(sample))
    if language not in _GRAMMAR:
        return None
    return language if words & _GRAMMAR[language] or (telegraphic and len(words) >= TELEGRAPHIC_WORDS) else None
