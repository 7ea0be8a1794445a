"""PowerPoint (PPTX): one section per slide (``slide=N``), speaker notes included."""

from __future__ import annotations

import io
from collections.abc import Iterator

from knowledge.ingestion.formats.common import clean_text, collapse, render_rows
from knowledge.ingestion.limits import TextBudget, office_xml_elements_check
from knowledge.ingestion.types import ExtractionError, Section, UnreadableDocument


def extract_pptx(filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    """One section per slide (``slide=N``): all shape text, then the speaker notes."""
    import pptx

    try:
        office_xml_elements_check(data, budget.limits)
        presentation = pptx.Presentation(io.BytesIO(data))
    except ExtractionError:
        raise
    except Exception as exc:
        raise UnreadableDocument(f"the file is not a valid PPTX presentation: {exc}") from exc
    budget.check_sections(len(presentation.slides), "slides")
    sections = []
    for number, slide in enumerate(presentation.slides, start=1):
        parts = [budget.charge(part) for part in _pptx_shape_texts(slide.shapes)]
        notes = _pptx_notes(slide)
        if notes:
            parts.append(f"Notes: {notes}")
        text = clean_text("\n\n".join(parts))
        if not text:
            continue
        budget.add_section()
        title = slide.shapes.title
        title_text = collapse(title.text_frame.text) if title is not None else ""
        sections.append(
            Section(
                source_ref=f"slide={number}",
                text=text,
                heading_path=(title_text,) if title_text else (),
                slide=number,
            )
        )
    return sections


def _pptx_shape_texts(shapes) -> Iterator[str]:
    """Text frames (one paragraph per slide paragraph), tables, and groups recursively."""
    from pptx.shapes.group import GroupShape

    for shape in shapes:
        if isinstance(shape, GroupShape):
            yield from _pptx_shape_texts(shape.shapes)
        elif shape.has_table:
            rows = ([cell.text for cell in row.cells] for row in shape.table.rows)
            yield render_rows(rows, header_needs_two_cells=True)
        elif shape.has_text_frame:
            for paragraph in shape.text_frame.paragraphs:
                yield paragraph.text


def _pptx_notes(slide) -> str:
    if not slide.has_notes_slide:
        return ""
    frame = slide.notes_slide.notes_text_frame
    return clean_text(frame.text) if frame is not None else ""
