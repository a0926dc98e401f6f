"""How text becomes the keyword index's terms: normalisation, the tokenizer, the query's terms.

Text is normalised before indexing and querying alike: NFKC, Arabic and Hebrew vowel marks
removed, Arabic letter variants folded (alef forms, alef maqsura, teh marbuta), and Han and
kana characters spaced apart so that scripts written without spaces get one token per
character. The FTS5 tokenizer is ``unicode61`` with ``remove_diacritics 2`` and combining marks
kept inside tokens (the default would cut Arabic and Indic words at every mark), wrapped in
``porter`` (English suffixes; other scripts pass through). Measured BM25 nDCG@10 on ARCD
(Arabic): 0.755 with the default tokenizer, 0.800 with this normalisation and tokenizer, 0.786
with ``trigram``; on MS MARCO (English) ``porter`` lifts 0.689 to 0.720.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

MAX_QUERY_TERMS = 64
# How many postings one search may score. FTS5 computes ``bm25()`` for every chunk that matches
# any query term (~1.6 us each), so a query with common words ("causes", "what") scored tens of
# thousands of chunks: 50-250 ms at 100k chunks. The terms are taken rarest first while their
# chunk counts add up to at most this share of the user's chunks (and at least the rarest term,
# and never less than MATCH_BUDGET_MIN, which costs ~3 ms, so small indexes keep every term).
# The left-out common terms still count in the hybrid's keyword coverage, which rescores every
# candidate. Measured (bench/RESULTS-search.md): hybrid nDCG@10 unchanged on MS MARCO and ARCD,
# keyword leg alone -0.002 / -0.009; FTS5 search 50 -> 15 ms at 100k chunks.
MATCH_BUDGET_SHARE = 0.15
MATCH_BUDGET_MIN = 2000
TOKENIZER = "porter unicode61 remove_diacritics 2 categories 'L* N* Co M*'"

_VOWEL_MARKS = re.compile("[\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed]")
_ALEF_FORMS = re.compile("[\u0622\u0623\u0625\u0671]")
_FOLD = str.maketrans({"\u0649": "\u064a", "\u0629": "\u0647", "\u0640": None})  # ى→ي, ة→ه, tatweel
_SPACED = re.compile("([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])")


def normalize(text: str) -> str:
    """The form both documents and queries are indexed and matched in."""
    text = _VOWEL_MARKS.sub("", unicodedata.normalize("NFKC", text))
    return _SPACED.sub(r" \1 ", _ALEF_FORMS.sub("\u0627", text).translate(_FOLD))


def match_terms(terms: Sequence[str], frequency: dict[str, int], total: int) -> list[str]:
    """The terms a search matches on: rarest first, within the scoring budget (see above); terms
    no chunk contains are left out (they match nothing)."""
    budget = max(MATCH_BUDGET_SHARE * total, MATCH_BUDGET_MIN)
    kept: list[str] = []
    volume = 0
    for term in sorted((t for t in terms if frequency[t]), key=lambda t: frequency[t]):
        if kept and volume + frequency[term] > budget:
            break
        kept.append(term)
        volume += frequency[term]
    return kept


def _is_token_char(char: str) -> bool:
    return unicodedata.category(char)[0] in "LNM" or unicodedata.category(char) == "Co"


def query_terms(query: str) -> list[str]:
    """The distinct tokens of ``query`` as the index's tokenizer cuts them, lower-cased."""
    terms: list[str] = []
    current: list[str] = []
    for char in normalize(query) + " ":
        if _is_token_char(char):
            current.append(char)
        elif current:
            terms.append("".join(current).lower())
            current = []
    return list(dict.fromkeys(terms))[:MAX_QUERY_TERMS]


def fts_query(terms: Sequence[str]) -> str | None:
    """A safe FTS5 query for ``terms`` (as :func:`query_terms` cuts them): every term quoted
    (operators and ``*``, ``"``, ``NEAR(`` become plain text) and OR-ed, so BM25 ranks chunks by
    how many and how rare the terms they contain. None when there is no term."""
    return " OR ".join(f'"{term}"' for term in terms) or None
