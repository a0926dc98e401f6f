"""The MCP server: small typed tools with structured output, guarded by scopes.

Sampling-backed steps (query analysis, re-ranking, answer writing) are ``Resolve`` resolvers, so
one definition serves both protocol eras: on 2026-07-28 the SDK turns a returned ``Sample`` into
an input-required round (sealed, user-bound ``request_state``); on 2025-11-25 :func:`ask` sends
the request mid-call with a bound. Resolver bodies re-run on every round, so retrieval is pinned
by :class:`~semantic_mcp.search.service.SnapshotCache` and the sampled prompts render identically.
Outcomes are booked in the tool body, which runs once, so metrics count each call once.

No ``from __future__ import annotations`` here: the SDK evaluates the tools' annotations, and
the ``Resolve(...)`` markers name resolvers local to :func:`build_server`.
"""

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from datetime import time as day_time
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Resolve, Sample
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from .config import READ_SCOPE, WRITE_SCOPE
from .principal import Principal, PrincipalOf
from .reading_tools import READING_TOOLS, register_reading_tools
from .documents import DocType
from .search import prompts
from .filters import SearchFilters
from .search.intent import read_intent
from .search.assistant import AssistantAnswer
from .search.sampling import Fallback, Sampled, SamplingGate, ask, read_result, unavailable
from .search.service import Retrieved, SearchHit, merge_filters

if TYPE_CHECKING:
    from .engine import Engine

log = logging.getLogger(__name__)


TOOL_SCOPES = {
    "nc_semantic_search": READ_SCOPE,
    "nc_semantic_search_answer": READ_SCOPE,
    "nc_get_vector_sync_status": READ_SCOPE,
    **{name: READ_SCOPE for name in READING_TOOLS},
    "nc_enable_vector_sync": WRITE_SCOPE,
    "nc_disable_vector_sync": WRITE_SCOPE,
}


# --- structured results -----------------------------------------------------------------------


class SearchResult(BaseModel):
    results: list[SearchHit]
    total_found: int = Field(description="How many indexed items matched before the limit was applied")
    search_method: str
    query_analysis: dict[str, Any] | None = Field(None, description="Filters the client's model derived, if used")
    reranked: bool = False
    notes: list[str] = Field(default_factory=list, description="Fallbacks and other things worth knowing")


class AnswerSource(SearchHit):
    number: int = Field(description="The number the answer cites, as [number]")


class AnswerResult(BaseModel):
    generated_answer: str
    sources: list[AnswerSource]
    total_found: int
    search_method: str
    model_used: str | None = None
    stop_reason: str | None = None
    notes: list[str] = Field(default_factory=list)


class SyncChange(BaseModel):
    user: str
    enabled: bool
    message: str


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
    doc_types: list[DocType] | None,
    modified_after: str | None,
    modified_before: str | None,
    event_after: str | None,
    event_before: str | None,
    path_prefix: str | None,
) -> SearchFilters:
    return SearchFilters(
        doc_types=list(doc_types) if doc_types else None,
        modified_after=_timestamp(modified_after, end_of_day=False),
        modified_before=_timestamp(modified_before, end_of_day=True),
        event_after=_timestamp(event_after, end_of_day=False),
        event_before=_timestamp(event_before, end_of_day=True),
        path_prefix=path_prefix or None,
    )


def build_server(
    engine: "Engine", principal_of: PrincipalOf, *, state_key: bytes,
    connected_clients: Callable[[str], list[dict[str, Any]]] | None = None,
) -> MCPServer:
    """Build the MCP server for ``engine``; ``state_key`` seals input-required state (use the app secret);
    ``connected_clients`` lists a user's OAuth clients for the status tool."""

    def principal(ctx: Context) -> Principal:
        found = principal_of(ctx.request_context.request)
        if found is None:
            raise PermissionError("no Nextcloud user on this request")
        return found

    def bind_principal(request_ctx: Any) -> str | None:
        found = principal_of(request_ctx.request)
        return found.user if found else None

    mcp = MCPServer(
        name="semantic_mcp",
        title="Semantic search for Nextcloud",
        instructions=(
            "Search the user's own Nextcloud by meaning: notes, files, Deck cards, calendar events and contacts. "
            "Use nc_semantic_search to find items (each result has a link that opens it in Nextcloud) and "
            "nc_semantic_search_answer for a cited answer; nc_get_document reads a result whole by its id. "
            "Dates are ISO 8601."
        ),
        request_state_security=RequestStateSecurity(keys=[state_key], bind_principal=bind_principal),
        middleware=[ScopeGuard(principal_of)],
    )
    # Outermost, so it sees the sealed token exactly as the client sent it.
    mcp.middleware.insert(0, ReplayGuard())
    register_reading_tools(mcp, engine, principal)
    gates = engine.gates

    # --- resolvers: each may ask the client's model, then the next step builds on the answer ---

    async def analyze_query(query: str, use_query_analysis: bool, ctx: Context) -> Sample | Sampled | Fallback:
        if not use_query_analysis:
            return Fallback("query analysis turned off for this call")
        settings = engine.settings()
        if not settings.query_analysis:
            return Fallback("query analysis turned off by the administrator")
        request = prompts.analysis_request(query, datetime.now(UTC))
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
        intent = read_intent(query, datetime.now(UTC))
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
        key = engine.search.snapshots.key(user, query, limit, depth, score_threshold, filters, keywords)
        # A retry round of an input-required call must see the documents its first round saw, so that
        # its sampling request renders the same. Still re-checked: a pinned document the user lost
        # since means a fresh retrieval (and the client is asked again about the new documents).
        if ctx.request_state is not None and (pinned := engine.search.snapshots.get(key)) is not None:
            if await engine.search.still_readable(user, pinned):
                return pinned
        retrieved = await engine.search.retrieve(
            user, query, limit, filters, score_threshold=score_threshold, keyword_query=keywords, depth=depth,
            intent=intent,
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
                         prompts.answer_request(query, _document_blocks(docs), max_answer_tokens),
                         legacy_timeout=settings.legacy_sampling_timeout_seconds)

    # --- tools ----------------------------------------------------------------------------------

    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @mcp.tool(
        name="nc_semantic_search",
        title="Search Nextcloud by meaning",
        description=(
            "Find the user's notes, files, Deck cards, calendar events and contacts that match a query by meaning "
            "and by exact words. Returns ranked results with an excerpt, dates and a link that opens each item. "
            "Filters: doc_types, modified_after/before and event_after/before (ISO dates), path_prefix (folder). "
            "Read a result whole with nc_get_document and its id."
        ),
        annotations=read_only,
    )
    async def nc_semantic_search(
        query: Annotated[str, Field(min_length=1, max_length=2000, description="What to look for, in any language")],
        ctx: Context,
        retrieved: Annotated[Retrieved, Resolve(retrieve_docs)],
        ranking: Annotated[Any, Resolve(rerank_docs)],
        analysis: Annotated[Any, Resolve(analyze_query)],
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
        score_threshold: Annotated[float | None, Field(ge=0.0, le=1.0, description=(
            "Minimum score (the estimated probability that a result answers the query). Default: the app's "
            "cut-off, so a question nothing answers returns no results; 0 returns the closest items anyway"))] = None,
        doc_types: list[DocType] | None = None,
        modified_after: str | None = None,
        modified_before: str | None = None,
        event_after: str | None = None,
        event_before: str | None = None,
        path_prefix: str | None = None,
        use_query_analysis: bool = True,
        use_reranking: bool = True,
    ) -> SearchResult:
        done = _finish(engine, principal(ctx).user, retrieved, ranking, analysis, limit)
        return SearchResult(
            results=[engine.search.hit(c, query) for c in done.docs],
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
            "answer comes from Nextcloud's own AI if the admin has set one up, else the sources with a note."
        ),
        annotations=read_only,
    )
    async def nc_semantic_search_answer(
        query: Annotated[str, Field(min_length=1, max_length=2000, description="The question, in any language")],
        ctx: Context,
        retrieved: Annotated[Retrieved, Resolve(retrieve_docs)],
        ranking: Annotated[Any, Resolve(rerank_docs)],
        analysis: Annotated[Any, Resolve(analyze_query)],
        answer: Annotated[Any, Resolve(write_answer)],
        limit: Annotated[int, Field(ge=1, le=20)] = 5,
        score_threshold: Annotated[float | None, Field(ge=0.0, le=1.0, description=(
            "Minimum score (the estimated probability that a result answers the query). Default: the app's "
            "cut-off, so a question nothing answers returns no results; 0 returns the closest items anyway"))] = None,
        max_answer_tokens: Annotated[int, Field(ge=50, le=4000)] = 800,
        doc_types: list[DocType] | None = None,
        modified_after: str | None = None,
        modified_before: str | None = None,
        event_after: str | None = None,
        event_before: str | None = None,
        path_prefix: str | None = None,
        use_query_analysis: bool = True,
        use_reranking: bool = True,
    ) -> AnswerResult:
        done = _finish(engine, principal(ctx).user, retrieved, ranking, analysis, limit)
        user, docs, method, notes = done.user, done.docs, done.method, done.notes
        sources = [AnswerSource(number=i + 1, **engine.search.hit(c, query).model_dump()) for i, c in enumerate(docs)]
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
        return AnswerResult(
            generated_answer=outcome.text, sources=sources, total_found=retrieved.total_found,
            search_method=method, model_used=outcome.model, stop_reason=outcome.stop_reason, notes=notes,
        )

    @mcp.tool(
        name="nc_get_vector_sync_status",
        title="Indexing status",
        description="Show what is indexed for the calling user: indexed, pending and failed counts per source, "
        "last event and reconciliation times, failure reasons, and sampling metrics.",
        annotations=read_only,
    )
    async def nc_get_vector_sync_status(ctx: Context) -> dict[str, Any]:
        user = principal(ctx).user
        status = engine.status(user)
        if connected_clients is not None:
            status["connected_clients"] = connected_clients(user)
        return status

    @mcp.tool(
        name="nc_enable_vector_sync",
        title="Turn on indexing for me",
        description="Index the calling user's Nextcloud content so it becomes searchable (starts a background backfill).",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
    )
    async def nc_enable_vector_sync(ctx: Context) -> SyncChange:
        user = principal(ctx).user
        queued = await engine.enable_user(user)
        return SyncChange(user=user, enabled=True, message=f"Indexing enabled; {queued} item(s) queued for indexing.")

    @mcp.tool(
        name="nc_disable_vector_sync",
        title="Turn off indexing for me",
        description="Stop indexing the calling user's content and delete everything indexed for them.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True),
    )
    async def nc_disable_vector_sync(ctx: Context) -> SyncChange:
        user = principal(ctx).user
        await engine.disable_user(user)
        return SyncChange(user=user, enabled=False, message="Indexing disabled and your indexed data deleted.")

    return mcp


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


def _document_blocks(docs: list[Any]) -> list[str]:
    """The retrieved documents as the answer prompt shows them, numbered as the answer cites them."""
    return [
        prompts.document_block(i + 1, str(c.metadata.get("doc_type")), str(c.metadata.get("title", "")), c.metadata, c.text)
        for i, c in enumerate(docs)
    ]


async def _answer_without_sampling(
    engine: "Engine", user: str, query: str, docs: list[Any], reason: str, result: AnswerResult
) -> AnswerResult:
    """The client's model did not answer (``reason``): ask Nextcloud's own AI with the same prompt,
    as ``user``; without one, list the sources."""
    settings = engine.settings()
    if settings.nextcloud_ai_answers:
        got = await engine.assistant.answer(user, prompts.answer_prompt(query, _document_blocks(docs)),
                                            timeout=settings.nextcloud_ai_timeout_seconds)
        if isinstance(got, AssistantAnswer):
            result.notes.append(f"Answer written by Nextcloud's own AI (task {got.task_id}): the client's model "
                                f"could not be asked ({reason})")
            return result.model_copy(update={"generated_answer": got.text, "model_used": got.provider})
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
    return _Finished(user, _ranked(retrieved, ranking)[:limit], reranked, _method(retrieved, analysis, reranked), notes)


def _ranked(retrieved: Retrieved, ranking: Any) -> list[Any]:
    outcome = read_result(ranking)
    candidates = retrieved.candidates
    if isinstance(outcome, Sampled):
        keys = _rerank_keys(retrieved)
        order = prompts.parse_rerank(outcome.text, keys)
        if order:
            by_key = dict(zip(keys, candidates, strict=True))
            return [by_key[key] for key in order]
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


class ReplayGuard:
    """Refuses an input-required ``requestState`` that was already used.

    The SDK seals the state (AES-GCM), binds it to the user, tool and arguments and expires it
    after its TTL; a sealed token is minted fresh every round, so a second use of the same token
    can only be a replay (a captured request sent again). Remembered for the token's TTL.
    """

    def __init__(self, ttl: float = 600.0, size: int = 100_000) -> None:
        self.ttl = ttl
        self.size = size
        self._used: dict[str, float] = {}

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        token = (ctx.params or {}).get("requestState") if ctx.method == "tools/call" else None
        if not isinstance(token, str):
            return await call_next(ctx)
        now = time.monotonic()
        digest = hashlib.sha256(token.encode()).hexdigest()
        if self._used.get(digest, 0.0) > now:
            log.warning("Refused a replayed requestState for %s", (ctx.params or {}).get("name"))
            raise MCPError(code=INVALID_PARAMS, message="Invalid or expired requestState",
                           data={"reason": "invalid_request_state"})
        if len(self._used) >= self.size:
            self._used = {key: until for key, until in self._used.items() if until > now}
        self._used[digest] = now + self.ttl
        return await call_next(ctx)


class ScopeGuard:
    """Phase 1 of authorization (ADR-009): tools outside the caller's scopes are hidden and refused."""

    def __init__(self, principal_of: PrincipalOf) -> None:
        self._principal_of = principal_of

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method not in ("tools/list", "tools/call"):
            return await call_next(ctx)
        found = self._principal_of(ctx.request)
        scopes = found.scopes if found else frozenset()
        if ctx.method == "tools/call":
            name = (ctx.params or {}).get("name")
            needed = TOOL_SCOPES.get(str(name))
            if needed is not None and needed not in scopes:
                log.info("Refused %s for %s: missing scope %s", name, found.user if found else "?", needed)
                return CallToolResult(
                    content=[TextContent(type="text", text=f"Permission denied: {name} needs the {needed} scope")],
                    is_error=True,
                )
            return await call_next(ctx)
        result = await call_next(ctx)
        allowed = lambda tool_name: TOOL_SCOPES.get(tool_name, READ_SCOPE) in scopes  # noqa: E731
        if isinstance(result, dict):
            return {**result, "tools": [t for t in result.get("tools", []) if allowed(t.get("name"))]}
        result.tools = [t for t in result.tools if allowed(t.name)]
        return result
