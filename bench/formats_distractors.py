"""Files on the same topics as ``formats_corpus``'s answers, with other figures, dates and people: last
year's price list and household book, other receipts (one from the same bakery, another day), another
employee's contract scan, other leases, flights and tradesmen. None of them answers a question; they are
what a user's folders hold besides the one file that does, so a search must find the right one."""

from __future__ import annotations

from formats_corpus import Doc, docx_bytes, odt_bytes, office, scan
from office_files import make_eml, make_epub, make_odp, make_ods, make_pptx, make_rtf, make_xlsx


def _receipt(shop: str, address: str, when: str, items: list[tuple[str, str]], total: str, footer: str) -> str:
    return "\n".join([shop, address, when, *(f"{item} {price}" for item, price in items), total, footer])


RECEIPTS = [
    (
        "/Fotos/IMG_1988.png",
        "png",
        "de",
        _receipt(
            "Bäckerei Kornblume",
            "Hauptstraße 12, 79098 Freiburg",
            "07.11.2026 08:05 Kasse 1",
            [("Roggenbrot 1 kg", "4,60"), ("Croissant 3 x 1,30", "3,90"), ("Kaffee klein", "2,40")],
            "Summe EUR 10,90",
            "EC-Karte. Vielen Dank für Ihren Einkauf!",
        ),
    ),
    (
        "/Fotos/IMG_2102.jpg",
        "jpeg",
        "de",
        _receipt(
            "EDEKA Schmidt",
            "Basler Straße 88, 79100 Freiburg",
            "02.12.2026 18:31",
            [
                ("Äpfel Elstar 1,5 kg", "3,49"),
                ("Vollmilch 1 l", "1,19"),
                ("Butter 250 g", "2,29"),
                ("Spaghetti 500 g", "1,49"),
                ("Tomaten passiert", "0,99"),
            ],
            "Summe EUR 9,45",
            "Bar bezahlt. Payback-Punkte: 4",
        ),
    ),
    (
        "/Fotos/IMG_20261005_172233.jpg",
        "jpeg",
        "en",
        _receipt(
            "GREENLEAF GARDEN CENTER",
            "88 Orchard Road, Springfield",
            "Date: 10/05/2026 Time: 17:22",
            [("Hedge trimmer HT-45", "89.00"), ("Garden gloves", "12.50"), ("Potting soil 40 l", "9.99")],
            "TOTAL 118.56",
            "Exchanges within 14 days",
        ),
    ),
    (
        "/Fotos/IMG_3355.jpg",
        "jpeg",
        "fr",
        _receipt(
            "PHARMACIE CENTRALE",
            "12 cours Lafayette, 69003 Lyon",
            "Le 29/11/2026 à 10:12",
            [("Ibuprofène 400 mg", "3,20"), ("Pastilles pour la gorge", "6,40")],
            "TOTAL TTC 9,60 €",
            "Merci et à bientôt",
        ),
    ),
    (
        "/Fotos/IMG_0987.jpg",
        "jpeg",
        "es",
        _receipt(
            "TAXI MADRID 24H",
            "Licencia 20455",
            "Fecha: 03/12/2026 Hora: 10:55",
            [("Recorrido: Aeropuerto Barajas T4 - Calle de Alcalá 120", ""), ("Tarifa fija aeropuerto", "33,00")],
            "Importe total 33,00 €",
            "IVA incluido",
        ),
    ),
    (
        "/Fotos/PXL_20261125_091530.webp",
        "webp",
        "en",
        (
            "Sprint 43 planning\nGoal: SAML login for the three pilot customers\nCapacity: 34 points\n"
            "- Priya: SAML metadata import\n- Tom: audit log export\n- Demo on Thursday 17 December"
        ),
    ),
]
EMPLOYMENT_OTHER = (
    "Arbeitsvertrag\nzwischen der Hafen Mannheim Spedition GmbH und Frau Sabine Ortlieb, Neckarauer Straße 12, "
    "68199 Mannheim.\n§ 1 Beginn: Das Arbeitsverhältnis beginnt am 1. Oktober 2025.\n§ 2 Tätigkeit: "
    "Sachbearbeiterin Zoll.\n§ 3 Probezeit: drei Monate.\n§ 4 Vergütung: Das Bruttomonatsgehalt beträgt "
    "3.600 Euro.",
    "§ 5 Arbeitszeit: 40 Stunden pro Woche.\n§ 6 Urlaub: 26 Arbeitstage im Kalenderjahr.\n§ 7 Kündigung: "
    "Es gelten die gesetzlichen Kündigungsfristen.\nMannheim, den 3. September 2025",
)
LEASE_OTHER = (
    "RESIDENTIAL LEASE AGREEMENT\nLandlord: Maple Court Properties LLC. Tenant: Samuel Reyes.\nPremises: "
    "410 Pine Street, Unit 12, Seattle, Washington.\nTerm: twelve months beginning 1 July 2024.\nRent: USD "
    "1,720 per month. Pets: no pets. Utilities: tenant pays all utilities. Notice: 30 days in writing.",
)
LIABILITY_INSURANCE = (
    "Privathaftpflichtversicherung - Nachtrag\nPolice Nr. PH-2025-1043\nVersicherungsnehmerin: Anna Keller\n"
    "Deckungssumme: 10 Mio. EUR pauschal\nJahresbeitrag: 64,90 EUR\nSelbstbeteiligung: keine\n"
    "Schlüsselverlust bis 20.000 EUR mitversichert.",
)

PRICES_2025_DE = {
    "Preise": [
        ("Artikel", "Art.-Nr.", "Preis netto (EUR)", "Lieferant"),
        ("Kopierpapier A4 80 g, 500 Blatt", "KP-480", "4,39", "Papierhaus Lindner"),
        ("Heftgerät Leitz 5502, bis 30 Blatt", "HG-5502", "17,40", "Büro Kaiser"),
        ("Tonerkartusche HP 305A schwarz", "TN-305A", "84,00", "Druckerwelt Schulz"),
        ("Kaffeebohnen Espresso, 1 kg", "KB-1000", "15,60", "Rösterei Mahlwerk"),
        ("Textmarker gelb, 10 Stück", "TM-10G", "6,10", "Büro Kaiser"),
    ]
}
TRIPS_2025 = {
    "Trips": [
        ("Date", "Traveller", "Destination", "Purpose", "Transport", "Nights", "Total (EUR)"),
        ("2025-03-11", "Tobias Brandt", "Vienna", "Visit at Interpack organisers", "Train", 1, "420.10"),
        ("2025-05-20", "Lena Hoffmann", "Porto", "Customer workshop at Atlântico Seguros", "Flight", 2, "976.40"),
        ("2025-09-08", "Aylin Demir", "Oslo", "Supplier audit", "Flight", 2, "1,340.00"),
    ]
}
HOUSEHOLD_2025 = {
    "Februar": [
        ("Datum", "Kategorie", "Beschreibung", "Betrag (EUR)"),
        ("2025-02-15", "Energie", "Abschlag Strom Stadtwerke", "69,00"),
        ("2025-02-20", "Gesundheit", "Zahnarzt Dr. Albers, professionelle Zahnreinigung", "95,00"),
        ("2025-02-25", "Auto", "Kfz-Versicherung Jahresbeitrag HUK", "398,70"),
    ],
}
SUMMER_2025 = {
    "Budget": [
        ("Posten", "Geplant (EUR)", "Tatsächlich (EUR)"),
        ("Getränke", "850", "910"),
        ("Hüpfburg Miete", "220", "220"),
        ("Musik", "350", "300"),
    ]
}
STRATEGY_Q1 = [
    ("Q1 strategy review", "Results, markets, offices", ""),
    ("Offices", "Warsaw: first site visits\nPrague: not before 2028", "Board wants a Warsaw decision in Q2."),
    ("Hiring", "25 open roles", "Marketing hiring is prioritised this quarter."),
]
KICKOFF_2025 = [
    ("Vertriebs-Kickoff 2025", "Ziele, Provision, Messen", ""),
    ("Ziele 2025", "Umsatzziel 8,2 Mio. EUR", ""),
    ("Provision", "Einheitlich 5 Prozent", "Die Provision bleibt 2025 unverändert."),
    ("Messen", "Hannover Messe, Halle 4", "Am Stand: Jana Roth und Tim Adler."),
]
ROADMAP_2026 = [
    ("Product roadmap 2026", "Themes: performance, mobile", ""),
    ("Q3", "Dark mode research\nMobile redesign", "Dark mode needs design capacity we do not have before 2027."),
    ("Q4", "Partner portal beta", "The partner portal ships on the current API."),
]

DISTRACTORS: list[Doc] = [
    *(scan(path, kind, language, text) for path, kind, language, text in RECEIPTS),
    scan("/Scans/Arbeitsvertrag Ortlieb.pdf", "scanned pdf", "de", *EMPLOYMENT_OTHER),
    scan("/Scans/scan_0003.pdf", "scanned pdf", "en", *LEASE_OTHER),
    scan("/Scans/Fax Haftpflicht.tif", "tiff", "de", *LIABILITY_INSURANCE),
    office("/Archiv/Preisliste Büromaterial 2025.xlsx", "xlsx", "de", make_xlsx, PRICES_2025_DE),
    office("/Reisen/Travel expenses 2025.xlsx", "xlsx", "en", make_xlsx, TRIPS_2025),
    office("/Privat/Haushaltsbuch 2025.ods", "ods", "de", make_ods, HOUSEHOLD_2025),
    office("/Verein/Sommerfest 2025.ods", "ods", "de", make_ods, SUMMER_2025),
    office("/Management/Q1 strategy review.pptx", "pptx", "en", make_pptx, STRATEGY_Q1),
    office("/Vertrieb/Kickoff Vertrieb 2025.odp", "odp", "de", make_odp, KICKOFF_2025),
    office("/Product/Roadmap 2026.pptx", "pptx", "en", make_pptx, ROADMAP_2026),
    office(
        "/Privat/Kündigung Zeitschrift.rtf",
        "rtf",
        "de",
        make_rtf,
        "Anna Keller, Lessingstraße 4, 79100 Freiburg",
        "Kündigung Abonnement Kundennummer 55120",
        "Hiermit kündige ich mein Abonnement der Zeitschrift Landlust zum nächstmöglichen Termin, "
        "spätestens zum 30. Juni 2026.",
    ),
    office(
        "/HR/Reference Tom Becker.rtf",
        "rtf",
        "en",
        make_rtf,
        "Reference for Tom Becker",
        "Tom Becker worked with us from March 2021 to December 2025 as a "
        "draughtsman. He prepared the drawings for the Old Mill conversion and the ferry terminal.",
    ),
    office(
        "/Bücher/Herb garden.epub",
        "epub",
        "en",
        make_epub,
        "The herb garden",
        [
            ("Basil", "Sow basil indoors in April and plant out in June, 25 centimetres apart."),
            ("Chives", "Divide clumps every three years in spring."),
        ],
    ),
    office(
        "/Mail/Flug Barcelona.eml",
        "eml",
        "es",
        make_eml,
        "Confirmación de su reserva KQ2M8P",
        "Su reserva KQ2M8P está confirmada. Vuelo VY1815 Barcelona - Frankfurt, domingo 6 de diciembre, salida "
        "18:10, llegada 20:15. Equipaje de mano únicamente.",
    ),
    office(
        "/Mail/Sanitär Angebot.eml",
        "eml",
        "de",
        make_eml,
        "Angebot Badsanierung",
        "Sehr geehrte Frau Keller,\n\nanbei unser Angebot für die neue Dusche: 4.380 EUR inklusive Fliesen. "
        "Ein Termin wäre frühestens im Februar möglich.\n\nSanitär Wehrle",
    ),
    office(
        "/Mail/Offsite agenda.eml",
        "eml",
        "en",
        make_eml,
        "Offsite agenda draft",
        "Draft agenda for the offsite: day one strategy and roadmap, day two team workshops, boat trip on the "
        "last afternoon. Please send topics by 1 October.",
    ),
    office(
        "/Mail/Syndic travaux.eml",
        "eml",
        "fr",
        make_eml,
        "Travaux ascenseur",
        "Bonjour, les travaux de l'ascenseur commenceront le 12 janvier pour trois semaines. Coût : 38 500 "
        "euros, déjà voté l'an dernier. Le syndic",
    ),
    office(
        "/Notes/Kaution Rückzahlung.docx",
        "docx",
        "de",
        docx_bytes,
        "Alte Wohnung Wiehre: Kaution 2.100 Euro, Rückzahlung bis Ende Januar zugesagt.",
    ),
    office(
        "/Notes/Warranty claims.odt",
        "odt",
        "en",
        odt_bytes,
        "Dishwasher: warranty until May 2027, claim number 88-1204.",
        "Coffee machine: two-year warranty expired in 2025.",
    ),
]
