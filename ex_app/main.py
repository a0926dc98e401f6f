"""The ExApp: AppAPI lifecycle, admin settings, webhooks and the MCP endpoint in one FastAPI app.

Run with ``python -m ex_app.main`` (AppAPI sets APP_HOST, APP_PORT, APP_ID, APP_SECRET,
APP_VERSION, NEXTCLOUD_URL and APP_PERSISTENT_STORAGE).
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import hashlib
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import BackgroundTasks, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from mcp.server.transport_security import TransportSecuritySettings
from nc_py_api import AsyncNextcloudApp, NextcloudException
from nc_py_api.ex_app import set_handlers
from nc_py_api.ex_app.ui.settings import SettingsForm
from nc_py_api.ex_app.uvicorn_fastapi import run_app

from semantic_mcp.nextcloud.accounts import DataHolder
from semantic_mcp.core.config import AdminSettings, Deployment, DeploymentError
from semantic_mcp.workers import parser_process
from semantic_mcp.engine import Engine
from semantic_mcp.indexing.events import MalformedEvent
from semantic_mcp.core.logsafe import configure_logging
from semantic_mcp.core.storage_modes import keep_private
from semantic_mcp.surfaces.search_bar import BadRequest, read_request, search_bar
from semantic_mcp.nextcloud.companion import changed_items
from semantic_mcp.nextcloud.health import NextcloudHealth
from semantic_mcp.nextcloud.client import CredentialsRefused, NextcloudClient, Unavailable
from semantic_mcp.oauth import AuthorizationServer
from semantic_mcp.operating import audit
from semantic_mcp.operating.audit import APP_PASSWORD
from semantic_mcp.mcp.tools import Principal, build_server

from .admin import AdminViews, overview_form, register_occ_commands
from .appapi import (
    AppAPIAuth,
    ServedRoutesOnly,
    WholeResponsesForPHPProxy,
    behind_buffering_proxy,
    identity,
)
from .oauth_http import BearerGuard, OAuthHTTP
from .ask_ahead import AskAhead
from .quotas import SESSION_IDLE_SECONDS, McpQuota
from .settings_check import SettingsCheck, tell_admins
from .settings_form import ADMIN_FORMS, personal_form
from .upkeep import (
    SELF_CHECK_PATH,
    WEBHOOK_PATH,
    appapi_self_check,
    ensure_webhooks,
    guarded,
    keep_webhooks_registered,
)

log = logging.getLogger("semantic_mcp")

SETTINGS_REFRESH_SECONDS = float(os.environ.get("SETTINGS_REFRESH_SECONDS", "10"))
# How long an account found enabled is trusted before a token's next use asks Nextcloud again.
ACCOUNT_CHECK_SECONDS = float(os.environ.get("ACCOUNT_CHECK_SECONDS", "60"))


class SettingsCache:
    """The admin settings as last read from Nextcloud; refreshed in the background so changes apply live."""

    def __init__(self) -> None:
        self.current = AdminSettings()
        self.check: SettingsCheck | None = None  # tries settings saved while the app runs (settings_check.py)
        self._read = False

    async def refresh(self, nc: AsyncNextcloudApp) -> None:
        records = await nc.appconfig_ex.get_values(AdminSettings.keys())
        updated = AdminSettings.from_values({record.key: record.value for record in records})
        if self._read and self.check is not None:  # the first read is what the app ran with before a restart
            updated = await self.check.vet(self.current, updated)
        self._read = True
        if updated != self.current:
            changed = [key for key in AdminSettings.keys() if getattr(updated, key) != getattr(self.current, key)]
            log.info("Admin settings changed: %s", ", ".join(changed))  # which, never the values (a key is secret)
            self.current = updated


def principal_of(request: Any) -> Principal | None:
    """The Nextcloud user AppAPI vouched for, with the scopes the admin grants to app passwords."""
    user = getattr(request, "scope", {}).get("username") if request is not None else None
    if not user:
        return None
    # Server-initiated requests (sampling mid-call) only reach callers on a streaming path.
    streaming = not behind_buffering_proxy(request.headers)
    # An OAuth access token carries its own scopes (set by BearerGuard); app passwords get the admin's default.
    scopes = request.scope.get("oauth_scopes", SETTINGS.current.default_scopes)
    client, client_id = request.scope.get("oauth_client", (APP_PASSWORD, ""))
    return Principal(user=user, scopes=frozenset(scopes), streaming=streaming, client=client, client_id=client_id)


SETTINGS = SettingsCache()


async def apply_settings(engine: Engine) -> None:
    """The one place the settings read take effect (ADR 0740); a new embedding model loads here, in a thread."""
    try:
        await asyncio.to_thread(engine.apply, SETTINGS.current)
    except Exception as exc:  # e.g. an embedding service that cannot be reached: the previous one keeps serving
        log.warning("The admin settings could not be applied, the previous ones stay in effect: %s", exc)


def create_app() -> FastAPI:
    app_identity = identity()
    deployment = Deployment.from_env()
    configure_logging(deployment.log_level)
    keep_private(deployment.storage)  # before anything in it is opened
    parser_process.configure(**deployment.parser_bounds)  # every document parser runs bounded (ADR 0510)
    # One view of Nextcloud's availability and of our credentials for every caller. The secret's
    # fingerprint is remembered once it worked, so a restart may use it again at once.
    health = NextcloudHealth(
        memory=deployment.storage / "credentials-confirmed",
        fingerprint=f"{app_identity.app_id}:{app_identity.secret}",
        credential_retry_seconds=float(os.environ.get("CREDENTIAL_RETRY_SECONDS", "60")),
    )
    nc_client = NextcloudClient(app_identity.nextcloud_url, app_identity.headers_for, health=health)
    health.set_credential_probe(appapi_self_check(app_identity.nextcloud_url, app_identity.app_id, health), free=True)
    public_url = deployment.public_url or app_identity.nextcloud_url  # links, OAuth issuer

    async def list_users() -> list[str]:
        return await guarded(health, "list users", lambda: AsyncNextcloudApp().users_list())

    engine = Engine(
        deployment, nc_client, lambda: SETTINGS.current, list_users,
        public_url=public_url,
    )
    state_key = hashlib.sha256(b"semantic_mcp/request-state/" + app_identity.secret.encode()).digest()
    oauth = AuthorizationServer.open(deployment.storage, lambda: SETTINGS.current, public_url, app_identity.app_id,
                                     deployment.clock.time, engine.accounts)
    def index_shape() -> tuple[str, int]:  # what a new endpoint's vectors must fit (the same model's)
        store = engine.store()
        return store.model_id, store.dim

    SETTINGS.check = SettingsCheck(lambda: asyncio.to_thread(index_shape),
                                   lambda sentence: tell_admins(nc_client, list_users, sentence))
    engine.accounts.holders.append(DataHolder(oauth.store.users_with_grants, oauth.store.delete_user))
    engine.accounts.ttl = ACCOUNT_CHECK_SECONDS
    mcp = build_server(engine, principal_of, state_key=state_key, connected_clients=oauth.connected_clients,
                       audit_queries=lambda: SETTINGS.current.audit_queries)
    # The audit record of every tool call, in Nextcloud's log too (ADR 0360); never holds up a call.
    nextcloud_log = audit.NextcloudLogHandler(
        lambda level, message: nc_client.ocs("", "POST", audit.LOG_ENDPOINT, json={"level": level, "message": message}),
        health.wait_usable)
    audit.install(nextcloud_log)
    # occ status/why, the overview page and the notices; the page also shows a saved setting not used
    admin = AdminViews(engine, nc_client, public_url, oauth.issuer,
                       lambda: SETTINGS.check.problem if SETTINGS.check else "")
    # AppAPI's signature (checked by AppAPIAuth on every request) is the guard here. DNS-rebinding
    # protection would compare Host with 127.0.0.1 and refuse the container name the proxy uses.
    mcp_http = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        session_idle_timeout=SESSION_IDLE_SECONDS,
    )

    async def refresh_settings_forever() -> None:
        while True:
            await health.wait_usable()  # never ask while Nextcloud is down or refuses the app
            with contextlib.suppress(Exception):
                await guarded(health, "read settings", lambda: SETTINGS.refresh(AsyncNextcloudApp()))
            await apply_settings(engine)
            with contextlib.suppress(Exception):  # is the companion app (search bar, one-request re-checks) there?
                await engine.verifier.companion.refresh(nc_client)  # type: ignore[union-attr]
            await asyncio.sleep(SETTINGS_REFRESH_SECONDS)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        refresher = asyncio.create_task(refresh_settings_forever(), name="settings-refresh")
        webhook_keeper = asyncio.create_task(keep_webhooks_registered(engine), name="webhook-check")
        notifier = asyncio.create_task(admin.notify_forever(list_users), name="admin-notices")
        engine.start()
        nextcloud_log.start()
        log.info("Semantic MCP %s started; storage at %s", app_identity.version, deployment.storage)
        try:
            async with mcp.session_manager.run():
                yield
        finally:
            refresher.cancel()
            webhook_keeper.cancel()
            notifier.cancel()
            await nextcloud_log.stop()
            await engine.stop()
            parser_process.shutdown()

    app = FastAPI(
        title="Semantic MCP for Nextcloud", lifespan=lifespan, redirect_slashes=False,
        openapi_url=None, docs_url=None, redoc_url=None,
    )
    app.add_middleware(AskAhead, verifier=engine.verifier)  # a user's known re-checks, before their search
    app.add_middleware(McpQuota, sessions=int(os.environ.get("MCP_SESSIONS_PER_USER") or 20),
                       per_minute=int(os.environ.get("MCP_REQUESTS_PER_MINUTE") or 600))  # once the user is known
    app.add_middleware(audit.QuotaRefusals)  # the quota's refusals, in the audit record
    app.add_middleware(BearerGuard, server=oauth)
    app.add_middleware(WholeResponsesForPHPProxy)
    app.add_middleware(AppAPIAuth, on_verified=_appapi_called(health))
    app.add_middleware(ServedRoutesOnly)  # added last, so it runs first
    app.state.engine = engine

    forms = [*ADMIN_FORMS, overview_form(oauth.issuer), personal_form(oauth.issuer)]

    async def enabled_handler(enabled: bool, nc: AsyncNextcloudApp) -> str:
        return await (_on_enable(nc, engine, forms) if enabled else _on_disable(nc, engine, forms))

    set_handlers(app, enabled_handler, default_init=False, map_app_static=False)

    @app.post("/init")
    async def init(background: BackgroundTasks) -> JSONResponse:
        health.app_disabled()  # AppAPI knows our secret now, but refuses our calls until /enabled
        background.add_task(_prepare, engine)
        return JSONResponse({})

    @app.get(SELF_CHECK_PATH)
    async def appapi_self_check_arrived() -> Response:
        return Response(status_code=204)  # AppAPIAuth has already confirmed the secret it was signed with

    @app.post(WEBHOOK_PATH)
    async def webhook(request: Request) -> JSONResponse:
        # Deliveries to an absolute URI come without Content-Type: read the raw body as JSON.
        body = await request.body()
        try:
            result = engine.handle_event(json.loads(body))
        except (ValueError, MalformedEvent) as exc:
            log.warning("Rejected a webhook delivery: %s", exc)
            return JSONResponse({"error": f"malformed event: {exc}"}, status_code=400)
        return JSONResponse(result)

    @app.post("/search-bar")
    async def search_bar_hits(request: Request) -> JSONResponse:
        # Only through exAppRequest: AppAPI signs it as the user (never named in the body); no proxy route.
        user = request.scope.get("username")
        if not user:
            return JSONResponse({"error": "The search bar searches as a user; this request names none."}, 403)
        try:
            query, limit = read_request(json.loads(await request.body() or b"null"))
        except (ValueError, BadRequest) as exc:
            return JSONResponse({"error": str(exc) if isinstance(exc, BadRequest) else "The body is not JSON."}, 400)
        return JSONResponse(await search_bar(engine, user, query, limit))

    @app.post("/access-changed")
    async def access_changed(request: Request) -> Response:
        # Only through exAppRequest (AppAPI signs it): a share ended, a group or team folder changed, or a
        # file moved or went ("items"); anything unreadable counts as the widest change (ADR 0781).
        engine.verifier.access_changed(changed_items(await request.body()))
        return Response(status_code=204)

    app.router.routes.extend(admin.routes())
    app.router.routes.extend(OAuthHTTP(oauth, form_key=state_key, nc=nc_client).routes())
    app.router.routes.extend(mcp_http.routes)  # exactly /mcp: no Mount, so no redirect to /mcp/
    return app


async def _prepare(engine: Engine) -> None:
    nc = AsyncNextcloudApp()

    ready: list[str] = []

    async def progress(percent: int, message: str) -> None:
        # One line for the admin when init is done, with what became ready (the model, its size); the steps at DEBUG.
        log.debug("Init: %d%% %s", percent, message)
        ready.extend([message] if "ready" in message else [])
        if percent == 100:
            log.info("Init finished: %s", "; ".join(ready) or "ready")
        await nc.set_init_status(percent)

    try:
        await engine.prepare(progress)
    except Exception as exc:
        log.exception("Init failed")
        with contextlib.suppress(NextcloudException):
            await nc.set_init_status(0, f"Semantic MCP could not start: {exc}")


def _appapi_called(health: NextcloudHealth) -> Callable[[str], None]:
    """A correctly signed request proves AppAPI knows our secret; /init and /enabled say more
    (not enabled yet; enabled or not) and are handled where they are served."""

    def on_verified(path: str) -> None:
        if path not in ("/init", "/enabled"):
            health.confirmed_by_appapi()

    return on_verified


async def _on_enable(nc: AsyncNextcloudApp, engine: Engine, forms: list[SettingsForm]) -> str:
    """Register the settings forms and webhooks; returns an error the admin can read, or "".

    Only what the admin must fix is an error: AppAPI disables an app whose /enabled answers one,
    and every later call of ours is refused. Nextcloud unavailable for a moment (a 5xx, e.g.
    SQLite's "database is locked" while the webhook worker and our indexing write) is retried
    in the background once it answers (webhooks by :func:`keep_webhooks_registered`).
    """
    engine.health.enabled_by_appapi()
    problems, unregistered = await _register_forms(nc, engine.health, forms)
    if unregistered:
        _later.add(task := asyncio.create_task(_register_forms_when_usable(engine.health, unregistered)))
        task.add_done_callback(_later.discard)
    problems += await ensure_webhooks(nc, engine, replace=True)
    problems += await register_occ_commands(nc, engine)  # occ semantic_mcp:status and :why
    with contextlib.suppress(Exception):
        await guarded(engine.health, "read settings", lambda: SETTINGS.refresh(nc))
    await apply_settings(engine)
    engine.start_backfill()
    if problems:
        log.error("Enabling finished with problems: %s", "; ".join(problems))
        return "Semantic MCP could not register: " + "; ".join(problems) + ". Is webhook_listeners enabled?"
    return ""


_later: set[asyncio.Task[None]] = set()  # background retries (a task nobody references may vanish)


async def _register_forms(
    nc: AsyncNextcloudApp, health: NextcloudHealth, forms: list[SettingsForm]
) -> tuple[list[str], list[SettingsForm]]:
    """Register ``forms`` in order; returns the problems the admin must fix and the forms to try again.

    In order, and none after one Nextcloud did not take: the first replaces the flat form of an
    install from before the sections, and Nextcloud 34 fails every declarative settings page while
    two forms of an app share a field id (``DeclarativeManager::registerSchema``)."""
    problems: list[str] = []
    again: list[SettingsForm] = []
    for form in forms:
        if again:
            again.append(form)
            continue
        try:
            await guarded(health, "register a settings form", lambda form=form: nc.ui.settings.register_form(form))
        except (Unavailable, CredentialsRefused) as exc:
            log.warning("Settings form %s not registered yet (%s): trying again once Nextcloud answers", form.id, exc)
            again.append(form)
        except NextcloudException as exc:
            problems.append(f"settings form {form.id}: {exc}")
    return problems, again


async def _register_forms_when_usable(health: NextcloudHealth, forms: list[SettingsForm]) -> None:
    while forms:
        await health.wait_usable()
        problems, forms = await _register_forms(AsyncNextcloudApp(), health, forms)
        if problems:
            log.error("Registering the settings forms failed: %s", "; ".join(problems))
        await asyncio.sleep(2.0)


async def _on_disable(nc: AsyncNextcloudApp, engine: Engine, forms: list[SettingsForm]) -> str:
    # From now on AppAPI refuses our calls, and an unregister forgets the app as soon as we answer:
    # send nothing more (a secret it forgot must not be tried after a restart either), and let the
    # requests already on their way finish first, so none arrives as a failed login.
    engine.health.app_disabled(until_enabled=True)
    await engine.health.drained()
    problems = []
    try:
        await _remove_webhooks(nc)
    except NextcloudException as exc:
        problems.append(f"webhooks: {exc}")
    for form in forms:
        try:
            await nc.ui.settings.unregister_form(form.id)
        except NextcloudException as exc:
            problems.append(f"settings form {form.id}: {exc}")
    return "; ".join(problems)


async def _remove_webhooks(nc: AsyncNextcloudApp) -> None:
    for hook in await nc.webhooks.get_list(uri_filter=WEBHOOK_PATH):
        await nc.webhooks.unregister(hook.webhook_id)


def main() -> None:
    # A crash in native code (Chroma, ONNX Runtime, a parser) otherwise leaves nothing in the container's log.
    faulthandler.enable()
    try:
        app = create_app()
    except DeploymentError as exc:  # a deploy option the admin must fix (the secret too): say which, no traceback
        sys.exit(f"Semantic MCP cannot start: {exc}")
    # asyncio's own loop, never uvloop (which uvicorn would pick wherever it is installed, as in the test
    # venv): under concurrent searches uvloop 0.23 closed a live connection's descriptor, then aborted
    # the process. Idle connections kept 75 s, past a proxy's pool (5 s): a proxy reusing one as uvicorn
    # closed it at its default 5 s failed the request (docs/adr/0565).
    run_app(app, loop="asyncio", timeout_keep_alive=75, log_level=os.environ.get("UVICORN_LOG_LEVEL", "warning"))


if __name__ == "__main__":
    main()
