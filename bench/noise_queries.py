"""Random-token queries must return nothing, unless a token matches a note exactly; answers must stay.

The corpus: the contacts, events, cards and notes of ``structured_items.py`` plus notes that are
random tokens themselves (codes, letter salad), through the production ``chunk_records``,
``VectorStore``, ``KeywordIndex`` and ``HybridRetriever``. The default cut-off
(``Calibration.keeps``, with each candidate's height above the query's noise floor,
``search/noise.py``) decides what a search returns. Printed:

1. the choice of ``noise_margin``, on a *tuning* draw of random-token queries (seed ``TUNE_SEED``):
   the share that return anything, and the structured-item questions kept, per margin;
2. with the shipped margin, on a *separate* draw of 200 queries (``TEST_SEED``, the one
   tests/unit/test_noise_queries.py uses): the share returning anything, with and without the floor;
   the share of exact-token queries (a token of one random note) and of a token plus another random
   token finding their note;
3. recall@10 at the default cut-off on the judged queries of every benchmark set (``ALL_SETS``), and
   the share of exact-token probes kept, with and without the floor.

    PYTHONPATH=lib:. python bench/noise_queries.py [--sets msmarco arcd ...]
"""

from __future__ import annotations

import argparse
import random
import string
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval_quality import CACHE, USER, QueryMemo, build, probes, recall  # noqa: E402
from retrieval_sets import ALL_SETS, Dataset, load  # noqa: E402
from structured_items import QUESTIONS, items  # noqa: E402

from semantic_mcp.core.documents import SourceDocument  # noqa: E402
from semantic_mcp.embedding.backends import make_embedder  # noqa: E402
from semantic_mcp.search.calibration import Calibration, default_cut  # noqa: E402
from semantic_mcp.search.retrieval import HybridRetriever  # noqa: E402

TUNE_SEED, TEST_SEED, NOTES_SEED = 1, 2, 3
QUERIES = 200
K = 10
MARGINS = (None, 0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06)


def random_token(rng: random.Random) -> str:
    """Letter salad (lower or capitalised) or a code of letters and digits, 3-12 characters."""
    kind = rng.random()
    if kind < 0.6:
        return "".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 12)))
    if kind < 0.75:
        return "".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 10))).capitalize()
    code = "".join(rng.choices(string.ascii_uppercase + string.digits, k=rng.randint(4, 9)))
    return code if rng.random() < 0.5 else f"{code[:3]}-{code[3:]}"


def random_texts(count: int, seed: int, words: tuple[int, int] = (1, 3)) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(random_token(rng) for _ in range(rng.randint(*words))) for _ in range(count)]


def noise_notes(count: int = 60) -> list[SourceDocument]:
    """Notes whose whole text is random tokens, all titled alike (a numbered title such as "N5" would be a
    token a random code can hold: "TG3-N5" matches it exactly)."""
    return [SourceDocument("note", str(900 + i), "Code word", text, 0, "1", "")
            for i, text in enumerate(random_texts(count, NOTES_SEED, (1, 4)))]


def exact_queries(notes: list[SourceDocument], seed: int = TEST_SEED) -> list[tuple[str, str, str]]:
    """(a token of one noise note, the same plus a random token, that note's key)."""
    rng = random.Random(seed)
    return [(token, f"{token} {random_token(rng)}", f"note:{note.source_id}")
            for note in notes for token in [rng.choice(note.text.split())]]


def returned(retriever: HybridRetriever, calibration: Calibration, query: str) -> list[str]:
    """Titles and keys of what the default cut-off returns for ``query`` under ``calibration``."""
    return [name for c in default_cut(calibration, retriever.search_sync(USER, query, K))
            for name in (c.metadata["title"], c.doc_key)]


def without_floor(calibration: Calibration) -> Calibration:
    return replace(calibration, noise_margin=None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", default=list(ALL_SETS))
    args = parser.parse_args()
    embedder = QueryMemo(make_embedder(cache_path=CACHE))
    notes = noise_notes()
    with tempfile.TemporaryDirectory() as tmp:
        retriever = build(Dataset("noise", items() + notes, {}, {}), embedder, Path(tmp))
        shipped = retriever.calibration()

        print(f"\nNoise queries, embedder `{embedder.model_id}`, shipped noise_margin {shipped.noise_margin}\n")
        print("Choosing the margin (tuning draw, seed 1):\n")
        print("| noise_margin | random-token queries returning anything | structured-item questions returned |")
        print("|---|---|---|")
        tuning = random_texts(QUERIES, TUNE_SEED)
        for margin in MARGINS:
            calibration = replace(shipped, noise_margin=margin)
            noisy = sum(bool(returned(retriever, calibration, q)) for q in tuning) / len(tuning)
            kept = sum(title in returned(retriever, calibration, q) for q, _, title in QUESTIONS) / len(QUESTIONS)
            print(f"| {margin} | {noisy:.3f} | {kept:.2f} |")

        print("\nWith the shipped margin (test draw, seed 2):\n")
        print("| Check | without the floor | with the floor |\n|---|---|---|")
        test = random_texts(QUERIES, TEST_SEED)
        exact = exact_queries(notes)
        for label, share in (
            (f"{len(test)} random-token queries returning anything",
             lambda c: sum(bool(returned(retriever, c, q)) for q in test) / len(test)),
            (f"{len(exact)} exact-token queries finding their note",
             lambda c: sum(title in returned(retriever, c, q) for q, _, title in exact) / len(exact)),
            (f"{len(exact)} exact token + a random token finding the note",
             lambda c: sum(title in returned(retriever, c, q) for _, q, title in exact) / len(exact)),
        ):
            print(f"| {label} | {share(without_floor(shipped)):.3f} | {share(shipped):.3f} |")

    print("\nAnswerable queries at the default cut-off:\n")
    print("| Set | Queries | Recall@10 without the floor | with | change |\n|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets:
            data = load(name)
            retriever = build(data, embedder, Path(tmp))
            for queries in (data, probes(data)):
                scores = []
                for calibration in (without_floor(shipped), shipped):
                    per_query = []
                    for qid, grades in queries.qrels.items():
                        kept = [c.doc_key.split(":", 1)[1]
                                for c in default_cut(calibration, retriever.search_sync(USER, queries.queries[qid], K))]
                        per_query.append(recall(kept, grades))
                    scores.append(sum(per_query) / len(per_query))
                print(f"| {queries.name} | {len(queries.qrels)} | {scores[0]:.3f} | {scores[1]:.3f} | "
                      f"{scores[1] - scores[0]:+.3f} |")


if __name__ == "__main__":
    main()
