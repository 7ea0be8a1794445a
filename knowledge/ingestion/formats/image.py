"""Images as documents: PNG, JPEG, TIFF (every page) and WebP, read by OCR, one section per page
(``page=N``; a single image is page 1).

The size in the header is checked before any pixel is decoded (a decompression bomb is a few
kilobytes on disk and gigabytes once decoded); Pillow's own bomb guard is set to the same limit.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

from knowledge.ingestion.limits import LimitExceeded, TextBudget, page_cpu_check
from knowledge.ingestion.ocr import image_pixels_check, ocr_image, ocr_pages_check
from knowledge.ingestion.reporting import page_stage, report_skipped, report_stage
from knowledge.ingestion.types import Section, UnreadableDocument

# The formats read, by the magic bytes that start them.
IMAGE_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
)


def image_kind(data: bytes) -> str | None:
    """ "PNG", "JPEG", "TIFF" or "WebP" when the bytes start like one, else None."""
    for signature, kind in IMAGE_SIGNATURES:
        if data.startswith(signature):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WebP"
    return None


def image_size_check(filename: str, data: bytes, limits) -> None:
    """Open the header only: refuse unreadable images and ones larger than the pixel limit (every
    frame of a TIFF), before anything is decoded. Runs at upload, in the web process."""
    from PIL import Image, ImageSequence, UnidentifiedImageError

    # Pillow's own guard (a warning past this, an error past twice it), at the product's limit.
    Image.MAX_IMAGE_PIXELS = limits.max_image_pixels
    try:
        with Image.open(io.BytesIO(data)) as image:
            for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
                width, height = frame.size
                image_pixels_check(
                    width, height, limits, f"page {number} of the image" if number > 1 else "the image"
                )
                ocr_pages_check(number, limits)
    except LimitExceeded:
        raise
    except Image.DecompressionBombError:
        # Pillow's own guard refuses past twice the limit before the size can be read.
        raise LimitExceeded(
            "the image has far more pixels than allowed",
            limits.max_image_pixels,
            "max_image_pixels",
            "pixels",
        ) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        # Pillow's message may name a buffer object ("cannot identify image file <_io.BytesIO …>").
        reason = "it is damaged or incomplete" if isinstance(exc, UnidentifiedImageError) else str(exc)
        raise UnreadableDocument(f"{filename} is not a readable image ({reason})") from exc


def extract_image(filename: str, data: bytes, budget: TextBudget) -> Iterator[Section]:
    """Each page of the image read by OCR; a page that cannot be read is left out and reported."""
    import time

    from PIL import Image, ImageSequence

    image_size_check(filename, data, budget.limits)
    with Image.open(io.BytesIO(data)) as image:
        total = getattr(image, "n_frames", 1)
        for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
            report_stage(page_stage(number, total, ocr=True))
            started = time.thread_time()
            try:
                result = ocr_image(frame.convert("RGB"))
            except Exception as exc:  # a damaged frame
                report_skipped(f"page {number} could not be read by OCR ({exc})")
                continue
            page_cpu_check(f"page {number} (OCR)", time.thread_time() - started, budget.limits)
            text = budget.charge(result.text).strip()
            if text:
                budget.add_section()
                metadata = {"ocr": True, "ocr_confidence": round(result.confidence, 1)}
                yield Section(source_ref=f"page={number}", text=text, page=number, metadata=metadata)
