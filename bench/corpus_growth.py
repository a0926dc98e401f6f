"""Do answers hold as a Nextcloud grows? One person's content at 1x, 10x and 100x its size.

The corpus (bench/growth_corpus.py): the structured items and notes people ask about, plus filler that shares
the questions' common words in other contexts (minutes, mails, reports, tables, some in other languages).
Each question goes the way a search does (``SearchService.retrieve`` without the Nextcloud check): the
hybrid's candidates, the default cut-off (``default_cut``, with the item kinds the question names) and the
question's time and type cues (``apply_intent``); the first five are what the caller sees. Printed, per size:
hit@5 and MRR of the item the question is about, the share of questions that get nothing, per kind of
question; the questions answered at 1x that get nothing at a larger size; and the share of random-token
queries (``noise_queries.random_texts``, its test draw) and of questions nothing answers that get anything.

The retrieval sets pooled, each set's questions against every set's documents: bench/pooled_sets.py.

    PYTHONPATH=lib:. python bench/corpus_growth.py [--sizes 1 10 100]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from growth_corpus import KINDS, QUESTIONS, UNANSWERABLE, corpus  # noqa: E402
from noise_queries import TEST_SEED, random_texts  # noqa: E402
from retrieval_quality import CACHE, USER, QueryMemo, build  # noqa: E402
from retrieval_sets import Dataset  # noqa: E402
from structured_items import NOW  # noqa: E402

from semantic_mcp.embedding.backends import make_embedder  # noqa: E402
from semantic_mcp.search.calibration import default_cut  # noqa: E402
from semantic_mcp.search.intent import apply_intent, read_intent  # noqa: E402
from semantic_mcp.search.retrieval import HybridRetriever  # noqa: E402
from semantic_mcp.search.service import VERIFY_SLACK  # noqa: E402

SHOWN = 5


def shown(retriever: HybridRetriever, query: str) -> list[str]:
    """The titles a search returns for ``query``, in order: cut, then ordered by the query's cues."""
    intent = read_intent(query, NOW)
    candidates = retriever.search_sync(USER, query, SHOWN + VERIFY_SLACK)
    passing = default_cut(retriever.calibration(), candidates, set(intent.doc_types), intent.names_role_of)
    return [c.metadata["title"] for c in apply_intent(passing, intent)[:SHOWN]]


def measure(retriever: HybridRetriever) -> dict[str, list[str]]:
    return {question: shown(retriever, question) for question, _, _ in QUESTIONS}


def table(results: dict[int, dict[str, list[str]]]) -> None:
    print("| Size | Questions | hit@5 | MRR | get nothing | " + " | ".join(f"hit@5 {k}" for k in KINDS) + " |")
    print("|---|---|---|---|---|" + "---|" * len(KINDS))
    for size, returned in results.items():
        rows = [(kind, title in returned[q], next((1 / (i + 1) for i, t in enumerate(returned[q]) if t == title), 0.0),
                 not returned[q]) for q, kind, title in QUESTIONS]
        by_kind = {k: [hit for kind, hit, _, _ in rows if kind == k] for k in KINDS}
        print(f"| {size}x | {len(rows)} | {sum(r[1] for r in rows) / len(rows):.3f} | "
              f"{sum(r[2] for r in rows) / len(rows):.3f} | {sum(r[3] for r in rows) / len(rows):.3f} | "
              + " | ".join(f"{sum(v) / len(v):.2f}" for v in by_kind.values()) + " |")


def growth(embedder: QueryMemo, sizes: list[int]) -> None:
    results: dict[int, dict[str, list[str]]] = {}
    noise: dict[int, tuple[float, float]] = {}
    gibberish = random_texts(200, TEST_SEED)
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            docs = corpus(size)
            retriever = build(Dataset(f"growth{size}", docs, {}, {}), embedder, Path(tmp))
            results[size] = measure(retriever)
            noise[size] = (sum(bool(shown(retriever, q)) for q in gibberish) / len(gibberish),
                           sum(bool(shown(retriever, q)) for q in UNANSWERABLE) / len(UNANSWERABLE))
            print(f"{size}x: {len(docs)} documents", file=sys.stderr)
    print(f"\nCorpus growth, embedder `{embedder.model_id}`, {len(QUESTIONS)} questions, first {SHOWN} shown\n")
    table(results)
    print("\n| Size | random-token queries getting anything | questions nothing answers getting anything |")
    print("|---|---|---|")
    for size, (random_share, unanswerable_share) in noise.items():
        print(f"| {size}x | {random_share:.3f} | {unanswerable_share:.2f} |")
    first = results[sizes[0]]
    for size in sizes[1:]:
        lost = [q for q, _, title in QUESTIONS if title in first[q] and not results[size][q]]
        dropped = [q for q, _, title in QUESTIONS if title in first[q] and title not in results[size][q]]
        print(f"\nAt {size}x: {len(lost)} question(s) answered at {sizes[0]}x get nothing"
              + (f" ({'; '.join(lost)})" if lost else "")
              + f"; {len(dropped)} lose their answer from the first five"
              + (f" ({'; '.join(dropped)})" if dropped else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[1, 10, 100])
    args = parser.parse_args()
    embedder = QueryMemo(make_embedder(cache_path=CACHE))
    growth(embedder, args.sizes)


if __name__ == "__main__":
    main()
