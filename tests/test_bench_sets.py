"""The benchmark sets load offline and their judgements point at documents they hold (bench/sets/README.md)."""

from __future__ import annotations

import pytest

from bench.retrieval_quality import ALL_SETS, load


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
