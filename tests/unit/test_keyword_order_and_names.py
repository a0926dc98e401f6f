"""ADR 0721: a plain query's keyword weight orders its candidates only when one of its words is rare in the user's
index, and always scores them; a text's language is read without the names in it."""

from __future__ import annotations

import pytest

from semantic_mcp.core.language import document_language
from semantic_mcp.search.calibration import CALIBRATIONS

E5 = CALIBRATIONS["multilingual-e5-small-q4"]
PLAIN = "which actors were born in germany"


def test_common_words_score_but_do_not_order() -> None:
    common = E5.for_query(PLAIN, rarest=E5.plain_order_chunks + 1)
    # Two candidates: the first closer in meaning, the second holding more of the query's words.
    closer, wordier = (0.86, 0.2), (0.855, 0.9)
    assert common.ranked(*closer) > common.ranked(*wordier)  # ordered by cosine
    assert common.probability(*wordier) > common.probability(*closer)  # the words still count for the score
    rare = E5.for_query(PLAIN, rarest=E5.plain_order_chunks)
    assert rare.ranked(*wordier) > rare.ranked(*closer) and rare.ranked(*wordier) == rare.fused(*wordier)
    assert E5.for_query(PLAIN).words_order  # not counted: as before


def test_a_token_query_is_ordered_by_its_words_whatever_their_counts() -> None:
    token = E5.for_query("invoice K7R-99Q2", rarest=1)
    assert token.words_order and token.ranked(0.8, 1.0) == token.fused(0.8, 1.0)


def test_the_other_language_offset_still_orders() -> None:
    common = E5.for_query(PLAIN, rarest=E5.plain_order_chunks + 1)
    assert common.ranked(0.8, 0.0, True) == pytest.approx(0.8 + E5.other_language_bonus)


@pytest.mark.parametrize(("text", "language"), [
    # Read as German before: the names carry the n-grams, the grammar is English.
    ("Peter van Eyck\nPeter van Eyck, born Götz von Eick (16 July 1911, Steinwehr, Pomerania, Germany [now Kamienny "
     "Jaz, Poland] – 15 July 1969, Männedorf near Zürich, Switzerland), was a German-American actor.", "en"),
    ("Die Kaution für die Wohnung in der Lindenstraße betrug 1.800 Euro und wurde am 1. März überwiesen.", "de"),
    ("Der Vermieter hat die Nebenkostenabrechnung für das letzte Jahr geschickt, bitte bis Freitag prüfen.", "de"),
    ("Le propriétaire a envoyé le décompte des charges pour Paris et Lyon, à vérifier avant vendredi.", "fr"),
])
def test_a_texts_language_is_read_without_its_names(text: str, language: str) -> None:
    assert document_language(text) == language
