"""What is printed on the photos and scans of ``formats_corpus``: the text its scans are drawn with, which is
also the OCR's ground truth."""

from __future__ import annotations

# --- Scans and photos: what is printed on them -------------------------------------------------------

BAKERY = (
    "Bäckerei Kornblume\nHauptstraße 12, 79098 Freiburg\n21.11.2026 07:42 Kasse 2\n"
    "Vollkornbrot 750 g 4,20\nButterbrezel 2 x 1,10 2,20\nApfelstrudel 3,60\nKaffee groß 3,10\n"
    "Milchbrötchen 4 x 0,45 1,80\nSumme EUR 14,90\nBar 20,00 Rückgeld 5,10\nMwSt 7 %: 0,97\n"
    "Vielen Dank für Ihren Einkauf!"
)
BAKERY_OTHER = (
    "Bäckerei Sonnenkorn\nKaiser-Joseph-Straße 201, 79098 Freiburg\n28.11.2026 16:15\n"
    "Dinkelbrot 500 g 3,90\nLaugenstange 2 x 0,95 1,90\nKäsekuchen 2,80\nTee 0,75\nSumme EUR 9,35\n"
    "EC-Karte\nDanke und bis bald!"
)
HARDWARE = (
    "HOLLIS HARDWARE & GARDEN\n1420 Maple Avenue, Springfield\nDate: 11/02/2026 Time: 10:15\n"
    "Cordless drill 18V BX-200 129.00\nDrill bit set, 15 pcs 14.99\nWall plugs 6 mm x 100 3.36\n"
    "Subtotal 147.35\nSales tax 6.25 % 9.21\nTOTAL 156.56\nPaid by card ****4471\n"
    "Returns accepted within 30 days with receipt"
)
PHARMACY = (
    "PHARMACIE DU MARCHÉ\n4 place du Marché, 69002 Lyon\nLe 17/10/2026 à 16:05\n"
    "Doliprane 1000 mg 2,18\nSérum physiologique 3,95\nCrème solaire SPF 50 17,90\n"
    "TOTAL TTC 24,03 €\nPayé par carte bancaire\nMerci de votre visite"
)
TAXI = (
    "RADIO TAXI SEVILLA\nLicencia 1187\nFecha: 05/05/2026 Hora: 22:40\n"
    "Recorrido: Aeropuerto de Sevilla - Hotel Alfonso XIII\nTarifa 2 nocturna\nSuplemento aeropuerto 4,30\n"
    "Importe total 28,50 €\nIVA incluido\nGracias por viajar con nosotros"
)
LEASE_DE = (
    "Mietvertrag über Wohnraum - Seite 3\n§ 5 Mietsicherheit\n"
    "Der Mieter leistet eine Kaution in Höhe von drei Nettokaltmieten, insgesamt 2.850,00 Euro. Die Kaution "
    "kann in drei gleichen monatlichen Raten gezahlt werden; die erste Rate ist zu Beginn des "
    "Mietverhältnisses fällig.\n§ 6 Schönheitsreparaturen\nDer Mieter muss bei Auszug nur streichen, wenn er "
    "die Wände in ungewöhnlichen Farben gestrichen hat.\n§ 7 Tierhaltung\nDie Haltung einer Katze ist "
    "gestattet. Hunde nur mit vorheriger schriftlicher Zustimmung des Vermieters."
)
WHITEBOARD = (
    "Sprint 42 retro\nWent well: faster code review, new CI cache\n"
    "To improve: flaky login tests, unclear release notes\nActions:\n"
    "- Priya owns hotfixes during the release freeze\n- Release freeze starts Monday 7 December\n"
    "- Tom rewrites the login test fixtures by Friday"
)
MENU_ES = (
    "Casa Manolo\nMenú del día 14,50 €\nPrimero: gazpacho o ensalada mixta\n"
    "Segundo: merluza a la plancha o pollo al ajillo\nPostre: flan casero o fruta\n"
    "Pan, bebida y café incluidos\nLos martes cerramos por descanso del personal"
)
EMPLOYMENT = (
    "Arbeitsvertrag\nzwischen der Brenner Logistik GmbH, Industriestraße 8, 68199 Mannheim, und Herrn "
    "Daniel Vogt, Rheinauer Ring 41, 68219 Mannheim.\n§ 1 Beginn\nDas Arbeitsverhältnis beginnt am "
    "1. Februar 2026.\n§ 2 Tätigkeit\nHerr Vogt wird als Disponent in der Lagerlogistik eingestellt.\n"
    "§ 3 Probezeit\nDie ersten sechs Monate gelten als Probezeit. In dieser Zeit kann mit einer Frist von "
    "zwei Wochen gekündigt werden.",
    "§ 4 Vergütung\nDas Bruttomonatsgehalt beträgt 3.950 Euro, zahlbar zum Monatsende. Zusätzlich wird im "
    "November ein Weihnachtsgeld in Höhe eines halben Monatsgehalts gezahlt.\n§ 5 Arbeitszeit\nDie "
    "regelmäßige Arbeitszeit beträgt 39 Stunden pro Woche.\n§ 6 Urlaub\nDer Arbeitnehmer hat Anspruch auf "
    "28 Arbeitstage Erholungsurlaub im Kalenderjahr.",
    "§ 7 Kündigung\nNach Ablauf der Probezeit beträgt die Kündigungsfrist für beide Seiten drei Monate zum "
    "Quartalsende.\n§ 8 Nebentätigkeit\nEine Nebentätigkeit ist dem Arbeitgeber vorher anzuzeigen.\n"
    "Mannheim, den 12. Januar 2026\nBrenner Logistik GmbH Daniel Vogt",
)
LEASE_EN = (
    "RESIDENTIAL LEASE AGREEMENT\nLandlord: Harriet Okafor. Tenant: Samuel Reyes.\nPremises: 27 Birch Lane, "
    "Apartment 3B, Portland, Oregon.\nTerm: twelve months beginning 1 August 2026.\nRent: USD 1,450 per "
    "month, due on the first day of each month. A late fee of 75 dollars applies to rent received after "
    "the 5th.\nSecurity deposit: USD 1,450, returned within 30 days of move-out.",
    "Pets: one cat is permitted; no dogs.\nUtilities: the tenant pays electricity and internet; the landlord "
    "pays water, sewer and trash.\nNotice: either party must give 60 days' written notice before the end of "
    "the term.\nParking: space number 14 in the rear lot is included.\nSigned: Harriet Okafor, Samuel Reyes",
)
CONTENTS_INSURANCE = (
    "Hausratversicherung - Versicherungsschein\nPolice Nr. HR-2026-558\nVersicherungsnehmerin: Anna Keller, "
    "Lessingstraße 4, 79100 Freiburg\nVersicherungsbeginn: 1. März 2026\nVersicherungssumme: 65.000 EUR\n"
    "Jahresbeitrag: 148,20 EUR, fällig jeweils zum 1. März",
    "Besondere Vereinbarungen\nSelbstbeteiligung je Schadenfall: 300 EUR.\nFahrraddiebstahl ist bis 1.500 "
    "EUR mitversichert, wenn das Rad abgeschlossen war.\nGlasbruch ist nicht versichert.\n"
    "Überspannungsschäden durch Blitz bis 5.000 EUR.",
)
LEASE_FR = (
    "CONTRAT DE LOCATION - LOGEMENT MEUBLÉ\nBailleur : Monsieur Henri Lefèvre. Locataire : Madame Claire "
    "Dubois.\nAdresse : 7 rue Mercière, 69002 Lyon, 3e étage.\nDurée : un an à compter du 1er février 2027.\n"
    "Loyer mensuel : 890 euros, charges comprises (eau froide, chauffage collectif).\nDépôt de garantie : "
    "1 200 euros, restitué dans un délai de deux mois après la remise des clés."
)
WARRANTY = (
    "WARRANTY CERTIFICATE\nProduct: Aeris 500 air purifier\nSerial number: AP5-88213\n"
    "Date of purchase: 3 March 2026\nCoverage: 3 years parts and labour from the date of purchase.\n"
    "Filters and other consumables are not covered.\nTo make a claim, keep this card and your receipt."
)
MINUTES = (
    "Oakridge Tenants' Association - minutes of the board meeting, 6 October 2026\n"
    "Present: R. Alvarez (chair), K. Mensah, D. Novak, L. Chen.\n1. The board approved 85,000 dollars for the "
    "new playground behind building C; construction starts in April.\n2. The annual membership fee rises "
    "from 30 to 40 dollars from January.\n3. Next meeting: 1 December 2026, community room."
)
