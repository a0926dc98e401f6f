"""The cross-encoder re-ranking stage (search/rerank.py, ADR 0290): it re-orders the top candidates with the
model a package ships, says so when that package is missing, stops at its time budget, and only ever sees
and re-orders what was already retrieved, cut off and verified for the caller."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from semantic_mcp.core.config import Deployment
from semantic_mcp.core.documents import DocRef
from semantic_mcp.core.filters import SearchFilters
from semantic_mcp.search.rerank import MS_MARCO_MINILM, CrossEncoder, Reranker, ShippedModel, from_setting
from semantic_mcp.search.calibration import UNCALIBRATED
from semantic_mcp.search.retrieval import Candidate
from semantic_mcp.search.service import SearchService
from semantic_mcp.search.verify import Verification

MODEL_MISSING = CrossEncoder().unavailable()


def candidate(key: str, text: str, score: float, owner: str = "alice") -> Candidate:
    return Candidate(f"file:{key}", f"{key}#0", text, {"doc_type": "file", "title": key, "owner": owner}, score)


# The answer comes last in hybrid order, below two passages that share its words but not its meaning.
EGG_QUERY = "how long should I boil an egg to get it hard boiled?"
EGG_CANDIDATES = [
    candidate("eggs-price", "Egg prices rose again this month; a dozen eggs now costs more than boiled coffee.", 0.62),
    candidate("kettle", "The kettle boils water in two minutes. Do not boil it dry.", 0.55),
    candidate("hard-boiled", "For hard-boiled eggs, simmer them for 10 to 12 minutes, then cool them in cold water.",
              0.50),
    candidate("paris", "Paris is the capital and largest city of France.", 0.40),
]


@pytest.mark.skipif(MODEL_MISSING is not None, reason=f"no shipped cross-encoder here: {MODEL_MISSING}")
def test_the_shipped_model_lifts_the_answer_and_keeps_every_score() -> None:
    result = Reranker(CrossEncoder(), candidates=4).rerank(EGG_QUERY, list(EGG_CANDIDATES))
    assert result.applied and result.note is None
    assert result.candidates[0].doc_key == "file:hard-boiled", [c.doc_key for c in result.candidates]
    assert sorted(c.doc_key for c in result.candidates) == sorted(c.doc_key for c in EGG_CANDIDATES)
    assert {c.doc_key: c.score for c in result.candidates} == {c.doc_key: c.score for c in EGG_CANDIDATES}


@pytest.mark.skipif(MODEL_MISSING is not None, reason=f"no shipped cross-encoder here: {MODEL_MISSING}")
def test_only_the_first_n_are_scored_and_reordered() -> None:
    result = Reranker(CrossEncoder(), candidates=2).rerank(EGG_QUERY, list(EGG_CANDIDATES))
    assert [c.doc_key for c in result.candidates[2:]] == ["file:hard-boiled", "file:paris"]


@pytest.mark.skipif(MODEL_MISSING is not None, reason=f"no shipped cross-encoder here: {MODEL_MISSING}")
def test_a_query_longer_than_the_models_window_is_scored_too() -> None:
    """A search query may hold 2,000 characters; a Russian question in the English model's word pieces fills
    its 128 tokens alone (found by bench/retrieval_quality.py on XQuAD: the stage raised, and the search with it)."""
    query = "Сколько минут нужно варить яйцо вкрутую, чтобы желток стал твёрдым? " * 12
    result = Reranker(CrossEncoder(), candidates=4).rerank(query, list(EGG_CANDIDATES))
    assert result.applied and result.note is None
    assert sorted(c.doc_key for c in result.candidates) == sorted(c.doc_key for c in EGG_CANDIDATES)


def test_a_failing_model_leaves_the_hybrid_order_and_says_so() -> None:
    class Broken:
        model = MS_MARCO_MINILM

        def unavailable(self) -> None:
            return None

        def score(self, query: str, passages: list[str]) -> np.ndarray:
            raise RuntimeError("the tokenizer gave up")

    result = Reranker(Broken(), candidates=4).rerank(EGG_QUERY, list(EGG_CANDIDATES))
    assert not result.applied and result.candidates == EGG_CANDIDATES
    assert result.note is not None and "hybrid order" in result.note


def test_without_the_package_the_hybrid_order_stands_and_the_note_says_how_to_install_it() -> None:
    absent = CrossEncoder(ShippedModel("no-such-package-semantic-mcp", "x", "some cross-encoder", "English"))
    reranker = Reranker(absent, candidates=4)
    result = reranker.rerank(EGG_QUERY, list(EGG_CANDIDATES))
    assert not result.applied and result.candidates == EGG_CANDIDATES
    assert result.note is not None and "no-such-package-semantic-mcp" in result.note
    assert "requirements-rerank.txt" in result.note
    assert "not installed" in (reranker.status()["unavailable"] or "")


@dataclass
class SlowScorer:
    """Each call takes a second on the injected clock; records what it was asked to score."""

    now: list[float] = field(default_factory=lambda: [0.0])
    seen: list[str] = field(default_factory=list)
    model = MS_MARCO_MINILM

    def unavailable(self) -> None:
        return None

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        self.now[0] += 1.0
        self.seen.extend(passages)
        return np.array([10.0 if "hard-boiled" in p else -10.0 for p in passages])


def test_the_stage_stops_at_its_budget_and_keeps_the_hybrid_order() -> None:
    scorer = SlowScorer()
    reranker = Reranker(scorer, candidates=4, batch=1, budget_seconds=1.5, clock=lambda: scorer.now[0])
    result = reranker.rerank(EGG_QUERY, list(EGG_CANDIDATES))
    assert len(scorer.seen) == 2, "scoring stops once the budget is spent"
    assert not result.applied and result.candidates == EGG_CANDIDATES
    assert result.note is not None and "longer than 1.5s" in result.note

    scorer = SlowScorer()
    within = Reranker(scorer, candidates=4, batch=2, budget_seconds=1.5, clock=lambda: scorer.now[0])
    assert within.rerank(EGG_QUERY, list(EGG_CANDIDATES)).candidates[0].doc_key == "file:hard-boiled"


def test_an_exact_match_stays_ahead_of_what_the_model_prefers() -> None:
    """A code the query names exactly: the model reads meaning, not "K7R-99Q2" against "K7R-99Q3"."""
    exact = Candidate("file:invoice", "invoice#0", "Invoice K7R-99Q2, paid.", {}, 0.45, coverage=1.0)
    result = Reranker(SlowScorer(), candidates=5, budget_seconds=60).rerank(EGG_QUERY, [*EGG_CANDIDATES, exact])
    assert [c.doc_key for c in result.candidates[:2]] == ["file:invoice", "file:hard-boiled"]


class Retriever:
    def __init__(self, candidates: list[Candidate]) -> None:
        self.candidates, self.asked = candidates, 0

    async def search(self, user, query, k, filters, *, keyword_query=None) -> list[Candidate]:  # noqa: ANN001
        self.asked = k
        return self.candidates[:k]

    def calibration(self):  # noqa: ANN201
        return UNCALIBRATED


class Verifier:
    """Nextcloud says the caller can no longer open ``gone``."""

    def __init__(self, gone: str) -> None:
        self.gone = gone

    async def verify(self, user: str, candidates: list[Candidate]) -> Verification:
        kept = [c for c in candidates if c.doc_key != self.gone]
        return Verification(kept, [DocRef(user, "file", self.gone.split(":")[1])] * (len(kept) < len(candidates)), 0)


async def test_the_stage_sees_and_reorders_only_what_the_caller_may_open() -> None:
    scorer = SlowScorer()
    # The one item verification drops is the one the model would put first.
    secret = candidate("secret", "hard-boiled eggs: the answer, in a file the caller may no longer open", 0.9)
    retriever = Retriever([secret, *EGG_CANDIDATES])
    service = SearchService(retriever, Verifier("file:secret"), "https://cloud.example",  # type: ignore[arg-type]
                            reranker=Reranker(scorer, candidates=20, budget_seconds=60))
    retrieved = await service.retrieve("alice", EGG_QUERY, 3, SearchFilters(), score_threshold=0)
    assert retriever.asked == 20, "the stage re-orders 20, so 20 are retrieved (not 3 + the verification slack)"
    assert secret.text not in scorer.seen and set(scorer.seen) == {c.text for c in EGG_CANDIDATES}
    assert [c.doc_key for c in retrieved.candidates] == ["file:hard-boiled", "file:eggs-price", "file:kettle"]
    assert "re-ranked by a cross-encoder" in retrieved.method


def test_search_rerank_is_off_unless_configured() -> None:
    assert Deployment.from_env({}).search_rerank == "off" and from_setting("off") is None
    assert Deployment.from_env({"SEARCH_RERANK": "Cross-Encoder"}).search_rerank == "cross-encoder"
    assert isinstance(from_setting("cross-encoder"), Reranker)
    with pytest.raises(ValueError, match="SEARCH_RERANK"):
        Deployment.from_env({"SEARCH_RERANK": "sampling"})
