"""The admin settings in sections on a real Nextcloud 34.0.1 (issue 40 item 4, ADRs 0770 and 0771).

What the admin page renders, read from the page Nextcloud serves (the kit lacks core's JavaScript, so
no browser draws it): one mount point per declarative form, in the page's order, and the forms the
page's script mounts there, from the page's initial state. Then the values an install saved before
the sections, through the one flat form, still shown and used after the app is enabled again (as an
upgrade does); and an embedding endpoint that does not answer, saved as the admin page saves it.
"""

from __future__ import annotations

import base64
import json
import re
import socket
from typing import Any

import httpx

from ex_app.admin import OVERVIEW_FORM_ID
from ex_app.settings_check import NOTIFICATION_SUBJECT
from ex_app.settings_form import _FIELDS, ADMIN_FORMS, FORM_ID
from fake_nextcloud.exapp_process import APP_ID
from nc_py_api.ex_app.ui.settings import SettingsForm
from realstack import SECRET, RealStack

IN_PAGE_ORDER = sorted(ADMIN_FORMS, key=lambda form: form.priority)


def section_mounts(page: str) -> list[str]:
    """The settings sections' forms as the page mounts them (the overview's link form is not a section)."""
    # Nextcloud mounts each declarative form on <div id="<app>_<form id>">, in ascending priority.
    found = re.findall(rf'<div id="{APP_ID}_({APP_ID}_\w+)"></div>', page)
    return [form for form in found if form != OVERVIEW_FORM_ID]
UI_SETTINGS = "/ocs/v1.php/apps/app_api/api/v1/ui/settings"  # AppAPI's, where an ExApp registers a form


def admin_page(real: RealStack) -> str:
    """Administration settings > Artificial intelligence, as the admin's browser gets it."""
    response = httpx.get(f"{real.nc.url}/index.php/settings/admin/ai", timeout=60,
                         auth=("admin", real.nc.login_password("admin")))
    assert response.status_code == 200, response.status_code
    return response.text


def initial_state(page: str, app: str, key: str) -> Any:
    found = re.search(rf'id="initial-state-{app}-{key}" value="([^"]+)"', page)
    assert found, f"no initial state {app}-{key} in the page"
    return json.loads(base64.b64decode(found.group(1)))


def test_the_admin_page_shows_the_six_sections_in_order_each_with_its_fields(real: RealStack) -> None:
    page = admin_page(real)
    mounts = section_mounts(page)
    assert mounts == [form.id for form in IN_PAGE_ORDER]
    forms = {form["id"]: form for form in initial_state(page, "settings", "declarative-settings-forms")
             if form["app"] == APP_ID and form["id"] != OVERVIEW_FORM_ID}  # the overview link: test_real_admin_overview
    assert set(forms) == {form.id for form in ADMIN_FORMS}  # the personal form is not on an admin page
    for form in ADMIN_FORMS:
        shown = forms[form.id]
        assert shown["title"] == form.title and shown["section_id"] == "ai"
        assert [field["id"] for field in shown["fields"]] == [field.id for field in form.fields]
    assert [form["title"] for form in sorted(forms.values(), key=lambda form: form["priority"])] == [
        "Semantic MCP: sources and exclusions", "Semantic MCP: files and OCR", "Semantic MCP: embedding model",
        "Semantic MCP: answers and sampling", "Semantic MCP: connections and OAuth", "Semantic MCP: advanced"]
    numbers = {field["id"]: field["value"] for form in forms.values() for field in form["fields"]
               if field["type"] == "number"}
    assert numbers["reconcile_interval_minutes"] in (15, "15", 0.05, "0.05")  # never "15.0"


def as_app(real: RealStack, method: str, path: str, **options: Any) -> httpx.Response:
    """A request as the ExApp itself, signed as AppAPI expects."""
    info = json.loads(real.json_info())
    headers = {"AUTHORIZATION-APP-API": base64.b64encode(f":{SECRET}".encode()).decode(), "EX-APP-ID": APP_ID,
               "EX-APP-VERSION": info["version"], "AA-VERSION": "34.0.0", "OCS-APIRequest": "true",
               "Accept": "application/json"}
    return httpx.request(method, real.nc.url + path, headers=headers, timeout=30, **options)


FLAT_FORM = SettingsForm(  # the one form every install before the sections registered
    id=FORM_ID, section_id="ai", section_type="admin", title="Semantic MCP", priority=10,
    fields=[field for key, field in _FIELDS.items() if key != "recheck_window_seconds"])  # added since
SAVED_BEFORE = {"excluded_paths": "/Private/*, *.log", "max_file_size_mb": 7, "index_deck_cards": False,
                "embedding_concurrency": 2, "nextcloud_ai_timeout_seconds": 45, "oauth_metadata_hosts": "claude.ai",
                "reconcile_interval_minutes": 30}
AS_STORED = {"excluded_paths": "/Private/*, *.log", "max_file_size_mb": "7", "index_deck_cards": "",
             "embedding_concurrency": "2", "nextcloud_ai_timeout_seconds": "45", "oauth_metadata_hosts": "claude.ai",
             "reconcile_interval_minutes": "30"}


def test_two_forms_of_the_app_sharing_a_field_fail_every_declarative_settings_page(real: RealStack) -> None:
    """Nextcloud 34 quirk the registration order is built around (``ex_app/main.py``, ``_register_forms``):
    the flat form registered beside the sections shares their fields, and the forms' API answers 500."""
    registered = as_app(real, "POST", UI_SETTINGS, json={"formScheme": FLAT_FORM.to_dict()})
    assert registered.status_code == 200, registered.text
    try:
        response = httpx.get(f"{real.nc.url}/ocs/v2.php/settings/api/declarative/forms", timeout=30,
                             headers={"OCS-APIRequest": "true", "Accept": "application/json"},
                             auth=("admin", real.app_password("admin")))
        assert response.status_code == 500
        assert any("Non unique field IDs detected" in entry.get("message", "") for entry in real.nc.log_lines())
    finally:
        as_app(real, "POST", UI_SETTINGS, json={"formScheme": ADMIN_FORMS[0].to_dict()})
    assert len(real.settings_forms("admin")) >= len(ADMIN_FORMS)


def test_values_saved_in_the_flat_form_are_kept_when_the_sections_replace_it(real: RealStack) -> None:
    for form in ADMIN_FORMS[1:]:  # an install from before the sections had the flat form alone
        assert as_app(real, "DELETE", UI_SETTINGS, params={"formId": form.id}).status_code == 200
    registered = as_app(real, "POST", UI_SETTINGS, json={"formScheme": FLAT_FORM.to_dict()})
    assert registered.status_code == 200, registered.text
    flat = [form for form in real.settings_forms("admin") if form["id"] == FORM_ID]
    assert len(flat[0]["fields"]) == 29  # the old form is what the page shows under that id now
    for key, value in SAVED_BEFORE.items():  # saved through the flat form, as the admin page did
        response = httpx.post(f"{real.nc.url}/ocs/v2.php/settings/api/declarative/value", timeout=30,
                              json={"app": APP_ID, "formId": FORM_ID, "fieldId": key, "value": value},
                              headers={"OCS-APIRequest": "true", "Accept": "application/json"},
                              auth=("admin", real.app_password("admin")))
        assert response.status_code == 200, (key, response.text)
    # The upgrade: AppAPI disables the app and enables the new version, which registers its forms.
    real.nc.occ("app_api:app:disable", APP_ID)
    real.nc.occ("app_api:app:enable", APP_ID)
    forms = {form["id"]: form for form in real.settings_forms("admin")
             if form["section_type"] == "admin" and form["id"] != OVERVIEW_FORM_ID}
    assert set(forms) == {form.id for form in ADMIN_FORMS}
    assert len(forms[FORM_ID]["fields"]) == len(ADMIN_FORMS[0].fields)  # the sources section, not the flat form
    shown = {field["id"]: field["value"] for form in forms.values() for field in form["fields"]}
    assert {key: shown[key] for key in AS_STORED} == AS_STORED
    mounts = section_mounts(admin_page(real))
    assert mounts == [form.id for form in IN_PAGE_ORDER]


NOTE = ("Kayak course", "Sea kayak lessons every Thursday at the harbour, 18:00, with Tomasz.")


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def notifications(real: RealStack, user: str) -> list[dict[str, Any]]:
    return [item for item in real.nc.ocs("GET", "/ocs/v2.php/apps/notifications/api/v2/notifications", user=user)
            if item.get("app") == APP_ID]


async def test_an_embedding_endpoint_that_does_not_answer_is_not_used_and_the_admins_are_told(
        real: RealStack) -> None:
    real.user("alice").create_note(*NOTE)

    async def found() -> bool:
        return NOTE[0] in await real.titles("alice", "sea kayak lessons")

    await real.eventually(found, timeout=90)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    for key, value in (("embedding_backend", "openai"), ("embedding_url", url), ("embedding_model", "nomic-embed-text")):
        real.set_admin_field(key, value)

    def told() -> dict[str, Any] | None:
        return next((item for item in notifications(real, "admin")
                     if item["subject"] == NOTIFICATION_SUBJECT and url in item["message"]), None)

    notice = await real.eventually(told, timeout=60)
    assert notice["message"] == (
        f"Semantic MCP keeps using the built-in e5 model because the embedding endpoint {url} did not answer with an "
        f"embedding (unreachable: [Errno 111] Connection refused): check the embedding settings and save them again.")
    assert not [item for item in notifications(real, "alice") if item["subject"] == NOTIFICATION_SUBJECT]
    logged = [entry for entry in real.nc.log_lines() if entry.get("app") == APP_ID and url in entry.get("message", "")]
    assert logged and logged[-1]["level"] == 2  # a warning, which Nextcloud's default level keeps
    # The app still searches with the model the index was built with.
    assert await found()
