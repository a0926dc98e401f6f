"""What the files of ``formats_corpus`` hold: spreadsheet rows, slides with their speaker notes, letters,
book chapters, e-mails (what is printed on the photos and scans is in ``formats_scans``)."""

from __future__ import annotations

# --- Spreadsheets -----------------------------------------------------------------------------------

_FILLER_ITEMS = [
    ("Kugelschreiber blau, 50 Stück", "KS-50", "12,40", "Büro Kaiser", 1),
    ("Bleistifte HB, 12 Stück", "BL-12", "3,10", "Büro Kaiser", 2),
    ("Haftnotizen 76 x 76, 12 Blöcke", "HN-76", "8,95", "Papierhaus Lindner", 1),
    ("Briefumschläge DIN lang, 1000 Stück", "BU-DL", "24,50", "Papierhaus Lindner", 1),
    ("Hängeregister A4, 25 Stück", "HR-25", "19,80", "Büro Kaiser", 1),
    ("Klarsichthüllen A4, 100 Stück", "KH-100", "5,60", "Papierhaus Lindner", 2),
    ("Radiergummi, 20 Stück", "RG-20", "4,90", "Büro Kaiser", 1),
    ("Notizblock A5 kariert", "NB-A5", "1,45", "Papierhaus Lindner", 10),
    ("Batterien AA, 24 Stück", "BA-24", "13,70", "Elektro Fink", 1),
    ("Tesafilm 19 mm, 8 Rollen", "TF-8", "9,30", "Büro Kaiser", 1),
    ("Locher 2-fach, 30 Blatt", "LO-30", "14,20", "Büro Kaiser", 1),
    ("Tonerkartusche Brother TN-2420", "TN-2420", "54,90", "Druckerwelt Schulz", 1),
    ("Tee, 6 Sorten, 120 Beutel", "TE-120", "11,25", "Rösterei Mahlwerk", 2),
    ("Milch H 1,5 %, 12 Liter", "MI-12", "13,08", "Getränke Rapp", 1),
    ("Spülmaschinentabs, 100 Stück", "SP-100", "15,99", "Getränke Rapp", 1),
]
PRICES_2026 = {
    "Preise": [
        ("Artikel", "Art.-Nr.", "Preis netto (EUR)", "Lieferant", "Mindestbestellmenge"),
        ("Kopierpapier A4 80 g, 500 Blatt", "KP-480", "4,79", "Papierhaus Lindner", 5),
        *_FILLER_ITEMS[:6],
        ("Heftgerät Leitz 5502, bis 30 Blatt", "HG-5502", "18,90", "Büro Kaiser", 1),
        ("Textmarker gelb, 10 Stück", "TM-10G", "6,45", "Büro Kaiser", 2),
        ("Whiteboard-Marker, 4 Farben", "WB-4", "7,20", "Büro Kaiser", 1),
        *_FILLER_ITEMS[6:11],
        ("Tonerkartusche HP 305A schwarz", "TN-305A", "89,00", "Druckerwelt Schulz", 1),
        ("Tonerkartusche HP 305A cyan", "TN-305C", "96,50", "Druckerwelt Schulz", 1),
        ("Kaffeebohnen Espresso, 1 kg", "KB-1000", "16,80", "Rösterei Mahlwerk", 6),
        *_FILLER_ITEMS[11:],
    ],
    "Lieferanten": [
        ("Lieferant", "Ansprechpartner", "Telefon", "Lieferzeit", "Kundennummer"),
        ("Papierhaus Lindner", "Herr Gerd Lindner", "0761 20 33 10", "2 Werktage", "PL-7781"),
        ("Büro Kaiser", "Frau Miriam Kaiser", "0761 55 90 02", "1 Werktag", "BK-30412"),
        ("Druckerwelt Schulz", "Frau Petra Schulz", "0761 44 82 19", "5 Werktage", "DS-1193"),
        ("Rösterei Mahlwerk", "Herr Jan Ostrowski", "0761 71 17 45", "1 Woche", "RM-208"),
        ("Getränke Rapp", "Herr Uwe Rapp", "0761 80 60 70", "2 Werktage", "GR-5540"),
    ],
}
PRICES_2024 = {  # the distractor: last price list but one, in English, other prices
    "Prices": [
        ("Item", "Item no.", "Net price (EUR)", "Supplier"),
        ("Copy paper A4 80 g, 500 sheets", "KP-480", "3.99", "Papierhaus Lindner"),
        ("Stapler Leitz 5502", "HG-5502", "15.50", "Büro Kaiser"),
        ("Highlighters yellow, 10 pcs", "TM-10G", "5.80", "Büro Kaiser"),
        ("Toner cartridge HP 305A black", "TN-305A", "79.00", "Tonerland"),
        ("Espresso beans, 1 kg", "KB-1000", "14.90", "Kaffeehaus Berg"),
        ("Tea assortment, 120 bags", "TE-120", "9.95", "Kaffeehaus Berg"),
        ("Whiteboard markers, 4 colours", "WB-4", "6.40", "Büro Kaiser"),
    ]
}
TRIPS = {
    "Trips": [
        ("Date", "Traveller", "Destination", "Purpose", "Transport", "Nights", "Total (EUR)"),
        ("2026-01-20", "Tobias Brandt", "Munich", "Quarterly planning at HQ", "Train", 1, "312.40"),
        ("2026-02-11", "Lena Hoffmann", "Zurich", "Contract talks with Helvetia Bau", "Train", 2, "688.10"),
        ("2026-03-03", "Tobias Brandt", "Vienna", "Stand at the Interpack trade fair", "Flight", 4, "1,912.75"),
        ("2026-04-16", "Aylin Demir", "Hamburg", "Training: warehouse safety", "Train", 1, "401.00"),
        ("2026-05-07", "Lena Hoffmann", "Paris", "Customer visit Moreau SA", "Train", 2, "874.30"),
        ("2026-06-09", "Aylin Demir", "Copenhagen", "Supplier audit at Nordvind Logistics", "Flight", 2, "1,126.90"),
        ("2026-06-23", "Tobias Brandt", "Cologne", "Recruiting fair", "Car", 1, "268.15"),
        ("2026-07-14", "Jonas Weber", "Stuttgart", "Server room acceptance test", "Car", 0, "96.60"),
        ("2026-09-14", "Lena Hoffmann", "Lisbon", "Customer workshop at Atlântico Seguros", "Flight", 3, "1,284.60"),
        ("2026-10-05", "Aylin Demir", "Rotterdam", "Port logistics conference", "Train", 2, "733.45"),
        ("2026-11-02", "Jonas Weber", "Berlin", "Cloud provider workshop", "Train", 1, "355.20"),
    ]
}
HOUSEHOLD = {
    "Januar": [
        ("Datum", "Kategorie", "Beschreibung", "Betrag (EUR)"),
        ("2026-01-02", "Wohnen", "Miete Januar", "1.120,00"),
        ("2026-01-05", "Auto", "Kfz-Versicherung Jahresbeitrag HUK", "412,30"),
        ("2026-01-09", "Lebensmittel", "Wocheneinkauf Edeka", "96,45"),
        ("2026-01-15", "Energie", "Abschlag Strom Stadtwerke", "74,00"),
        ("2026-01-21", "Freizeit", "Skipass Feldberg", "52,00"),
    ],
    "Februar": [
        ("Datum", "Kategorie", "Beschreibung", "Betrag (EUR)"),
        ("2026-02-02", "Wohnen", "Miete Februar", "1.120,00"),
        ("2026-02-07", "Lebensmittel", "Wocheneinkauf Edeka", "88,10"),
        ("2026-02-12", "Kinder", "Schwimmkurs Emil, 10 Termine", "95,00"),
        ("2026-02-15", "Energie", "Abschlag Strom Stadtwerke", "78,00"),
        ("2026-02-15", "Energie", "Abschlag Gas Stadtwerke", "131,00"),
        ("2026-02-26", "Gesundheit", "Brille, Zuzahlung Optik Lenz", "210,00"),
    ],
    "März": [
        ("Datum", "Kategorie", "Beschreibung", "Betrag (EUR)"),
        ("2026-03-02", "Wohnen", "Miete März", "1.120,00"),
        ("2026-03-10", "Gesundheit", "Zahnarzt Dr. Albers, Eigenanteil Krone", "640,00"),
        ("2026-03-15", "Energie", "Abschlag Strom Stadtwerke", "78,00"),
        ("2026-03-18", "Auto", "Inspektion Autohaus Maier", "389,90"),
    ],
}
SUMMER_FESTIVAL = {
    "Budget": [
        ("Posten", "Geplant (EUR)", "Tatsächlich (EUR)", "Bemerkung"),
        ("Getränke", "900", "1.045", "Nachbestellung Samstagabend"),
        ("Hüpfburg Miete", "250", "280", "inkl. Anlieferung"),
        ("Grillgut", "600", "572", "Metzgerei Baumann"),
        ("Musik (Band Die Kellerkinder)", "400", "400", ""),
        ("Zeltverleih", "750", "750", "zwei Zelte 6 x 12 m"),
        ("Tombola-Preise", "150", "95", "viele Spenden"),
    ]
}
CELLAR = {
    "Cave": [
        ("Vin", "Appellation", "Millésime", "Bouteilles", "Emplacement", "À boire avant"),
        ("Domaine Laroche", "Chablis Premier Cru Montmains", "2019", 7, "Casier B3", "2028"),
        ("Château Cantemerle", "Haut-Médoc", "2016", 4, "Casier C1", "2032"),
        ("Domaine de Montille", "Pommard", "2015", 2, "Casier A1", "2027"),
        ("Guigal", "Côte-Rôtie Brune et Blonde", "2018", 3, "Casier A2", "2030"),
        ("Domaine Huet", "Vouvray Le Mont demi-sec", "2020", 6, "Casier B1", "2035"),
        ("Château Simone", "Palette rosé", "2023", 5, "Réfrigérateur", "2026"),
        ("Bollinger", "Champagne Special Cuvée", "NM", 3, "Casier D2", "2027"),
    ]
}
EQUIPMENT = {
    "Equipos": [
        ("Equipo", "Número de serie", "Asignado a", "Fecha de compra", "Garantía hasta"),
        ("Lenovo ThinkPad T14 Gen 4", "PF4K2Z9", "Jonas Weber", "2025-03-12", "2028-03-12"),
        ("Apple MacBook Air 13 M3", "C02XK1LMQ6", "Lucía Fernández", "2025-06-02", "2026-06-02"),
        ("Dell UltraSharp U2723QE", "CN-0H7RWT", "Lucía Fernández", "2025-06-02", "2028-06-01"),
        ("Lenovo ThinkPad X1 Carbon", "PF3ZQ8A", "Aylin Demir", "2024-11-20", "2027-11-20"),
        ("HP LaserJet Pro M404", "PHB8K41290", "Oficina planta 2", "2023-09-01", "2026-09-01"),
        ("Logitech Rally Bar", "2231LZ0B7", "Sala de reuniones Atlas", "2024-02-15", "2026-02-15"),
        ("Dell Latitude 5440", "8GQ2KX3", "Tobias Brandt", "2025-01-08", "2028-01-08"),
    ]
}

# --- Presentations ----------------------------------------------------------------------------------

STRATEGY_Q3 = [
    ("Q3 strategy review", "Results, markets, offices, hiring", ""),
    (
        "Results",
        "Revenue 4.2 M EUR (+11 %)\nGross margin 61 %",
        "Margin improved mainly through the new support contracts.",
    ),
    ("Markets", "Poland and Czechia ahead of plan\nBenelux flat", ""),
    (
        "Offices",
        "Warsaw: site shortlist ready\nBerlin: lease renewed until 2031",
        "Decided in the meeting: the Warsaw office opens in March 2027, not this autumn, because the landlord "
        "delayed the fit-out by four months.",
    ),
    ("Hiring", "12 open roles, 5 in engineering", "We agreed to freeze all non-engineering hiring until January."),
]
STRATEGY_Q2 = [  # the distractor: the quarter before, other plans
    ("Q2 strategy review", "Results, markets, offices", ""),
    ("Results", "Revenue 3.8 M EUR (+7 %)\nGross margin 58 %", "Support contracts start to pay off in Q3."),
    (
        "Offices",
        "Warsaw: target opening November 2026\nBerlin: lease renewal under negotiation",
        "Landlord in Warsaw promised the keys for September.",
    ),
    ("Hiring", "20 open roles across all teams", "Sales and marketing hiring continues as planned."),
]
SALES_KICKOFF = [
    ("Vertriebs-Kickoff 2026", "Ziele, Provision, Messen", ""),
    (
        "Ziele 2026",
        "Umsatzziel 9,5 Mio. EUR\n40 Neukunden im Mittelstand",
        "Das Ziel ist mit der Geschäftsführung abgestimmt.",
    ),
    (
        "Neues Provisionsmodell",
        "Neukunden zählen doppelt\nBestandskunden wie bisher",
        "Ab dem 1. April steigt die Provision für Neukunden von 5 auf 7 Prozent, rückwirkend für das erste Quartal.",
    ),
    (
        "Messen",
        "Hannover Messe, Halle 6, Stand C17\nLogiMAT Stuttgart",
        "Am Stand in Hannover sind Jana Roth und Felix Brandl, Aufbau am Sonntag davor.",
    ),
]
ONBOARDING = [
    ("Willkommen bei Brenner Logistik", "Dein erster Monat bei uns", ""),
    (
        "Der erste Tag",
        "Empfang um 9 Uhr an der Pforte\nFoto für den Ausweis",
        "Die Laptops gibt Marco aus der IT immer donnerstags in Raum 2.14 aus, vorher gibt es nur einen Gastzugang.",
    ),
    (
        "Arbeitszeit und Urlaub",
        "Gleitzeit, Kernzeit 10 bis 15 Uhr\n30 Tage Urlaub",
        "Urlaubsanträge nur noch über das Personalportal stellen, nicht mehr per E-Mail an die Teamleitung.",
    ),
    ("Ansprechpartner", "Personal: Frau Yilmaz\nIT: Marco Ferraro\nBetriebsrat: Herr Kühn", ""),
]
ROADMAP = [
    ("Product roadmap 2027", "Themes: enterprise readiness, mobile, platform", ""),
    ("Q1", "SSO with SAML\nAudit log export", "SAML is the top request from the three largest customers."),
    (
        "Q2",
        "Dark mode\nOffline sync on mobile",
        "Dark mode slipped from Q1 to Q2: the accessibility audit found contrast problems we have to fix first.",
    ),
    ("Q3", "Public API v2\nWebhooks", ""),
    (
        "Risks",
        "API v2 depends on the new auth service",
        "If the API v2 beta slips, the partner portal launch moves with it.",
    ),
]
MARKETING_ES = [
    ("Plan de marketing 2026", "Objetivos, presupuesto, calendario", ""),
    ("Objetivos", "Aumentar un 20 % los contactos cualificados\nLanzar la tienda online en Portugal", ""),
    (
        "Presupuesto",
        "Total: 48.000 €",
        "Redes sociales bajan de 15.000 a 12.000 euros; la diferencia se destina a ferias del sector.",
    ),
    (
        "Calendario",
        "Campaña de verano: 1 de junio\nFeria Logistics Madrid: noviembre",
        "El lanzamiento del nuevo catálogo se retrasa de abril a septiembre por la imprenta.",
    ),
]
MARKETING_2025 = [  # the distractor
    ("Marketing plan 2025", "Goals, budget, timeline", ""),
    ("Budget", "Total: 40,000 EUR\nSocial media 15,000 EUR\nPrint 9,000 EUR", "Print catalogue ships in April."),
    ("Timeline", "Summer campaign: 15 June\nTrade fair season: October", ""),
]

# --- Letters, books, e-mails ----------------------------------------------------------------------

GYM = (
    "Anna Keller, Lessingstraße 4, 79100 Freiburg",
    "FitWerk Oststadt, Kundenservice, Schwarzwaldstraße 40, 79102 Freiburg",
    "Kündigung meiner Mitgliedschaft, Mitgliedsnummer 48213",
    "Sehr geehrte Damen und Herren,",
    "hiermit kündige ich meine Mitgliedschaft fristgerecht zum 31. März 2027. Bitte bestätigen Sie mir den "
    "Eingang dieser Kündigung und das Vertragsende schriftlich. Die Einzugsermächtigung für mein Konto "
    "widerrufe ich zum selben Datum.",
    "Mit freundlichen Grüßen, Anna Keller",
)
REFERENCE = (
    "Lindqvist Engineering AB, Hamngatan 12, Gothenburg",
    "Reference for Maria Santos",
    "Maria Santos worked with us from 1 February 2019 to 30 June 2026, first as a structural engineer and "
    "from 2022 as a senior structural engineer.",
    "She led the redesign of the Harbour Bridge footpath, delivered two months ahead of schedule, and "
    "mentored four graduate engineers. Her calculations were always thorough and clearly documented.",
    "She leaves at her own request to move to Lisbon. We recommend her without reservation.",
    "Erik Lindqvist, Managing Director",
)
HOME_INSURANCE_FR = (
    "Claire Dubois, 18 rue des Lilas, 44000 Nantes",
    "Objet : résiliation du contrat d'assurance habitation n° HAB-772-0915",
    "Madame, Monsieur,",
    "Je vous informe de ma décision de résilier mon contrat d'assurance habitation à compter du 15 janvier "
    "2027, en raison de mon déménagement à Lyon dans un logement meublé assuré par le propriétaire.",
    "Je vous remercie de bien vouloir m'adresser une attestation de résiliation.",
    "Veuillez agréer mes salutations distinguées. Claire Dubois",
)
DUNNING = (
    "Stadtwerke Freiburg, Forderungsmanagement",
    "Zahlungserinnerung, Kundennummer 2209-4471",
    "Sehr geehrte Frau Keller, für die Jahresabrechnung Strom 2025 ist ein Betrag von 156,00 EUR noch offen. "
    "Bitte überweisen Sie ihn bis zum 20. Dezember 2026.",
)
GARDEN = [
    (
        "Soil",
        "Most vegetables like a pH between 6 and 7. Dig in two buckets of compost per square metre "
        "each autumn and leave the surface rough over winter so the frost breaks the clods.",
    ),
    (
        "Tomatoes",
        "Plant tomatoes out once night frosts are over, in most regions after mid-May. Leave 60 "
        "centimetres between plants and 80 between rows, and give each plant a stake of at least 1.8 metres. "
        "Pinch out side shoots every week and water at the foot, never over the leaves.",
    ),
    (
        "Garlic",
        "Set garlic cloves in October, pointed end up, 15 centimetres apart and 5 deep. Harvest in "
        "July when the lower third of the leaves has turned yellow, and dry the bulbs for two weeks.",
    ),
]
BALCONY = [  # the distractor
    (
        "Containers",
        "A 20-litre pot holds one tomato plant; a 40-centimetre window box holds four lettuces. "
        "Drill drainage holes and add a layer of expanded clay.",
    ),
    (
        "Watering",
        "On hot days a balcony tomato needs two litres in the morning. Self-watering pots help when you travel.",
    ),
]
CHRONICLE = [
    (
        "Die Gründung",
        "Um 1150 entstand an der Furt über die Alz eine Siedlung von Fischern und Flößern. "
        "1312 verlieh Herzog Rudolf dem Ort das Marktrecht, und bald danach wurde die erste Stadtmauer gebaut.",
    ),
    (
        "Der große Brand",
        "Im Sommer 1687 brannte die halbe Altstadt nieder. Nur die Kirche St. Margareta und "
        "das Kornhaus blieben stehen; der Wiederaufbau in Stein dauerte fast dreißig Jahre.",
    ),
    (
        "Die Eisenbahn",
        "1894 eröffnete der Bahnhof an der Strecke nach Rosenheim. Die Brauerei Hofmann baute "
        "ein eigenes Anschlussgleis, und die Einwohnerzahl verdoppelte sich bis 1910.",
    ),
]
