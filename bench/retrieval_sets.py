"""The retrieval sets the quality benches measure on (bench/sets/README.md): loading them, and sampling
their documents when a set is built or cut down."""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "lib") not in sys.path:
    sys.path.insert(0, str(ROOT / "lib"))

from semantic_mcp.core.documents import SourceDocument  # noqa: E402

# The two shared reference sets (read-only, outside the repo) and the sets committed here (bench/sets/README.md).
BENCHMARKS = ROOT.parent / "shared" / "benchmarks"
SETS = ROOT / "bench" / "sets"
ALL_SETS = ("msmarco@43", "arcd", "dbpedia", "spf-fr", "xquad-de", "xquad-es", "xquad-ru",
            "cranfield", "cisi", "jsquad", "cmrc-zh")  # the last four added after three procedures were tried
SAMPLE_SEED = 17  # which queries and documents a set built or cut down keeps


@dataclass
class Dataset:
    name: str
    docs: list[SourceDocument]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def jsonl(path: Path) -> list[dict]:
    # Split on "\n" only: str.splitlines would also cut at the U+2028 some passages contain.
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


def load(name: str) -> Dataset:
    """The BEIR set ``name`` (one of ``ALL_SETS``), from bench/sets or shared/benchmarks. ``NAME@N``: only
    ``N`` of its judged queries (seeded) and the documents they judge: ``msmarco@43`` is all 43 queries and
    the 4,102 passages they judge, without the 898 others (12 minutes to embed on 2 idle cores, over an
    hour on the shared machine). Fewer queries are noise: one query moves nDCG@10 by up to 0.08 / N."""
    if "@" in name:
        full, count = name.split("@")
        data = load(full)
        queries = sorted(random.Random(SAMPLE_SEED).sample(sorted(data.qrels), int(count)))
        qrels = {q: data.qrels[q] for q in queries}
        keep = sample_docs([d.source_id for d in data.docs], qrels, 0)
        return Dataset(name, [d for d in data.docs if d.source_id in keep], data.queries, qrels)
    folder = SETS / name if (SETS / name).is_dir() else BENCHMARKS / name
    docs = [
        SourceDocument("file", d["_id"], d.get("title") or "", d["text"], 0, "1", "")
        for d in jsonl(folder / "corpus.jsonl")
    ]
    queries = {q["_id"]: q["text"] for q in jsonl(folder / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels" / "test.tsv").read_text().split("\n"):
        qid, doc_id, grade = line.split("\t") if line.strip() else ("", "", "")
        if qid != "query-id" and qid in queries:  # most have a header line, MS MARCO none
            qrels.setdefault(qid, {})[doc_id] = int(grade)
    return Dataset(name, docs, queries, qrels)


def sample_docs(ids: Sequence[str], qrels: dict[str, dict[str, int]], total: int) -> set[str]:
    """Every document ``qrels`` judges, plus a seeded sample of the others up to ``total`` in all."""
    judged = {d for grades in qrels.values() for d in grades}
    others = [d for d in ids if d not in judged]
    return judged.union(random.Random(SAMPLE_SEED).sample(others, max(0, min(len(others), total - len(judged)))))
