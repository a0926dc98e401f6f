"""The overview and a ``why`` answer as an admin's terminal shows them (``occ semantic_mcp:status`` and
``occ semantic_mcp:why`` without ``--output=json``): the same values as the JSON, laid out to read."""

from __future__ import annotations

from typing import Any

COUNTS = ("indexed", "pending", "waiting_for_ocr", "failed", "skipped")
HEADINGS = ("indexed", "pending", "ocr", "failed", "skipped")


def size(n: int | None) -> str:
    value = float(n or 0)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def duration(seconds: int | None) -> str:
    if seconds is None:
        return "unknown yet"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min {secs} s" if minutes else f"{secs} s"


def first_pass_line(first: dict[str, Any]) -> str:
    if first["phase"] == "indexing":
        return (f"indexing, {first['progress_percent']} % done, {first['pending']} item(s) to go, "
                f"about {duration(first['seconds_left'])} left")
    if first["phase"] == "finished":
        return "finished" + (f" at {first['finished_at']}" if first["finished_at"] else "")
    return f"{first['phase']} ({first['users_listed']} user(s) listed so far)"


def webhooks_line(hooks: dict[str, Any]) -> str:
    if hooks["checked_at"] is None:
        return "not checked yet"
    if hooks["missing"]:
        return (f"{len(hooks['missing'])} missing ({hooks['error'] or ', '.join(hooks['missing'][:3])}): "
                f"reconciling every minute meanwhile; checked {hooks['checked_at']}")
    return f"{hooks['registered']} registered, checked {hooks['checked_at']}"


def nextcloud_line(nc: dict[str, Any]) -> str:
    if nc["paused"]:
        return f"paused: {nc['pause_reason']}" + (f" (since {nc['unreachable_since']})" if nc["unreachable_since"] else "")
    return f"answering (last success {nc['last_success']})"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
            for row in rows]


def status_text(view: dict[str, Any]) -> str:
    lines = [
        "Semantic MCP: indexing across users",
        f"First indexing pass:  {first_pass_line(view['first_pass'])}",
        f"Last reconciliation:  {view['last_reconciliation'] or 'none yet'}",
        f"Nextcloud:            {nextcloud_line(view['nextcloud'])}",
        f"Webhooks:             {webhooks_line(view['webhooks'])}",
        f"Embedding model:      {view['embedding_model']} ({view['vector_store']})",
        f"Index on disk:        {size(view['index_bytes_on_disk'])}",
        f"Memory:               {size(view['memory_bytes']['total'])} (app {size(view['memory_bytes']['app'])}, "
        f"parser workers {size(view['memory_bytes']['parser_workers'])})",
        *([f"Settings:             {view['settings_problem']}"] if view.get("settings_problem") else []),
        "",
    ]
    rows = [["user / source", *HEADINGS, "last reconciliation"]]
    for user in view["users"]:
        rows.append([user["user"] + ("" if user["enabled"] else " (indexing off)"), *(str(user[k]) for k in COUNTS), ""])
        for doc_type, counts in user["sources"].items():
            rows.append([f"  {doc_type}", *(str(counts[k]) for k in COUNTS), counts["last_reconciliation"] or "-"])
    totals = view["totals"]
    rows.append([f"all {totals['users']} user(s)", *(str(totals[k]) for k in COUNTS), ""])
    lines += _table(rows)
    reasons = [(user["user"], doc_type, reason, n) for user in view["users"]
               for doc_type, counts in user["sources"].items() for reason, n in counts["skipped_by_reason"].items()]
    if reasons:
        lines += ["", "Skipped, by reason:"]
        lines += [f"  {user} {doc_type}: {n} {reason}" for user, doc_type, reason, n in reasons]
    return "\n".join(lines) + "\n"


def why_text(answer: dict[str, Any]) -> str:
    lines = [f"{answer['item'] or answer['path']} for {answer['user']}"
             + (f" ({answer['path']})" if answer.get("path") and answer["item"] else "") + f": {answer['state']}",
             answer["sentence"]]
    lines += [f"Note: {note[0].upper()}{note[1:]}." for note in answer.get("notes", [])]
    if question := answer.get("question"):
        lines.append(f"For \"{question['text']}\": {question['sentence']}")
    return "\n".join(lines) + "\n"
