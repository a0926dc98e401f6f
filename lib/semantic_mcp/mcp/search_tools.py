"""The two search tools, ``nc_semantic_search`` and ``nc_semantic_search_answer``, and the
sampling-backed steps they share.

Each step that may ask the client's model (query analysis, re-ranking, answer writing) is a
``Resolve`` resolver, so one definition serves both protocol eras: on 2026-07-28 the SDK turns a
returned ``Sample`` into an input-required round (sealed, user-bound ``request_state``); on
2025-11-25 :func:`~semantic_mcp.search.sampling.ask` sends the request mid-call with a bound.
Resolver bodies re-run on every round, so retrieval is pinned by
:class:`~semantic_mcp.search.service.SnapshotCache` and the sampled prompts render identically.
Outcomes are booked in the tool body, which runs once, so metrics count each call once.

No ``from __future__ import annotations`` here: the SDK evaluates the tools' annotations, and
the ``Resolve(...)`` markers name resolvers local to :func:`_search_steps`.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from datetime import time as day_time
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Resolve, Sample
from mcp_types import ToolAnnotations
from pydantic import Field

from ..core.documents import DocType
from ..core.filters import SearchFilters
from ..core.principal import Principal
from ..search import answer_filter, grounding, prompts
from ..search.assistant import AssistantAnswer
from ..search.intent import read_intent
from ..search.sampling import Fallback, Sampled, SamplingGate, ask, read_result, unavailable
from ..search.score_order import in_score_order
from ..search.service import AnswerResult, AnswerSource, Retrieved, SearchResult, merge_filters, shared_by

if TYPE_CHECKING:
    from ..engine import Engine

log = logging.getLogger(__name__)

SEARCH_TOOLS = ("nc_semantic_search", "nc_semantic_search_answer")


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


class _Steps(NamedTuple):
    """The ``Resolve`` markers the tools' parameters carry, one per step."""

    analysis: Resolve
    retrieved: Resolve
    ranking: Resolve
    answer: Resolve


def _search_steps(engine: "Engine", principal: Callable[[Context], Principal]) -> _Steps:
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
        docs = _ranked(retrieved, ranking)[:limit]
        if not docs:
            return Fallback("no documents")
        settings = engine.settings()
        return await ask(ctx, gates["answer"], principal(ctx),
                         prompts.answer_request(query, _document_blocks(docs, principal(ctx).user), max_answer_tokens),
                         legacy_timeout=settings.legacy_sampling_timeout_seconds)

    return _Steps(Resolve(analyze_query), Resolve(retrieve_docs), Resolve(rerank_docs), Resolve(write_answer))


# --- the tools --------------------------------------------------------------------------------


OnlyMine = Annotated[bool, Field(description=(
    "Only items you own: leave out everything others shared with you (their text could have been written to "
    "steer the answer)"))]

ScoreThreshold = Annotated[float | None, Field(ge=0.0, le=1.0, description=(
    "Minimum score (the estimated probability that a result answers the query). Default: the app's "
    "cut-off, so a question nothing answers returns no results; 0 returns the closest items anyway"))]


def register_search_tools(mcp: MCPServer, engine: "Engine", principal: Callable[[Context], Principal]) -> None:
    steps = _search_steps(engine, principal)
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @mcp.tool(
        name="nc_semantic_search",
        title="Search Nextcloud by meaning",
        description=(
            "Find the user's notes, files, Deck cards, calendar events and contacts that match a query by meaning "
            "and by exact words. Returns ranked results with an excerpt, dates and a link that opens each item. "
            "Filters: doc_types, modified_after/before and event_after/before (ISO dates), path_prefix (folder), "
            "only_mine (leave out what others shared with you). A result someone shared names them in shared_by. "
            "Read a result whole with nc_get_document and its id."
        ),
        annotations=read_only,
    )
    async def nc_semantic_search(
        query: Annotated[str, Field(
            min_length=1, max_length=2000, description="What to look for, in any language; at most 2,000 characters")],
        ctx: Context,
        retrieved: Annotated[Retrieved, steps.retrieved],
        ranking: Annotated[Any, steps.ranking],
        analysis: Annotated[Any, steps.analysis],
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
        score_threshold: ScoreThreshold = None,
        doc_types: list[DocType] | None = None,
        modified_after: str | None = None,
        modified_before: str | None = None,
        event_after: str | None = None,
        event_before: str | None = None,
        path_prefix: str | None = None,
        only_mine: OnlyMine = False,
        use_query_analysis: bool = True,
        use_reranking: bool = True,
    ) -> SearchResult:
        done = _finish(engine, principal(ctx).user, retrieved, ranking, analysis, limit)
        return SearchResult(
            results=[engine.search.hit(c, query, done.user) for c in done.docs],
            total_found=retrieved.total_found,
            search_method=done.method,
            query_analysis=retrieved.analysis,
            reranked=done.reranked,
            notes=done.notes,
        )

    @mcp.tool(
        name="nc_semantic_search_answer",
        title="Answer from Nextcloud, with citations",
        description=(
            "Answer a question from the user's own Nextcloud content. Retrieves the most relevant items and has "
            "the client's model write an answer that cites them as [1], [2]. When the client cannot sample, the "
            "answer comes from Nextcloud's own AI if the admin has set one up, else the sources with a note. "
            "only_mine answers from the user's own items alone; sources others shared name them in shared_by."
        ),
        annotations=read_only,
    )
    async def nc_semantic_search_answer(
        query: Annotated[str, Field(
            min_length=1, max_length=2000, description="The question, in any language; at most 2,000 characters")],
        ctx: Context,
        retrieved: Annotated[Retrieved, steps.retrieved],
        ranking: Annotated[Any, steps.ranking],
        analysis: Annotated[Any, steps.analysis],
        answer: Annotated[Any, steps.answer],
        limit: Annotated[int, Field(ge=1, le=20)] = 5,
        score_threshold: ScoreThreshold = None,
        max_answer_tokens: Annotated[int, Field(ge=50, le=4000)] = 800,
        doc_types: list[DocType] | None = None,
        modified_after: str | None = None,
        modified_before: str | None = None,
        event_after: str | None = None,
        event_before: str | None = None,
        path_prefix: str | None = None,
        only_mine: OnlyMine = False,
        use_query_analysis: bool = True,
        use_reranking: bool = True,
    ) -> AnswerResult:
        done = _finish(engine, principal(ctx).user, retrieved, ranking, analysis, limit)
        user, docs, method, notes = done.user, done.docs, done.method, done.notes
        sources = [AnswerSource(number=i + 1, **engine.search.hit(c, query, user).model_dump()) for i, c in enumerate(docs)]
        if not docs:
            return AnswerResult(
                generated_answer="No matching documents were found in your Nextcloud, so there is nothing to answer from.",
                sources=[], total_found=retrieved.total_found, search_method=method, notes=notes,
            )
        outcome = read_result(answer)
        if isinstance(answer, Fallback) or isinstance(outcome, Fallback):
            reason = outcome.reason if isinstance(outcome, Fallback) else "unknown"
            if not isinstance(answer, Fallback):
                engine.gates["answer"].failure(user, reason)
            return await _answer_without_sampling(engine, user, query, docs, reason, AnswerResult(
                generated_answer="", sources=sources, total_found=retrieved.total_found, search_method=method,
                notes=notes,
            ))
        if not isinstance(answer, Sampled):  # it came through an input-required round
            engine.gates["answer"].success(user)
        return grounding.vetted(AnswerResult(
            generated_answer="", sources=sources, total_found=retrieved.total_found,
            search_method=method, model_used=outcome.model, stop_reason=outcome.stop_reason, notes=notes,
        ), answer_filter.safe_answer(outcome.text, engine.search.nextcloud_url), _document_blocks(docs, user), query)


# --- helpers shared by the two search tools ------------------------------------------------------


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


def _document_blocks(docs: list[Any], user: str) -> list[str]:
    """The retrieved documents as the answer prompt shows them, numbered as the answer cites them."""
    return [
        prompts.document_block(i + 1, str(c.metadata.get("doc_type")), str(c.metadata.get("title", "")), c.metadata,
                               c.text, shared_by=shared_by(c.metadata, user))
        for i, c in enumerate(docs)
    ]


async def _answer_without_sampling(
    engine: "Engine", user: str, query: str, docs: list[Any], reason: str, result: AnswerResult
) -> AnswerResult:
    """The client's model did not answer (``reason``): ask Nextcloud's own AI with the same prompt,
    as ``user``; without one, list the sources."""
    settings = engine.settings()
    if settings.nextcloud_ai_answers:
        got = await engine.assistant.answer(user, prompts.answer_prompt(query, _document_blocks(docs, user)),
                                            timeout=settings.nextcloud_ai_timeout_seconds)
        if isinstance(got, AssistantAnswer):
            result.notes.append(f"Answer written by Nextcloud's own AI (task {got.task_id}): the client's model "
                                f"could not be asked ({reason})")
            answer = answer_filter.safe_answer(got.text, engine.search.nextcloud_url)
            return grounding.vetted(result.model_copy(update={"model_used": got.provider}), answer,
                                    _document_blocks(docs, user), query)
        reason = f"{reason}; {got.reason}"
    listing = "\n".join(f"[{s.number}] {s.title} — {s.link}" for s in result.sources)
    return result.model_copy(
        update={"generated_answer": f"[Sampling unavailable: {reason}] The most relevant documents are:\n{listing}"}
    )


def _rerank_keys(retrieved: Retrieved) -> list[str]:
    return [f"d{i + 1}" for i in range(len(retrieved.candidates))]


@dataclass
class _Finished:
    """What both search tools build their answer from, once the resolvers have run."""

    user: str
    docs: list[Any]
    reranked: bool
    method: str
    notes: list[str]


def _finish(engine: "Engine", user: str, retrieved: Retrieved, ranking: Any, analysis: Any, limit: int) -> _Finished:
    """Book the re-rank and query-analysis steps once, and cut the (re-)ranked candidates to ``limit``."""
    notes = list(retrieved.notes)
    keys = _rerank_keys(retrieved)
    reranked = _book(engine.gates["rerank"], user, ranking, notes, lambda t: prompts.parse_rerank(t, keys) is not None)
    _book(engine.gates["query_analysis"], user, analysis, notes, lambda t: prompts.parse_analysis(t) is not None)
    if queued := engine.state.pending_count(user):  # e.g. the first pass: search works, but says so
        notes.append(f"Indexing is still in progress for you ({queued} item(s) queued): results may be incomplete.")
    return _Finished(user, _ranked(retrieved, ranking)[:limit], reranked, _method(retrieved, analysis, reranked), notes)


def _ranked(retrieved: Retrieved, ranking: Any) -> list[Any]:
    outcome = read_result(ranking)
    candidates = retrieved.candidates
    if isinstance(outcome, Sampled):
        keys = _rerank_keys(retrieved)
        order = prompts.parse_rerank(outcome.text, keys)
        if order:
            by_key = dict(zip(keys, candidates, strict=True))
            return in_score_order([by_key[key] for key in order])  # scores read in the model's order (ADR 0700)
    return list(candidates)


def _book(gate: SamplingGate, user: str, value: Any, notes: list[str], usable: Callable[[str], bool]) -> bool:
    """Record a sampling step's outcome once per call; True when its result was used.

    Answers that came through an input-required round are booked here (the legacy path booked
    its own latency in :func:`ask`); an answer that cannot be parsed counts as a failure.
    """
    outcome = read_result(value)
    came_by_round = not isinstance(value, Sampled | Fallback)
    ok = isinstance(outcome, Sampled) and usable(outcome.text)
    if isinstance(outcome, Sampled) and not ok:
        gate.failure(user, "unusable answer from the client's model")
        notes.append(f"{gate.purpose} not used: unusable answer from the client's model")
    elif came_by_round and ok:
        gate.success(user)
    elif isinstance(outcome, Fallback) and not outcome.reason.startswith(_QUIET_REASONS):
        notes.append(f"{gate.purpose} not used: {outcome.reason}")
    return ok


_QUIET_REASONS = ("not needed", "the MCP client does not support", "query analysis turned off", "re-ranking turned off")


def _method(retrieved: Retrieved, analysis: Any, reranked: bool) -> str:
    parts = [retrieved.method, "results re-checked in Nextcloud as you"]
    if isinstance(read_result(analysis), Sampled):
        parts.append("query analysed by the client's model")
    if reranked:
        parts.append("re-ranked by the client's model")
    return "; ".join(parts)
