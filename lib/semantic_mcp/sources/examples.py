"""Nextcloud's example files: what every new account starts with (``core/skeleton``).

On first login Nextcloud copies its skeleton into the user's home: a Readme, a flyer, example
documents and photos, and ~40 office templates with "Templates credits.md". They are nobody's own
content, yet their words ("meeting", "invoice", "plan", "report", "calendar") match many questions,
and on a real account they filled the top results of unrelated queries. Measured in
``bench/skeleton_noise.py`` (see docs/adr/0201-nextcloud-example-files.md), they are left out by
default; the admin setting ``index_nextcloud_examples`` brings them back.

A file counts as an example only while it is exactly the copy Nextcloud made: the same path under
the user's home and the same size in bytes as in the shipped skeleton. Editing it, or putting
one's own file in Templates/, makes it the user's, and it is indexed like any other. Path and
size come with every listing, so the decision needs no download and is the same in listings and
in fetches (see :meth:`~semantic_mcp.sources.files.FilesSource._exclusion`).
"""

from __future__ import annotations

import hashlib
from pathlib import PurePosixPath

# Path under the user's home -> size in bytes, from Nextcloud 32.0.1's core/skeleton (34.0.1's is the same,
# checked file by file on the nc-kit trees, which both lack the three files named in their READMEs).
# Regenerate for another release: cd nextcloud/core/skeleton && find . -type f -printf '%P %s\n'
NEXTCLOUD_32_SKELETON: dict[str, int] = {
    "/Documents/Example.md": 1095,
    "/Documents/Nextcloud flyer.pdf": 1083339,
    "/Documents/Readme.md": 136,
    "/Documents/Welcome to Nextcloud Hub.docx": 23876,
    "/Nextcloud intro.mp4": 3963036,
    "/Nextcloud.png": 50598,
    "/Photos/Birdie.jpg": 593508,
    "/Photos/Frog.jpg": 457744,
    "/Photos/Gorilla.jpg": 474653,
    "/Photos/Library.jpg": 2170375,
    "/Photos/Nextcloud community.jpg": 797325,
    "/Photos/Readme.md": 150,
    "/Photos/Steps.jpg": 567689,
    "/Photos/Toucan.jpg": 167989,
    "/Photos/Vineyard.jpg": 427030,
    "/Readme.md": 197,
    "/Reasons to use Nextcloud.pdf": 976625,
    "/Templates credits.md": 3168,
    "/Templates/Brainstorming.whiteboard": 30780,
    "/Templates/Business model canvas.odg": 16988,
    "/Templates/Business model canvas.ods": 29055,
    "/Templates/Business model canvas.whiteboard": 30290,
    "/Templates/Calendar.odt": 22675,
    "/Templates/Certificate.odt": 33441,
    "/Templates/Checklist.ods": 256849,
    "/Templates/Diagram & table.ods": 13378,
    "/Templates/Ecosystem.odp": 1441424,
    "/Templates/Elegant.odp": 14316,
    "/Templates/Expense report.ods": 19026,
    "/Templates/Flowchart.odg": 11836,
    "/Templates/Flowchart.whiteboard": 31132,
    "/Templates/Gotong royong.odp": 3509628,
    "/Templates/Impact effort.whiteboard": 30671,
    "/Templates/Invoice.ods": 22002,
    "/Templates/Invoice.odt": 17276,
    "/Templates/Kanban board.whiteboard": 25621,
    "/Templates/Letter.odt": 15961,
    "/Templates/Meeting agenda.whiteboard": 27629,
    "/Templates/Meeting notes.md": 326,
    "/Templates/Menu.odt": 33089,
    "/Templates/Mind map.whiteboard": 35657,
    "/Templates/Mindmap.odg": 13653,
    "/Templates/Modern company.odp": 317015,
    "/Templates/Mother's day.odt": 340061,
    "/Templates/Nostalgia.odp": 560887,
    "/Templates/Org chart.odg": 13878,
    "/Templates/Party invitation.odt": 868111,
    "/Templates/Pitch deck.odp": 35963,
    "/Templates/Product plan.md": 573,
    "/Templates/Readme.md": 554,
    "/Templates/Report.odt": 34163,
    "/Templates/Resume.odt": 17331,
    "/Templates/Security.odp": 190107,
    "/Templates/Simple.odp": 14810,
    "/Templates/Sticky notes.whiteboard": 45778,
    "/Templates/Syllabus.odt": 32323,
    "/Templates/Timeline.whiteboard": 31325,
    "/Templates/Timesheet.ods": 90170,
    "/Templates/Triangle.odp": 35454,
    "/Templates/Venn diagram.whiteboard": 23359,
    "/Templates/Yellow idea.odp": 81196,
}

EXAMPLE_FILE_REASON = "one of Nextcloud's example files (admin setting: index Nextcloud's example files)"

# Deck's welcome board: Deck (DefaultBoardMiddleware) creates it on a user's first request to any Deck
# controller, the app's own listing included, with four cards explaining Deck and a sample image in the
# user's files. The cards' titles are translated, their descriptions are Deck's fixture texts as shipped
# (lib/Service/fixtures/default-board.json): a card counts as an example while its description is one of
# them byte for byte (SHA-256, Deck 1.18.3). Editing it makes it the user's.
DECK_EXAMPLE_DESCRIPTIONS = frozenset({
    "7212a6dfa9ff2163500181b84962c3239ee29b47c0b662c59b5406ba5b530519",  # 1. Open to learn more about boards…
    "56941a00990862e6005669ed10105c2686706caa31461c04133d117ab5124174",  # 2. Drag cards left and right…
    "526b5992320e4f6e4569b9a654d897c998f63936008ac818e8a10883c219b0b6",  # 3. Apply rich formatting…
    "de674ec02bf99f968deaf6130c6771ea59fc2e04a2234bfdb23d523521b2efe7",  # 4. Share, comment and collaborate!
})
DECK_SAMPLE_IMAGE = ("Nextcloud sample image - add your image here!.jpg", 192_699)  # name, bytes (img/sample-image.jpg)
EXAMPLE_CARD_REASON = "one of the cards of Deck's welcome board (admin setting: index Nextcloud's example files)"


def is_nextcloud_example(path: str, size: int) -> bool:
    """True for an unchanged copy of a skeleton file, or Deck's sample image wherever Deck put it
    (its attachment folder); ``path`` is relative to the user's home."""
    if (PurePosixPath(path).name, size) == DECK_SAMPLE_IMAGE:
        return True
    return NEXTCLOUD_32_SKELETON.get("/" + path.lstrip("/")) == size


def is_deck_example_card(description: str) -> bool:
    """True for an unchanged card of Deck's welcome board (its description exactly as Deck wrote it)."""
    return bool(description) and hashlib.sha256(description.encode()).hexdigest() in DECK_EXAMPLE_DESCRIPTIONS
