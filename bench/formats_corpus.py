"""The corpus and the questions of ``bench/formats_quality.py``: one user's files in every format the app
reads beyond plain text (spreadsheets, presentations, RTF, EPUB, e-mail, photos and scans), in English,
German, French and Spanish, with distractors on the same topics (another year's price list, an older
strategy review, a contract template with other figures, a second bakery receipt).

What the files hold is in ``formats_contents`` and ``formats_scans``, the questions in ``formats_questions``; more files on the same topics, answering no question, in
``formats_distractors``. Everything is written by code, with the builders the test suite uses
(tests/support/office_files.py: openpyxl, python-pptx, odfpy, ebooklib, ``email`` and Pillow for the scans). Each
question's answer lives in exactly one file, in a cell, a speaker note, a scanned page or a photographed
receipt, and the question is worded as its owner would ask it, not in the file's words. The questions
were written before any measurement and not changed after it; ``formats_distractors`` was added after
the first run (hit@5 0.99 with this module's 46 files alone), to make the search less easy, not easier.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import docx
import formats_contents as contents
import formats_scans as scans
from odf.opendocument import OpenDocumentText
from odf.text import P
from office_files import (
    make_eml,
    make_epub,
    make_image,
    make_multipage_tiff,
    make_odp,
    make_ods,
    make_pptx,
    make_rtf,
    make_scanned_pdf,
    make_xlsx,
)
from test_extract import make_pdf

MIME = {
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "odp": "application/vnd.oasis.opendocument.presentation",
    "rtf": "text/rtf",
    "epub": "application/epub+zip",
    "eml": "message/rfc822",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "odt": "application/vnd.oasis.opendocument.text",
    "pdf": "application/pdf",
    "png": "image/png",
    "jpeg": "image/jpeg",
    "tiff": "image/tiff",
    "webp": "image/webp",
}


@dataclass(frozen=True)
class Doc:
    path: str
    kind: str  # "xlsx", ..., "png", "scanned pdf", "multi-page tiff": the format a result is reported under
    language: str
    build: Callable[[], bytes]
    pages: tuple[str, ...] = ()  # a scan's rendered text, page by page: the OCR's ground truth

    @property
    def mime(self) -> str:
        return MIME[{"scanned pdf": "pdf", "multi-page tiff": "tiff"}.get(self.kind, self.kind)]

    @property
    def is_scan(self) -> bool:
        return bool(self.pages)


def docx_bytes(*paragraphs: str) -> bytes:
    document = docx.Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def odt_bytes(*paragraphs: str) -> bytes:
    document = OpenDocumentText()
    for paragraph in paragraphs:
        document.text.addElement(P(text=paragraph))
    buffer = io.BytesIO()
    document.write(buffer)
    return buffer.getvalue()


def scan(path: str, kind: str, language: str, *pages: str) -> Doc:
    if kind == "scanned pdf":
        build: Callable[[], bytes] = lambda: make_scanned_pdf(*pages)  # noqa: E731
    elif kind == "multi-page tiff":
        build = lambda: make_multipage_tiff(*pages)  # noqa: E731
    else:
        (page,) = pages
        build = lambda: make_image(page, kind.upper())  # noqa: E731
    return Doc(path, kind, language, build, pages)


def office(path: str, kind: str, language: str, builder: Callable[..., bytes], *args: object) -> Doc:
    return Doc(path, kind, language, lambda: builder(*args))


DOCS: list[Doc] = [
    office("/Einkauf/Preisliste Büromaterial 2026.xlsx", "xlsx", "de", make_xlsx, contents.PRICES_2026),
    office("/Archiv/office supplies prices 2024.xlsx", "xlsx", "en", make_xlsx, contents.PRICES_2024),
    office("/Reisen/Travel expenses 2026.xlsx", "xlsx", "en", make_xlsx, contents.TRIPS),
    office("/IT/Inventario equipos.xlsx", "xlsx", "es", make_xlsx, contents.EQUIPMENT),
    office("/Privat/Haushaltsbuch 2026.ods", "ods", "de", make_ods, contents.HOUSEHOLD),
    office("/Verein/Sommerfest Budget.ods", "ods", "de", make_ods, contents.SUMMER_FESTIVAL),
    office("/Cave/inventaire cave.ods", "ods", "fr", make_ods, contents.CELLAR),
    office("/Management/Q3 strategy review.pptx", "pptx", "en", make_pptx, contents.STRATEGY_Q3),
    office("/Management/Q2 strategy review.pptx", "pptx", "en", make_pptx, contents.STRATEGY_Q2),
    office("/Vertrieb/Kickoff Vertrieb 2026.pptx", "pptx", "de", make_pptx, contents.SALES_KICKOFF),
    office("/Marketing/Plan de marketing 2026.pptx", "pptx", "es", make_pptx, contents.MARKETING_ES),
    office("/HR/Onboarding neue Mitarbeitende.odp", "odp", "de", make_odp, contents.ONBOARDING),
    office("/Product/Roadmap 2027.odp", "odp", "en", make_odp, contents.ROADMAP),
    office("/Marketing/Marketing plan 2025.odp", "odp", "en", make_odp, contents.MARKETING_2025),
    office("/Privat/Kündigung Fitnessstudio.rtf", "rtf", "de", make_rtf, *contents.GYM),
    office("/HR/Reference Maria Santos.rtf", "rtf", "en", make_rtf, *contents.REFERENCE),
    office("/Privat/Résiliation assurance habitation.rtf", "rtf", "fr", make_rtf, *contents.HOME_INSURANCE_FR),
    office("/Privat/Mahnung Stadtwerke.rtf", "rtf", "de", make_rtf, *contents.DUNNING),
    office("/Bücher/Kitchen garden handbook.epub", "epub", "en", make_epub, "Kitchen garden handbook", contents.GARDEN),
    office("/Bücher/Balcony vegetables.epub", "epub", "en", make_epub, "Balcony vegetables", contents.BALCONY),
    office(
        "/Bücher/Chronik Kleinwasserburg.epub",
        "epub",
        "de",
        make_epub,
        "Chronik von Kleinwasserburg",
        contents.CHRONICLE,
    ),
    office(
        "/Mail/Re Offsite venue.eml",
        "eml",
        "en",
        make_eml,
        "Re: Offsite venue",
        "Hi Alice,\n\ngood news: Hotel Seeblick on Lake Constance confirmed our booking for 14 to 16 October, "
        "18 single rooms and the small conference room. They need the deposit of 1,200 EUR by 30 September, "
        "otherwise the rooms are released.\n\nCarla",
    ),
    office(
        "/Mail/Offsite ideas.eml",
        "eml",
        "en",
        make_eml,
        "Offsite ideas",
        "Options for this year's team offsite: Alpenhof in Garmisch (September, 140 EUR a night), "
        "Strandhotel Binz (only in August) or Hotel Seeblick (90 EUR a night, lake view). Votes by Friday?",
    ),
    office(
        "/Mail/Auftrag Heizung.eml",
        "eml",
        "de",
        make_eml,
        "Ihr Auftrag 2026-1187: Heizung",
        "Sehr geehrte Frau Keller,\n\nunser Techniker kommt am Montag, 12. Januar, zwischen 8 und 10 Uhr, um "
        "die defekte Umwälzpumpe Ihrer Heizung zu tauschen. Laut Kostenvoranschlag kostet die Reparatur "
        "486,50 EUR inklusive Mehrwertsteuer.\n\nMit freundlichen Grüßen\nHaustechnik Albrecht",
    ),
    office(
        "/Mail/Elternabend.eml",
        "eml",
        "de",
        make_eml,
        "Einladung Elternabend",
        "Liebe Eltern,\n\nder nächste Elternabend der Kita Sonnenblume ist am Donnerstag, 19. November, um "
        "19:30 Uhr im Turnraum. Themen: Laternenfest und neue Schließzeiten. Bitte Hausschuhe mitbringen.\n\n"
        "Das Kita-Team",
    ),
    office(
        "/Mail/Reserva vuelo Madrid.eml",
        "eml",
        "es",
        make_eml,
        "Confirmación de su reserva ABX7QK",
        "Estimada clienta:\n\nsu reserva ABX7QK está confirmada. Vuelo IB3171 Frankfurt - Madrid, jueves 3 de "
        "diciembre, salida 07:45, llegada 10:20. Equipaje incluido: una maleta facturada de 23 kg y un bulto "
        "de mano.\n\nIberia",
    ),
    office(
        "/Mail/Assemblée copropriété.eml",
        "eml",
        "fr",
        make_eml,
        "Convocation assemblée générale",
        "Bonjour,\n\nl'assemblée générale de la copropriété aura lieu le 8 décembre à 18h30 dans la salle "
        "commune. À l'ordre du jour : le ravalement de la façade, devis retenu de 142 000 euros, et le "
        "remplacement de l'interphone.\n\nLe syndic",
    ),
    # Text documents on the same topics as the scans, with other figures.
    office(
        "/Vorlagen/Mietvertrag Entwurf.docx",
        "docx",
        "de",
        docx_bytes,
        "Mietvertrag (Entwurf)",
        "§ 5 Mietsicherheit: Die Kaution beträgt zwei Nettokaltmieten (1.900 Euro).",
        "§ 7 Tierhaltung: Die Haltung von Haustieren ist nicht gestattet.",
    ),
    office(
        "/Vorlagen/Arbeitsvertrag Muster.odt",
        "odt",
        "de",
        odt_bytes,
        "Musterarbeitsvertrag",
        "Urlaub: 30 Arbeitstage im Kalenderjahr.",
        "Kündigung: vier Wochen zum Fünfzehnten oder zum Monatsende.",
        "Vergütung: 3.400 Euro brutto im Monat.",
    ),
    office(
        "/Templates/lease template.pdf",
        "pdf",
        "en",
        make_pdf,
        "Standard lease: rent is due on the 3rd of each month.",
        "Notice: 30 days in writing. No pets allowed.",
    ),
    office(
        "/Notes/Retro sprint 41.docx",
        "docx",
        "en",
        docx_bytes,
        "Sprint 41 retro",
        "Went well: demo to the customer. To improve: too many meetings.",
        "Action: Tom sets up the CI cache.",
    ),
    office(
        "/Versicherungen/Kfz-Versicherung.odt",
        "odt",
        "de",
        odt_bytes,
        "Kfz-Versicherung 2026",
        "Teilkasko mit 150 EUR Selbstbeteiligung, Vollkasko mit 500 EUR.",
        "Jahresbeitrag 412,30 EUR.",
    ),
    scan("/Fotos/IMG_2041.png", "png", "de", scans.BAKERY),
    scan("/Fotos/IMG_2057.png", "png", "de", scans.BAKERY_OTHER),
    scan("/Fotos/IMG_20261102_101512.jpg", "jpeg", "en", scans.HARDWARE),
    scan("/Fotos/IMG_3310.jpg", "jpeg", "fr", scans.PHARMACY),
    scan("/Fotos/IMG_0932.jpg", "jpeg", "es", scans.TAXI),
    scan("/Scans/scan_0007.tif", "tiff", "de", scans.LEASE_DE),
    scan("/Fotos/PXL_20261118_154210.webp", "webp", "en", scans.WHITEBOARD),
    scan("/Fotos/PXL_20260611_134502.webp", "webp", "es", scans.MENU_ES),
    scan("/Scans/Arbeitsvertrag unterschrieben.pdf", "scanned pdf", "de", *scans.EMPLOYMENT),
    scan("/Scans/lease signed.pdf", "scanned pdf", "en", *scans.LEASE_EN),
    scan("/Scans/Fax Versicherung.tif", "multi-page tiff", "de", *scans.CONTENTS_INSURANCE),
    scan("/Scans/bail.pdf", "scanned pdf", "fr", scans.LEASE_FR),
    scan("/Screenshots/Screenshot 2026-03-03.png", "png", "en", scans.WARRANTY),
    scan("/Scans/scan_0012.pdf", "scanned pdf", "en", scans.MINUTES),
]
