"""What Nextcloud's search bar shows, ranked here and opened there.

The companion app's search provider (companion/semantic_search/lib/Search/Provider.php) calls
``POST /search-bar`` through AppAPI's ``exAppRequest``: the user only in AppAPI's signed headers,
the term and how many hits in the body. The hits are not re-checked here: the provider opens each
one as the user in process (node ids through the user's own root folder, Deck's permissions, the
user's calendars and address books) before anything is shown, so the search holds one PHP worker
and never waits for a second one. Titles and links come from Nextcloud there too; this side gives
the ranking, the place inside the item (page, slide, section, folder, board) and an event's time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.filters import SearchFilters
from ..search.intent import read_intent

if TYPE_CHECKING:
    from ..engine import Engine

MAX_HITS = 100  # Provider::MAX_DEPTH
MAX_TERM = 500


class BadRequest(ValueError):
    """The provider sent something it never sends: said in one sentence, nothing searched."""


def read_request(body: Any) -> tuple[str, int]:
    """The query (Unified Search's ``term``) and the number of hits from the provider's JSON body."""
    if not isinstance(body, dict):
        raise BadRequest("The search bar request must be a JSON object with a term and a limit.")
    term = body.get("term")
    if not isinstance(term, str) or not term.strip():
        raise BadRequest("The search bar request has no term to search for.")
    limit = body.get("limit", 10)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise BadRequest("The search bar request's limit must be a positive whole number.")
    return term.strip()[:MAX_TERM], min(limit, MAX_HITS)


async def search_bar(engine: Engine, user: str, query: str, limit: int) -> dict[str, Any]:
    """Up to ``limit`` of ``user``'s hits for ``query``, best first, items whose title is the query first."""
    if not engine.is_user_enabled(user):  # their index is empty anyway; say why
        return {"results": [], "note": "Indexing is turned off for this account."}
    # The calibrated cut-off alone, without the noise-floor rule the MCP tools add: a person scans a short
    # list whose best item comes first, beside the other providers' word matches (ADR 0370).
    cut_off = engine.search.retriever.calibration().cut_off
    # A source the admin just switched off shows nothing, though its items may not have left the index yet
    # (search/verify.py drops them for the same reason).
    enabled = sorted(engine.sources())
    if not enabled:
        return {"results": []}
    retrieved = await engine.search.retrieve(
        user, query, limit, SearchFilters(doc_types=enabled), score_threshold=cut_off, depth=limit,
        intent=read_intent(query, engine.clock.now()), recheck=False,
    )
    hits = [_hit(candidate) for candidate in retrieved.candidates]
    return {"results": titles_first(hits, query)}


def _hit(candidate: Any) -> dict[str, Any]:
    meta = candidate.metadata
    doc_type, _, source_id = candidate.doc_key.partition(":")
    place = " · ".join(part for part in (str(meta.get("section") or ""), str(meta.get("location") or "")) if part)
    starts = meta.get("event_start") if doc_type == "calendar_event" else None
    return {
        "type": doc_type,
        "id": source_id,
        "title": str(meta.get("title", "")),
        "link": str(meta.get("link") or ""),
        "place": place,
        "starts": int(starts) if isinstance(starts, int | float) or str(starts or "").isdigit() else None,
    }


def titles_first(hits: list[dict[str, Any]], term: str) -> list[dict[str, Any]]:
    """Hits whose whole title is the term, then those whose title contains it, then the rest, each in
    rank order: what the other providers find by name is what the user expects first."""
    needle = term.casefold()

    def tier(hit: dict[str, Any]) -> int:
        title = hit["title"].casefold()
        return 0 if title == needle or title.rsplit(".", 1)[0] == needle else 1 if needle in title else 2

    return sorted(hits, key=tier)  # stable: rank order within a tier
