"""TaskProcessing (Nextcloud's own AI task API), with a scripted ``core:text2text`` provider.

Off by default, as on a plain Nextcloud 32 with no AI provider app: ``GET …/tasktypes`` answers
``{"types":[]}`` and ``POST …/schedule`` answers 412 "The given provider is not available"
(recorded: ``nextcloud-32-wire/http/taskprocessing_*``). Tests switch a provider on with
:func:`of` (``of(fake.state).provider = ScriptedProvider(...)``); it then answers each task
``delay`` seconds after it was scheduled, as a provider app's background worker would, and the
task JSON has the fields of ``OCP\\TaskProcessing\\Task::jsonSerialize``.
"""

from __future__ import annotations

import itertools
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .auth import NotLoggedIn, identify
from .responses import ocs_response, request_params

if TYPE_CHECKING:
    from .state import State

TEXT2TEXT = "core:text2text"

# What Nextcloud 32 lists for core:text2text when a provider is installed (core's TextToText type).
TEXT2TEXT_TYPE = {
    "name": "Free text to text prompt",
    "description": "Runs an arbitrary prompt through a language model that returns a reply",
    "inputShape": {"input": {"name": "Prompt", "description": "Describe a task that you want the assistant to do "
                             "or ask a question", "type": "Text"}},
    "inputShapeEnumValues": [],
    "inputShapeDefaults": {},
    "optionalInputShape": [],
    "optionalInputShapeEnumValues": [],
    "optionalInputShapeDefaults": {},
    "outputShape": {"output": {"name": "Generated reply", "description": "The generated text from the assistant",
                               "type": "Text"}},
    "outputShapeEnumValues": [],
    "optionalOutputShape": [],
    "optionalOutputShapeEnumValues": {},
}


@dataclass
class ScriptedProvider:
    """Answers every prompt with ``reply(prompt)`` after ``delay`` seconds; ``fail`` makes tasks fail."""

    reply: Callable[[str], str]
    delay: float = 0.2
    fail: bool = False


@dataclass
class Task:
    id: int
    user: str
    type: str
    input: dict[str, Any]
    app_id: str
    custom_id: str
    scheduled_at: float
    status: str = "STATUS_SCHEDULED"
    output: dict[str, Any] | None = None
    ended_at: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "type": self.type, "lastUpdated": int(self.ended_at or self.scheduled_at),
            "status": self.status, "userId": self.user, "appId": self.app_id, "input": self.input,
            "output": self.output, "customId": self.custom_id, "completionExpectedAt": None,
            "progress": 1.0 if self.ended_at else 0.0, "scheduledAt": int(self.scheduled_at),
            "startedAt": None, "endedAt": int(self.ended_at) if self.ended_at else None, "allowCleanup": True,
        }


@dataclass
class TaskProcessing:
    provider: ScriptedProvider | None = None
    tasks: dict[int, Task] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)  # "GET tasktypes", "POST schedule"... in order
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def advance(self, task: Task) -> None:
        """Run the provider once the task's delay has passed (a background worker, seen from outside)."""
        provider = self.provider
        if task.status != "STATUS_SCHEDULED" or provider is None:
            return
        if time.time() < task.scheduled_at + provider.delay:
            return
        task.ended_at = time.time()
        if provider.fail:
            task.status = "STATUS_FAILED"
            return
        task.status = "STATUS_SUCCESSFUL"
        task.output = {"output": provider.reply(str(task.input.get("input", "")))}


_BY_STATE: weakref.WeakKeyDictionary[State, TaskProcessing] = weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()


def of(state: State) -> TaskProcessing:
    """The TaskProcessing world of one fake server."""
    with _REGISTRY_LOCK:
        found = _BY_STATE.get(state)
        if found is None:
            found = _BY_STATE[state] = TaskProcessing()
        return found


def _caller(request: Request) -> tuple[TaskProcessing, str]:
    state: State = request.app.state.nc
    caller = identify(request, state)
    if not caller.user:
        raise NotLoggedIn()
    return of(state), caller.user


async def task_types(request: Request) -> Response:
    tp, _ = _caller(request)
    tp.requests.append("GET tasktypes")
    # PHP encodes an empty array as [] and a filled one, keyed by type id, as an object.
    return ocs_response(request, {"types": {TEXT2TEXT: TEXT2TEXT_TYPE} if tp.provider else []})


async def schedule(request: Request) -> Response:
    tp, user = _caller(request)
    params = await request_params(request)
    tp.requests.append("POST schedule")
    task_type = str(params.get("type") or "")
    task_input = params.get("input")
    if tp.provider is None or task_type != TEXT2TEXT:
        return ocs_response(request, {"message": "The given provider is not available"}, 412, "")
    if not isinstance(task_input, dict) or not isinstance(task_input.get("input"), str):
        return ocs_response(request, {"message": "Provided input data is not valid: input"}, 400, "")
    with tp._lock:
        task = Task(next(tp._ids), user, task_type, task_input, str(params.get("appId") or ""),
                    str(params.get("customId") or ""), time.time())
        tp.tasks[task.id] = task
    return ocs_response(request, {"task": task.as_json()})


def _own_task(request: Request) -> tuple[TaskProcessing, Task | None]:
    tp, user = _caller(request)
    task = tp.tasks.get(int(request.path_params["task_id"]))
    return tp, task if task is not None and task.user == user else None


async def get_task(request: Request) -> Response:
    tp, task = _own_task(request)
    tp.requests.append("GET task")
    if task is None:
        return ocs_response(request, {"message": "Task not found"}, 404, "")
    tp.advance(task)
    return ocs_response(request, {"task": task.as_json()})


async def cancel_task(request: Request) -> Response:
    tp, task = _own_task(request)
    tp.requests.append("POST cancel")
    if task is None:
        return ocs_response(request, {"message": "Task not found"}, 404, "")
    if task.status in ("STATUS_SCHEDULED", "STATUS_RUNNING"):
        task.status, task.ended_at = "STATUS_CANCELLED", time.time()
    return ocs_response(request, {"task": task.as_json()})


_BASE = "/ocs/v2.php/taskprocessing"
ROUTES = [
    Route(_BASE + "/tasktypes", task_types, methods=["GET"]),
    Route(_BASE + "/schedule", schedule, methods=["POST"]),
    Route(_BASE + "/task/{task_id:int}", get_task, methods=["GET"]),
    Route(_BASE + "/tasks/{task_id:int}/cancel", cancel_task, methods=["POST"]),
]
