"""Nextcloud's example content: what every new account starts with (``core/skeleton``; below, Deck's
welcome board and the dav app's example event and contact).

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
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Protocol

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

class VCardLike(Protocol):  # contacts.VCardProperty (which imports this module)
    name: str
    params: dict[str, list[str]]
    value: str


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


# Nextcloud 34's example event: the dav app (ExampleEventService) puts "Example event - open me!" in the personal
# calendar it creates at a user's first login, a week later at 10:00, with a random UID. Its summary and
# description are translated, so an event counts as the example while its DESCRIPTION is one of the shipped
# texts byte for byte (SHA-256 of the English text and its translations in 34.0.1's apps/dav/l10n/*.json:
# regenerate from a new release's l10n). Editing it makes it the user's. An example event an admin uploaded
# in its place (Groupware admin settings) cannot be told apart and is indexed.
CALENDAR_EXAMPLE_DESCRIPTIONS = frozenset({
    "2db778503cba93d7dcab96120be4f654d14bd0f9449a4a72fbcfd56a2043d832",  # en lo
    "16707c74adda58dfb3750bba657306946744bee76591a0b432e6f1d491fcc990",  # cs
    "053d21469bce43ea93da5ef134a8e199e5784ba098eaaab0a6538853e46ec856",  # da
    "43f086f6dcd124e60d147f16ab32bcaf8ad6c3371d669cc3dbf74cade5b05b45",  # de
    "366526948a31a94df18673294bfa47b06598ac2242440a7b679059a9bbd4be9c",  # de_DE
    "800a20794ffb9cb3114459040dbd717171853734eed52164282d9d0c63bb8eae",  # el
    "9a14cae6826fbab20d5b9d67683af3b0b8d23f82a9268c59b4649c2017a43c0e",  # en_GB
    "e670ccc4834941c8136313647b5f2d0a88044a0007986ce7e915b7ebc61c3f43",  # es
    "5eb448e1e73e42ebc3d86db50d528477ca26a078466461572219d938311155cc",  # et_EE
    "4b04af4dfe299a00db961bbc90bfb2486558c28d2f5116d36fcee569cb8b3872",  # eu
    "c736d9081f38d5f13b96ba1fab6365846057acab5f7f3569edc88457d151ae15",  # fa
    "94280c0d8f13f1bf8c05ab325fe0eec8822fea74c846b50e2cb6e9f89417cb58",  # fr
    "ab3fe114490f807cd1f4d15db5c7529db0d6f20260b12bb79cef42f6ec24e8ce",  # ga
    "bbe8a15fbad0a2f5c764778dfdc169bcc16f3cab35e074f9674289f38a955fe0",  # gl
    "cdf865a5f2de887e6b86d57356a3cc56e468ee0c93832fae1b93bc39c1a7520c",  # hr
    "b293366fbe31f7519224d0cbea8dafedfde5b26238f9fa16fec2f50b904b55c8",  # hu
    "ed57e82f2ca26ce2b0df34836c6b19f7a72f2f8489a2a16986eca0abc9ca4444",  # id
    "1656390cda6914ac26c22a93285953e25798a427ae8325f58800cd220c931906",  # is
    "166a4f9f3c8d7d25d9b72d8620224d98588e5e510ff84b688f91513873370c8e",  # it
    "a363241e49c84e7af6923763a6c220c0f46c238862c68e3b6c4fff1ce74ec7cf",  # ja
    "bf701f2802b5876f8c5de427288e9d81f438621abcf8a243dbdd7939d9be3dc6",  # lt_LT
    "00721f22b5e9ca79cae436ddefdb5c9613273e6f3900862eb7ab4e23fb42bd9b",  # mk
    "feffb01bce10b3e1e60b64fcc31a7d9b33f64c8427a12294f2bcdc137c18967c",  # mn
    "b65659de1525943f6ecc0126d2be99a05e7a9bc963039ddf982af47183f262de",  # nb
    "fdbd8e929cd41bfc2d640f396c17816240f42a1b9b64af094fdbee71c2e0ffd5",  # nl
    "50c592d82cc8974e1c0b4d8deb881d8dfe91047d1bce7da4da7f43db916c053f",  # pl
    "cefa97154ac1a1603fc220bd2d3b3d306f8815e8d13504fbee81ad72e7a21dca",  # pt_BR
    "2f04fad7afcd5eb68dc49f519a84521ccf0e320786372cdccc7b3e38df33611a",  # ru
    "ebc8286876330cc3ca210300619007003a0f452a667b8c4e44846058cb15ddb5",  # sk
    "8684287d0d3c0529946e501f99eb8daf73866f2cb4737c68d1485691f47956dc",  # sr
    "9d370f8b2dbad25a1b5bfb475d12aa6096ad89f2ef4fd0d163c54e41ffe21378",  # sv
    "2928964bc5e823c16b256cb9770dd76e779964ec03bf7f252612cdfdf8727570",  # sw
    "94dc85574417f2c0720527dc6d66546e3f7947dbd85d14f6d44761708fd17cac",  # tr
    "3ca851d1e26843cfae2cf06aac94114c7980fa8f2638fe13487c493614916d6a",  # ug
    "5af610a3b6f3dbb2a47c53dc1509e18c72a99d60b4556aa6a03fa43a01ac180d",  # uk
    "98b38bcdd7ae338767ce9b8b8682cea9bab05f818e044fdc46330c70d597ca59",  # zh_CN
    "c268d240f8e487dd42a545b4e0e33a46f8cb16c046b70d97e4577004a4e5606a",  # zh_HK zh_TW
})
EXAMPLE_EVENT_REASON = "Nextcloud's example event (admin setting: index Nextcloud's example files)"


# Nextcloud 34's example contact: the dav app (ExampleContactService) puts "Leon Green" in the address book it
# creates at a user's first login (card URI "default"): its apps/dav/lib/ExampleContentFiles/exampleContact.vcf
# with a new UID and REV and a translated NOTE. A card counts as the example while every other property is the
# shipped one (SHA-256 of them, in order, as :func:`contact_properties_digest` writes them) and its note is one
# of the shipped texts (English and 34.0.1's translations).
CONTACT_EXAMPLE_PROPERTIES = "a504dc752e8c90f6ada65d7b87a4ddbe96640acbfb5e4b9b16207260ca8e0d63"
CONTACT_EXAMPLE_NOTES = frozenset({
    "43c37b0ffa0c3471d115af8026a5345a62bbdc925db92eff4902f3a224fec802",  # en en_GB
    "3a0d1fc3cfad6f6f1bf3a8a0d04d05159e785b966150d2f686379c6d52685d95",  # cs
    "b2a0b772d5bf332ec804c854492a1e310cbe1dde96fd672870b3a91fc2d30aab",  # de de_DE
    "c6c6d2d34c07303749dbebbd9faa4cc1e555840abd1a1125a8ee924749ebcc05",  # es
    "18ead045c1144abf18bff1e840960d6e782134bc2cc870ca02a843b6a7227af1",  # et_EE
    "4daeed784a8609236d277c15a570360416e463c46e78a979455cb60609909c5f",  # eu
    "98e03ea36eb8530621db520c743943c617e3f407a698756f43a3466deeae7d4b",  # fa
    "f7e4c1fddb3dffdb1b3c852f8df3ffb10cf17bb33cdbe6fd139c8388917a0d4a",  # fr
    "577530cbc1717e17275afebdd0875e9957360eae8ae18a8256c239c30d95f4b2",  # ga
    "bfe277449ee69c5ddfe601e70ccff1a24ea2338803a5b595e64df556f2d876cc",  # gl
    "6f175f11b2e6da2c7102af5a97d2fc541084b704e86c8592035109a6b02441bb",  # hr
    "04d3e7d3473658415eac1649665471673226a1f2d3d082001c09ff31940f96fe",  # hu
    "b5d09261a765b202e9c7af2a38eb8612521f947d900cd58cc3df38501705d471",  # it
    "1124a466ecef793229a123652758a16e2c19ebb4a969bb3ae5e7c652a47979a0",  # ja
    "59876394bb0dfa54915f4fb84e8a48b06d543e6d050b39e947ea8a0d451ae468",  # lt_LT
    "a7bca74cac23fddcd0c5e8fd2a1d9279a41162ac69ffdaf5ef53b39e9a1e5167",  # nl
    "25ef5a1410364bad0c268098da87581f129551ec61087befe909c3d87673bac9",  # pl
    "ad1991a580c292471081d9b3c35d3bc5aca502f14752fe19d2f6cf05fe790106",  # pt_BR
    "db7431dfa8bff63e5bd90a104b71a7f2c6751c7003ac8bdca48b8a2fa811a7bb",  # ru
    "bd3b1ec639314411816f62c40303e9188101e9f062995e6b19f2d8481aae2825",  # sk
    "ce05f9124de5676e6485f6a32d60b0b5f645d5378ded7ca9a159708b9f1af8eb",  # sv
    "1d2e4cf8eaad5fe2cbe886ccf2e4e8236c740ecb8011b1bc95586e6b3ecf40cf",  # tr
    "7e267ef4b3cf6535007d145071787f813b6be8be925e698cc54af023807d28ad",  # uk
    "5a077c73f4770efd4a9ff5d47abad74f6402764ffaa4481664d915bc2f696a75",  # zh_CN
    "bc3c5a9b04e3266b05c2b8b4c43702d590007c4a25ecc6b0d433c0f9cd4b1696",  # zh_HK
    "beb174b4d829b02ca7d2331a6b603a197fd429a577613d9ff3dccd406a9c3e5f",  # zh_TW
})
EXAMPLE_CONTACT_REASON = "Nextcloud's example contact (admin setting: index Nextcloud's example files)"
_REWRITTEN = {"UID", "REV", "PRODID", "VERSION", "NOTE"}  # what Nextcloud (or any later save) writes anew


def is_nextcloud_example(path: str, size: int) -> bool:
    """True for an unchanged copy of a skeleton file, or Deck's sample image wherever Deck put it
    (its attachment folder); ``path`` is relative to the user's home."""
    if (PurePosixPath(path).name, size) == DECK_SAMPLE_IMAGE:
        return True
    return NEXTCLOUD_32_SKELETON.get("/" + path.lstrip("/")) == size


def is_deck_example_card(description: str) -> bool:
    """True for an unchanged card of Deck's welcome board (its description exactly as Deck wrote it)."""
    return bool(description) and hashlib.sha256(description.encode()).hexdigest() in DECK_EXAMPLE_DESCRIPTIONS


def is_calendar_example_event(description: str) -> bool:
    """True for Nextcloud's unchanged example event (its description exactly as the dav app wrote it)."""
    return bool(description) and hashlib.sha256(description.encode()).hexdigest() in CALENDAR_EXAMPLE_DESCRIPTIONS


def contact_properties_digest(props: Iterable[VCardLike]) -> str:
    """SHA-256 of a vCard's properties in order, without those Nextcloud writes anew for each copy."""
    body = "\n".join(f"{p.name};{sorted(p.params.items())}:{p.value}" for p in props if p.name not in _REWRITTEN)
    return hashlib.sha256(body.encode()).hexdigest()


def is_contact_example(props: list[VCardLike], note: str) -> bool:
    """True for Nextcloud's unchanged example contact (``note``: its NOTE as text)."""
    return (hashlib.sha256(note.encode()).hexdigest() in CONTACT_EXAMPLE_NOTES
            and contact_properties_digest(props) == CONTACT_EXAMPLE_PROPERTIES)
