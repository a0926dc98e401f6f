"""webhook_listeners: registrations, event filtering, and a background delivery worker (the OCS
registration API is in :mod:`fake_nextcloud.webhooks_api`).

Real deliveries are background jobs: late, possibly duplicated, out of order, or never run.
The worker reproduces that on demand (:meth:`Webhooks.pause`, :meth:`drop_next`,
``duplicate``, ``shuffle``) so tests can prove the app survives it. Payloads are encoded as
webhook_listeners encodes them (PHP JSON, no Content-Type header). As on a real server, a
delivery that fails (the app is down) is logged and never retried, and nothing is delivered while
maintenance mode is on (the queued jobs go out after it).
"""

from __future__ import annotations

import itertools
import json
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from .clock import Clock
from .exapps import ExApp, crawler_client, signed_headers
from .files import NODE_EVENT
from .groupware import CALENDAR_EVENT
from .outages import Maintenance
from .responses import OcsError, php_json

_NODE_EVENTS = ("Created", "Written", "Deleted", "Renamed", "Copied", "Touched", "Read")
ACCEPTED_EVENTS = frozenset(
    [NODE_EVENT + f"Node{n}Event" for n in _NODE_EVENTS if n != "Read"]
    + [NODE_EVENT + f"BeforeNode{n}Event" for n in _NODE_EVENTS]
    + [
        CALENDAR_EVENT + f"CalendarObject{n}Event"
        for n in ("Created", "Updated", "Deleted", "Moved", "MovedToTrash", "Restored")
    ]
    + ["OCP\\SystemTag\\MapperEvent", "OCP\\SystemTag\\TagAssignedEvent", "OCP\\SystemTag\\TagUnassignedEvent"]
)
DECK_EVENTS = frozenset(f"OCA\\Deck\\Event\\Card{n}Event" for n in ("Created", "Updated", "Deleted"))


@dataclass
class Webhook:
    id: int
    app_id: str | None
    user_id: str | None
    http_method: str
    uri: str
    event: str
    event_filter: dict = field(default_factory=dict)
    user_id_filter: str = ""
    headers: dict | None = None
    auth_method: str = "none"
    auth_data: dict | None = None

    def json(self) -> dict:
        return {
            "id": self.id,
            "appId": self.app_id,
            "userId": self.user_id,
            "httpMethod": self.http_method,
            "uri": self.uri,
            "event": self.event,
            "eventFilter": self.event_filter or [],
            "userIdFilter": self.user_id_filter,
            "headers": self.headers,
            "authMethod": self.auth_method,
            "authData": self.auth_data,
            "tokenNeeded": [],  # webhook_listeners 1.6 (Nextcloud 34): tokens the delivery should carry
        }


@dataclass
class Delivery:
    """One attempt, as logged for tests: the ExApp's HTTP status or the transport error."""

    webhook_id: int
    event: str
    url: str
    user: str
    payload: dict
    status: int | None = None
    error: str | None = None


@dataclass
class _Job:
    due: float
    webhook_id: int
    event: str
    actor: str
    body: bytes


def _lookup(payload: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(payload, dict) or part not in payload:
            return None
        payload = payload[part]
    return payload


def _php_regex(pattern: str) -> str:
    """Strip PHP delimiters and flags: ``/^\\/alice\\//i`` -> ``^\\/alice\\/``."""
    if len(pattern) > 1 and pattern[0] == "/" and "/" in pattern[1:]:
        return pattern[1 : pattern.rindex("/")]
    return pattern


_OPERATORS = {
    "$eq": lambda value, arg: value == arg,
    "$ne": lambda value, arg: value != arg,
    "$in": lambda value, arg: value in arg,
    "$nin": lambda value, arg: value not in arg,
    "$regex": lambda value, arg: isinstance(value, str) and re.search(_php_regex(arg), value) is not None,
}


def _condition_holds(value: Any, condition: Any) -> bool:
    if not isinstance(condition, dict):
        return value == condition
    return all(_OPERATORS[op](value, arg) for op, arg in condition.items() if op in _OPERATORS)


def filter_matches(event_filter: dict, payload: dict) -> bool:
    """A subset of the Mongo-style filters webhook_listeners evaluates on the payload."""
    return all(_condition_holds(_lookup(payload, k), v) for k, v in event_filter.items())


class Webhooks:
    """Registered webhooks and the delivery worker with its test controls.

    ``lock`` guards ``apps`` (the registered ExApps, by id, that deliveries are signed for);
    ``deck_webhooks_supported`` is asked at each registration, so a test can switch it at runtime."""

    def __init__(
        self,
        *,
        lock: threading.RLock,
        apps: dict[str, ExApp],
        maintenance: Maintenance,
        display_name: Callable[[str], str],
        deck_webhooks_supported: Callable[[], bool],
        clock: Clock,
        delay: float = 0.05,
    ) -> None:
        self._lock = lock
        self._apps = apps
        self._maintenance = maintenance
        self._display_name = display_name
        self._deck_webhooks_supported = deck_webhooks_supported
        self.clock = clock
        self.delay = delay
        self.duplicate = False
        self.shuffle = False
        self.hooks: dict[int, Webhook] = {}
        self.deliveries: list[Delivery] = []
        self.dropped: list[dict] = []
        self._ids = itertools.count(1)
        self._queue: list[_Job] = []
        self._cond = threading.Condition()
        self._paused = False
        self._dropping = False
        self._drop_next = 0
        self._in_flight = 0
        self._last_enqueue = 0.0
        self._thread: threading.Thread | None = None
        self._stopping = False

    # ---- registry (callers hold the state lock) ----------------------------------------------

    def register(
        self, *, app_id: str | None, user_id: str | None, params: dict[str, Any], hook_id: int | None = None
    ) -> Webhook:
        """Validate and store a webhook (a new one, or a replacement for ``hook_id``)."""
        event = str(params.get("event", ""))
        accepted = ACCEPTED_EVENTS | (DECK_EVENTS if self._deck_webhooks_supported() else frozenset())
        if event not in accepted:
            raise OcsError(400, f"{event} is not an event class compatible with webhooks")
        method = str(params.get("httpMethod", "")).upper()
        if method not in ("POST", "GET", "PUT", "DELETE"):
            raise OcsError(400, "Method not supported")
        uri = str(params.get("uri", ""))
        if not uri or (not app_id and not re.match(r"^https?://", uri)):
            raise OcsError(400, "URI is not valid")
        hook = Webhook(
            next(self._ids) if hook_id is None else hook_id,
            app_id,
            user_id,
            method,
            uri,
            event,
            params.get("eventFilter") or {},
            params.get("userIdFilter") or "",
            params.get("headers") or None,
            params.get("authMethod") or "none",
            params.get("authData") or None,
        )
        self.hooks[hook.id] = hook
        return hook

    def unregister_app(self, app_id: str) -> int:
        ids = [h.id for h in self.hooks.values() if h.app_id == app_id]
        for hook_id in ids:
            del self.hooks[hook_id]
        return len(ids)

    # ---- dispatch ------------------------------------------------------------------------

    def dispatch(self, event_class: str, actor: str, event: dict) -> None:
        """Queue one job per matching webhook, as webhook_listeners does when the event fires."""
        event = event if "class" in event else {**event, "class": event_class}
        user = {"uid": actor, "displayName": self._display_name(actor)}
        # "authentication": the tokens a webhook asked for (tokenNeeded), on every 34 delivery
        payload = {"event": event, "user": user, "time": int(self.clock.time()), "authentication": []}
        body = php_json(payload, hex_tag=False)
        with self._cond:
            for hook in self.hooks.values():
                if hook.event != event_class:
                    continue
                if hook.user_id_filter and hook.user_id_filter != actor:
                    continue
                if hook.event_filter and not filter_matches(hook.event_filter, payload):
                    continue
                if self._dropping or self._drop_next > 0:
                    self._drop_next = max(0, self._drop_next - 1)
                    self.dropped.append(payload)
                    continue
                self._queue.append(_Job(time.monotonic() + self.delay, hook.id, event_class, actor, body))
            self._last_enqueue = time.monotonic()
            self._cond.notify_all()

    # ---- test controls --------------------------------------------------------------------

    def pause(self) -> None:
        """Hold deliveries (a stopped background-job worker); :meth:`resume` sends them."""
        with self._cond:
            self._paused = True

    def resume(self) -> None:
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    def wake(self) -> None:
        """Re-evaluate whether to deliver (maintenance mode switched off)."""
        with self._cond:
            self._cond.notify_all()

    def drop_next(self, n: int = 1) -> None:
        """Lose the next ``n`` deliveries: the app has to find those changes by reconciling."""
        with self._cond:
            self._drop_next += n

    def set_dropping(self, dropping: bool) -> None:
        with self._cond:
            self._dropping = dropping

    @property
    def pending(self) -> int:
        with self._cond:
            return len(self._queue) + self._in_flight

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until nothing is queued or in flight; raise TimeoutError otherwise (e.g. paused)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._in_flight:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{len(self._queue)} webhook deliveries still pending")
                self._cond.wait(min(remaining, 0.05))

    def events(self, event: str | None = None) -> list[Delivery]:
        """Deliveries made so far, optionally only those of one event class."""
        with self._cond:
            return [d for d in self.deliveries if event is None or d.event == event]

    # ---- worker ---------------------------------------------------------------------------

    def start(self) -> None:
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="fake-nc-webhooks", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _next_job(self) -> _Job | None:
        with self._cond:
            while not self._stopping:
                now = time.monotonic()
                wait: float | None = None
                if self._queue and not self._paused and not self._maintenance.on:
                    settle = self._last_enqueue + self.delay - now if self.shuffle else 0.0
                    due = [j for j in self._queue if j.due <= now]
                    if due and settle <= 0:
                        job = random.choice(due) if self.shuffle else due[0]
                        self._queue.remove(job)
                        self._in_flight += 1
                        return job
                    wait = max(settle, min(j.due for j in self._queue) - now, 0.001)
                self._cond.wait(wait)
        return None

    def _run(self) -> None:
        with crawler_client() as client:
            while (job := self._next_job()) is not None:
                try:
                    for _ in range(2 if self.duplicate else 1):
                        self._deliver(client, job)
                finally:
                    with self._cond:
                        self._in_flight -= 1
                        self._cond.notify_all()

    def _deliver(self, client: httpx.Client, job: _Job) -> None:
        with self._lock:
            hook = self.hooks.get(job.webhook_id)
            app = self._apps.get(hook.app_id) if hook and hook.app_id else None
        if hook is None:
            return
        headers: dict[str, str] = {}
        url = hook.uri
        if not re.match(r"^https?://", hook.uri):
            if app is None or not app.enabled:
                return
            url = app.url.rstrip("/") + "/" + hook.uri.lstrip("/")
            headers.update(signed_headers(app, job.actor))
        headers.update(hook.headers or {})
        record = Delivery(hook.id, job.event, url, job.actor, json.loads(job.body))
        try:
            response = client.request(hook.http_method, url, content=job.body, headers=headers)
            record.status = response.status_code
        except httpx.HTTPError as exc:
            record.error = f"{type(exc).__name__}: {exc}"
        with self._cond:
            self.deliveries.append(record)
