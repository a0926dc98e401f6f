"""Search as the MCP tools use it: retrieve (hybrid), verify each hit as the caller, shape results.

Kept free of MCP so the same steps serve the tools, the benchmarks and the tests.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from ..core.filters import SearchFilters
from .intent import QueryIntent, apply_intent
from .item_fields import FOLLOWING, at_search_time, due_filters, due_first, reach_line
from .rerank import Reranker
from .score_order import in_score_order
from .calibration import UNCALIBRATED, default_cut
from .cut_notes import cut_off_notes
from .retrieval import HybridRetriever
from .verify import Verification, Verifier

VERIFY_SLACK = 5  # candidates retrieved and verified beyond those returned
SEARCH_METHOD = "hybrid: dense (multilingual embeddings) + keyword (FTS5, IDF-weighted coverage)"
CALIBRATED = "scores: calibrated probability of answering"
UNCALIBRATED_SCORES = "scores: relative within this search (no calibration for this embedding model, nothing cut)"


class SearchHit(BaseModel):
    """One result, with what a person or a model needs to judge it and open it."""

    doc_type: str = Field(description="note, file, deck_card, calendar_event or contact")
    title: str
    excerpt: str = Field(description="The passage around the match")
    score: float = Field(description=(
        "Estimated probability in [0, 1] that this item answers the query, from its similarity in meaning and "
        "its exact words; calibrated per embedding model, so it means the same across queries"))
    similarity: float | None = Field(None, description="Cosine similarity of the best passage (raw, model-specific)")
    keyword_match: float | None = Field(None, description=(
        "Share in [0, 1] of the query's distinctive words (weighted by rarity) that the best passage contains"))
    link: str = Field(description="Opens the item in Nextcloud")
    location: str = Field("", description="Folder path, board/stack, calendar or address book")
    section: str | None = Field(None, description=(
        "Where in the item the passage is: 'Page 3', 'Slide 2: <title>', 'Sheet <name>, rows 2-31', or the "
        "heading path of a long text; pass it to nc_get_document to read just that part"))
    modified: str | None = Field(None, description="Last change, ISO 8601 UTC")
    event_start: str | None = Field(None, description="Event start or due date, ISO 8601 UTC")
    event_end: str | None = None
    following: list[str] | None = Field(None, description=(
        "A recurring event's next occurrences after this one (ISO 8601 UTC), for questions about upcoming ones"))
    id: str = Field(description="Stable id of the item: '<doc_type>:<source id>'")
    shared_by: str | None = Field(None, description=(
        "Who owns the item when it is not the caller: the owner's Nextcloud user id (someone shared it with "
        "you; its text was written by them), 'team folder' for a file in a team folder, or 'unknown'. Absent for "
        "your own items"))


# The two search tools' structured results (lib/semantic_mcp/mcp/search_tools.py).


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


def iso(ts: Any) -> str | None:
    try:
        return datetime.fromtimestamp(int(ts), UTC).isoformat().replace("+00:00", "Z") if ts else None
    except (TypeError, ValueError, OverflowError):
        return None


_WORD = re.compile(r"\w{3,}", re.UNICODE)


def excerpt(text: str, query: str, width: int = 360) -> str:
    """A window of ``text`` around the first query term it contains (or its start)."""
    body = text.strip()
    if len(body) <= width:
        return body
    lowered = body.lower()
    positions = [lowered.find(term.lower()) for term in _WORD.findall(query)]
    hits = [p for p in positions if p >= 0]
    start = max(0, min(hits) - width // 3) if hits else 0
    start = body.rfind(" ", 0, start) + 1 if start else 0
    snippet = body[start : start + width].rsplit(" ", 1)[0]
    return ("…" if start else "") + snippet + ("…" if start + len(snippet) < len(body) else "")


@dataclass
class Retrieved:
    """Verified candidates for one query, in rank order, and how they were found."""

    candidates: list[Any]
    total_found: int
    method: str
    dropped: int = 0
    notes: list[str] = field(default_factory=list)
    analysis: dict[str, Any] | None = None  # filters the client's model derived, when it did


class SnapshotCache:
    """Pins one call's retrieved documents across input-required rounds.

    On protocol 2026-07-28 a sampling request must render identically when the client retries;
    if a document were indexed between the two rounds, the prompt would change and the client's
    answer would be discarded. Keyed by user and call arguments, kept for the request-state TTL.
    """

    def __init__(self, ttl: float = 600.0, size: int = 512) -> None:
        self.ttl = ttl
        self.size = size
        self._items: OrderedDict[str, tuple[float, Retrieved]] = OrderedDict()

    @staticmethod
    def key(user: str, *parts: Any) -> str:
        return hashlib.sha256(json.dumps([user, *parts], sort_keys=True, default=str).encode()).hexdigest()

    def get(self, key: str) -> Retrieved | None:
        item = self._items.get(key)
        if item is None or item[0] < time.monotonic():
            self._items.pop(key, None)
            return None
        return item[1]

    def put(self, key: str, value: Retrieved) -> None:
        self._items[key] = (time.monotonic() + self.ttl, value)
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)


class SearchService:
    def __init__(
        self, retriever: HybridRetriever, verifier: Verifier, nextcloud_url: str,
        before_retrieval: Callable[[str], Awaitable[None]] | None = None, reranker: Reranker | None = None,
    ) -> None:
        self.retriever = retriever
        self.reranker = reranker  # SEARCH_RERANK: re-orders the verified candidates (search/rerank.py)
        self.before_retrieval = before_retrieval  # the account check (a uid given anew is purged first)
        self.verifier = verifier
        self.nextcloud_url = nextcloud_url.rstrip("/")
        self.snapshots = SnapshotCache()

    async def retrieve(
        self,
        user: str,
        query: str,
        limit: int,
        filters: SearchFilters,
        *,
        score_threshold: float | None = None,
        keyword_query: str | None = None,
        depth: int | None = None,
        intent: QueryIntent | None = None,
        only_mine: bool = False,
        recheck: bool = True,
    ) -> Retrieved:
        """Hybrid retrieval, threshold, verification as ``user``, then the query's time and type cues
        (``intent``) re-order what is left; returns up to ``depth`` candidates. ``only_mine`` keeps
        the items ``user`` owns (Nextcloud's word, recorded at indexing): nothing someone shared.
        ``recheck=False`` only for a caller that re-checks every item itself before anyone sees it
        (the search bar's companion app does, in process: surfaces/search_bar.py)."""
        if self.before_retrieval is not None:
            await self.before_retrieval(user)
        depth = depth or limit
        # A few more than asked for, so that the hits verification drops can be replaced (and, for
        # only_mine, those others own).
        wanted = (depth * 3 if only_mine else depth) + VERIFY_SLACK
        if self.reranker is not None:  # the stage re-orders this many, so it may lift one from below the limit
            wanted = max(wanted, self.reranker.candidates)
        candidates = await self.retriever.search(user, query, wanted, filters, keyword_query=keyword_query)
        if only_mine:
            candidates = [c for c in candidates if shared_by(c.metadata, user) is None]
        # Scores are calibrated probabilities that the item answers the query, so one cut-off holds
        # for every query: below it, a candidate is noise, and a question nothing answers gets nothing.
        calibration = self.retriever.calibration()
        named_kinds = set(intent.doc_types) if intent is not None else set()
        role = intent.names_role_of if intent is not None else (lambda _: False)  # ADR 0722
        if score_threshold is None:
            cut_off, rule = calibration.cut_off, calibration
            passing = default_cut(calibration, candidates, named_kinds, preferred=role)
        else:
            cut_off, rule = score_threshold, None
            passing = [c for c in candidates if c.score >= cut_off]
        cut_notes = cut_off_notes(candidates, passing, cut_off, limit, calibration=rule, named_kinds=named_kinds,
                                  preferred=role)
        candidates = passing
        if intent is not None and intent.due is not None and (dated := due_filters(filters, intent.due, intent.now)):
            # Overdue or due-soon cards are found by their due date and done state, whatever the cut-off.
            found = await self.retriever.search(user, query, wanted, dated, keyword_query=keyword_query)
            have = {c.doc_key for c in candidates}
            candidates = due_first([c for c in found if c.doc_key not in have] + candidates, intent.due, intent.now)
            cut_notes = cut_notes if passing or not candidates else []
        total = len(candidates)
        checked = (await self.verifier.verify(user, candidates) if recheck
                   else Verification(kept=list(candidates), dropped=[], unverified=0))
        kept, method, notes = checked.kept, SEARCH_METHOD, []
        if self.reranker is not None:  # only what the caller may open, re-ordered; scores stay calibrated
            reranked = await asyncio.to_thread(self.reranker.rerank, query, kept)
            kept = reranked.candidates
            method += ", re-ranked by a cross-encoder" if reranked.applied else ""
            notes += [reranked.note] if reranked.note else []
        if intent is not None:  # a recurring event at its occurrence under way or next, at the search's clock
            kept = at_search_time(kept, intent.now, FOLLOWING if intent.direction == "upcoming" else 0)
            kept = due_first(apply_intent(kept, intent), intent.due, intent.now)
        # The scores a client reads agree with this order, and none shown reads below the cut-off (ADR 0700).
        kept = in_score_order(kept[:depth], cut_off)
        notes.extend(intent.notes() if intent is not None else [])
        notes.extend(cut_notes)
        if checked.dropped:
            notes.append(f"{len(checked.dropped)} result(s) you can no longer open were removed")
        if checked.unverified:
            notes.append(f"{checked.unverified} of your own result(s) could not be re-checked with Nextcloud just "
                         "now and may be out of date")
        if checked.withheld:
            notes.append(f"{checked.withheld} result(s) shared with you were withheld: Nextcloud could not confirm "
                         "just now that you may still open them")
        return Retrieved(
            candidates=kept,
            total_found=max(0, total - len(checked.dropped) - checked.withheld),
            method=f"{method}; {UNCALIBRATED_SCORES if calibration is UNCALIBRATED else CALIBRATED}",
            dropped=len(checked.dropped),
            notes=notes,
        )

    async def still_readable(self, user: str, retrieved: Retrieved) -> bool:
        """True when ``user`` can still open every document of an earlier retrieval (a shared one that
        cannot be re-checked right now does not count as openable)."""
        checked = await self.verifier.verify(user, retrieved.candidates)
        return not checked.dropped and not checked.withheld

    def absolute_link(self, link: str) -> str:
        """A document's link (stored relative to Nextcloud's root) as the user's browser opens it."""
        return f"{self.nextcloud_url}{link}" if link.startswith("/") else link

    def hit(self, candidate: Any, query: str, user: str) -> SearchHit:
        meta = candidate.metadata
        return SearchHit(
            shared_by=shared_by(meta, user),
            doc_type=str(meta.get("doc_type", "")),
            title=str(meta.get("title", "")),
            excerpt=_with_reach(excerpt(candidate.text, query), meta, query),
            score=round(float(candidate.score), 4),
            similarity=round(float(candidate.dense_score), 4) if candidate.dense_score is not None else None,
            keyword_match=round(float(candidate.coverage), 4) if candidate.coverage is not None else None,
            link=self.absolute_link(str(meta.get("link") or "")),
            location=str(meta.get("location", "")),
            section=str(meta["section"]) if meta.get("section") else None,
            modified=iso(meta.get("modified")),
            event_start=iso(meta.get("event_start")),
            event_end=iso(meta.get("event_end")),
            following=[iso(start) or "" for start in meta["following"]] if meta.get("following") else None,
            id=candidate.doc_key,
        )


def _with_reach(shown: str, metadata: dict[str, Any], query: str) -> str:
    """The excerpt, with a contact's fields the question asks for when it does not show them (item_fields.py)."""
    line = reach_line(metadata, query, shown)
    return f"{shown} — {line}" if line else shown


def shared_by(metadata: Any, user: str) -> str | None:
    """The owner of an item when it is not ``user`` ("unknown" when the index does not know it; "team
    folder" for a file in one, which every member may have written: ADR 0350)."""
    if isinstance(metadata, dict) and metadata.get("team_folder"):
        return "team folder"
    owner = metadata.get("owner") if isinstance(metadata, dict) else None
    return None if owner == user else (str(owner) if owner else "unknown")


def merge_filters(explicit: SearchFilters, derived: dict[str, Any]) -> SearchFilters:
    """Filters the model derived fill only what the caller left open: explicit arguments win."""
    updates = {name: value for name, value in derived.items() if value is not None and getattr(explicit, name) is None}
    return replace(explicit, **updates) if updates else explicit
