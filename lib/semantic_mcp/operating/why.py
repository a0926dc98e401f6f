"""Why an item was (not) found (issue 40, item 2): ``occ semantic_mcp:why <user> <path-or-id> [question]``
and the admin page's form.

The answer comes from the item's own state, never a guess: its rows in the indexing state (queued,
indexed, skipped with the reason recorded when it was decided, failed with the error and attempts),
and, for a file, what Nextcloud lists for the user now and the decision the files source would take
on it (:meth:`FilesSource.why_not`). Given a question, the item's place among the search's candidates
and what the relevance cut-off did with it.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from typing import TYPE_CHECKING, Any

from ..core.documents import DOC_TYPES, DocRef, valid_source_id
from ..core.filters import SearchFilters
from ..nextcloud.client import NextcloudError, NotFound
from ..search.calibration import default_cut
from ..search.cut_notes import why_left_out
from ..search.service import iso
from ..sources.base import Source
from ..sources.files import FileInfo, FilesSource, lookup_file, lookup_path
from .overview import OCR_PRIORITY, read_only

if TYPE_CHECKING:
    from ..engine import Engine

RANKED = 50  # candidates a question is looked up among
LANES = {0: "urgent lane (changes users just made)", 1: "catching-up lane", OCR_PRIORITY: "OCR lane"}
_TYPED = re.compile(r"(?P<type>[a-z_]+):(?P<id>.+)")


class WhyError(ValueError):
    """The request cannot be answered as asked: one sentence saying what to give instead."""


def parse_target(target: str) -> tuple[DocRef | None, str | None]:
    """``file:123`` / ``note:45`` / ``deck_card:7`` / ``calendar_event:<cal>/<obj>`` -> that item;
    a bare number -> the file (or note) with that id; anything else is a path in the user's files."""
    target = target.strip()
    if not target:
        raise WhyError("Name the item: a path in the user's files (/Documents/contract.pdf), a file id, "
                       "or an id as the search shows it (file:123, note:45, deck_card:7).")
    if (match := _TYPED.fullmatch(target)) and match["type"] in DOC_TYPES:
        if not valid_source_id(match["type"], match["id"]):  # type: ignore[arg-type]
            raise WhyError(f"{target!r} is not a valid {match['type']} id.")
        return DocRef("", match["type"], match["id"]), None  # type: ignore[arg-type]
    if target.isdigit():
        return DocRef("", "file", target), None
    return None, "/" + target.strip("/")


def _state_rows(engine: Engine, ref: DocRef) -> dict[str, dict[str, Any]]:
    key = (ref.user, ref.doc_type, ref.source_id)
    where = "user = ? AND doc_type = ? AND source_id = ?"
    found: dict[str, dict[str, Any]] = {}
    path = engine.deployment.storage / "state.db"
    if not path.exists():
        return found
    with closing(read_only(path)) as db:
        for table in ("tasks", "documents", "skipped", "dead_letters", "refused"):
            row = db.execute(f"SELECT * FROM {table} WHERE {where}", key).fetchone()
            if row is not None:
                found[table] = dict(row)
        if task := found.get("tasks"):
            task["ahead_for_user"] = _ahead(db, task, "AND user = ?", ref.user)
            task["ahead_in_lane"] = _ahead(db, task, "")
            task["in_lane"] = db.execute("SELECT COUNT(*) FROM tasks WHERE priority = ?", (task["priority"],)).fetchone()[0]
    return found


def _ahead(db: sqlite3.Connection, task: dict[str, Any], where: str, *args: Any) -> int:
    """Tasks of the same lane enqueued before this one (claimed in turns between users, oldest first)."""
    sql = f"SELECT COUNT(*) FROM tasks WHERE priority = ? AND enqueued_at < ? {where}"
    return int(db.execute(sql, (task["priority"], task["enqueued_at"], *args)).fetchone()[0])


def _indexed_by_path(engine: Engine, user: str, path: str) -> DocRef | None:
    db_path = engine.deployment.storage / "state.db"
    if not db_path.exists():
        return None
    with closing(read_only(db_path)) as db:
        row = db.execute("SELECT doc_type, source_id FROM documents WHERE user = ? AND location = ? "
                         "AND doc_type IN ('file', 'note')", (user, path)).fetchone()
    return DocRef(user, row["doc_type"], row["source_id"]) if row else None


async def _live_file(engine: Engine, user: str, file_id: str | None, path: str | None) -> tuple[FileInfo | None, str]:
    """What Nextcloud lists for ``user`` now: (the file, "") or (None, why it could not be seen)."""
    try:
        if path is not None:
            return await lookup_path(engine.nc, user, path), ""
        return await lookup_file(engine.nc, user, file_id or ""), ""
    except NotFound:
        return None, "not_found"
    except (NextcloudError, OSError) as exc:
        return None, f"Nextcloud could not be asked just now ({exc})"


async def _can_read(source: Source, engine: Engine, user: str, source_id: str) -> str:
    """"" when ``user`` can open the item now, "not_found" when not, else why Nextcloud could not say."""
    try:
        return "" if await source.can_read(engine.nc, user, source_id) else "not_found"
    except (NextcloudError, OSError) as exc:
        return f"Nextcloud could not be asked just now ({exc})"


def _sections(engine: Engine, ref: DocRef, chunks: int) -> list[str]:
    try:
        records = engine.store().get_chunks(ref.user, [f"{ref.key}#{i}" for i in range(chunks)], read_texts=False)
    except Exception:  # noqa: BLE001 - the sections are a detail; the verdict stands without them
        return []
    return list(dict.fromkeys(str(r.metadata["section"]) for r in records if r.metadata.get("section")))


def _skip_kind(reason: str) -> str:
    if reason.startswith(("excluded by", "tagged")):
        return "excluded"
    if reason.startswith("too large"):
        return "too large"
    if reason.startswith("a note"):
        return "indexed as a note"
    return "unsupported"


def _verdict(engine: Engine, ref: DocRef, rows: dict[str, dict[str, Any]]) -> tuple[str, str, dict[str, Any]]:
    """(state, one sentence, details) from the item's rows; a queued task comes first, as it decides next."""
    if task := rows.get("tasks"):
        lane = LANES.get(task["priority"], "queue")
        place = (f"{task['ahead_for_user'] + 1} of this user's items in the {lane} "
                 f"({task['ahead_in_lane']} item(s) of all users were queued before it, {task['in_lane']} in the lane)")
        details = {"action": task["action"], "lane": lane, "place_for_user": task["ahead_for_user"] + 1,
                   "queued_before_it": task["ahead_in_lane"], "in_lane": task["in_lane"],
                   "attempts": task["attempts"], "last_error": task["last_error"],
                   "queued_at": iso(task["enqueued_at"]), "running": bool(task["running"]),
                   "next_try": iso(task["not_before"]) if task["not_before"] else None}
        if task["running"]:
            return "waiting", f"It is being indexed right now ({lane}).", details
        retry = f"; attempt {task['attempts']} failed ({task['last_error']}), next try {details['next_try']}" if task["attempts"] else ""
        return "waiting", f"It is waiting to be {'removed' if task['action'] == 'delete' else 'indexed'}: {place}{retry}.", details
    if dead := rows.get("dead_letters"):
        refused = rows.get("refused")
        next_try = ("when the item changes (the document itself made the parser fail, so this version is not tried again)"
                    if refused else "when the app restarts or Nextcloud answers again after a pause, or when the item changes")
        details = {"reason": dead["reason"], "attempts": dead["attempts"], "failed_at": iso(dead["at"]), "next_try": next_try}
        return "failed", f"Indexing it failed after {dead['attempts']} attempt(s): {dead['reason']}. Next try: {next_try}.", details
    if doc := rows.get("documents"):
        sections = _sections(engine, ref, doc["chunk_count"])
        details = {"indexed_at": iso(doc["indexed_at"]), "title": doc["title"], "location": doc["location"],
                   "chunks": doc["chunk_count"], "sections": sections, "version": doc["version"]}
        where = f", sections: {', '.join(sections[:8])}{' …' if len(sections) > 8 else ''}" if sections else ""
        return "indexed", f"It is indexed ({details['indexed_at']}, {doc['chunk_count']} chunk(s){where}).", details
    if skipped := rows.get("skipped"):
        kind = _skip_kind(skipped["reason"])
        details = {"reason": skipped["reason"], "decided_at": iso(skipped["at"]), "version": skipped["version"]}
        return kind, f"It is not indexed: {skipped['reason']} (decided {details['decided_at']}).", details
    return "not seen", "The index has no record of it.", {}


async def explain(engine: Engine, user: str, target: str, question: str = "") -> dict[str, Any]:
    """Everything ``why`` says about one item for one user (JSON-ready)."""
    user = user.strip()
    if user not in engine.state.users_with_data():
        raise WhyError(f"Semantic MCP has nothing for a user {user!r}: give a Nextcloud user id (occ user:list); "
                       "a new account appears after the next reconciliation.")
    ref, path = parse_target(target)
    ref = DocRef(user, ref.doc_type, ref.source_id) if ref else _indexed_by_path(engine, user, path or "")
    settings = engine.settings()
    live: FileInfo | None = None
    listed_note = ""
    if ref is None or ref.doc_type in ("file", "note"):  # files and notes are files in Nextcloud: ask it
        live, listed_note = await _live_file(engine, user, ref.source_id if ref else None, path)
        if ref is None and live is not None:
            ref = DocRef(user, "file", live.file_id)
    elif (source := engine.sources().get(ref.doc_type)) is not None:  # a card, an event, a contact: can they open it?
        listed_note = await _can_read(source, engine, user, ref.source_id)
    answer: dict[str, Any] = {"user": user, "item": ref.key if ref else None, "path": live.path if live else path,
                              "listed": None if listed_note not in ("", "not_found") else listed_note == "",
                              "user_indexing_on": engine.is_user_enabled(user)}
    if ref is None:
        answer.update(state="not listed", sentence=f"{user} has no file at {path}, so nothing there can be found.")
        return answer
    rows = _state_rows(engine, ref)
    if ref.doc_type == "file" and not rows and live is not None:  # a note is a file the notes source indexes
        note_rows = _state_rows(engine, DocRef(user, "note", ref.source_id))
        if note_rows:
            ref, rows, answer["item"] = DocRef(user, "note", ref.source_id), note_rows, f"note:{ref.source_id}"
    state, sentence, details = _verdict(engine, ref, rows)
    notes: list[str] = []
    if listed_note == "not_found":
        notes.append(f"Nextcloud does not list it for {user} now (deleted, moved out of reach, or never shared with them)")
    elif listed_note:
        notes.append(listed_note)
    if live is not None and isinstance(source := engine.sources().get("file"), FilesSource) and ref.doc_type == "file":
        now = source.why_not(live)
        if now == "folder":
            state, sentence = "folder", "It is a folder: the files in it are indexed one by one (ask about one of them)."
        elif now and state == "not seen":  # listings leave such files out: only an event would have recorded it
            state, details = _skip_kind(now), {"reason": now, "decided_at": None}
            sentence = f"It is not indexed: {now} (the files source's decision on it as it is now)."
        elif now and state != _skip_kind(now):
            notes.append(f"as it is now it would not be indexed: {now}")
        if state == "indexed" and details.get("version") not in (None, live.etag) and not now:
            notes.append("Nextcloud has a newer version than the one indexed; the next event or reconciliation picks it up")
        if state == "not seen" and not now:
            notes.append(f"it is listed and would be indexed: the next reconciliation (every "
                         f"{settings.reconcile_interval_minutes:g} minutes at most) queues it")
    if not settings.source_enabled(ref.doc_type):  # type: ignore[arg-type]
        notes.append(f"the admin has switched off indexing of {ref.doc_type.replace('_', ' ')}s")
    if not answer["user_indexing_on"]:
        notes.append(f"{user} has switched their indexing off (or the admin's default keeps it off)")
    answer.update(state=state, sentence=sentence, details=details, notes=notes)
    if question.strip():
        answer["question"] = await rank_for(engine, ref, question.strip())
    return answer


async def rank_for(engine: Engine, ref: DocRef, question: str) -> dict[str, Any]:
    """Where the item ranks among the search's candidates for ``question`` and what the default cut-off did
    (before the re-check with Nextcloud and the question's time and type cues, which only drop or re-order)."""
    retriever = engine.search.retriever
    candidates = await retriever.search(ref.user, question, RANKED, SearchFilters())
    calibration = retriever.calibration()
    passing = default_cut(calibration, candidates)
    result: dict[str, Any] = {"text": question, "cut_off": round(calibration.cut_off, 3), "results_passing": len(passing)}
    position = next((i for i, c in enumerate(candidates) if c.doc_key == ref.key), None)
    if position is None:
        result.update(rank=None, sentence=f"It is not among the {RANKED} closest items for this question.")
        return result
    candidate = candidates[position]
    kept = next((i for i, c in enumerate(passing) if c.doc_key == ref.key), None)
    result.update(rank=position + 1, score=round(float(candidate.score), 3), passes_cut_off=kept is not None,
                  result_position=None if kept is None else kept + 1)
    if kept is not None:
        result["sentence"] = (f"It ranks {position + 1} of the candidates and passes the cut-off: result {kept + 1} "
                              f"of {len(passing)} (estimated relevance {candidate.score:.2f}).")
    else:
        why = why_left_out(candidate, calibration, calibration.cut_off, set()).replace("the closest item", "this item")
        result["sentence"] = f"It ranks {position + 1} of the candidates, but the cut-off leaves it out: {why}."
    return result
