"""The questions of ``bench/formats_quality.py`` about ``formats_corpus``'s files: for each file, what its owner
asks about it, in their language, and the words of the answer as the file has them. Written before any
measurement and not changed after it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    text: str
    language: str
    path: str  # the one file that answers it
    answer: str  # words of the answer as the file has them: the chunk a hit cites must hold them


def _questions(by_file: dict[str, list[tuple[str, str, str]]]) -> list[Question]:
    return [
        Question(text, language, path, answer) for path, asked in by_file.items() for language, text, answer in asked
    ]


# For each file, what its owner asks about it: (language, question, the answer's words in the file).
QUESTIONS: list[Question] = _questions(
    {
        # Spreadsheets
        "/Einkauf/Preisliste Büromaterial 2026.xlsx": [
            ("de", "Was kostet bei uns ein Tacker?", "18,90"),
            ("de", "Wie teuer ist die schwarze Druckerpatrone für den HP-Laserdrucker?", "89,00"),
            ("de", "Wie lange braucht Druckerwelt Schulz für eine Lieferung?", "5 Werktage"),
            ("en", "How much do we pay now for a kilo of espresso beans?", "16,80"),
        ],
        "/Reisen/Travel expenses 2026.xlsx": [
            ("en", "What did Lena's September trip to Portugal cost in total?", "1,284.60"),
            ("en", "Who went to the trade fair in Vienna?", "Interpack"),
            ("de", "Warum ist Aylin im Juni nach Kopenhagen geflogen?", "Nordvind Logistics"),
        ],
        "/IT/Inventario equipos.xlsx": [
            ("es", "¿Qué portátil tiene asignado Jonas Weber?", "ThinkPad T14"),
            ("en", "Until when is Lucía's Dell monitor under warranty?", "2028-06-01"),
        ],
        "/Privat/Haushaltsbuch 2026.ods": [
            ("de", "Wie hoch war der Stromabschlag im Februar?", "2026-02-15"),
            ("de", "Was musste ich beim Zahnarzt für die Krone selbst zahlen?", "640,00"),
            ("en", "How much was the car inspection in March?", "389,90"),
        ],
        "/Verein/Sommerfest Budget.ods": [
            ("de", "Was hat die Hüpfburg beim Sommerfest am Ende gekostet?", "280"),
        ],
        "/Cave/inventaire cave.ods": [
            ("fr", "Combien de bouteilles de Chablis me reste-t-il ?", "Montmains"),
            ("fr", "Où est rangé le Pommard dans la cave ?", "Casier A1"),
        ],
        # Presentations: the answers are in speaker notes, but for the revenue goal and the core hours
        "/Management/Q3 strategy review.pptx": [
            ("en", "When will the Warsaw office open now?", "March 2027"),
            ("de", "Warum verzögert sich das Büro in Warschau?", "fit-out"),
            ("en", "Which teams are not allowed to hire until January?", "non-engineering"),
        ],
        "/Vertrieb/Kickoff Vertrieb 2026.pptx": [
            ("de", "Ab wann bekommen Verkäufer mehr Provision für neue Kunden?", "1. April"),
            ("de", "Wer steht dieses Jahr auf der Hannover Messe am Stand?", "Felix Brandl"),
            ("en", "What is the sales team's revenue goal for 2026?", "9,5 Mio"),
        ],
        "/Marketing/Plan de marketing 2026.pptx": [
            ("es", "¿Cuánto dinero tenemos para redes sociales este año?", "12.000"),
            ("es", "¿Por qué se retrasa el catálogo nuevo?", "imprenta"),
        ],
        "/HR/Onboarding neue Mitarbeitende.odp": [
            ("de", "Wo und wann bekommen neue Kollegen ihren Laptop?", "Raum 2.14"),
            ("de", "Wie stelle ich als neuer Mitarbeiter einen Urlaubsantrag?", "Personalportal"),
            ("en", "What are the core hours at Brenner Logistik?", "Kernzeit 10 bis 15"),
        ],
        "/Product/Roadmap 2027.odp": [
            ("en", "Why was dark mode pushed back?", "accessibility audit"),
            ("en", "What launch depends on the API v2 beta being on time?", "partner portal"),
            ("fr", "Quand le mode sombre sortira-t-il ?", "slipped from Q1 to Q2"),
        ],
        # Letters, books, e-mails
        "/Privat/Kündigung Fitnessstudio.rtf": [
            ("de", "Bis wann läuft mein Vertrag im Fitnessstudio noch?", "31. März 2027"),
            ("en", "What's my membership number at the gym?", "48213"),
        ],
        "/HR/Reference Maria Santos.rtf": [
            ("en", "How long was Maria Santos employed at Lindqvist?", "1 February 2019"),
            ("en", "Which bridge project did Maria lead?", "Harbour Bridge"),
        ],
        "/Privat/Résiliation assurance habitation.rtf": [
            ("fr", "Pourquoi ai-je résilié mon assurance habitation ?", "déménagement"),
        ],
        "/Bücher/Kitchen garden handbook.epub": [
            ("en", "How far apart should I plant tomatoes?", "60 centimetres"),
            ("en", "When do garlic cloves go in the ground?", "October"),
        ],
        "/Bücher/Chronik Kleinwasserburg.epub": [
            ("de", "Seit wann hat Kleinwasserburg das Marktrecht?", "1312"),
            ("de", "Welche Gebäude haben den Stadtbrand überstanden?", "St. Margareta"),
            ("en", "When did Kleinwasserburg get its railway station?", "1894"),
        ],
        "/Mail/Re Offsite venue.eml": [
            ("en", "On which days is the team offsite at the lake?", "14 to 16 October"),
            ("en", "By when must the hotel deposit for the offsite be paid?", "30 September"),
        ],
        "/Mail/Auftrag Heizung.eml": [
            ("de", "Wann kommt der Monteur wegen der Heizung?", "12. Januar"),
            ("de", "Was soll der Tausch der Heizungspumpe kosten?", "486,50"),
        ],
        "/Mail/Elternabend.eml": [
            ("de", "Wann ist der nächste Elternabend im Kindergarten?", "19. November"),
        ],
        "/Mail/Reserva vuelo Madrid.eml": [
            ("es", "¿A qué hora sale mi vuelo a Madrid?", "07:45"),
            ("es", "¿Cuántas maletas puedo facturar en el vuelo a Madrid?", "23 kg"),
            ("en", "What's the booking reference of my flight to Madrid?", "ABX7QK"),
        ],
        "/Mail/Assemblée copropriété.eml": [
            ("fr", "Combien va coûter le ravalement de la façade ?", "142 000"),
        ],
        # Scans and photos
        "/Fotos/IMG_2041.png": [
            ("de", "Wie viel habe ich am 21. November beim Bäcker bezahlt?", "14,90"),
            ("en", "How much was the apple strudel at Kornblume?", "3,60"),
        ],
        "/Fotos/IMG_20261102_101512.jpg": [
            ("en", "How much did the cordless drill cost me?", "129.00"),
            ("en", "How long can I return things to Hollis Hardware?", "30 days"),
        ],
        "/Fotos/IMG_3310.jpg": [
            ("fr", "Combien ai-je payé à la pharmacie en octobre ?", "24,03"),
        ],
        "/Fotos/IMG_0932.jpg": [
            ("es", "¿Cuánto me costó el taxi del aeropuerto de Sevilla al hotel?", "28,50"),
        ],
        "/Scans/scan_0007.tif": [
            ("de", "Wie hoch ist die Kaution für die Wohnung?", "2.850,00"),
            ("de", "Darf ich in der Mietwohnung einen Hund haben?", "Hunde nur mit"),
            ("en", "Can I pay the rental deposit in instalments?", "Raten"),
        ],
        "/Fotos/PXL_20261118_154210.webp": [
            ("en", "Who handles hotfixes while the release is frozen?", "Priya"),
            ("en", "When does the release freeze begin?", "7 December"),
        ],
        "/Fotos/PXL_20260611_134502.webp": [
            ("es", "¿Qué día está cerrado Casa Manolo?", "martes"),
        ],
        "/Scans/Arbeitsvertrag unterschrieben.pdf": [
            ("de", "Wie viele Urlaubstage stehen in meinem unterschriebenen Arbeitsvertrag?", "28 Arbeitstage"),
            (
                "de",
                "Welche Kündigungsfrist habe ich bei Brenner Logistik nach der Probezeit?",
                "drei Monate zum Quartalsende",
            ),
            ("de", "Wie viel verdiene ich brutto im Monat bei Brenner?", "3.950"),
            ("en", "How many hours a week does Daniel Vogt work?", "39 Stunden"),
        ],
        "/Scans/lease signed.pdf": [
            ("en", "What's the monthly rent for the apartment on Birch Lane?", "1,450"),
            ("en", "Who pays the water bill at Birch Lane?", "water, sewer"),
            ("en", "How much notice do I have to give before leaving the Portland apartment?", "60 days"),
            ("en", "What happens if the Birch Lane rent is paid late?", "75 dollars"),
        ],
        "/Scans/Fax Versicherung.tif": [
            ("de", "Ist mein Fahrrad in der Hausratversicherung mitversichert?", "Fahrraddiebstahl"),
            ("de", "Wie viel Selbstbeteiligung habe ich bei der Hausrat?", "300 EUR"),
            ("en", "What does my home contents insurance cost per year?", "148,20"),
        ],
        "/Scans/bail.pdf": [
            ("fr", "Quel est le montant de la caution pour l'appartement de Lyon ?", "1 200"),
            ("fr", "Est-ce que les charges sont incluses dans le loyer rue Mercière ?", "charges comprises"),
        ],
        "/Screenshots/Screenshot 2026-03-03.png": [
            ("en", "Until when is the air purifier covered by warranty?", "3 years"),
            ("en", "Are replacement filters covered by the Aeris warranty?", "Filters and other consumables"),
        ],
        "/Scans/scan_0012.pdf": [
            ("en", "How much money did the tenants' board approve for the playground?", "85,000"),
        ],
    }
)
