"""The admin form as the page shows it (issue 40): whole numbers without ".0", and the audit switch off."""

from __future__ import annotations

from nc_py_api.ex_app.ui.settings import SettingsFieldType

from ex_app.settings_form import ADMIN_FORMS


def test_whole_number_defaults_show_as_numbers() -> None:
    numbers = {field.id: field.default for form in ADMIN_FORMS for field in form.fields if field.type == SettingsFieldType.NUMBER}
    assert numbers["reconcile_interval_minutes"] == 15 and numbers["nextcloud_ai_timeout_seconds"] == 30
    assert not [key for key, value in numbers.items() if isinstance(value, float) and value.is_integer()]
    assert all(".0" not in str(value) for value in numbers.values())


def test_the_query_text_stays_out_of_the_audit_record_unless_the_admin_turns_it_on() -> None:
    [switch] = [field for form in ADMIN_FORMS for field in form.fields if field.id == "audit_queries"]
    assert switch.type == SettingsFieldType.CHECKBOX and switch.default is False
