"""Where chunks are kept: the vector store (Chroma) and the keyword index (SQLite FTS5)."""
