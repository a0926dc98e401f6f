"""Sample content for alice and bob, for the demo and for tests.

``demo`` is a small but realistic account of each kind of object the app indexes (notes with
categories, text/Markdown/HTML/PDF/DOCX files, a Deck board, events including recurring and
time-zoned ones, vCards); ``minimal`` is one of each; ``calendar`` is ``minimal`` with all of
alice's events (for the tests that run on shifted clocks, which need few documents). Dates are relative to the fake's clock (or
the ``now`` given), so "the dentist appointment next week" is always next week; the instant used
is kept as ``fake.seeded_at`` for tests to measure from. Alice shares one file with bob.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta, timezone
from functools import partial
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import docx

if TYPE_CHECKING:
    from .server import FakeNextcloud


def make_pdf(title: str, lines: list[str]) -> bytes:
    """A small valid PDF with extractable text (Helvetica, one page), written by hand."""

    def esc(text: str) -> str:
        return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    ops = ["BT", "/F1 18 Tf", "72 720 Td", f"({esc(title)}) Tj", "/F1 12 Tf", "0 -28 Td"]
    for line in lines:
        ops += [f"({esc(line)}) Tj", "0 -16 Td"]
    ops.append("ET")
    stream = "\n".join(ops).encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>"
        ),
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def make_docx(title: str, paragraphs: list[str]) -> bytes:
    document = docx.Document()
    document.add_heading(title, level=1)
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def event_ics(
    uid: str,
    summary: str,
    start: datetime,
    minutes: int = 60,
    description: str = "",
    location: str = "",
    extra: tuple[str, ...] = (),
    stamp: datetime | None = None,
) -> str:
    """A VEVENT in UTC, or in the start's zone if it has a ``key`` (zoneinfo) — then with TZID.

    DTSTAMP (when the object was written) is ``stamp``, else the start: no clock is read here.
    """
    zone = getattr(start.tzinfo, "key", None)
    end = start + timedelta(minutes=minutes)
    if zone and zone != "UTC":
        times = [f"DTSTART;TZID={zone}:{start:%Y%m%dT%H%M%S}", f"DTEND;TZID={zone}:{end:%Y%m%dT%H%M%S}"]
    else:
        times = [f"DTSTART:{_stamp(start)}", f"DTEND:{_stamp(end)}"]
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//fake_nextcloud//seed//EN",
        "BEGIN:VEVENT",
        f"UID:{uid}",
        f"DTSTAMP:{_stamp(stamp or start)}",
        *times,
        f"SUMMARY:{summary}",
        *([f"DESCRIPTION:{description}"] if description else []),
        *([f"LOCATION:{location}"] if location else []),
        *extra,
        "END:VEVENT",
        "END:VCALENDAR",
    ]
    return "\r\n".join(lines) + "\r\n"


def vcard(uid: str, name: str, email: str, org: str = "", note: str = "", phone: str = "") -> str:
    first, _, last = name.partition(" ")
    lines = [
        "BEGIN:VCARD",
        "VERSION:3.0",
        f"UID:{uid}",
        f"FN:{name}",
        f"N:{last};{first};;;",
        f"EMAIL;TYPE=INTERNET:{email}",
        *([f"TEL;TYPE=CELL:{phone}"] if phone else []),
        *([f"ORG:{org}"] if org else []),
        *([f"NOTE:{note}"] if note else []),
        "END:VCARD",
    ]
    return "\r\n".join(lines) + "\r\n"


def days_from(now: datetime, days: int, hour: int, tz: timezone | ZoneInfo | None = None) -> datetime:
    """``hour`` o'clock (in ``tz``, default UTC) on the UTC day ``days`` after ``now``'s."""
    base = now.astimezone(UTC) + timedelta(days=days)
    return base.replace(hour=hour, minute=0, second=0, microsecond=0, tzinfo=tz or UTC)


def seed(fake: FakeNextcloud, profile: str = "demo", now: datetime | None = None) -> datetime:
    """Returns the instant the content is placed around (also ``fake.seeded_at``)."""
    if profile not in ("demo", "minimal", "calendar"):
        raise ValueError(f"unknown seed profile {profile!r}")
    now = fake.seeded_at = now or fake.clock.now()
    _alice(fake, profile == "demo", now)
    if profile == "calendar":
        _alice_more_events(fake, now)
    _bob(fake, profile == "demo", now)
    return now


def _due(now: datetime, days: int) -> str:
    return days_from(now, days, 12).isoformat()


def _alice(fake: FakeNextcloud, full: bool, now: datetime) -> None:
    at = partial(days_from, now)

    u = "alice"
    fake.create_note(
        u,
        "Meeting notes",
        "# Meeting notes\n\n## Q3 planning\n\n- Budget review moved to Friday\n"
        "- Hiring: two backend engineers\n- Launch date: end of September\n",
        "Work",
    )
    fake.put_file(
        u,
        "Documents/Project plan.md",
        "# Project Phoenix\n\n## Goals\n\nMigrate the billing system to the "
        "new platform before the end of the year.\n\n## Risks\n\n- Data migration of old invoices\n",
    )
    fake.put_file(u, "Documents/Shared with Bob.md", "# Garden party\n\nBob brings the barbecue, Alice the salads.\n")
    fake.share(u, "Documents/Shared with Bob.md", "bob")
    board = fake.create_board(u, "Product launch", "0082c9")
    todo = fake.create_stack(u, board, "To do", 0)
    fake.create_card(
        u,
        todo,
        "Write release notes",
        "Summarize the new search features for the blog.",
        duedate=_due(now, 5),
        labels=("Action needed",),
    )
    fake.put_calendar_object(
        u,
        "personal",
        "dentist-next-week.ics",
        event_ics(
            "dentist-next-week@example.test",
            "Dentist appointment",
            at(7, 9),
            45,
            "Yearly check-up with Dr. Weber",
            "Praxis Dr. Weber, Hauptstrasse 5",
        ),
    )
    fake.put_contact(
        u,
        "contacts",
        "carol.vcf",
        vcard(
            "carol-0001",
            "Carol Jones",
            "carol@example.test",
            "Acme Corp",
            "Met at the Berlin conference; interested in the search integration.",
            "+15555550101",
        ),
    )
    if not full:
        return
    fake.create_note(
        u,
        "Pancakes",
        "# Pancakes\n\n## Ingredients\n\n- 200 g flour\n- 2 eggs\n- 300 ml milk\n\n"
        "## Steps\n\nWhisk everything, rest 10 minutes, fry in butter.\n",
        "Recipes",
    )
    fake.create_note(
        u,
        "Travel ideas",
        "# Travel ideas\n\n- Lisbon in spring\n- Hiking in the Dolomites\n- Northern lights in Tromsø\n",
    )
    fake.create_note(
        u,
        "Architecture decisions",
        "# Architecture decisions\n\n## ADR-1: Use PostgreSQL\n\nWe keep one database for billing and reporting.\n",
        "Work/Projects",
    )
    fake.put_file(
        u,
        "Documents/Quarterly report.txt",
        "Quarterly report Q2\n\nRevenue grew 12 percent. Support tickets dropped after the new onboarding flow.\n",
    )
    fake.put_file(
        u,
        "Documents/Team page.html",
        "<!DOCTYPE html><html><head><title>Team</title></head><body>"
        "<h1>Our team</h1><p>Alice leads the platform group; Bob runs operations.</p></body></html>\n",
    )
    fake.put_file(
        u,
        "Documents/Whitepaper.pdf",
        make_pdf(
            "Semantic search whitepaper",
            [
                "Semantic search finds documents by meaning rather than by keywords.",
                "Embeddings map text to vectors; nearby vectors mean related content.",
            ],
        ),
    )
    fake.put_file(
        u,
        "Documents/Proposal.docx",
        make_docx(
            "Budget proposal 2027",
            [
                "We propose to increase the infrastructure budget by ten percent.",
                "The increase covers the new search cluster and its backups.",
            ],
        ),
    )
    fake.put_file(u, "Photos/README.txt", "Holiday photos go here.\n")
    tag = fake.create_tag("Important")
    fake.tag_file(u, "Documents/Project plan.md", tag)
    doing = fake.create_stack(u, board, "Doing", 1)
    done = fake.create_stack(u, board, "Done", 2)
    fake.create_card(u, todo, "Book launch venue", "Needs space for 80 people.", duedate=_due(now, -3),
                     labels=("Later",))
    fake.create_card(
        u,
        doing,
        "Fix search ranking",
        "Short notes rank above long documents; tune the scoring.",
        duedate=_due(now, 2),
        labels=("To review",),
    )
    fake.create_card(u, done, "Set up staging server", "Staging runs on the new cluster.", labels=("Finished",))
    _alice_more_events(fake, now)
    fake.put_contact(
        u,
        "contacts",
        "dave.vcf",
        vcard("dave-0001", "Dave Miller", "dave@example.test", "Miller Plumbing", "Fixed the kitchen sink; reliable.",
              "+15555550142"),
    )
    fake.put_contact(
        u,
        "contacts",
        "erin.vcf",
        vcard("erin-0001", "Erin Schmidt", "erin@example.test", "Nextcloud GmbH", "Partner manager for the pilot."),
    )


def _alice_more_events(fake: FakeNextcloud, now: datetime) -> None:
    """A past, a recurring and a time-zoned event beside the dentist next week."""
    at = partial(days_from, now)
    fake.put_calendar_object(
        "alice",
        "personal",
        "dentist-last-year.ics",
        event_ics("dentist-last-year@example.test", "Dentist appointment", at(-365, 14), 30, "Filling replaced"),
    )
    fake.put_calendar_object(
        "alice",
        "personal",
        "weekly-team-meeting.ics",
        event_ics(
            "weekly-team-meeting@example.test",
            "Weekly team meeting",
            at(-14, 8),
            60,
            "Status round and blockers",
            extra=("RRULE:FREQ=WEEKLY;BYDAY=" + at(-14, 8).strftime("%a")[:2].upper(),),
        ),
    )
    fake.put_calendar_object(
        "alice",
        "personal",
        "berlin-workshop.ics",
        event_ics(
            "berlin-workshop@example.test",
            "Search workshop in Berlin",
            at(21, 10, ZoneInfo("Europe/Berlin")),
            180,
            "Hands-on workshop on semantic search",
            "Alexanderplatz 1, Berlin",
        ),
    )


def _bob(fake: FakeNextcloud, full: bool, now: datetime) -> None:
    at = partial(days_from, now)
    u = "bob"
    fake.create_note(u, "Garden plans", "# Garden plans\n\n- Plant tomatoes in May\n- Build a compost bin\n", "Home")
    fake.put_calendar_object(
        u,
        "personal",
        "car-service.ics",
        event_ics("car-service@example.test", "Car service", at(10, 8), 120, "Oil change and tyre swap"),
    )
    if not full:
        return
    fake.create_note(u, "Book list", "# Book list\n\n- The Pragmatic Programmer\n- Dune\n")
    fake.put_file(
        u,
        "Documents/Operations handbook.md",
        "# Operations handbook\n\n## On-call\n\nRotate weekly; escalate after 30 minutes.\n",
    )
    board = fake.create_board(u, "Home renovation", "317CCC")
    stack = fake.create_stack(u, board, "To do", 0)
    fake.create_card(u, stack, "Paint the hallway", "Buy white paint and brushes.", duedate=_due(now, 14))
    fake.put_contact(
        u,
        "contacts",
        "frank.vcf",
        vcard("frank-0001", "Frank Weber", "frank@example.test", "Weber Painting", "Quote for the hallway."),
    )
