"""The retrieval sets pooled (issue 35): each set's questions against its own documents alone, and against
every set's documents pooled (a corpus many times larger), for the dense, keyword and hybrid legs; then the
fusion rules of ``RULES`` on both, chosen on the sets of ``TUNE`` and checked on the others.

The sets are ``retrieval_sets.ALL_SETS`` and ``dbpedia-5k`` (the leaderboard's whole DBpedia subset, 5,000
documents and 40 queries, on which the hybrid ranked below its dense leg: issue 35). Sets drawn from the same
source share their documents in the pool (``dbpedia`` is a part of ``dbpedia-5k``), so a document is there
once. Another set's document in a question's first ten counts as not relevant. Printed per set and size:
nDCG@10 and hit@5 (a judged-relevant document among the first five) of each leg; then each rule's nDCG@10
gain over the dense leg, the rule chosen on ``TUNE`` (:func:`choose_rule`) and whether it holds on the rest.

    PYTHONPATH=lib:. python bench/pooled_sets.py [--sets msmarco@43 arcd ...] [--tune arcd ...]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval_quality import CACHE, USER, Memo, QueryMemo, Setting, build, ndcg, probes  # noqa: E402
from retrieval_sets import ALL_SETS, Dataset, load  # noqa: E402

from semantic_mcp.embedding.backends import make_embedder  # noqa: E402
from semantic_mcp.search.retrieval import HybridRetriever, Mode  # noqa: E402

SETS = (*ALL_SETS, "dbpedia-5k")
# Chosen on these (alone and pooled), checked on the others: one set of each kind where there are two, and the
# 5,000-document DBpedia, the set the issue found the loss on, among the checked.
TUNE = ("msmarco@43", "arcd", "xquad-de", "xquad-ru", "cranfield", "jsquad")
SIZES = ("alone", "pooled")
SHOWN = 5

# The fusions compared, with how many numbers each one sets. "token" rules weigh a query that shows a code, number
# or name (``Calibration.token_weight``, search/tokens.py) apart from a plain one; "rare" ones only when a word of it
# is rare in the index (``Calibration.rare_term_chunks``). A third family, which lifted only
# the candidate whose coverage stood alone, was measured at commit 7d601f9 and dropped (ADR 0720).
RULES = {
    "dense order (no keyword weight)": (0, Setting("w 0", 0.0, 0.0)),
    **{f"one weight {w}": (1, Setting(f"w {w}", w, 0.0)) for w in (0.01, 0.02, 0.04)},
    **{f"one weight {w} + exact {e}": (2, Setting(f"w {w}, e {e}", w, e)) for w in (0.02, 0.04) for e in (0.04,)},
    **{f"plain {w}, token {t} + exact {e}": (3, Setting(f"w {w} plain, {t} + e {e} named", w, e, token_weight=t))
       for w, t, e in ((0.0, 0.1, 0.04), (0.02, 0.04, 0.04), (0.02, 0.06, 0.04), (0.02, 0.1, 0.0), (0.02, 0.1, 0.04))},
    # The token fusion only for a query one of whose words at most ``r`` chunks hold (``Calibration.rare_term_chunks``).
    **{f"plain 0.02, token 0.1 + exact 0.04, rare {r}": (4, Setting(f"w 0.02 plain, 0.1 + e 0.04 named, rare {r}", 0.02,
                                                                   0.04, token_weight=0.1, rare_term_chunks=r))
       for r in (1, 3, 10)},
    # The plain weight orders only when a query word is held by at most ``o`` chunks, and scores always (ADR 0721).
    **{f"plain 0.02, token 0.1 + exact 0.04, rare 3, plain orders if rare {o}": (
        5, Setting(f"w 0.02 plain ordering if rare {o}, 0.1 + e 0.04 named, rare 3", 0.02, 0.04, token_weight=0.1,
                   rare_term_chunks=3, plain_order_chunks=o)) for o in (3, 30, 100)},
}
SHIPPED = "plain 0.02, token 0.1 + exact 0.04, rare 3, plain orders if rare 30"  # the default calibration's (ADR 0721)
BEFORE = "plain 0.02, token 0.1 + exact 0.04, rare 3"  # ADR 0720's
PROBE_SLACK = 0.02  # as retrieval_quality.PROBE_SLACK: codes and names must keep being found


def family(name: str) -> str:
    """The source a set's documents come from: sets of one source share ids and documents in the pool."""
    return name.split("@")[0].removesuffix("-5k")


def prefixed(data: Dataset) -> Dataset:
    """``data`` with its document ids (in ``docs`` and ``qrels``) prefixed with its source, unique across sets."""
    tag = family(data.name)
    return Dataset(data.name, [replace(d, source_id=f"{tag}/{d.source_id}") for d in data.docs], data.queries,
                   {q: {f"{tag}/{d}": g for d, g in grades.items()} for q, grades in data.qrels.items()})


def per_query(retriever: HybridRetriever, data: Dataset, mode: Mode) -> np.ndarray:
    """nDCG@10 and hit@5 of each of ``data``'s judged queries: shape (queries, 2)."""
    rows = []
    for qid, grades in data.qrels.items():
        ranked = [c.doc_key.split(":", 1)[1] for c in retriever.search_sync(USER, data.queries[qid], 10, mode=mode)]
        rows.append((ndcg(ranked, grades), float(any(grades.get(d, 0) > 0 for d in ranked[:SHOWN]))))
    return np.array(rows)


def choose_rule(gains: dict[str, dict[tuple[str, str], float]], probe: dict[str, dict[tuple[str, str], float]],
                cells: Sequence[tuple[str, str]]) -> str:
    """The rule with the fewest numbers that is at or above the dense leg (to the third decimal) in every cell
    (set, size) of ``cells`` and keeps their probes within ``PROBE_SLACK`` of the best rule's; among those with
    as few numbers, the highest mean gain. None qualifying: the highest least gain."""
    def holds(rule: str) -> bool:
        return all(round(gains[rule][c], 3) >= 0 and probe[rule][c] >= max(p[c] for p in probe.values()) - PROBE_SLACK
                   for c in cells)
    qualified = [r for r in RULES if holds(r)]
    if not qualified:
        return ""
    return min(qualified, key=lambda r: (RULES[r][0], -float(np.mean([gains[r][c] for c in cells]))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS))
    parser.add_argument("--tune", nargs="+", default=list(TUNE), help="the sets the rule is chosen on")
    args = parser.parse_args()
    embedder = QueryMemo(make_embedder(cache_path=CACHE))
    sets = {name: prefixed(load(name)) for name in args.sets}
    pool_docs = list({d.source_id: d for data in sets.values() for d in data.docs}.values())
    legs: dict[tuple[str, str], dict[str, np.ndarray]] = {}
    gains: dict[str, dict[tuple[str, str], float]] = {rule: {} for rule in RULES}
    errors: dict[str, dict[tuple[str, str], float]] = {rule: {} for rule in RULES}
    probe: dict[str, dict[tuple[str, str], float]] = {rule: {} for rule in RULES}
    with tempfile.TemporaryDirectory() as tmp:
        pool = build(Dataset("pooled", pool_docs, {}, {}), embedder, Path(tmp))
        for name, data in sets.items():
            alone = build(data, embedder, Path(tmp))
            exact = probes(data)
            for size, retriever in zip(SIZES, (alone, pool), strict=True):
                retriever.store, retriever.keyword = Memo(retriever.store), Memo(retriever.keyword)  # type: ignore[assignment]
                base = retriever.calibration()
                cell = (name, size)
                legs[cell] = {mode: per_query(retriever, data, mode) for mode in ("dense", "keyword", "hybrid")}
                for rule, (_, setting) in RULES.items():
                    setting.apply(retriever, base)
                    gain = per_query(retriever, data, "hybrid")[:, 0] - legs[cell]["dense"][:, 0]
                    gains[rule][cell] = float(gain.mean())
                    errors[rule][cell] = float(gain.std(ddof=1) / math.sqrt(len(gain)))
                    probe[rule][cell] = float(per_query(retriever, exact, "hybrid")[:, 0].mean())
                retriever.__dict__.pop("calibration", None)  # back to the shipped fusion
                retriever.__dict__.pop("_mix", None)
                retriever.store, retriever.keyword = retriever.store._inner, retriever.keyword._inner  # type: ignore[attr-defined]
            print(f"{name}: measured", file=sys.stderr)

    names = list(sets)
    print(f"\nRetrieval sets alone and pooled ({len(pool_docs)} documents), embedder `{embedder.model_id}`, "
          "shipped fusion. nDCG@10 / hit@5\n")
    print("| Set | Docs | Queries | " + " | ".join(f"{leg} {size}" for size in SIZES for leg in ("dense", "keyword", "**hybrid**"))
          + " | hybrid ≥ dense |\n" + "|---" * 10 + "|")
    for name in names:
        cells = [legs[name, size][mode].mean(axis=0) for size in SIZES for mode in ("dense", "keyword", "hybrid")]
        holds = all(round(legs[name, s]["hybrid"][:, 0].mean() - legs[name, s]["dense"][:, 0].mean(), 3) >= 0 for s in SIZES)
        print(f"| {name} | {len(sets[name].docs)} | {len(sets[name].qrels)} | "
              + " | ".join(f"{v[0]:.3f} / {v[1]:.2f}" for v in cells) + f" | {'yes' if holds else '**no**'} |")

    tune = [(n, s) for n in names if n in args.tune for s in SIZES]
    check = [(n, s) for n in names if n not in args.tune for s in SIZES]
    every = tune + check
    chosen = choose_rule(gains, probe, tune)
    simplest_everywhere = choose_rule(gains, probe, every)
    print(f"\nFusion rules: nDCG@10 gain over the dense leg per set (alone / pooled), the least gain over the tuning "
          f"sets ({', '.join(n for n in names if n in args.tune)}) and the checked ones; probe nDCG@10 (exact "
          "tokens) least over the cells alone and pooled.\n")
    print("| Rule | numbers | " + " | ".join(names) + " | least, tuned | least, checked | probes alone / pooled |\n" + "|---" * (len(names) + 5) + "|")
    for rule, (count, _) in RULES.items():
        mark = (" **(chosen)**" if rule == chosen else "") + {SHIPPED: " (shipped)", BEFORE: " (before)"}.get(rule, "")
        print(f"| {rule}{mark} | {count} | " + " | ".join(f"{gains[rule][n, 'alone']:+.3f} / {gains[rule][n, 'pooled']:+.3f}"
                                                         for n in names)
              + f" | {min(gains[rule][c] for c in tune):+.3f} | {min((gains[rule][c] for c in check), default=math.nan):+.3f}"
              f" | {min(probe[rule][n, 'alone'] for n in names):.3f} / {min(probe[rule][n, 'pooled'] for n in names):.3f} |")
    failed = [f"{n} {s} ({gains[chosen][n, s]:+.3f} ± {errors[chosen][n, s]:.3f})" for n, s in check
              if chosen and round(gains[chosen][n, s], 3) < 0]
    print(f"\nChosen on the tuning sets: {chosen or 'none holds on all of them'}. On the checked sets: "
          + (f"below dense on {'; '.join(failed)}." if failed else "at or above dense on every one, alone and pooled.")
          + f"\nThe simplest rule at or above dense in every cell: {simplest_everywhere or 'none'}.")


if __name__ == "__main__":
    main()
