"""The main lane's stages (lib/semantic_mcp/indexing/stages.py): fetching, embedding and writing
overlap, one batch in each stage at a time, and batches are written in the order they were claimed."""

from __future__ import annotations

import asyncio
import time

import pytest
from semantic_mcp.indexing.stages import Stages


class Recorder:
    """Stages that take ``seconds`` each and log when each batch starts and ends them."""

    def __init__(self, batches: int, seconds: dict[str, float]) -> None:
        self.queue = list(range(batches))
        self.seconds = seconds
        self.log: list[tuple[str, str, int]] = []  # (stage, "start" | "end", batch)
        self.busy = {stage: 0 for stage in seconds}
        self.most = {stage: 0 for stage in seconds}
        self.done = asyncio.Event()
        self.fetch_allowed = True

    async def _stage(self, stage: str, batch: int) -> None:
        self.busy[stage] += 1
        self.most[stage] = max(self.most[stage], self.busy[stage])
        self.log.append((stage, "start", batch))
        try:
            await asyncio.sleep(self.seconds[stage])
        except asyncio.CancelledError:
            self.log.append((stage, "cancelled", batch))
            raise
        finally:
            self.busy[stage] -= 1
        self.log.append((stage, "end", batch))

    async def fetch(self) -> int | None:
        if not self.queue:
            return None
        batch = self.queue.pop(0)  # claimed at once, as IndexState.claim does before the fetching
        await self._stage("fetch", batch)
        return batch

    async def embed(self, batch: int) -> str:
        await self._stage("embed", batch)
        return f"vectors of {batch}"

    async def write(self, batch: int, vectors: str) -> None:
        assert vectors == f"vectors of {batch}"
        await self._stage("write", batch)

    async def idle(self) -> None:
        self.done.set()
        await asyncio.sleep(3600)

    def stages(self) -> Stages[int, str]:
        async def ready() -> None:
            return None

        return Stages(self.fetch, self.embed, self.write, may_fetch=lambda: self.fetch_allowed, ready=ready,
                      idle=self.idle)

    def order(self, stage: str, what: str = "end") -> list[int]:
        return [batch for s, w, batch in self.log if s == stage and w == what]


async def _run(recorder: Recorder) -> float:
    started = time.monotonic()
    runner = asyncio.ensure_future(recorder.stages().run())
    await asyncio.wait_for(recorder.done.wait(), timeout=10)
    took = time.monotonic() - started
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner
    return took


async def test_the_stages_overlap_one_batch_each_and_write_in_claim_order() -> None:
    recorder = Recorder(6, {"fetch": 0.1, "embed": 0.1, "write": 0.1})
    took = await _run(recorder)
    assert recorder.order("write") == list(range(6))  # written in the order claimed
    assert recorder.order("embed") == list(range(6))
    assert recorder.most == {"fetch": 1, "embed": 1, "write": 1}  # one batch a stage at a time
    # Batch 1 is fetched while batch 0 is embedded, and embedded while batch 0 is written.
    log = recorder.log
    assert log.index(("fetch", "start", 1)) < log.index(("embed", "end", 0))
    assert log.index(("embed", "start", 1)) < log.index(("write", "end", 0))
    # One after the other, 6 batches of three 0.1 s stages took 1.8 s; overlapping, about 0.8 s.
    assert took < 1.3, f"{took:.2f} s"


async def test_no_batch_is_fetched_ahead_while_that_is_not_allowed() -> None:
    """While Nextcloud is not usable (``may_fetch`` false) nothing is claimed ahead of the batch in
    hand: a task claimed then would only be given back."""
    recorder = Recorder(3, {"fetch": 0.05, "embed": 0.05, "write": 0.05})
    recorder.fetch_allowed = False
    await _run(recorder)
    log = recorder.log
    for batch in (1, 2):
        assert log.index(("fetch", "start", batch)) > log.index(("embed", "end", batch - 1))
    assert recorder.order("write") == [0, 1, 2]


async def test_cancelling_the_lane_cancels_the_stages_in_flight() -> None:
    recorder = Recorder(2, {"fetch": 0.05, "embed": 0.05, "write": 5.0})
    runner = asyncio.ensure_future(recorder.stages().run())
    while ("write", "start", 0) not in recorder.log:
        await asyncio.sleep(0.01)
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner
    await asyncio.sleep(0.05)
    assert ("write", "cancelled", 0) in recorder.log  # the write in flight was cancelled, not left running
