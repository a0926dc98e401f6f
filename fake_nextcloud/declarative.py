"""Nextcloud's declarative settings API as the settings pages use it, for the forms ExApps register
through AppAPI (:func:`fake_nextcloud.appapi.settings_form`)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .auth import NotLoggedIn, identify
from .responses import OcsError, ocs_response, request_params

if TYPE_CHECKING:
    from .state import State


def php_string(value: object) -> str:
    """A JSON value as PHP's ``(string)`` cast stores it: true -> "1", false/null -> "", numbers as text."""
    if value is True:
        return "1"
    if value is False or value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else json.dumps(value)


def shared_field_ids(forms: Iterable[dict]) -> list[str]:
    """Field ids two of an app's forms both have: Nextcloud 34's ``DeclarativeManager::registerSchema``
    throws "Non unique field IDs detected" for them, and every declarative settings page fails (500)."""
    seen = Counter(field.get("id") for form in forms for field in form.get("fields", []))
    return sorted(str(key) for key, count in seen.items() if count > 1)


async def declarative_forms(request: Request) -> Response:
    """What a settings page loads: every form the caller may see, each field with its value.
    As Nextcloud 32's and 34's ``DeclarativeManager::getFormsWithValues``: admin forms only for admins,
    ExApp values from AppAPI's app config (admin) or the user's preferences (personal), highest
    priority first."""
    nc: State = request.app.state.nc
    caller = identify(request, nc)
    if not caller.user:
        raise NotLoggedIn()
    forms = []
    with nc.lock:
        admin = nc.users[caller.user].admin
        for app in nc.apps.values():
            if shared_field_ids(app.forms.values()):  # Nextcloud 34 throws for the whole page
                raise OcsError(500, "Internal Server Error\n")
            for schema in app.forms.values():
                personal = schema.get("section_type") != "admin"
                if not personal and not admin:
                    continue
                values = app.preferences.get(caller.user, {}) if personal else app.config
                fields = [{**field, "value": values.get(field["id"], field.get("default"))}
                          for field in schema.get("fields", [])]
                forms.append({**schema, "storage_type": "external", "app": app.app_id, "fields": fields})
    forms.sort(key=lambda form: -int(form.get("priority", 50)))
    return ocs_response(request, forms)


async def declarative_value(request: Request) -> Response:
    """What the admin settings page sends when a field changes (as admin). For an ExApp's form the
    value lands in AppAPI's app config as a string; an unticked checkbox is stored as ``""``.
    Nextcloud 32.0.1 and 34.0.1 answer 403 to anyone else, even for a personal form: the settings app's
    ``SubadminMiddleware`` requires a sub-admin because ``setValue`` lacks ``@NoSubAdminRequired``."""
    nc: State = request.app.state.nc
    caller = identify(request, nc)
    if not caller.user:
        raise NotLoggedIn()
    params = await request_params(request)
    with nc.lock:
        if not nc.users[caller.user].admin:
            raise OcsError(403)  # an empty message, as the real OCS envelope has
        app = nc.apps.get(str(params.get("app", "")))
        form_id, field_id = str(params.get("formId", "")), str(params.get("fieldId", ""))
        form = app.forms.get(form_id) if app else None
        if form is None or field_id not in {f.get("id") for f in form.get("fields", [])}:
            raise OcsError(400, "Invalid form or field")
        app.config[field_id] = php_string(params.get("value"))
    return ocs_response(request, [])


ROUTES = [
    Route("/ocs/v{v:int}.php/settings/api/declarative/value", declarative_value, methods=["POST"]),
    Route("/ocs/v{v:int}.php/settings/api/declarative/forms", declarative_forms, methods=["GET"]),
]
