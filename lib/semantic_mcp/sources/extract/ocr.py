"""Text in images and in scanned PDF pages, read by Tesseract (ADR 0601).

Tesseract 5 comes from Debian's packages (``tesseract-ocr`` and one ``tesseract-ocr-LANG`` per
language), runs as a child of the parser worker, so the worker's memory bound holds for it too, at
low CPU priority, one thread, and with a time bound per page. Images are checked by their declared
size before a pixel is decoded, so a decompression bomb is refused, not decoded. OCR is slow
(1 to 5 s of one core a page: bench/RESULTS-formats.md): the pipeline runs it in its own lane
(``NeedsOcr``), never ahead of a change a user just made.
"""

from __future__ import annotations

import functools
import io
import logging
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

from PIL import Image, ImageOps, UnidentifiedImageError

from .common import Budget, Section, UnsupportedContent

log = logging.getLogger(__name__)

LANGUAGES = ("eng", "deu", "fra", "spa")  # what the image installs (Tesseract's codes)
MAX_PIXELS = 50_000_000  # a 300 dpi A3 page is 17 MP, a phone photo 12-50 MP; 20,000 x 20,000 is refused
OCR_SIDE = 3600  # larger images are scaled down first: beyond 300 dpi on A4 accuracy gains nothing, time grows
MAX_OCR_PAGES = 50  # pages of a scanned PDF or multi-page TIFF read per file
PAGE_SECONDS = 60.0
OCR_SECONDS = 300.0  # per file: the parser process's time bound for a file read in the OCR lane
# What one call of the reading tool may read by OCR: a user waits for it, and it holds a worker of the
# reading lane that other users' reads need (issue 36).
READ_OCR_PAGES = 10
READ_OCR_SECONDS = 60.0
MIN_PAGE_CHARS = 20  # a PDF page with less text than this but with an image is a scan...
MIN_SCAN_SIDE = 600  # ...when the image is at least this long (pixels): a receipt at 150 dpi is ~500 x 1200


class NeedsOcr(UnsupportedContent):
    """The file's text is in images: to be read in the OCR lane, or skipped with this reason when OCR is off."""

    def __init__(self, reason: str = "text only in images (a scan or a photo): OCR is off") -> None:
        super().__init__(reason)


@dataclass(frozen=True)
class OcrOptions:
    """The admin's choice: Tesseract language codes, those installed in order (``eng``, ``deu``...)."""

    languages: tuple[str, ...] = LANGUAGES
    max_pages: int = MAX_OCR_PAGES  # the reading tool reads fewer (READ_OCR_PAGES)
    seconds: float = OCR_SECONDS


@functools.cache
def installed_languages() -> frozenset[str]:
    """The languages Tesseract can read here; empty when Tesseract is not installed."""
    if shutil.which("tesseract") is None:
        return frozenset()
    try:
        listing = subprocess.run(["tesseract", "--list-langs"], capture_output=True, text=True, timeout=30,
                                 check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(line.strip() for line in listing.splitlines()[1:] if line.strip() and line.strip() != "osd")


def usable_languages(wanted: tuple[str, ...]) -> tuple[str, ...]:
    """``wanted`` without those Tesseract does not have here (logged): OCR runs with what is there."""
    have = installed_languages()
    missing = [code for code in wanted if code not in have]
    if missing:
        log.warning("OCR languages not installed, ignored: %s (installed: %s)", ", ".join(missing),
                    ", ".join(sorted(have)) or "none")
    return tuple(code for code in wanted if code in have)


def image_sections(data: bytes, options: OcrOptions) -> str | list[Section]:
    """The text of an image file (PNG, JPEG, TIFF, WEBP, GIF, BMP), with a section for each page of a
    multi-page TIFF."""
    budget = Budget(seconds=options.seconds)
    pages: list[Section] = []
    for number, frame in enumerate(_frames(data), start=1):
        if number > options.max_pages or budget.exhausted:
            log.info("OCR stopped after %d image pages", number - 1)
            break
        text = read_image(frame, options, budget)
        pages.append((f"Page {number}", text))
        budget.spend(len(text))
    return pages[0][1] if len(pages) == 1 else pages


def read_image(image: Image.Image, options: OcrOptions, budget: Budget | None = None) -> str:
    """Tesseract's text for one decoded image, within the page's and the file's time."""
    languages = usable_languages(options.languages)
    if not languages:
        raise UnsupportedContent("OCR is not available here (Tesseract or its languages are not installed)")
    image = ImageOps.exif_transpose(image).convert("L")  # phone photos are stored sideways, with a rotation tag
    if max(image.size) > OCR_SIDE:
        image.thumbnail((OCR_SIDE, OCR_SIDE))
    png = io.BytesIO()
    image.save(png, "PNG")
    seconds = PAGE_SECONDS if budget is None else max(0.1, min(PAGE_SECONDS, budget.seconds_left))
    try:
        result = subprocess.run(
            ["tesseract", "stdin", "stdout", "-l", "+".join(languages), "--psm", "3"],
            input=png.getvalue(), capture_output=True, timeout=seconds, preexec_fn=_lower_priority, check=False,
            env={**os.environ, "OMP_THREAD_LIMIT": "1"},  # one core: the other serves searches and the fast lane
        )
    except subprocess.TimeoutExpired:  # this page stays without text; the file's other pages count
        log.warning("OCR of one page took longer than %g s: stopped, the page is left out", seconds)
        return ""
    if result.returncode != 0:
        raise UnsupportedContent(f"OCR failed: {result.stderr.decode(errors='replace').strip()[-200:]}")
    return result.stdout.decode(errors="replace")


def open_image(data: bytes) -> Image.Image:
    """Open an image without decoding its pixels, refusing those too large to decode safely."""
    try:
        image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError:  # Pillow's own bound, above ours: the header declares too many pixels
        raise UnsupportedContent(f"image too large to read (more than {MAX_PIXELS // 1_000_000} megapixels)") from None
    except (UnidentifiedImageError, OSError) as exc:
        raise UnsupportedContent(f"unreadable image: {exc}"[:200]) from None
    check_size(image.size)
    return image


def check_size(size: tuple[int, int]) -> None:
    width, height = size
    if width * height > MAX_PIXELS:
        raise UnsupportedContent(
            f"image too large to read: {width} x {height} pixels (at most {MAX_PIXELS // 1_000_000} megapixels)")


def _frames(data: bytes) -> Iterator[Image.Image]:
    image = open_image(data)
    for index in range(getattr(image, "n_frames", 1)):
        image.seek(index)
        check_size(image.size)  # each frame of a TIFF declares its own
        frame = image.copy()  # decodes this frame only
        yield frame


def _lower_priority() -> None:
    os.nice(10)


