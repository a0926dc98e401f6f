"""The query keeps one name from the surfaces to the stores (issue 37): ``query``, so that following it
through the code (tool, service, retriever, keyword index, embedder) never means guessing a new name."""

from __future__ import annotations

import inspect

from semantic_mcp.embedding.backends import E5OnnxEmbedder, OpenAIEmbedder
from semantic_mcp.embedding.cache import CachedEmbedder
from semantic_mcp.embedding.protocol import Embedder
from semantic_mcp.search.retrieval import HybridRetriever
from semantic_mcp.search.service import SearchService
from semantic_mcp.stores.keyword import KeywordIndex
from semantic_mcp.stores.keyword_terms import query_terms
from semantic_mcp.surfaces.search_bar import search_bar

ON_THE_SEARCH_PATH = [
    search_bar, SearchService.retrieve, HybridRetriever.search, HybridRetriever.search_sync, KeywordIndex.search,
    KeywordIndex.coverage, query_terms, Embedder.embed_query, CachedEmbedder.embed_query,
    E5OnnxEmbedder.embed_query, OpenAIEmbedder.embed_query,
]


def test_every_step_of_a_search_calls_the_query_query() -> None:
    for step in ON_THE_SEARCH_PATH:
        assert "query" in inspect.signature(step).parameters, step.__qualname__
