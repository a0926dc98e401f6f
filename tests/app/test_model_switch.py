"""Switching the embedding model: the dimension is read from the new model, everything is
re-indexed into new collections, and search keeps working — no restart, no crash."""

from __future__ import annotations

import asyncio

from stack import APP_ID, Stack


def test_switching_the_embedding_model_reindexes_into_new_collections(tmp_path) -> None:
    stack = Stack(tmp_path, profile="minimal").start()
    try:
        asyncio.run(_switch(stack))
    finally:
        stack.stop()


async def _switch(stack: Stack) -> None:
    before = await stack.status("alice")
    assert before["embedding_model"] == "multilingual-e5-small-q4"
    indexed = {t: s["indexed"] for t, s in before["sources"].items()}
    stack.fake.set_admin_setting(APP_ID, "embedding_backend", "minilm")

    async def switched() -> bool:
        await stack.search("alice", "dentist appointment")  # searching also picks up the new model
        status = await stack.status("alice")
        return (status["embedding_model"] != before["embedding_model"]
                and {t: s["indexed"] for t, s in status["sources"].items()} == indexed
                and all(s["pending"] == 0 for s in status["sources"].values()))

    await stack.eventually(switched, timeout=120, interval=1.0)
    assert "all-MiniLM" in (await stack.status("alice"))["embedding_model"]
    assert (await stack.titles("alice", "dentist appointment", doc_types=["calendar_event"]))[0] == "Dentist appointment"
    assert "Embedding model changed" in stack.log()
