"""The content bench/corpus_growth.py grows: one person's items at 1x, and the filler that multiplies them.

The base is ``structured_items.py``'s contacts, events, cards and notes plus a handful of documents the
questions people type are about (a budget table, an invoice, notes in German, Spanish and French). The
filler is written to share the questions' common words ("budget", "meeting", "dentist", "Berlin",
"tax", "party", "tasks"...) in other contexts: minutes, mails, reports and tables, a sixth of them in
German, French or Spanish, each mentioning two such words once in passing ("budget" and "meeting" in
most), none answering a question. Seeded, so a larger size holds every document of a smaller one (their vectors are cached).
"""

from __future__ import annotations

import random

from structured_items import QUESTIONS as ITEM_QUESTIONS
from structured_items import items, note_document

from semantic_mcp.core.documents import SourceDocument

FILLER_SEED = 35

# (title, body) of the documents beside the structured items.
EXTRA_NOTES = [
    ("Budget 2026", "| Line | Amount |\n|---|---|\n| Rent | 14,400 EUR |\n| Salaries | 180,000 EUR |\n"
                    "| Marketing | 12,000 EUR |\n| Travel | 6,500 EUR |\n\nTotal budget for 2026: 212,900 EUR, "
                    "approved by the board in January."),
    ("Marketing budget", "The marketing budget for the spring campaign is 12,000 EUR: online ads 7,000, trade "
                         "fair stand 3,000, printed flyers 2,000. Spend tracked monthly."),
    ("Invoice INV-2026-0412", "Invoice INV-2026-0412 from Weber Painting for painting the hallway: 1,850 EUR "
                              "including paint, payable within 30 days to IBAN DE44 5001 0517 5407 3249 31."),
    ("Urlaubsplanung", "Sommerurlaub an der Ostsee: Ferienwohnung in Warnemünde vom 3. bis 17. August gebucht, "
                       "Anreise mit dem Zug, Fahrräder vor Ort leihen."),
    ("Receta de paella", "Paella valenciana para seis: arroz bomba, pollo, conejo, judías verdes, garrofó, "
                         "tomate rallado y azafrán; cocer veinte minutos sin remover."),
    ("Compte rendu du conseil de quartier", "Le conseil de quartier demande un nouveau passage piéton devant "
                                            "l'école et des bancs dans le parc; prochaine séance en juin."),
    ("Wi-Fi at home", "Network name: Casa-Mesh-5G. Router admin at 192.168.1.1; the guest network password "
                      "changes every month."),
    ("Running log", "Half marathon training: long run on Sundays, intervals on Wednesdays; personal best "
                    "1:52:10 in Hamburg."),
]

# (question, kind, title of the item that answers it). The kinds people ask: short keywords, full questions,
# names and codes, other languages, about time, about people, about tasks.
EXTRA_QUESTIONS = [
    ("budget", "keyword", "Budget 2026"),
    ("marketing budget", "keyword", "Marketing budget"),
    ("paella", "keyword", "Receta de paella"),
    ("wifi password", "keyword", "Wi-Fi at home"),
    ("How much is the total budget for 2026?", "question", "Budget 2026"),
    ("how much do we spend on online ads", "question", "Marketing budget"),
    ("What is my half marathon personal best?", "question", "Running log"),
    ("INV-2026-0412", "name or code", "Invoice INV-2026-0412"),
    ("Casa-Mesh-5G", "name or code", "Wi-Fi at home"),
    ("Carol Jones", "name or code", "Carol Jones"),
    ("Weber Painting invoice", "name or code", "Invoice INV-2026-0412"),
    ("Wo verbringen wir den Sommerurlaub?", "other language", "Urlaubsplanung"),
    ("¿Cómo se hace la paella?", "other language", "Receta de paella"),
    ("que demande le conseil de quartier", "other language", "Compte rendu du conseil de quartier"),
    ("Wo ist der Zahnarzttermin?", "other language", "Dentist appointment"),
    ("when is my next dentist appointment", "time", "Dentist appointment"),
    ("what is on the calendar for the board meeting", "time", "Board meeting"),
    ("Wann ist die nächste Yogastunde?", "time", "Yoga class"),
    ("when is the wedding", "time", "Wedding of Anna and Tom"),
    ("Dave Miller phone number", "people", "Dave Miller"),
    ("how do I reach the plumber", "people", "Dave Miller"),
    ("email of our tax advisor", "people", "Maya Patel"),
    ("which tasks are urgent", "task", "Renew TLS certificates"),
    ("what do I have to do about the Safari login bug", "task", "Fix login bug on Safari"),
]
_ITEM_KINDS = {"contact": "people", "event": "question", "card": "task"}
QUESTIONS = [(q, _ITEM_KINDS[kind], title) for q, kind, title in ITEM_QUESTIONS] + EXTRA_QUESTIONS
KINDS = ("keyword", "question", "name or code", "other language", "time", "people", "task")

# Questions nothing in the corpus answers, at any size: they must get nothing (bench/noise_queries.py has the
# random-token ones).
UNANSWERABLE = [
    "what is the capital of Mongolia",
    "how many moons does Jupiter have",
    "what is the boiling point of mercury",
    "who won the football world cup in 1954",
    "Wie hoch ist der Eiffelturm?",
    "¿Cuál es la montaña más alta de África?",
]


def base() -> list[SourceDocument]:
    """The 1x content: the structured items and the documents the extra questions are about."""
    return items() + [note_document(str(200 + i), title, body) for i, (title, body) in enumerate(EXTRA_NOTES)]


# --- filler --------------------------------------------------------------------------------------------
# Words the questions share, met in other contexts; each filler document uses one or two once.
_SHARED = ("budget", "meeting", "dentist", "Berlin", "tax", "party", "tasks", "conference", "invoice", "search",
           "garden", "plumber", "security", "wedding", "calendar", "phone", "email", "urgent", "review", "office",
           "marketing", "training", "lease", "bike", "workshop", "board", "contact", "Ireland", "yoga", "password")
_NAMES = ("Oliver Brandt", "Sofia Marino", "Lukas Hahn", "Amelie Roux", "Pedro Alves", "Hannah Koch", "Yusuf Demir",
          "Clara Vogel", "Mateo Silva", "Ida Lindqvist", "Tom Becker", "Nora Haas", "Rafael Costa", "Lena Wolf")
_TEAMS = ("sales", "finance", "support", "engineering", "facilities", "HR", "legal", "design", "logistics", "QA")
_TOPICS = ("the new warehouse shelving", "printer toner supplies", "the customer portal redesign",
           "onboarding for two interns", "the parking permits", "server room cooling", "the coffee machine lease",
           "translation of the product sheet", "the annual stocktake", "the fire drill schedule",
           "the CRM data cleanup", "shipping labels for Austria", "the spring newsletter", "badge access logs",
           "the intranet search box", "the expense report template", "window cleaning contract",
           "the quarterly supplier review", "the trade fair booth", "laptop refresh for support")
_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
                "October", "November", "December")
_FOREIGN = {
    "de": ("Protokoll {team}", "Besprechung am {day}. {Name} berichtet über {topic}; das Wort {word} fiel nur am "
           "Rande. Nächster Schritt: Angebot einholen, Frist {month}."),
    "fr": ("Compte rendu {team}", "Réunion du {day}. {Name} présente {topic}; on parle aussi de {word} en passant. "
           "Décision reportée à {month}."),
    "es": ("Acta {team}", "Reunión del {day}. {Name} expone {topic}; se menciona {word} de pasada. "
           "Pendiente para {month}."),
}


def _minutes(rng: random.Random, words: list[str]) -> tuple[str, str]:
    team, name, other = rng.choice(_TEAMS), rng.choice(_NAMES), rng.choice(_NAMES)
    return (f"Minutes {team} {rng.randint(1, 52)}/{rng.choice((2024, 2025, 2026))}",
            f"Attendees: {name}, {other}. Item 1: {rng.choice(_TOPICS)} — {name} will follow up. Item 2: "
            f"{rng.choice(_TOPICS)}; the {words[0]} question was parked. Any other business: none.")


def _mail(rng: random.Random, words: list[str]) -> tuple[str, str]:
    name, other = rng.choice(_NAMES), rng.choice(_NAMES)
    topic = rng.choice(_TOPICS)
    return (f"Re: {topic}",
            f"From: {name} <{name.split()[0].lower()}@corp.example>\nTo: {other}\n\nHi {other.split()[0]}, "
            f"quick update on {topic}: the supplier confirmed delivery for {rng.choice(_MONTH_NAMES)}. "
            f"Not related to the {words[0]} thread. Cheers, {name.split()[0]}")


def _report(rng: random.Random, words: list[str]) -> tuple[str, str]:
    team = rng.choice(_TEAMS)
    return (f"{team.capitalize()} report Q{rng.randint(1, 4)} {rng.choice((2024, 2025))}",
            f"Headcount {rng.randint(3, 40)}, tickets closed {rng.randint(100, 900)}. Highlights: "
            f"{rng.choice(_TOPICS)} and {rng.choice(_TOPICS)}. Risks: delays with {rng.choice(_TOPICS)}. "
            f"({words[0].capitalize()} figures follow in the {words[-1]} appendix.)")


def _table(rng: random.Random, words: list[str]) -> tuple[str, str]:
    rows = "\n".join(f"| {rng.choice(_NAMES)} | {rng.choice(_TOPICS)} | {rng.randint(1, 28)} "
                     f"{rng.choice(_MONTH_NAMES)} |" for _ in range(rng.randint(3, 6)))
    return (f"{rng.choice(_TEAMS).capitalize()} rota {rng.randint(1, 99)}",
            f"| Person | Duty ({words[0]} excluded) | Date |\n|---|---|---|\n{rows}")


# The shared words in German, French and Spanish: a minute written in French says "dentiste", not "dentist".
_TRANSLATED = {
    "budget": ("Budget", "budget", "presupuesto"), "meeting": ("Besprechung", "réunion", "reunión"),
    "dentist": ("Zahnarzt", "dentiste", "dentista"), "Berlin": ("Berlin", "Berlin", "Berlín"),
    "tax": ("Steuer", "impôt", "impuesto"), "party": ("Feier", "fête", "fiesta"),
    "tasks": ("Aufgaben", "tâches", "tareas"), "conference": ("Konferenz", "conférence", "congreso"),
    "invoice": ("Rechnung", "facture", "factura"), "search": ("Suche", "recherche", "búsqueda"),
    "garden": ("Garten", "jardin", "jardín"), "plumber": ("Klempner", "plombier", "fontanero"),
    "security": ("Sicherheit", "sécurité", "seguridad"), "wedding": ("Hochzeit", "mariage", "boda"),
    "calendar": ("Kalender", "calendrier", "calendario"), "phone": ("Telefon", "téléphone", "teléfono"),
    "email": ("E-Mail", "courriel", "correo"), "urgent": ("dringend", "urgent", "urgente"),
    "review": ("Prüfung", "relecture", "revisión"), "office": ("Büro", "bureau", "oficina"),
    "marketing": ("Marketing", "marketing", "marketing"), "training": ("Schulung", "formation", "formación"),
    "lease": ("Mietvertrag", "bail", "alquiler"), "bike": ("Fahrrad", "vélo", "bicicleta"),
    "workshop": ("Workshop", "atelier", "taller"), "board": ("Vorstand", "conseil", "junta"),
    "contact": ("Kontakt", "contact", "contacto"), "Ireland": ("Irland", "Irlande", "Irlanda"),
    "yoga": ("Yoga", "yoga", "yoga"), "password": ("Passwort", "mot de passe", "contraseña"),
}


def _foreign(rng: random.Random, words: list[str]) -> tuple[str, str]:
    language = rng.choice(sorted(_FOREIGN))
    title, body = _FOREIGN[language]
    word = _TRANSLATED[words[0]][("de", "fr", "es").index(language)]
    fields = {"team": rng.choice(_TEAMS), "day": f"{rng.randint(1, 28)}.{rng.randint(1, 12)}.2025",
              "Name": rng.choice(_NAMES), "topic": rng.choice(_TOPICS), "word": word,
              "month": rng.choice(_MONTH_NAMES)}
    return title.format(**fields) + f" {rng.randint(1, 99)}", body.format(**fields)


_GENRES = (_minutes, _mail, _report, _table, _minutes, _foreign)


def filler(count: int) -> list[SourceDocument]:
    """``count`` filler documents (seeded: the first ``n`` are the same whatever ``count``)."""
    rng = random.Random(FILLER_SEED)
    docs = []
    for number in range(count):
        # "budget" and "meeting" are in most of them, as common words are in a real account: past half the
        # chunks, a term's BM25 weight is nil (the failure issue 35 reports).
        words = [rng.choice(_SHARED) if rng.random() > 0.6 else "budget",
                 rng.choice(_SHARED) if rng.random() > 0.6 else "meeting"]
        title, body = rng.choice(_GENRES)(rng, words)
        docs.append(SourceDocument("file", f"filler/{number}.md", title, f"# {title}\n\n{body}", 0, "1", ""))
    return docs


def corpus(size: int) -> list[SourceDocument]:
    """The base content at ``size`` times its size: the base plus (size - 1) x as many filler documents."""
    own = base()
    return own + filler(len(own) * (size - 1))
