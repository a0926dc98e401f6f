"""Calibration: how one embedding model's evidence becomes a score that means the same across queries,
and what the default cut-off returns (docs/adr/0250, 0270-0273, 0280, 0281, 0720, 0721).

The numbers are measured by the benches named beside them (bench/RESULTS.md); the retriever
(retrieval.py) ranks and scores with them, the search service cuts with :func:`default_cut`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .tokens import shows_token

if TYPE_CHECKING:
    from .candidates import Candidate

# Below this estimated probability of answering the query a candidate is not returned by default
# (bench/calibration.py measures what it costs and what it saves, bench/RESULTS.md).
DEFAULT_CUT_OFF = 0.3
# An exact match: a passage holding this share of the query's term weight (every distinctive word).
# A codes-and-names query ("invoice K7R-99Q2", a phone number) is far from every passage in meaning,
# so its match ranks with a bonus and passes the default cut-off whatever its score. Measured: 0.95
# or more in 4-5% of the judged answers and in 0-0.01% of the other candidates.
EXACT_MATCH_COVERAGE = 0.95
# A question that names the kind of item it wants ("my last dentist appointment", "¿mi última cita?")
# is independent evidence for candidates of that kind, so they need only this share of the cut-off.
# Set on the demo, not on the benchmark sets (which have no item types): a question in another
# language than the item (Spanish or German about an English event) scores 0.20-0.28 there,
# questions nothing answers 0.09-0.27 at best, and the other events for those questions 0.03-0.07.
NAMED_KIND_CUT_OFF_SHARE = 0.5
# For the same reason the best candidate of that kind need only stand above the query's noise floor, not by
# the full margin (ADR 0701): "how do I reach the plumber" finds the contact of Miller Plumbing 0.007 above a
# letter salad that shares the sub-word "plu", while random tokens, with or without a kind's word, stay below
# the floor. The kind vouches for its best candidate only: the next contacts stood as high (0.008) unrelated.
NAMED_KIND_NOISE_MARGIN = 0.0
# A candidate holding this share of the query's term weight holds a distinctive query token (one of four
# random tokens weighs about that): the noise floor (search/noise.py) judges the dense leg only.
NOISE_FLOOR_WAIVED_COVERAGE = 0.25


@dataclass(frozen=True)
class Calibration:
    """How one embedding model's evidence becomes a score that means the same across queries.

    Fusion: ``cosine + keyword_weight x coverage (+ exact_bonus when coverage >= EXACT_MATCH_COVERAGE)``,
    raw cosine plus the chunk's keyword coverage (:meth:`KeywordIndex.coverage`) worth ``keyword_weight``
    of cosine, plus a bonus when it holds every distinctive word of the query: a partial overlap of words
    moves a passage little, a code, number or name matched exactly moves it past look-alikes. Raw, not
    scaled over the candidates, so a match is worth the same whatever the others are; in the model's own
    cosine units (e5's span little, MiniLM's much more). With ``token_weight`` the weights depend on the
    query (:meth:`for_query`), chosen by leave-one-set-out over eleven sets (``bench/retrieval_quality.py``).

    Score: ``P(answers) = sigmoid(bias + slope x fused)``, a logistic regression on the judged
    candidates (each query weighing alike, half its answers and half the rest, so no
    set's share of relevant passages leaks in), checked on the set it was not fitted on.
    """

    keyword_weight: float
    exact_bonus: float
    bias: float
    slope: float
    cut_off: float = DEFAULT_CUT_OFF  # the default minimum score of a result (``score_threshold`` overrides it)
    noise_margin: float | None = None  # fused evidence above the query's noise floor (None: not measured)
    token_weight: float | None = None  # keyword weight (with ``exact_bonus``) for a query showing a code, number or
    # name (search/tokens.py); the others get ``keyword_weight`` and no bonus. None: one fusion for all queries.
    # Added to the evidence of a chunk in another measured language than the query (ADR 0280): e5 scores
    # such pairs systematically lower. 0: not measured for this model.
    other_language_bonus: float = 0.0
    # How much that drop varies between answers (ADR 0281): once the cut-off keeps something for a query, an
    # other-language candidate this close to the best kept one is returned too (:func:`default_cut`).
    other_language_spread: float = 0.0
    # A query showing a code, number or name gets the token fusion only when one of its words is held by at most
    # this many chunks (ADR 0720): an entity question's capitalised words ("Which actors were born in Germany?")
    # are held by hundreds of passages of a 5,000-entity corpus, and lifting them ranked it below dense. None:
    # the query's text alone decides.
    rare_term_chunks: int | None = None
    # A plain query's keyword weight orders its candidates only when one of its words is held by at most this many
    # chunks (ADR 0721); otherwise they are ordered by cosine, and the weight only scores them (the evidence the
    # cut-off needs as content grows, ADR 0310). None: it always orders.
    plain_order_chunks: int | None = None
    words_order: bool = True  # set by :meth:`for_query`: whether :meth:`ranked` counts the keyword evidence

    def for_query(self, query: str, best_above_noise: float | None = None, best_coverage: float = 0.0,
                  rarest: int | None = None) -> Calibration:
        """The fusion that ranks and scores ``query``'s candidates: call it before ``fused`` and ``probability``.

        The token fusion serves a query showing a code, number or name (search/tokens.py) one of whose words
        at most ``rare_term_chunks`` chunks hold (``rarest``, ``KeywordIndex.rarest``; None: not counted, the
        text alone decides), and one the
        embedding cannot read: its best candidate cosine rises less than ``noise_margin`` over its noise
        floor (``best_above_noise``, search/noise.py), so every random note is as close in meaning as the one
        holding a query token ("fjzilcfeysw dplgomfzbamv"), and a candidate holds a distinctive query token
        (``best_coverage``, the highest keyword coverage among its candidates): then the words decide (ADR 0273)."""
        if self.token_weight is None:
            return self
        unreadable = (self.noise_margin is not None and best_above_noise is not None
                      and best_above_noise < self.noise_margin and best_coverage >= NOISE_FLOOR_WAIVED_COVERAGE)
        token = shows_token(query) and (rarest is None or self.rare_term_chunks is None or rarest <= self.rare_term_chunks)
        if token or unreadable:
            return replace(self, token_weight=None, keyword_weight=self.token_weight)
        words_order = rarest is None or self.plain_order_chunks is None or rarest <= self.plain_order_chunks
        return replace(self, token_weight=None, exact_bonus=0.0, words_order=words_order)

    def fused(self, cosine: float, coverage: float, other_language: bool = False) -> float:
        exact = self.exact_bonus if coverage >= EXACT_MATCH_COVERAGE else 0.0
        shift = self.other_language_bonus if other_language else 0.0
        return cosine + self.keyword_weight * coverage + exact + shift

    def ranked(self, cosine: float, coverage: float, other_language: bool = False) -> float:
        """The key a candidate is ordered by: :meth:`fused`, or without the keyword evidence when the query's
        words are all common (``words_order`` False)."""
        return self.fused(cosine, coverage if self.words_order else 0.0, other_language)

    def probability(self, cosine: float, coverage: float, other_language: bool = False) -> float:
        return 1.0 / (1.0 + math.exp(-(self.bias + self.slope * self.fused(cosine, coverage, other_language))))

    def margin_for(self, best_of_named_kind: bool, score: float) -> float | None:
        """How far above the query's noise floor a candidate's evidence must rise (None: no floor): less for the
        best candidate of the kind the question names when its score reaches the full cut-off."""
        if self.noise_margin is None:
            return None
        vouched = best_of_named_kind and score >= self.cut_off
        return min(self.noise_margin, NAMED_KIND_NOISE_MARGIN) if vouched else self.noise_margin

    def keeps(self, score: float, coverage: float | None, *, named_kind: bool = False,
              above_noise: float | None = None, best_of_named_kind: bool = False, holds_role: bool = False) -> bool:
        """Whether the default cut-off keeps a candidate: it holds (nearly) every distinctive word of the
        query, an exact match whatever its similarity; or its score reaches ``cut_off`` (or
        ``NAMED_KIND_CUT_OFF_SHARE`` of it when it is the kind of item the question names) and its
        evidence rises ``noise_margin`` above the query's noise floor (``above_noise``, search/noise.py;
        ``NAMED_KIND_NOISE_MARGIN`` for the best candidate of the kind named, at the full cut-off). A contact
        holding the role the question names (``holds_role``, search/roles.py: "Klempner" and "Miller Plumbing")
        holds a distinctive word of it in translation, so, as for a query token, the floor is waived (ADR 0722)."""
        if (coverage or 0.0) >= EXACT_MATCH_COVERAGE:
            return True
        cut_off = self.cut_off * (NAMED_KIND_CUT_OFF_SHARE if named_kind else 1.0)
        margin = self.margin_for(named_kind and best_of_named_kind, score)
        noisy = (margin is not None and above_noise is not None and above_noise < margin
                 and (coverage or 0.0) < NOISE_FLOOR_WAIVED_COVERAGE and not holds_role)
        return score >= cut_off and not noisy


def vouched_for(candidates: Sequence[Candidate], named_kinds: frozenset[str] | set[str],
                preferred: Callable[[Candidate], bool] = lambda _: False) -> list[Candidate]:
    """The candidate each kind the question names vouches for (ADR 0701): of that kind's candidates (best first),
    the first the question's other words point to (``preferred``: the contact holding the role it names, ADR
    0722), else the first."""
    of_kind = [[c for c in candidates if c.metadata.get("doc_type") == kind] for kind in named_kinds]
    return [next((c for c in found if preferred(c)), found[0]) for found in of_kind if found]


def default_cut(calibration: Calibration, candidates: Sequence[Candidate],
                named_kinds: frozenset[str] | set[str] = frozenset(),
                preferred: Callable[[Candidate], bool] = lambda _: False) -> list[Candidate]:
    """What the default cut-off returns of ``candidates`` (one query's, best first), in their order.

    Each candidate is judged by :meth:`Calibration.keeps` (``named_kinds``: the item kinds the question
    names). Then, when that keeps anything, an other-language candidate whose evidence is within
    ``other_language_spread`` of the best kept one's is returned too: the offset it got is the median drop
    across languages, and an answer's own drop varies by that much (ADR 0281), so the score cannot tell
    it from what was kept. Whether a query returns anything is decided as before: a query nothing passes
    (gibberish, a question nothing answers) still gets nothing. The kept one must have cleared the noise
    floor on its evidence, not been kept for its words alone (an exact match, a query token)."""
    vouched = vouched_for(candidates, named_kinds, preferred)
    kept = [calibration.keeps(c.score, c.coverage, named_kind=c.metadata.get("doc_type") in named_kinds,
                              above_noise=c.above_noise, best_of_named_kind=any(c is v for v in vouched),
                              holds_role=preferred(c))
            for c in candidates]
    margin = calibration.noise_margin if calibration.noise_margin is not None else -math.inf
    best = max((c.above_noise for c, k in zip(candidates, kept, strict=True)
                if k and c.above_noise is not None and c.above_noise >= margin), default=None)
    spread = calibration.other_language_spread
    return [c for c, k in zip(candidates, kept, strict=True)
            if k or (best is not None and spread > 0 and c.other_language and c.above_noise is not None
                     and c.above_noise >= best - spread)]


# Per embedder ``model_id``, from ``bench/calibration.py --embedder NAME`` (bench/RESULTS.md): e5's weights
# chosen over eleven sets (ADR 0273), its scores fitted on MS MARCO + ARCD; MiniLM, English-only, on MS MARCO
# alone. MiniLM's cosines span far more than e5's, hence its larger weights in cosine units.
CALIBRATIONS: dict[str, Calibration] = {
    "multilingual-e5-small-q4": Calibration(keyword_weight=0.02, exact_bonus=0.04, bias=-28.29, slope=33.19,
                                          noise_margin=0.04, token_weight=0.1, rare_term_chunks=3,  # ADR 0720;
                                          plain_order_chunks=30,  # ADR 0721;
                                          # ADR 0281 (language_offset.py),
                                          # the offset halved by ADR 0310 (corpus_growth.py): as the content
                                          # grows, 0.05 lifts passing mentions in other languages over answers
                                          other_language_bonus=0.025, other_language_spread=0.024),
    "all-MiniLM-L6-v2-onnx-int8": Calibration(keyword_weight=0.3, exact_bonus=0.1, bias=-3.25, slope=5.35),
}
# Models without a fitted calibration (remote openai/ollama, the Portuguese e5 variant): their cosine
# scale is unknown, so their score is the relative mix below (the fusion shipped before calibration:
# nDCG@10 0.811 / 0.878 with e5), meaningful within one search only, and nothing is cut by default.
UNCALIBRATED = Calibration(keyword_weight=0.0, exact_bonus=0.0, bias=0.0, slope=0.0, cut_off=0.0)
RELATIVE_KEYWORD_WEIGHT = 0.3


def calibration_for(model_id: str) -> Calibration:
    """The calibration fitted for ``model_id``, or the conservative fallback for other (remote) models."""
    return CALIBRATIONS.get(model_id, UNCALIBRATED)
