"""The sampling-backed steps the two search tools share (see :mod:`.search_tools`), and their arguments.

Each step that may ask the client's model (query analysis, re-ranking, answer writing) is a
``Resolve`` resolver, so one definition serves both protocol eras: on 2026-07-28 the SDK turns a
returned ``Sample`` into an input-required round (sealed, user-bound ``request_state``); on
2025-11-25 :func:`~semantic_mcp.search.sampling.ask` sends the request mid-call with a bound.
Resolver bodies re-run on every round, so retrieval is pinned by
:class:`~semantic_mcp.search.service.SnapshotCache` and the sampled prompts render identically.

No ``from __future__ import annotations`` here: the SDK evaluates the resolvers' annotations, and
the ``Resolve(...)`` markers name resolvers local to :func:`search_steps`.
"""

from collections.abc import Callable
from datetime import UTC, date, datetime
from datetime import time as day_time
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Resolve, Sample

from ..core.documents import DocType
from ..core.filters import SearchFilters
from ..core.principal import Principal
from ..search import prompts
from ..search.intent import read_intent
from ..search.sampling import Fallback, Sampled, ask, read_result, unavailable
from ..search.score_order import in_score_order
from ..search.service import Retrieved, merge_filters, shared_by

if TYPE_CHECKING:
    from ..engine import Engine


# --- argument helpers ---------------------------------------------------------------------------


def _timestamp(value: str | None, *, end_of_day: bool) -> int | None:
    """Parse an ISO 8601 date or date-time argument; a bare date covers the whole day."""
    if not value:
        return None
    try:
        if len(value) <= 10:
            day = date.fromisoformat(value)
            return int(datetime.combine(day, day_time.max if end_of_day else day_time.min, UTC).timestamp())
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ToolError(f"{value!r} is not an ISO 8601 date (YYYY-MM-DD) or date-time") from exc
    return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp())


def _explicit_filters(
    doc_types: list[DocType] | None, modified_after: str | None, modified_before: str | None,
    event_after: str | None, event_before: str | None, path_prefix: str | None,
) -> SearchFilters:
    return SearchFilters(
        doc_types=list(doc_types) if doc_types else None,
        modified_after=_timestamp(modified_after, end_of_day=False),
        modified_before=_timestamp(modified_before, end_of_day=True),
        event_after=_timestamp(event_after, end_of_day=False),
        event_before=_timestamp(event_before, end_of_day=True),
        path_prefix=path_prefix or None,
    )


# --- the steps: each may ask the client's model, then the next builds on the answer -----------


class Steps(NamedTuple):
    """The ``Resolve`` markers the tools' parameters carry, one per step."""

    analysis: Resolve
    retrieved: Resolve
    ranking: Resolve
    answer: Resolve


def search_steps(engine: "Engine", principal: Callable[[Context], Principal]) -> Steps:
    gates = engine.gates

    async def analyze_query(query: str, use_query_analysis: bool, ctx: Context) -> Sample | Sampled | Fallback:
        if not use_query_analysis:
            return Fallback("query analysis turned off for this call")
        settings = engine.settings()
        if not settings.query_analysis:
            return Fallback("query analysis turned off by the administrator")
        request = prompts.analysis_request(query, engine.clock.now())
        return await ask(ctx, gates["query_analysis"], principal(ctx), request,
                         legacy_timeout=settings.legacy_sampling_timeout_seconds)

    async def retrieve_docs(
        query: str,
        limit: int,
        score_threshold: float | None,
        doc_types: list[DocType] | None,
        modified_after: str | None,
        modified_before: str | None,
        event_after: str | None,
        event_before: str | None,
        path_prefix: str | None,
        only_mine: bool,
        use_reranking: bool,
        ctx: Context,
        analysis: Annotated[Any, Resolve(analyze_query)],
    ) -> Retrieved:
        caller = principal(ctx)
        user = caller.user
        explicit = _explicit_filters(doc_types, modified_after, modified_before, event_after, event_before, path_prefix)
        outcome = read_result(analysis)
        parsed = prompts.parse_analysis(outcome.text) if isinstance(outcome, Sampled) else None
        filters, keywords = explicit, None
        intent = read_intent(query, engine.clock.now())
        if parsed is not None:
            derived = {name: parsed.timestamp(name) for name in
                       ("modified_after", "modified_before", "event_after", "event_before")}
            intent = intent.refined(doc_types=parsed.doc_types, dated=any(derived.values()))
            derived["doc_types"] = parsed.doc_types
            filters = merge_filters(explicit, derived)
            keywords = parsed.keywords
        # Twice the limit only when the client's model may re-rank them (it then chooses among more);
        # otherwise every extra candidate is retrieval and a verification request for nothing.
        may_rerank = use_reranking and engine.settings().reranking and not unavailable(ctx, gates["rerank"], caller)
        depth = limit * 2 if may_rerank else limit
        key = engine.search.snapshots.key(user, query, limit, depth, score_threshold, filters, keywords, only_mine)
        # A retry round of an input-required call must see the documents its first round saw, so that
        # its sampling request renders the same. Still re-checked: a pinned document the user lost
        # since means a fresh retrieval (and the client is asked again about the new documents).
        if ctx.request_state is not None and (pinned := engine.search.snapshots.get(key)) is not None:
            if await engine.search.still_readable(user, pinned):
                return pinned
        retrieved = await engine.search.retrieve(
            user, query, limit, filters, score_threshold=score_threshold, keyword_query=keywords, depth=depth,
            intent=intent, only_mine=only_mine,
        )
        retrieved.analysis = parsed.model_dump(mode="json", exclude_none=True) if parsed else None
        engine.search.snapshots.put(key, retrieved)
        return retrieved

    async def rerank_docs(
        query: str, limit: int, use_reranking: bool, ctx: Context,
        retrieved: Annotated[Retrieved, Resolve(retrieve_docs)],
    ) -> Sample | Sampled | Fallback:
        candidates = retrieved.candidates
        if not use_reranking:
            return Fallback("re-ranking turned off for this call")
        settings = engine.settings()
        if not settings.reranking:
            return Fallback("re-ranking turned off by the administrator")
        if len(candidates) <= limit or not _ambiguous(candidates, limit):
            return Fallback("not needed: the ranking is clear")
        request = prompts.rerank_request(
            query, [(f"d{i + 1}", str(c.metadata.get("title", "")), c.text) for i, c in enumerate(candidates)]
        )
        return await ask(ctx, gates["rerank"], principal(ctx), request,
                         legacy_timeout=settings.legacy_sampling_timeout_seconds)

    async def write_answer(
        query: str, limit: int, max_answer_tokens: int, ctx: Context,
        retrieved: Annotated[Retrieved, Resolve(retrieve_docs)],
        ranking: Annotated[Any, Resolve(rerank_docs)],
    ) -> Sample | Sampled | Fallback:
        docs = ranked(retrieved, ranking)[:limit]
        if not docs:
            return Fallback("no documents")
        settings = engine.settings()
        return await ask(ctx, gates["answer"], principal(ctx),
                         prompts.answer_request(query, document_blocks(docs, principal(ctx).user), max_answer_tokens),
                         legacy_timeout=settings.legacy_sampling_timeout_seconds)

    return Steps(Resolve(analyze_query), Resolve(retrieve_docs), Resolve(rerank_docs), Resolve(write_answer))


# --- what the steps share with the tools ---------------------------------------------------------


# Cosine similarities of multilingual-e5 are compressed (unrelated text scores ~0.78, a near
# duplicate ~0.9), so a gap this small between the best result and the first one past the cut-off
# means the embedding cannot tell them apart.
AMBIGUOUS_SIMILARITY_GAP = 0.03


def _ambiguous(candidates: list[Any], limit: int) -> bool:
    """Worth a re-rank: the two legs disagree about the top results, or the best result and the
    first one past the cut-off are about equally similar to the query."""
    if len(candidates) <= limit:
        return False
    top = candidates[:limit]
    if sum(1 for c in top if len(c.legs) == 2) < (limit + 1) // 2:
        return True
    best, edge = top[0].dense_score, candidates[limit].dense_score
    return best is not None and edge is not None and best - edge < AMBIGUOUS_SIMILARITY_GAP


def document_blocks(docs: list[Any], user: str) -> list[str]:
    """The retrieved documents as the answer prompt shows them, numbered as the answer cites them."""
    return [
        prompts.document_block(i + 1, str(c.metadata.get("doc_type")), str(c.metadata.get("title", "")), c.metadata,
                               c.text, shared_by=shared_by(c.metadata, user))
        for i, c in enumerate(docs)
    ]


def rerank_keys(retrieved: Retrieved) -> list[str]:
    return [f"d{i + 1}" for i in range(len(retrieved.candidates))]


def ranked(retrieved: Retrieved, ranking: Any) -> list[Any]:
    outcome = read_result(ranking)
    candidates = retrieved.candidates
    if isinstance(outcome, Sampled):
        keys = rerank_keys(retrieved)
        order = prompts.parse_rerank(outcome.text, keys)
        if order:
            by_key = dict(zip(keys, candidates, strict=True))
            return in_score_order([by_key[key] for key in order])  # scores read in the model's order (ADR 0700)
    return list(candidates)
