"""The words of the app's browser pages (consent, connected clients, errors), in English and German.

One dictionary per language with the same keys (a test checks it); ``{placeholders}`` are filled by
:mod:`ex_app.pages`, which escapes every value. Dates are written by :func:`format_date` in the
user's locale. Add a language by adding a dictionary and its month names."""

from __future__ import annotations

import time

from semantic_mcp.core.config import READ_SCOPE, WRITE_SCOPE

EN = {
    "consent_title": "Connect {client} to {instance}?",
    "consent_lead": "{client} asks to use your {instance} account <strong>{user}</strong>. If you allow it, it may:",
    f"scope:{READ_SCOPE}": "search and read your notes, files, Deck cards, calendar events and contacts — only what "
                           "you can open yourself",
    f"scope:{WRITE_SCOPE}": "switch the indexing of your content on and off",
    "lifetime": "The connection lasts 30 days, until {date}; then you will be asked again. You can disconnect it at "
                "any time on the <a href=\"{clients_url}\">connected clients</a> page.",
    "identity_document": "It identifies itself with the metadata document {client_id}.",
    "identity_registered": "It registered itself with this server, so its name is not verified.",
    "redirect": "After you decide, your browser goes to {host}. Only allow this if you started connecting yourself.",
    "allow": "Allow",
    "deny": "Deny",
    "back": "Back to {instance}",
    "one_moment": "One moment…",
    "continue": "Continue",
    "clients_title": "Connected MCP clients",
    "clients_lead": "These clients can search your {instance} as <strong>{user}</strong>. Disconnecting one stops "
                    "its access at once.",
    "clients_none": "No client is connected. To connect one, give it this address: {mcp_url}",
    "clients_address": "The address to give an MCP client: {mcp_url}",
    "col_client": "Client",
    "col_may": "May",
    "col_connected": "Connected on",
    "col_used": "Last used",
    "col_ends": "Ends on",
    "may_read": "search and read",
    "may_write": "switch indexing",
    "never": "not yet",
    "disconnect": "Disconnect",
    "disconnected": "Disconnected: its access stopped at once.",
    "error_title": "This connection cannot be completed",
    "error_reason": "Reason: {reason}",
    "next_step": "What to do: {step}",
    "step_default": "Go back to your MCP client and start connecting again. If it happens again, tell your "
                    "administrator what this page says.",
    "step_unknown_client": "Your MCP client is not known to this {instance} (it may have registered before the app "
                           "was reinstalled). Remove the server in your MCP client, add it again and connect.",
    "step_client_document": "Your MCP client's description could not be used. Try again in a few minutes; if it "
                            "keeps failing, connect with an app password instead (Personal settings → Security).",
    "step_switched_off": "Your administrator has switched this off. Ask them, or connect with an app password "
                         "instead (Personal settings → Security).",
    "step_too_many": "Too many connection attempts came from your network in the last hour. Wait an hour and try "
                     "again.",
    "step_expired": "This page was open too long. Go back to your MCP client and start connecting again.",
    "step_account": "Your account cannot connect clients. Ask your administrator.",
    "step_login": "Log in to {instance}, then start connecting again from your MCP client.",
    "step_reload": "Reload the page and try again.",
    "reason_not_logged_in": "you are not logged in",
    "reason_form_expired": "this form has expired",
}

DE = {
    "consent_title": "{client} mit {instance} verbinden?",
    "consent_lead": "{client} möchte Ihr {instance}-Konto <strong>{user}</strong> verwenden. Wenn Sie es erlauben, "
                    "darf es:",
    f"scope:{READ_SCOPE}": "Ihre Notizen, Dateien, Deck-Karten, Termine und Kontakte durchsuchen und lesen – nur, was "
                           "Sie selbst öffnen können",
    f"scope:{WRITE_SCOPE}": "die Indizierung Ihrer Inhalte ein- und ausschalten",
    "lifetime": "Die Verbindung gilt 30 Tage, bis zum {date}; danach werden Sie erneut gefragt. Sie können sie "
                "jederzeit auf der Seite <a href=\"{clients_url}\">Verbundene Clients</a> trennen.",
    "identity_document": "Es weist sich mit dem Metadaten-Dokument {client_id} aus.",
    "identity_registered": "Es hat sich selbst bei diesem Server registriert; sein Name ist nicht geprüft.",
    "redirect": "Nach Ihrer Entscheidung geht Ihr Browser zu {host}. Erlauben Sie es nur, wenn Sie die Verbindung "
                "selbst begonnen haben.",
    "allow": "Erlauben",
    "deny": "Ablehnen",
    "back": "Zurück zu {instance}",
    "one_moment": "Einen Moment…",
    "continue": "Weiter",
    "clients_title": "Verbundene MCP-Clients",
    "clients_lead": "Diese Clients können Ihr {instance} als <strong>{user}</strong> durchsuchen. Trennen beendet "
                    "ihren Zugriff sofort.",
    "clients_none": "Kein Client ist verbunden. Um einen zu verbinden, geben Sie ihm diese Adresse: {mcp_url}",
    "clients_address": "Die Adresse für einen MCP-Client: {mcp_url}",
    "col_client": "Client",
    "col_may": "Darf",
    "col_connected": "Verbunden am",
    "col_used": "Zuletzt genutzt",
    "col_ends": "Endet am",
    "may_read": "suchen und lesen",
    "may_write": "Indizierung schalten",
    "never": "noch nicht",
    "disconnect": "Trennen",
    "disconnected": "Getrennt: der Zugriff endete sofort.",
    "error_title": "Diese Verbindung kann nicht hergestellt werden",
    "error_reason": "Grund: {reason}",
    "next_step": "Was Sie tun können: {step}",
    "step_default": "Kehren Sie zu Ihrem MCP-Client zurück und verbinden Sie erneut. Wenn es wieder passiert, "
                    "nennen Sie Ihrer Administration, was diese Seite sagt.",
    "step_unknown_client": "Ihr MCP-Client ist diesem {instance} nicht bekannt (vielleicht hat er sich registriert, "
                           "bevor die App neu installiert wurde). Entfernen Sie den Server in Ihrem MCP-Client, fügen "
                           "Sie ihn erneut hinzu und verbinden Sie.",
    "step_client_document": "Die Beschreibung Ihres MCP-Clients war nicht verwendbar. Versuchen Sie es in einigen "
                            "Minuten erneut oder verbinden Sie mit einem App-Passwort (Persönliche Einstellungen → "
                            "Sicherheit).",
    "step_switched_off": "Ihre Administration hat dies ausgeschaltet. Fragen Sie dort nach oder verbinden Sie mit "
                         "einem App-Passwort (Persönliche Einstellungen → Sicherheit).",
    "step_too_many": "Aus Ihrem Netz kamen in der letzten Stunde zu viele Verbindungsversuche. Warten Sie eine Stunde "
                     "und versuchen Sie es erneut.",
    "step_expired": "Diese Seite war zu lange offen. Kehren Sie zu Ihrem MCP-Client zurück und verbinden Sie erneut.",
    "step_account": "Ihr Konto darf keine Clients verbinden. Fragen Sie Ihre Administration.",
    "step_login": "Melden Sie sich bei {instance} an und verbinden Sie dann erneut aus Ihrem MCP-Client.",
    "step_reload": "Laden Sie die Seite neu und versuchen Sie es erneut.",
    "reason_not_logged_in": "Sie sind nicht angemeldet",
    "reason_form_expired": "dieses Formular ist abgelaufen",
}

TEXTS = {"en": EN, "de": DE}
MONTHS = {
    "en": ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"],
    "de": ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober",
           "November", "Dezember"],
}
# Locales that put the month first, as Nextcloud writes long dates ("" is an English user who chose no locale,
# which Nextcloud writes as en: "November 28, 2026"); en_GB, en_IE and the others write day month year.
MONTH_FIRST = {"", "en", "en_US", "en_CA", "en_PH"}


def format_date(timestamp: float | None, language: str, locale: str) -> str:
    """A date as the user's locale writes it: "28 November 2026", "November 28, 2026", "28. November 2026"."""
    if timestamp is None:
        return ""
    day = time.gmtime(timestamp)
    month = MONTHS.get(language, MONTHS["en"])[day.tm_mon - 1]
    if language == "de":
        return f"{day.tm_mday}. {month} {day.tm_year}"
    if (locale or "") in MONTH_FIRST:
        return f"{month} {day.tm_mday}, {day.tm_year}"
    return f"{day.tm_mday} {month} {day.tm_year}"
