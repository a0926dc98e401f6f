"""The benchmark sets load offline and their judgements point at documents they hold (bench/sets/README.md)."""

from __future__ import annotations

import pytest

from bench.retrieval_sets import ALL_SETS, load


@pytest.mark.parametrize("name", ALL_SETS)
def test_every_set_loads_with_judgements_on_its_own_documents(name: str) -> None:
    data = load(name)
    ids = {doc.source_id for doc in data.docs}
    assert len(ids) == len(data.docs) <= 5000
    assert 10 <= len(data.qrels) <= 150
    assert all(data.queries[qid].strip() for qid in data.qrels)
    # Every query can be answered from the corpus, but for one ARCD query (of 50) of the shared set.
    unanswerable = [q for q, grades in data.qrels.items() if not any(g > 0 and d in ids for d, g in grades.items())]
    assert len(unanswerable) <= len(data.qrels) // 50, unanswerable


def test_the_one_standard_error_rule_takes_the_least_keyword_weight_within_the_error() -> None:
    """``choose_within_one_se`` (bench/RESULTS.md): of the adaptive settings within one standard error of
    ``choose``'s pick, and never below dense on a set, the least plain-query weight, then the least token
    weight or (``then="mean gain"``) the best mean gain."""
    from bench.retrieval_quality import ADAPTIVE, choose, choose_within_one_se

    labels = [s.label for s in ADAPTIVE]
    by = {(s.keyword_weight, s.token_weight): s.label for s in ADAPTIVE}
    sets = ["one", "two"]
    gains = {label: {"one": 0.0, "two": 0.0} for label in labels}
    gains[by[0.04, 0.1]] = {"one": 0.020, "two": 0.020}  # choose's pick
    gains[by[0.02, 0.06]] = {"one": 0.015, "two": 0.017}  # within its error (0.005)
    gains[by[0.02, 0.04]] = {"one": 0.020, "two": -0.002}  # within it on the mean, but loses on "two"
    gains[by[0.02, 0.1]] = {"one": 0.016, "two": 0.019}  # within it, a higher mean than (0.02, 0.06)
    gains[by[0.01, 0.1]] = {"one": 0.010, "two": 0.010}  # beyond the error
    errors = {label: {"one": 0.005 * 2 ** 0.5, "two": 0.005 * 2 ** 0.5} for label in labels}
    probe = {label: {"one": 1.0, "two": 1.0} for label in labels}

    assert choose(gains, probe, sets, labels) == by[0.04, 0.1]
    assert choose_within_one_se(gains, errors, probe, sets, labels) == by[0.02, 0.06]
    assert choose_within_one_se(gains, errors, probe, sets, labels, then="mean gain") == by[0.02, 0.1]
    errors = {label: {"one": 0.0, "two": 0.0} for label in labels}  # no error: the pick itself
    assert choose_within_one_se(gains, errors, probe, sets, labels) == by[0.04, 0.1]


def test_the_benches_texts_are_full_windows_of_prose_even_past_the_end_of_the_passages() -> None:
    """bench/org_scale.py and org_search.py ask for more text than the shared passages hold: every window
    must still be prose of the size asked (87 % of the organisation's items were once a one-line stub)."""
    from bench.indexing import passages

    windows = passages(4000, 550)  # 2.2 million words asked, about 300,000 held
    assert len(windows) == 4000 and len(set(windows)) == 4000
    assert all(len(window.split()) == 550 for window in windows)
