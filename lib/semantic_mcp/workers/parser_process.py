"""Run document parsers in a separate process with a memory and a time bound (ADR 0510).

Every parser (PDF, DOCX, ODT, HTML, iCalendar with its recurrence rules, vCard) reads content that
any user, or anyone who shares with one, controls, and parsers have inputs that make them loop or
allocate without end. Run in the app they would freeze the event loop (heartbeat, every user's
search) or take the process down, and after a restart the same task would do it again. So they run
here: in a worker process whose address space is capped (``RLIMIT_AS``) and which is killed when a
parse overruns its time. The app only waits on a pipe. The worker is reused between documents and
started again after it was killed or died.

A bound that trips raises :class:`ParserFailed` with a reason for the status tool; the pipeline
counts it as a failed attempt, so a document that always trips it ends dead-lettered.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import importlib
import logging
import os
import pickle
import queue
import resource
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

log = logging.getLogger(__name__)

_HEADER = struct.Struct("!Q")
_READY = b"ready"
START_SECONDS = 60.0  # importing the parsers; not counted against a document's time


class ParserFailed(Exception):
    """A parse ran out of time or memory, or the worker died on it; ``reason`` is for the status tool."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.version = ""  # of the document, set by the source that knows it: a new version is tried again
        self.overran = False  # it ran out of its whole time bound


class _Overrun(Exception):
    pass


def _write_frame(fd: int, payload: bytes) -> None:
    data = memoryview(_HEADER.pack(len(payload)) + payload)
    while data:
        data = data[os.write(fd, data):]


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    while size:
        if deadline is not None:  # poll, not select: the app may hold more than 1024 descriptors
            remaining = deadline - time.monotonic()
            waiting = select.poll()
            waiting.register(fd, select.POLLIN)
            if remaining <= 0 or not waiting.poll(remaining * 1000):
                raise _Overrun
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _read_frame(fd: int, deadline: float | None) -> bytes:
    (size,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size, deadline))
    return _read_exactly(fd, size, deadline)


class _Worker:
    """One worker process, used by one thread at a time."""

    def __init__(self, memory_bytes: int, prepare: tuple[str, ...] = ()) -> None:
        self.memory_bytes, self.prepare = memory_bytes, prepare
        self.process: subprocess.Popen[bytes] | None = None

    def call(self, request: bytes, timeout: float) -> tuple[str, Any]:
        if self.process is None or self.process.poll() is not None:
            self._start()
        assert self.process is not None and self.process.stdin and self.process.stdout
        deadline = time.monotonic() + timeout
        try:
            _write_frame(self.process.stdin.fileno(), request)
            status, value, retiring = pickle.loads(_read_frame(self.process.stdout.fileno(), deadline))
            if retiring:
                self.stop()  # it exits by itself; a fresh one takes the next document
            return status, value
        except _Overrun:
            self.stop()
            overrun = ParserFailed(f"parsing took longer than {timeout:g} s (stopped)")
            overrun.overran = True
            raise overrun from None
        except (BrokenPipeError, EOFError):
            code = self.stop()
            how = f"killed by signal {-code}" if code and code < 0 else f"exited with {code}"
            raise ParserFailed(f"the parser process died on this document ({how})") from None

    def _start(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", f"from {__name__} import _serve; _serve({self.memory_bytes}, {self.prepare!r})"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, start_new_session=True,
        )
        assert self.process.stdout is not None
        try:
            if _read_frame(self.process.stdout.fileno(), time.monotonic() + START_SECONDS) != _READY:
                raise EOFError
        except (_Overrun, EOFError):
            self.stop()
            raise ParserFailed("the parser process could not start") from None

    def stop(self) -> int | None:
        process, self.process = self.process, None
        if process is None:
            return None
        if process.poll() is None:
            process.kill()
        for stream in (process.stdin, process.stdout):
            if stream:
                stream.close()
        return process.wait()


class ParserPool:
    """``size`` worker processes; :meth:`run` calls ``module:function`` in one of them.

    Calls queue in a private thread pool with one thread per worker, so a slow parse never holds a
    thread the rest of the app needs. Loop-agnostic: any event loop may await :meth:`run`.
    """

    def __init__(self, *, size: int = 2, timeout: float = 60.0, memory_mb: int = 1024,
                 prepare: tuple[str, ...] = ()) -> None:
        self.size, self.timeout, self.memory_mb = size, timeout, memory_mb
        self._idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
        self._workers = [_Worker(memory_mb * 1024 * 1024, prepare) for _ in range(size)]
        for worker in self._workers:
            self._idle.put(worker)
        self._threads = ThreadPoolExecutor(max_workers=size, thread_name_prefix="parser")
        self._owner_slots: dict[str, asyncio.Semaphore] = {}  # per parse_owner: size - 1 at once

    async def run(self, function: str, *args: Any, timeout: float | None = None) -> Any:
        """Call ``function`` ("package.module:name") with ``args`` in a worker and return its result.

        Exceptions the function raises come back as themselves (they must be picklable);
        running out of time (``timeout``, or the pool's) or memory, or the worker dying, raises
        :class:`ParserFailed`.
        """
        request = pickle.dumps((function, args), protocol=pickle.HIGHEST_PROTOCOL)
        call = functools.partial(self._call, request, timeout or self.timeout)
        owner = parse_owner.get()
        if owner and self.size > 1:  # one user's parses leave a worker free for everyone else's
            async with self._owner_slots.setdefault(owner, asyncio.Semaphore(self.size - 1)):
                status, value = await asyncio.get_running_loop().run_in_executor(self._threads, call)
        else:
            status, value = await asyncio.get_running_loop().run_in_executor(self._threads, call)
        if status == "raised":
            raise value
        if status == "memory":
            raise ParserFailed(f"the parser needed more than its {self.memory_mb} MB of memory (stopped)")
        return value

    def _call(self, request: bytes, timeout: float) -> tuple[str, Any]:
        worker = self._idle.get()
        try:
            return worker.call(request, timeout)
        finally:
            self._idle.put(worker)

    def close(self) -> None:
        for worker in self._workers:
            worker.stop()


# The main lane's workers also make the pipeline's chunk records (ADR 0569): what that needs is
# loaded before their memory cap, so the cap bounds a document, not a language model.
MAIN_LANE_PREPARES = ("semantic_mcp.indexing.records:prepare",)

_lock = threading.Lock()
_pools: dict[str, ParserPool] = {}
_settings: dict[str, Any] = {}


def configure(*, size: int | float, timeout: float, memory_mb: int | float) -> None:
    """Set the bounds the app runs its parsers with (from the deployment's environment)."""
    with _lock:
        _settings.update(size=int(size), timeout=float(timeout), memory_mb=int(memory_mb))
    shutdown()


HEAVY_SECONDS = 600.0  # how long a user whose parse overran its bound stays in the heavy lane
READ_LANE_WORKERS = 2  # a user parses one item at a time there (reading_lane.py): two users at once


def lower_priority() -> None:
    """A read-lane worker yields the CPU to indexing: a read waits a little, an edited note does not."""
    os.nice(10)


def pool(lane: str = "main") -> ParserPool:
    """The workers of a lane: ``main`` for indexing; ``ocr`` for indexing's OCR, one worker (ADR 0601);
    ``read`` for the reading tool, parsing and OCR, its workers at a lower CPU priority, so that no
    read ever holds a worker indexing needs (issue 36)."""
    with _lock:
        if lane not in _pools:
            lane_settings: dict[str, Any] = {
                "main": {"prepare": MAIN_LANE_PREPARES},
                "read": {"size": READ_LANE_WORKERS},  # at indexing's priority: a read waits for no one's requests
                "heavy": {"size": 1, "prepare": ("semantic_mcp.workers.parser_process:lower_priority",)},
            }.get(lane, {"size": 1})
            _pools[lane] = ParserPool(**{**_settings, **lane_settings})
        return _pools[lane]


# Whose item a parse is for, when it is one user's (indexing sets it per task): such parses take at
# most all workers but one, so a user whose files each take the whole time bound (issue 36: new versions
# uploaded again and again) cannot keep another user's edited note from being parsed and chunked.
parse_owner: contextvars.ContextVar[str] = contextvars.ContextVar("parse_owner", default="")

# The lane a task's parses go to when the caller names none: the reading tool sets "read" around a
# read, so every source's parser (files, calendar objects, contacts) runs in its lane.
default_lane: contextvars.ContextVar[str] = contextvars.ContextVar("parser_lane", default="main")


class HeavyOwners:
    """Users one of whose parses (indexing's or a read's) ran out of its whole time bound lately (issue 36:
    a user who uploads new versions of his slowest file again and again). Their parses go to the ``heavy`` lane,
    one worker at a lower CPU priority, so that the main lane's workers and the CPU stay with everyone
    else's edits: another user's note is parsed, chunked and embedded first."""

    def __init__(self, seconds: float = HEAVY_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds, self._clock = seconds, clock
        self._until: dict[str, float] = {}

    def mark(self, owner: str) -> None:
        self._until[owner] = self._clock() + self.seconds

    def __contains__(self, owner: object) -> bool:
        until = self._until.get(owner)  # type: ignore[arg-type]
        if until is not None and until <= self._clock():
            del self._until[owner]  # type: ignore[arg-type]
            return False
        return until is not None


HEAVY = HeavyOwners()


async def run_parser(function: str, *args: Any, lane: str | None = None, timeout: float | None = None) -> Any:
    """Run a parser in the app's bounded worker processes (see :class:`ParserPool`); an indexing or
    reading parse of a user in :data:`HEAVY` runs in the ``heavy`` lane."""
    lane, owner = lane or default_lane.get(), parse_owner.get()
    if lane in ("main", "read") and owner and owner in HEAVY:
        lane = "heavy"
    try:
        return await pool(lane).run(function, *args, timeout=timeout)
    except ParserFailed as exc:
        if lane in ("main", "read", "heavy") and owner and exc.overran:
            HEAVY.mark(owner)
        raise


def shutdown() -> None:
    with _lock:
        pools = list(_pools.values())
        _pools.clear()
    for each in pools:
        each.close()


# --- the worker process ----------------------------------------------------------------------------


def _address_space() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")

# What a parser process imports up front, before its memory cap is set: the parsers, and the three office
# libraries (~0.5 s of CPU together), which the app's own process imports only where they are used (it
# only dispatches here). Named as strings: the worker runs the parsers, it does not build on them.
PRELOAD = ("semantic_mcp.sources.extract", "semantic_mcp.sources.calendar", "semantic_mcp.sources.contacts",
           "docx", "docx.table", "openpyxl", "pptx", "pptx.enum.shapes")


def _serve(memory_bytes: int, prepare: tuple[str, ...] = ()) -> None:
    """Answer requests on stdin until it closes. The cap is counted from the size after start-up
    (the parsers imported, the lane's ``prepare`` functions called), so it bounds what a parse may
    allocate, whatever start-up took.

    A worker whose address space stays grown by more than half its bound after a parse (a large
    document's heap is not always given back) answers that it is retiring and exits: the next
    document, however innocent, would otherwise fail for lack of memory its predecessor left taken."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the app's Ctrl-C is the app's to handle
    stdin, stdout = sys.stdin.buffer.fileno(), os.dup(sys.stdout.buffer.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a parser's print() must not garble the answers
    for module in PRELOAD:
        importlib.import_module(module)
    for function in prepare:  # "module:name", called once
        module, _, name = function.partition(":")
        getattr(importlib.import_module(module), name)()
    start = _address_space()
    limit = start + memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _write_frame(stdout, _READY)
    functions: dict[str, Callable[..., Any]] = {}
    while True:
        try:
            function, args = pickle.loads(_read_frame(stdin, None))
        except EOFError:
            return  # the app closed the pipe (or died)
        try:
            if function not in functions:
                module, _, name = function.partition(":")
                functions[function] = getattr(importlib.import_module(module), name)
            answer: tuple[Any, ...] = ("ok", functions[function](*args))
        except MemoryError:
            _write_frame(stdout, pickle.dumps(("memory", None, True)))
            return  # a fresh process for the next document: this one's heap may be in pieces
        except Exception as exc:  # noqa: BLE001 - handed back to the caller, which decides
            answer = ("raised", exc)
        retiring = _address_space() > start + memory_bytes // 2
        answer = (*answer, retiring)
        try:
            payload = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - an exception that cannot be pickled
            payload = pickle.dumps(("raised", RuntimeError(f"{type(exc).__name__}: {exc}"), retiring))
        _write_frame(stdout, payload)
        if retiring:
            return
