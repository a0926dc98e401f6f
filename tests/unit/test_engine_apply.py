"""Settings take effect through ``Engine.apply`` alone (ADR 0740): reading the sources or the embedding
model, as every search does, never changes the index state, whatever the settings say meanwhile;
``apply`` with changed settings does what the reading once did (a full pass, a re-index)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from semantic_mcp.core.config import AdminSettings, Deployment
from semantic_mcp.core.documents import DocRef
from semantic_mcp.engine import Engine
from semantic_mcp.nextcloud.client import NextcloudClient

# A remote backend: made without loading a model or asking its server.
REMOTE = AdminSettings(embedding_backend="openai", embedding_url="http://127.0.0.1:9/v1", embedding_model="m1")
SKIPPED, INDEXED = DocRef("alice", "file", "41"), DocRef("alice", "note", "3")


async def no_users() -> list[str]:
    return []


def engine_with(tmp_path: Path, current: dict[str, AdminSettings]) -> Engine:
    engine = Engine(Deployment(storage=tmp_path), NextcloudClient("http://127.0.0.1:9", lambda user: {}),
                    lambda: current["settings"], no_users)
    engine.state.record_skipped(SKIPPED, "v1", "too large")
    engine.state.record_indexed(INDEXED, "v3", "Notes/Tea.md", "Tea", 1, 0)
    return engine


def snapshot(engine: Engine) -> dict[str, Any]:
    """All that reading must leave alone."""
    return {
        "skipped": engine.state.skipped_versions("alice", "file"),
        "indexed": engine.state.indexed_versions("alice", "note"),
        "model": engine.state.get_meta("model_id"),
        "full_pass": engine._full_pass,
        "wake": engine._reconcile_wake.is_set(),
    }


def test_reading_the_sources_and_the_model_changes_nothing_even_when_the_settings_changed(tmp_path: Path) -> None:
    current = {"settings": REMOTE}
    engine = engine_with(tmp_path, current)
    engine.apply()
    before, sources, embedder = snapshot(engine), engine.sources(), engine.embedder()
    assert before["model"] == "openai-m1" and not before["full_pass"] and not before["wake"]

    for _ in range(2):
        assert engine.sources() is sources and engine.embedder() is embedder
    assert snapshot(engine) == before

    # New settings read by nobody but a search: still nothing changes until they are applied.
    current["settings"] = replace(REMOTE, excluded_paths=("Archive",), embedding_model="m2")
    assert engine.sources() is sources and engine.embedder() is embedder
    assert snapshot(engine) == before


def test_apply_with_new_source_settings_decides_skipped_files_again_in_a_full_pass(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, {"settings": REMOTE})
    engine.apply()
    sources = engine.sources()
    engine.apply(REMOTE)  # the same settings again: nothing to do
    assert engine.sources() is sources and snapshot(engine)["skipped"] == {"41": "v1"}

    engine.apply(replace(REMOTE, excluded_paths=("Archive",)))
    after = snapshot(engine)
    assert engine.sources() is not sources and engine.sources()["file"].options.excluded_paths == ("Archive",)
    assert after["skipped"] == {} and after["full_pass"] and after["wake"]
    assert after["indexed"] == {"3": "v3"} and after["model"] == "openai-m1"  # the same model: no re-index


def test_apply_with_a_new_embedding_model_indexes_everything_again(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, {"settings": REMOTE})
    engine.apply()
    first = engine.embedder()
    engine.apply(replace(REMOTE, embedding_model="m2"))
    after = snapshot(engine)
    assert engine.embedder() is not first and engine.embedder().model_id == "openai-m2"
    assert after["model"] == "openai-m2" and after["indexed"] == {} and after["full_pass"] and after["wake"]


def test_before_any_apply_the_first_read_applies_the_settings_once(tmp_path: Path) -> None:
    """A search in the seconds after a start, before the settings refresher's first read."""
    engine = engine_with(tmp_path, {"settings": REMOTE})
    assert engine.embedder().model_id == "openai-m1" and "file" in engine.sources()
    before = snapshot(engine)
    engine.sources(), engine.embedder()
    assert snapshot(engine) == before and before["skipped"] == {"41": "v1"} and not before["full_pass"]
