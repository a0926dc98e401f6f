"""The two search tools, ``nc_semantic_search`` and ``nc_semantic_search_answer``.

Their parameters carry the sampling-backed steps of :mod:`.search_steps` (query analysis, retrieval,
re-ranking, answer writing), which the SDK resolves before the tool body runs. Outcomes are booked
in the tool body, which runs once, so metrics count each call once.

No ``from __future__ import annotations`` here: the SDK evaluates the tools' annotations.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from ..core.documents import DocType
from ..core.principal import Principal
from ..search import answer_filter, grounding, prompts
from ..search.assistant import AssistantAnswer
from ..search.sampling import Fallback, Sampled, SamplingGate, read_result
from ..search.service import AnswerResult, AnswerSource, Retrieved, SearchResult
from .search_steps import Steps, document_blocks, ranked, rerank_keys, search_steps

if TYPE_CHECKING:
    from ..engine import Engine

log = logging.getLogger(__name__)

SEARCH_TOOLS = ("nc_semantic_search", "nc_semantic_search_answer")


# --- the tools --------------------------------------------------------------------------------

# Shared by both tools. Every character here is paid for by the client's model on every tools/list
# (docs/token-cost.md; tests/unit/test_tool_list_budget.py holds the total), so descriptions say what a
# model needs to call the tool right, limits included, and no more.
Query = Annotated[str, Field(min_length=1, max_length=2000, description="Any language; at most 2,000 characters")]
ScoreThreshold = Annotated[float | None, Field(ge=0.0, le=1.0, description=(
    "Minimum score. Default: the app's cut-off, so nothing is returned when nothing answers; 0 returns the "
    "closest items anyway"))]
OnlyMine = Annotated[bool, Field(description="Leave out what others shared with you")]
# Read by CompactResultText (compact_output.py), which renders the text block; the structured content
# always carries the method.
Explain = Annotated[bool, Field(description="Add how the search ran and raw similarities")]


READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def register_search_tools(mcp: MCPServer, engine: "Engine", principal: Callable[[Context], Principal]) -> None:
    steps = search_steps(engine, principal)
    _register_search(mcp, engine, principal, steps)
    _register_answer(mcp, engine, principal, steps)


def _register_search(mcp: MCPServer, engine: "Engine", principal: Callable[[Context], Principal], steps: Steps) -> None:
    @mcp.tool(
        name="nc_semantic_search",
        title="Search Nextcloud by meaning",
        description=(
            "Find the user's notes, files, Deck cards, calendar events and contacts by meaning and exact words. "
            "Each result has an id, title, excerpt, score (estimated chance it answers), dates, place, a link "
            "that opens it and, if shared, shared_by. Dates are ISO 8601. Read a result whole with nc_get_document."
        ),
        annotations=READ_ONLY,
    )
    async def nc_semantic_search(
        query: Query,
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
        explain: Explain = False,
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


def _register_answer(mcp: MCPServer, engine: "Engine", principal: Callable[[Context], Principal], steps: Steps) -> None:
    @mcp.tool(
        name="nc_semantic_search_answer",
        title="Answer from Nextcloud, with citations",
        description=(
            "Answer a question from the user's Nextcloud, citing the items used as [1], [2]. Written by the "
            "client's model, else by Nextcloud's own AI if the admin set one up, else the sources come with a "
            "note. Same filters as nc_semantic_search."
        ),
        annotations=READ_ONLY,
    )
    async def nc_semantic_search_answer(
        query: Query,
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
        explain: Explain = False,
    ) -> AnswerResult:
        done = _finish(engine, principal(ctx).user, retrieved, ranking, analysis, limit)
        return await _answered(engine, query, retrieved, done, answer)


async def _answered(engine: "Engine", query: str, retrieved: Retrieved, done: "_Finished", answer: Any) -> AnswerResult:
    """The answer tool's result: the client's model's answer (filtered and grounded), else Nextcloud's
    own AI's, else the sources with a note; nothing to answer from when nothing was found."""
    user, docs = done.user, done.docs
    base = AnswerResult(generated_answer="", sources=[
        AnswerSource(number=i + 1, **engine.search.hit(c, query, user).model_dump()) for i, c in enumerate(docs)
    ], total_found=retrieved.total_found, search_method=done.method, notes=done.notes)
    if not docs:
        return base.model_copy(update={"generated_answer": (
            "No matching documents were found in your Nextcloud, so there is nothing to answer from.")})
    outcome = read_result(answer)
    if isinstance(answer, Fallback) or isinstance(outcome, Fallback):
        reason = outcome.reason if isinstance(outcome, Fallback) else "unknown"
        if not isinstance(answer, Fallback):
            engine.gates["answer"].failure(user, reason)
        return await _answer_without_sampling(engine, user, query, docs, reason, base)
    if not isinstance(answer, Sampled):  # it came through an input-required round
        engine.gates["answer"].success(user)
    return grounding.vetted(
        base.model_copy(update={"model_used": outcome.model, "stop_reason": outcome.stop_reason}),
        answer_filter.safe_answer(outcome.text, engine.search.nextcloud_url), document_blocks(docs, user), query)


# --- helpers shared by the two search tools ------------------------------------------------------


async def _answer_without_sampling(
    engine: "Engine", user: str, query: str, docs: list[Any], reason: str, result: AnswerResult
) -> AnswerResult:
    """The client's model did not answer (``reason``): ask Nextcloud's own AI with the same prompt,
    as ``user``; without one, list the sources."""
    settings = engine.settings()
    if settings.nextcloud_ai_answers:
        got = await engine.assistant.answer(user, prompts.answer_prompt(query, document_blocks(docs, user)),
                                            timeout=settings.nextcloud_ai_timeout_seconds)
        if isinstance(got, AssistantAnswer):
            result.notes.append(f"Answer written by Nextcloud's own AI (task {got.task_id}): the client's model "
                                f"could not be asked ({reason})")
            answer = answer_filter.safe_answer(got.text, engine.search.nextcloud_url)
            return grounding.vetted(result.model_copy(update={"model_used": got.provider}), answer,
                                    document_blocks(docs, user), query)
        reason = f"{reason}; {got.reason}"
    listing = "\n".join(f"[{s.number}] {s.title} — {s.link}" for s in result.sources)
    return result.model_copy(
        update={"generated_answer": f"[Sampling unavailable: {reason}] The most relevant documents are:\n{listing}"}
    )


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
    keys = rerank_keys(retrieved)
    reranked = _book(engine.gates["rerank"], user, ranking, notes, lambda t: prompts.parse_rerank(t, keys) is not None)
    _book(engine.gates["query_analysis"], user, analysis, notes, lambda t: prompts.parse_analysis(t) is not None)
    if queued := engine.state.pending_count(user):  # e.g. the first pass: search works, but says so
        notes.append(f"Indexing is still in progress for you ({queued} item(s) queued): results may be incomplete.")
    return _Finished(user, ranked(retrieved, ranking)[:limit], reranked, _method(retrieved, analysis, reranked), notes)


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
