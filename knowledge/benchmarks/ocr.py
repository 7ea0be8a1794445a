"""knowledge_bench ocr: how well and how fast scanned pages are read.

Pages of corpus PDFs whose text layer is good are drawn as images (PDFium) at each resolution, read
by the product's OCR, and compared with their own text layer: the character error rate (edit
distance over the layer's length, after joining hyphenated line breaks and spaces) and the seconds
per page, with the median and p95. The reference measured in the same run is the time to draw the
page, so the ratio says what OCR adds to a page. One JSON line of figures at the end.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from django.conf import settings

from knowledge.benchmarks.common import median, peak_memory_mb, percentile
from knowledge.ingestion.ocr import needs_ocr, ocr_image

CORPUS_PDFS = ("pasa.pdf", "paper.pdf", "influence.pdf")
DPIS = (150, 200, 300)


def default_files() -> list[Path]:
    corpus = Path(settings.BASE_DIR).parent / "shared" / "corpus"
    return [corpus / "pdf" / name for name in CORPUS_PDFS]


def _normalised(text: str) -> str:
    return " ".join(re.sub(r"-\n(?=[a-z])", "", text).split())


def _pages(files: list[Path], pages_per_file: int):
    """(file, page index, text layer) of the first pages with a good text layer."""
    import pypdf

    for path in files:
        reader = pypdf.PdfReader(path)
        for index, page in enumerate(reader.pages[:pages_per_file]):
            text = page.extract_text() or ""
            if not needs_ocr(text):
                yield path, index, _normalised(text)


def run(out, *, files: list[Path], dpis=DPIS, pages_per_file: int = 3) -> dict:
    import pypdfium2 as pdfium
    from rapidfuzz.distance import Levenshtein
    from tqdm import tqdm

    pages = list(_pages(files, pages_per_file))
    documents = {path: pdfium.PdfDocument(str(path)) for path in files}
    figures = {"pages": len(pages), "by_dpi": {}}
    for dpi in dpis:
        errors = characters = 0
        ocr_seconds, draw_seconds = [], []
        for path, index, truth in tqdm(pages, desc=f"OCR at {dpi} dpi", unit="page", file=out):
            started = time.perf_counter()
            image = documents[path][index].render(scale=dpi / 72, grayscale=True).to_pil()
            draw_seconds.append(time.perf_counter() - started)
            started = time.perf_counter()
            read = _normalised(ocr_image(image).text)
            ocr_seconds.append(time.perf_counter() - started)
            errors += Levenshtein.distance(read, truth)
            characters += len(truth)
        figures["by_dpi"][dpi] = {
            "cer": round(errors / max(characters, 1), 4),
            "seconds_per_page_median": round(median(ocr_seconds), 2),
            "seconds_per_page_p95": round(percentile(ocr_seconds, 95), 2),
            "pages_per_second": round(len(ocr_seconds) / max(sum(ocr_seconds), 1e-9), 3),
            "ocr_to_draw_ratio": round(median(ocr_seconds) / max(median(draw_seconds), 1e-9), 1),
        }
        out.write(f"{dpi} dpi: {json.dumps(figures['by_dpi'][dpi])}\n")
    figures["peak_memory_mb"] = round(peak_memory_mb())
    out.write(json.dumps(figures) + "\n")
    return figures
