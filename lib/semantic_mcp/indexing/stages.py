"""The main lane's three stages, overlapping: while one batch is written to the index, the next is
embedded and the one after it fetched.

Each stage mostly waits on another process or a thread: fetching on Nextcloud and the parser
process, embedding on the embedding service (or the model's native threads), writing on Chroma and
SQLite. One after the other, each left the others idle: the embedding service waited while the app
fetched, and Nextcloud while it wrote. Batches go through each stage one at a time and in the
order they were claimed, so the queue's turns (``IndexState.claim``) are kept, and no batch is
written before the one claimed ahead of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

B = TypeVar("B")  # a claimed batch with its fetched documents
V = TypeVar("V")  # the batch's chunks with their vectors


class Stages(Generic[B, V]):
    """``fetch`` claims and fetches a batch (None: nothing ready); ``embed`` and ``write`` take it on.

    ``may_fetch`` says whether the next batch may be fetched ahead now; ``ready`` waits until one
    may be fetched at all (Nextcloud usable); ``idle`` waits for work when the queue is empty."""

    def __init__(
        self,
        fetch: Callable[[], Awaitable[B | None]],
        embed: Callable[[B], Awaitable[V]],
        write: Callable[[B, V], Awaitable[None]],
        *,
        may_fetch: Callable[[], bool],
        ready: Callable[[], Awaitable[None]],
        idle: Callable[[], Awaitable[None]],
    ) -> None:
        self.fetch, self.embed, self.write = fetch, embed, write
        self.may_fetch, self.ready, self.idle = may_fetch, ready, idle

    async def run(self) -> None:
        """Until cancelled; then the stages in flight are cancelled too (their claimed tasks are
        given back by ``IndexState.recover`` at the next start, as any interrupted task)."""
        fetching: asyncio.Task[B | None] | None = None
        writing: asyncio.Task[None] | None = None
        try:
            while True:
                if fetching is None:
                    await self.ready()
                    fetching = asyncio.ensure_future(self.fetch())
                batch = await fetching
                fetching = None
                if batch is None:
                    if writing is not None:  # what it completes or fails may change what is ready
                        await writing
                        writing = None
                    else:
                        await self.idle()
                    continue
                if self.may_fetch():  # the next batch, fetched while this one is embedded
                    fetching = asyncio.ensure_future(self.fetch())
                vectors = await self.embed(batch)
                if writing is not None:
                    await writing
                writing = asyncio.ensure_future(self.write(batch, vectors))
        finally:
            for stage in (fetching, writing):
                if stage is not None:
                    stage.cancel()
