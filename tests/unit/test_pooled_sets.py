"""bench/pooled_sets.py: the sets pooled share no ids, a set drawn from another's source shares its documents,
and the rule chosen is the one with the fewest numbers that holds on every cell (ADR 0720)."""

from __future__ import annotations

from bench.pooled_sets import RULES, choose_rule, family, prefixed
from bench.retrieval_sets import load


def test_the_5000_document_dbpedia_loads_and_holds_the_600_document_one() -> None:
    whole, part = load("dbpedia-5k"), load("dbpedia")
    ids = {d.source_id for d in whole.docs}
    assert len(ids) == len(whole.docs) == 5000 and len(whole.qrels) == 40
    assert {d.source_id for d in part.docs} <= ids and set(part.qrels) <= set(whole.qrels)
    assert all(any(g > 0 and d in ids for d, g in grades.items()) for grades in whole.qrels.values())


def test_pooled_ids_are_unique_across_sets_but_shared_within_a_source() -> None:
    assert family("msmarco@43") == "msmarco" and family("dbpedia-5k") == family("dbpedia") == "dbpedia"
    cranfield, cisi = prefixed(load("cranfield")), prefixed(load("cisi"))
    assert not {d.source_id for d in cranfield.docs} & {d.source_id for d in cisi.docs}  # both number from 1
    judged = {d for grades in cisi.qrels.values() for d in grades}
    assert judged <= {d.source_id for d in cisi.docs}
    whole, part = prefixed(load("dbpedia-5k")), prefixed(load("dbpedia"))
    assert {d.source_id for d in part.docs} <= {d.source_id for d in whole.docs}


def test_the_rule_chosen_has_the_fewest_numbers_that_hold_on_every_cell_and_keep_the_probes() -> None:
    cells = [("one", "alone"), ("one", "pooled"), ("two", "alone"), ("two", "pooled")]
    gains = {rule: dict.fromkeys(cells, 0.01) for rule in RULES}
    probe = {rule: dict.fromkeys(cells, 1.0) for rule in RULES}
    simplest = min(RULES, key=lambda r: RULES[r][0])
    assert choose_rule(gains, probe, cells) == simplest
    probe[simplest][("two", "pooled")] = 0.9  # codes and names no longer found there
    gains["one weight 0.02"][("one", "alone")] = -0.001  # below dense on one cell
    gains["one weight 0.01"][("one", "alone")] = 0.02  # the best mean among the one-number rules left
    assert choose_rule(gains, probe, cells) == "one weight 0.01"
    for rule in RULES:
        gains[rule][("two", "alone")] = -0.01
    assert choose_rule(gains, probe, cells) == ""  # none holds
