"""Whether a query shows something to match exactly: a code, a number or a name.

The keyword leg earns its weight on such queries ("invoice K7R-99Q2", "+15555550101", "Carol Jones"):
the passage holding the token is the answer, and the embedding may rank look-alikes above it. On
plain questions ("how do I make breakfast crepes") partial word overlap is weak evidence, and on
lowercase web questions (MS MARCO) any keyword weight ranked below the dense leg. So the fusion
weighs keywords per query (``Calibration.for_query``), chosen by leave-one-set-out over eleven sets
(``bench/retrieval_quality.py``, docs/adr/0270). Read from the text alone: no model, any script with
digits or capitals (Arabic has neither, so its questions count as plain, unless the embedding cannot read
them: ``Calibration.for_query``, docs/adr/0273).
"""

from __future__ import annotations

_EDGES = ".,;:()[]\"'«»?!¿¡"


def shows_token(query: str) -> bool:
    """A word with a digit anywhere, or a capitalised or upper-case word of two letters or more after the
    first (a name, a code, an acronym; the first word of a question is capitalised whatever it is, and a
    single capital is mostly the English "I")."""
    words = [w.strip(_EDGES) for w in query.split()]
    return any(any(ch.isdigit() for ch in w) for w in words) or any(w[:1].isupper() and len(w) > 1 for w in words[1:])
