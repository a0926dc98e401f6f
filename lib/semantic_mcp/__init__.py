"""Semantic MCP for Nextcloud: the core, independent of AppAPI.

Layers, top-down: ``sources`` (one module per Nextcloud app type) -> ``indexing``
(queue, chunk, embed, upsert, delete) -> ``store`` (Chroma + keyword index) ->
``search`` (filters, hybrid fusion, per-hit verification) -> ``tools`` (MCP server).
"""

__version__ = "0.1.0"
