"""The sync status a user sees (the ``nc_get_vector_sync_status`` tool): what is indexed, pending or failed per
source, Nextcloud's and the webhooks' health, and which model, store and re-ranking serve the searches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.documents import DOC_TYPES
from ..search.service import iso

if TYPE_CHECKING:
    from ..engine import Engine


def sync_status(engine: Engine, user: str) -> dict[str, Any]:
    state = engine.state.status(user)
    settings = engine.settings()
    per_type = state["per_type"]
    sources = {
        doc_type: {
            "enabled_by_admin": settings.source_enabled(doc_type),  # type: ignore[arg-type]
            **{n: per_type.get(doc_type, {}).get(n, 0) for n in ("indexed", "pending", "failed", "skipped")},
            **({"waiting_for_ocr": per_type.get(doc_type, {}).get("waiting_for_ocr", 0)} if doc_type == "file" else {}),
            "last_reconciliation": iso(per_type.get(doc_type, {}).get("last_reconciliation")),
        }
        for doc_type in DOC_TYPES
    }
    sources["file"]["team_folders"] = team_folder_status(engine, user)
    health = engine.health.snapshot()
    return {
        "user": user,
        "enabled": engine.is_user_enabled(user),
        "nextcloud": {
            **health,
            "unreachable_since": iso(health["unreachable_since"]),
            "last_success": iso(health["last_success"]),
        },
        "webhooks": {**engine.webhooks.as_dict(), "checked_at": iso(engine.webhooks.checked_at)},
        "sources": sources,
        "last_event": iso(state["last_event"]),
        "failures": [
            {"id": f"{d['doc_type']}:{d['source_id']}", "reason": d["reason"], "attempts": d["attempts"]}
            for d in state["dead_letters"]
        ],
        "skipped_examples": [
            {"id": f"{d['doc_type']}:{d['source_id']}", "reason": d["reason"]} for d in state["skipped"]
        ],
        "embedding_model": engine._embedder.model_id if engine._embedder else settings.embedding_backend,
        "vector_store": f"chroma server {engine.deployment.chroma_host}" if engine.deployment.chroma_host else "embedded chroma",
        "initial_indexing_progress": engine.backfill_progress,
        "sampling": {name: gate.status(user) for name, gate in engine.gates.items()},
        "local_reranking": engine.search.reranker.status() if engine.search.reranker else {"enabled": False},
        # Re-checks of search hits with Nextcloud (server-wide): hits served unchecked are the
        # callers' own; shared ones that could not be re-checked were withheld.
        "verification": dict(engine.verifier.metrics),
        "recheck_window_seconds": settings.recheck_window_seconds,  # how old a verdict may be when served (ADR 0780)
        # The PHP companion app (search bar, one-request re-checks): whether Nextcloud has it enabled.
        "companion_app": engine.verifier.companion.status() if engine.verifier.companion else {"state": "not used"},
    }


def team_folder_status(engine: Engine, user: str) -> list[dict[str, Any]]:
    """The user's team folders and how many of their indexed files lie in each: the files are counted
    in ``indexed`` once for every member who sees them, and this says which of those are shared."""
    folders = []
    for folder_id, mount in sorted(engine.state.team_folders(user).items(), key=lambda item: item[1]):
        files = [doc for doc in engine.state.under_location(user, mount) if doc.ref.doc_type == "file"]
        # stored_once: those whose chunks are the folder's shared space's, stored once for all its members
        folders.append({"name": mount.lstrip("/"), "path": mount, "id": folder_id, "indexed": len(files),
                        "stored_once": sum(doc.space is not None for doc in files)})
    return folders

