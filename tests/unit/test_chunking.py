"""Chunking: self-describing chunks, within the size budget, deterministic."""

from __future__ import annotations

from semantic_mcp.core.documents import SourceDocument
from semantic_mcp.indexing.chunking import _size, chunk_document


def doc(text: str, title: str = "Project Atlas") -> SourceDocument:
    return SourceDocument("note", "7", title, text, 0, "v1", "/apps/notes/note/7")


MARKDOWN = "\n\n".join(
    [
        "Intro paragraph about the project.",
        "# Planning",
        "## Budget",
        " ".join(f"The budget line {i} covers travel and equipment costs." for i in range(40)),
        "## Timeline",
        "Kick-off in March. Review in June.",
        "```\n# not a heading\ncode()\n```",
        "# Retrospective",
        "What went well.",
    ]
)


def test_every_chunk_starts_with_title_and_heading_path_and_fits() -> None:
    chunks = chunk_document(doc(MARKDOWN), max_chars=500, overlap=100)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert all(c.text.startswith("Project Atlas") for c in chunks)
    assert all(_size(c.text) <= 500 for c in chunks)
    budget = [c.text for c in chunks if "budget line 20 " in c.text]
    assert budget and all(t.startswith("Project Atlas\nPlanning > Budget\n\n") for t in budget)
    assert any(
        "# Retrospective\n\nWhat went well." in c.text for c in chunks
    )  # a small section joins the previous chunk
    assert not any("\nnot a heading" in c.text.split("\n\n")[0] for c in chunks)  # fenced code is not a heading


def test_overlap_repeats_trailing_sentences_within_a_section() -> None:
    chunks = chunk_document(doc(MARKDOWN), max_chars=500, overlap=100)
    budget = [c.text.split("\n\n", 1)[1] for c in chunks if "Budget\n" in c.text]
    assert len(budget) >= 3
    last_sentence = budget[0].rsplit(". ", 1)[-1]
    assert last_sentence in budget[1]


def test_deterministic_and_sizes_scale_with_script() -> None:
    text = "机器学习是人工智能的一个分支。" * 200
    first, second = chunk_document(doc(text)), chunk_document(doc(text))
    assert first == second
    assert all(_size(c.text) <= 1100 for c in first)
    assert max(len(c.text) for c in first) <= 560  # CJK counts double: ~550 characters a chunk


def test_degenerate_inputs() -> None:
    assert chunk_document(doc("", title="Shopping list")) == chunk_document(doc("   \n", title="Shopping list"))
    assert [c.text for c in chunk_document(doc("", title="Shopping list"))] == ["Shopping list"]
    assert chunk_document(doc("", title="")) == []
    blob = "x" * 5000  # one "word" longer than a chunk is cut, not dropped
    chunks = chunk_document(doc(blob, title=""))
    assert "".join(c.text for c in chunks) == blob
    huge_title = chunk_document(doc("body text", title="T" * 3000), max_chars=600)
    assert all(_size(c.text) <= 600 for c in huge_title) and "body text" in huge_title[0].text


def test_a_chunk_names_its_heading_path() -> None:
    sections = [c.section for c in chunk_document(doc(MARKDOWN), max_chars=500, overlap=100)]
    assert sections[0] == "" and {"Planning > Budget", "Planning > Timeline"} <= set(sections)  # where each starts


def test_chunks_never_span_two_pages_and_name_theirs() -> None:
    """A short page is not merged with the next one (its hit would cite the wrong page), and the
    file's heading lines before the first page go with it."""
    pages = ["File: r.pdf", "# Page 1\n\nShort first page.", "# Page 2\n\n" + "Long second page. " * 60,
             "# Page 3\n\nThe end."]
    text = "\n\n".join(pages)
    starts = tuple((text.index(f"# Page {n}"), f"Page {n}") for n in (1, 2, 3))
    sectioned = SourceDocument("file", "9", "r.pdf", text, 0, "v", "/f/9", sections=starts)
    chunks = chunk_document(sectioned, max_chars=500, overlap=100)
    assert [c.section for c in chunks][0] == "Page 1" and chunks[-1].section == "Page 3"
    assert len([c for c in chunks if c.section == "Page 2"]) >= 2
    for chunk in chunks:
        # Later pages carry the document's first line (what it is), the first page has it in its text.
        assert chunk.text.startswith(f"r.pdf\nShort first page.\n{chunk.section}\n") or chunk.index == 0
        others = {f"Page {n}" for n in (1, 2, 3)} - {chunk.section}
        assert not any(other in chunk.text for other in others), chunk
    assert "File: r.pdf" in chunks[0].text and "Short first page." in chunks[0].text


def test_the_size_shortcuts_give_what_the_plain_definitions_give() -> None:
    """ADR 0569 computes sizes without rescanning; the result must be the definition's: the longest
    prefix within the budget, and words packed up to it (against plain references, mixed scripts)."""
    import random

    from semantic_mcp.indexing.chunking import _cut, _hard_split

    def cut_reference(text: str, budget: int) -> str:
        return max((text[:n] for n in range(len(text) + 1) if _size(text[:n]) <= budget), key=len)

    def hard_split_reference(text: str, budget: int) -> list[tuple[str, str]]:
        tokens: list[tuple[str, str]] = []  # words, a longer one cut by characters
        for word in text.split():
            sep = " "
            while _size(word) > budget:
                head = cut_reference(word, budget)
                tokens.append((sep, head))
                word, sep = word[len(head):], ""
            tokens.append((sep, word))
        pieces: list[tuple[str, str]] = []  # packed: each piece rendered whole and measured again
        for sep, token in tokens:
            if pieces and _size(pieces[-1][1] + sep + token) <= budget:
                pieces[-1] = (pieces[-1][0], pieces[-1][1] + sep + token)
            else:
                pieces.append((sep, token))
        return pieces

    rng = random.Random(5)
    alphabet = ["a", "b", "Z", "é", "ß", "漢", "字", "한", "  ", "\t", " "]
    for _ in range(400):
        text = "".join(rng.choice(alphabet) * rng.randint(1, 9) for _ in range(rng.randint(0, 30)))
        budget = rng.randint(2, 40)
        assert _cut(text, budget) == cut_reference(text, budget)
        assert _size(text) == len(text) + sum(char in "漢字한" for char in text)
        assert _hard_split(text, budget) == hard_split_reference(text, budget), (text, budget)
    long_unspaced = "漢字テキスト" * 600  # once quadratic: seconds a document
    chunks = chunk_document(doc(long_unspaced, title="長い"), max_chars=300, overlap=50)
    assert "".join(c.text.removeprefix("長い").strip() for c in chunks) == long_unspaced
    assert all(_size(c.text) <= 300 for c in chunks)
