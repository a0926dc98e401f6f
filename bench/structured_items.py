"""Questions about contacts' notes, events' places and cards' labels: are those items found?

A contact is indexed as a list of fields (organisation, emails, phones, address book) followed by its
note; a question about the note ("who did I meet at the Berlin conference") meets that whole list,
and the e5 cosine falls under the cut-off. This bench builds contacts, events and Deck cards through
the sources' own parsers (``document_from_vcard``, ``document_from_ics``, ``document_from_card``),
next to plain notes that compete with them, indexes them through the production ``chunk_records``,
``VectorStore`` and ``KeywordIndex``, and asks questions (:data:`QUESTIONS`, each naming the item
it is about) through ``HybridRetriever``. Printed: hit@5 (the item among the first five) and hit@5
at the default cut-off (the item returned at all), with each item's gist chunk
(``SourceDocument.gist``) and without it, per kind of item.

    PYTHONPATH=lib:. python bench/structured_items.py
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_nextcloud.seed import event_ics, vcard  # noqa: E402
from retrieval_quality import CACHE, USER, QueryMemo, build  # noqa: E402
from retrieval_sets import Dataset  # noqa: E402

from semantic_mcp.core.documents import SourceDocument  # noqa: E402
from semantic_mcp.embedding.backends import make_embedder  # noqa: E402
from semantic_mcp.search.calibration import default_cut  # noqa: E402
from semantic_mcp.search.retrieval import HybridRetriever  # noqa: E402
from semantic_mcp.sources.calendar import document_from_ics  # noqa: E402
from semantic_mcp.sources.contacts import document_from_vcard  # noqa: E402
from semantic_mcp.sources.deck import _Placed, document_from_card  # noqa: E402

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)  # a fixed clock: the bench does not depend on the day it runs
K = 5

# (name, organisation, note)
CONTACTS = [
    ("Carol Jones", "Acme Corp", "Met at the Berlin conference; interested in the search integration."),
    ("Dave Miller", "Miller Plumbing", "Fixed the kitchen sink; reliable."),
    ("Erin Schmidt", "Nextcloud GmbH", "Partner manager for the pilot."),
    ("Frank Weber", "Weber Painting", "Quote for the hallway."),
    ("Grace Lee", "Lee Dental", "Allergic to penicillin; prefers morning appointments."),
    ("Hector Ruiz", "Ruiz Catering", "Catered our summer party, vegetarian menu was great."),
    ("Ines Duarte", "", "Babysitter for the kids on Thursdays."),
    ("Jonas Berg", "Berg Law", "Handles the lease dispute with the landlord."),
    ("Kim Novak", "", "Lent me her ladder in March; give it back."),
    ("Liam O'Brien", "Dublin Tours", "Guide from the Ireland trip, knows every pub."),
    ("Maya Patel", "Patel Tax Advisors", "Does our yearly tax return."),
    ("Noah Fischer", "Fischer Bikes", "Repaired the electric bike battery."),
]
# (title, days from NOW, location, description)
EVENTS = [
    ("Search workshop", 21, "Alexanderplatz 1, Berlin", "Hands-on workshop on semantic search"),
    ("Dentist appointment", 7, "Praxis Dr. Weber, Hauptstrasse 5", "Yearly check-up"),
    ("Team offsite", 30, "Lake Como, Villa Serbelloni", "Strategy for next year"),
    ("Parent-teacher meeting", 3, "Riverside Primary School, room 12", ""),
    ("Board meeting", 10, "Head office, 7th floor boardroom", "Quarterly numbers"),
    ("Yoga class", 2, "Sunrise Studio, Elm Street", ""),
    ("Wedding of Anna and Tom", 60, "St. Mary's Church, Oxford", "Dress code: formal"),
    ("Car service", 12, "Main Street Garage", "Oil change and tyre swap"),
    ("Concert", 45, "Royal Albert Hall, London", "Symphony No. 9"),
    ("Vet check-up for Bella", 5, "Green Paws Veterinary Clinic", "Vaccination booster"),
]
# (title, stack, labels, description)
CARDS = [
    ("Write release notes", "To do", ("Action needed",), "Summarize the new search features for the blog."),
    ("Book launch venue", "To do", ("Later",), "Needs space for 80 people."),
    ("Fix search ranking", "Doing", ("To review",), "Short notes rank above long documents."),
    ("Renew TLS certificates", "To do", ("Urgent", "Security"), ""),
    ("Update privacy policy", "Doing", ("Legal",), "Add the new data processors."),
    ("Order office chairs", "To do", ("Purchasing",), "Twelve ergonomic chairs."),
    ("Migrate CI to new runners", "Doing", ("Infrastructure",), ""),
    ("Plan summer party", "To do", ("Team events",), "Garden, barbecue, music."),
    ("Translate help pages", "To do", ("Documentation", "German"), ""),
    ("Fix login bug on Safari", "Doing", ("Bug", "Customer reported"), "Users are logged out after one minute."),
]
# Plain notes on nearby topics: what a structured item competes with.
NOTES = [
    ("Conference notes", "Talks I liked: vector search at scale, privacy by design, and the keynote on open source."),
    ("Kitchen renovation", "New cabinets in June; the old sink leaks and needs replacing."),
    ("Tax checklist", "Collect receipts, bank statements and the pension letter before April."),
    ("Party ideas", "Lanterns in the garden, a playlist, lemonade for the kids."),
    ("Ireland trip", "Dublin, Galway and the Cliffs of Moher; rent a car at the airport."),
    ("Bike maintenance", "Check tyre pressure weekly; chain oil every 300 km."),
    ("Health", "Yearly check-ups: dentist in May, eye doctor in autumn."),
    ("Security todo", "Rotate passwords and enable two-factor authentication everywhere."),
    ("Lease", "The landlord wants to raise the rent by 8 percent; check the contract."),
    ("Garden plans", "Plant tomatoes in May; build a compost bin."),
]
# (question, kind, title of the item it is about)
QUESTIONS = [
    ("Who did I meet at the Berlin conference?", "contact", "Carol Jones"),
    ("who is interested in our search integration", "contact", "Carol Jones"),
    ("Which plumber fixed the sink?", "contact", "Dave Miller"),
    ("who is the partner manager for the pilot", "contact", "Erin Schmidt"),
    ("who gave me a quote for painting the hallway", "contact", "Frank Weber"),
    ("which contact is allergic to penicillin", "contact", "Grace Lee"),
    ("who catered the summer party", "contact", "Hector Ruiz"),
    ("who babysits the kids", "contact", "Ines Duarte"),
    ("lawyer for the dispute with my landlord", "contact", "Jonas Berg"),
    ("whose ladder do I still have", "contact", "Kim Novak"),
    ("the tour guide from our trip to Ireland", "contact", "Liam O'Brien"),
    ("who does our tax return", "contact", "Maya Patel"),
    ("who repaired the e-bike battery", "contact", "Noah Fischer"),
    ("Where is the search workshop?", "event", "Search workshop"),
    ("what's happening at Alexanderplatz", "event", "Search workshop"),
    ("address of the dentist", "event", "Dentist appointment"),
    ("where is the team offsite", "event", "Team offsite"),
    ("which event is at Lake Como", "event", "Team offsite"),
    ("which room is the parent-teacher meeting in", "event", "Parent-teacher meeting"),
    ("where is the board meeting held", "event", "Board meeting"),
    ("where do I go for yoga", "event", "Yoga class"),
    ("which church is the wedding in", "event", "Wedding of Anna and Tom"),
    ("what is at the Main Street Garage", "event", "Car service"),
    ("concert at the Royal Albert Hall", "event", "Concert"),
    ("which clinic is Bella's check-up at", "event", "Vet check-up for Bella"),
    ("which cards need action", "card", "Write release notes"),
    ("what did I put off for later", "card", "Book launch venue"),
    ("which card is waiting for review", "card", "Fix search ranking"),
    ("urgent security tasks", "card", "Renew TLS certificates"),
    ("legal tasks on the board", "card", "Update privacy policy"),
    ("purchasing cards", "card", "Order office chairs"),
    ("infrastructure work in progress", "card", "Migrate CI to new runners"),
    ("cards about team events", "card", "Plan summer party"),
    ("German documentation tasks", "card", "Translate help pages"),
    ("bugs customers reported", "card", "Fix login bug on Safari"),
]


# Builders shared with bench/cross_language.py: each item through its source's own parser.
def contact_document(key: str, number: int, name: str, org: str, note: str) -> SourceDocument:
    card = vcard(key, name, f"{name.split()[0].lower()}@example.test", org, note, f"+1555000{number:04d}")
    return document_from_vcard(f"contacts/{key}.vcf", card, '"1"', "Contacts", 0)  # type: ignore[return-value]


def event_document(key: str, title: str, days: int, place: str, description: str) -> SourceDocument:
    ics = event_ics(f"{key}@example.test", title, NOW + timedelta(days=days), 60, description, place)
    return document_from_ics(USER, f"personal/{key}.ics", ics, '"1"', "Personal", 0, NOW)  # type: ignore[return-value]


def card_document(key: str, title: str, stack: str, labels: Sequence[str], description: str) -> SourceDocument:
    board = {"id": 1, "title": "Operations", "owner": {"uid": USER}}
    card = {"id": key, "title": title, "description": description, "labels": [{"title": label} for label in labels]}
    return document_from_card(key, _Placed(board, {"id": stack, "title": stack}, card))


def note_document(key: str, title: str, body: str) -> SourceDocument:
    return SourceDocument("note", key, title, f"# {title}\n\n{body}", 0, "1", "")


def items() -> list[SourceDocument]:
    """The contacts, events, cards and notes, as the sources turn them into documents."""
    return ([contact_document(f"c{i}", i, *contact) for i, contact in enumerate(CONTACTS)]
            + [event_document(f"e{i}", *event) for i, event in enumerate(EVENTS)]
            + [card_document(str(i), *card) for i, card in enumerate(CARDS)]
            + [note_document(str(100 + i), *note) for i, note in enumerate(NOTES)])


def measure(retriever: HybridRetriever) -> dict[str, tuple[float, float]]:
    """Per kind of item (and "all"): (hit@5, hit@5 among what the default cut-off returns)."""
    calibration = retriever.calibration()
    hits: dict[str, list[tuple[bool, bool]]] = {}
    for question, kind, title in QUESTIONS:
        found = retriever.search_sync(USER, question, K)
        titles = [c.metadata["title"] for c in found]
        kept = [c.metadata["title"] for c in default_cut(calibration, found)]
        for key in (kind, "all"):
            hits.setdefault(key, []).append((title in titles, title in kept))
    return {kind: (sum(a for a, _ in rows) / len(rows), sum(b for _, b in rows) / len(rows)) for kind, rows in hits.items()}


def main() -> None:
    embedder = QueryMemo(make_embedder(cache_path=CACHE))
    with_gist = items()
    without = [replace(doc, gist="") for doc in with_gist]
    with tempfile.TemporaryDirectory() as tmp:
        results = {
            label: measure(build(Dataset(label, docs, {}, {}), embedder, Path(tmp)))
            for label, docs in (("fields and note in one chunk", without), ("plus a gist chunk", with_gist))
        }
    counts = {kind: sum(1 for _, k, _ in QUESTIONS if k == kind) for kind in ("contact", "event", "card")}
    counts["all"] = len(QUESTIONS)
    print(f"\nStructured items, embedder `{embedder.model_id}`: {len(QUESTIONS)} questions, "
          f"{len(with_gist)} items\n")
    print("| Items indexed as | Questions about | n | hit@5 | hit@5 at the default cut-off |\n|---|---|---|---|---|")
    for label, by_kind in results.items():
        for kind in ("contact", "event", "card", "all"):
            hit, kept = by_kind[kind]
            print(f"| {label} | {kind} | {counts[kind]} | {hit:.2f} | {kept:.2f} |")


if __name__ == "__main__":
    main()
