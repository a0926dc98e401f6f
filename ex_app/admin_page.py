"""The admin overview page's markup: the overview's numbers (the same as ``occ semantic_mcp:status``) and
the "why wasn't it found" form and answer (the same as ``occ semantic_mcp:why``). Every value is escaped."""

from __future__ import annotations

import html
from typing import Any

from semantic_mcp.operating.plain_text import COUNTS, first_pass_line, nextcloud_line, size, webhooks_line

HEADINGS = ("Indexed", "Pending", "Waiting for OCR", "Failed", "Skipped")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _reasons(counts: dict[str, Any]) -> str:
    reasons = counts.get("skipped_by_reason") or {}
    return "<br>".join(f"{n} {_e(reason)}" for reason, n in sorted(reasons.items(), key=lambda item: -item[1])) or "-"


def overview_html(view: dict[str, Any], query: dict[str, str], why: str) -> str:
    first = view["first_pass"]
    progress = first["progress_percent"] or 0
    facts = [
        ("First indexing pass", first_pass_line(first)),
        ("Last reconciliation", view["last_reconciliation"] or "none yet"),
        ("Nextcloud", nextcloud_line(view["nextcloud"])),
        ("Webhooks", webhooks_line(view["webhooks"])),
        ("Embedding model", f"{view['embedding_model']} ({view['vector_store']})"),
        ("Index on disk", size(view["index_bytes_on_disk"])),
        ("Memory", f"{size(view['memory_bytes']['total'])} (app {size(view['memory_bytes']['app'])}, "
                   f"parser workers {size(view['memory_bytes']['parser_workers'])})"),
        *([("Settings", view["settings_problem"])] if view.get("settings_problem") else []),
    ]
    rows = []
    for user in view["users"]:
        name = _e(user["user"]) + ("" if user["enabled"] else ' <span class="muted">(indexing off)</span>')
        rows.append(f'<tr class="user" data-user="{_e(user["user"])}"><td><strong>{name}</strong></td>'
                    + "".join(f"<td>{user[k]}</td>" for k in COUNTS) + "<td></td><td></td></tr>")
        for doc_type, counts in user["sources"].items():
            rows.append(f'<tr class="source"><td>&nbsp;&nbsp;{_e(doc_type.replace("_", " "))}</td>'
                        + "".join(f"<td>{counts[k]}</td>" for k in COUNTS)
                        + f'<td class="muted">{_reasons(counts)}</td><td class="muted">{_e(counts["last_reconciliation"] or "-")}</td></tr>')
    totals = view["totals"]
    rows.append(f'<tr id="totals"><td><strong>All {totals["users"]} user(s)</strong></td>'
                + "".join(f"<td><strong>{totals[k]}</strong></td>" for k in COUNTS) + "<td></td><td></td></tr>")
    head = "".join(f"<th>{h}</th>" for h in ("User / source", *HEADINGS, "Skipped, by reason", "Last reconciliation"))
    return f"""<h1>Semantic MCP: indexing across users</h1>
<p><progress id="first-pass" max="100" value="{progress}"></progress> <span id="first-pass-text">{_e(first_pass_line(first))}</span></p>
<table id="facts">{"".join(f'<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>' for k, v in facts)}</table>
<h2>Per user and source</h2>
<div style="overflow-x:auto"><table id="users"><tr>{head}</tr>{"".join(rows)}</table></div>
<h2>Why wasn't it found?</h2>
<form method="get" id="why-form">
<p><label>User <input name="user" value="{_e(query.get('user', ''))}" required></label>
<label>Path or id <input name="item" value="{_e(query.get('item', ''))}" placeholder="/Documents/contract.pdf or file:123" required></label></p>
<p><label>Question (optional) <input name="question" size="40" value="{_e(query.get('question', ''))}"></label>
<button class="primary" type="submit">Explain</button></p>
</form>
{why}
<p class="muted">The same numbers on the command line: <code>occ semantic_mcp:status</code> (<code>--output=json</code> for
scripts) and <code>occ semantic_mcp:why &lt;user&gt; &lt;path-or-id&gt; [question]</code>. This page refreshes every minute.</p>"""


def why_html(answer: dict[str, Any]) -> str:
    title = answer["item"] or answer["path"]
    parts = [f'<div id="why" class="notice" data-state="{_e(answer["state"])}">',
             f"<p><strong>{_e(title)}</strong> for {_e(answer['user'])}"
             + (f" <code>{_e(answer['path'])}</code>" if answer.get("path") and answer["item"] else "")
             + f": <strong>{_e(answer['state'])}</strong></p>", f"<p>{_e(answer['sentence'])}</p>"]
    parts += [f"<p class=\"muted\">{_e(note[0].upper() + note[1:])}.</p>" for note in answer.get("notes", [])]
    if question := answer.get("question"):
        parts.append(f'<p id="why-question">For “{_e(question["text"])}”: {_e(question["sentence"])}</p>')
    return "".join(parts) + "</div>"
