"""Running heads and feet are found page by page, as pages are read
(knowledge.ingestion.formats.pdf_running_lines)."""

from __future__ import annotations

import io
import random
import re

import pypdf
import pytest

from knowledge.ingestion.formats.pdf_running_lines import WINDOW, RunningLines
from tests.conftest import CORPUS

pytest_plugins = ["tests.synthesis.openai_server"]


def run(pages: list[str]) -> list[tuple[str, list[str], object]]:
    """Every page fed in order; the decisions in the order the pages were fed."""
    lines = RunningLines()
    decided = []
    for number, text in enumerate(pages, start=1):
        decided += lines.feed(text, number)
    return decided + lines.finish()


FORM_BODY = (
    "Name of the applicant and their service number.",
    "Reason for the request, in the applicant's words.",
    "Signature of the commanding officer and the date signed.",
    "Routing: the office that receives the completed form.",
)


def form_page(number: int) -> str:
    return "\n".join(
        [
            "CUI (when filled in)",
            "REQUEST FOR ANNUAL LEAVE",
            "",
            FORM_BODY[number - 1],
            "",
            f"DD FORM 2656-5, OCT 2022 Page {number} of 4",
            "CUI (when filled in)",
        ]
    )


def test_a_forms_heads_and_feet_are_removed_and_its_content_and_blank_lines_kept():
    decided = run([form_page(n) for n in range(1, 5)])
    assert [extra for _, _, extra in decided] == [1, 2, 3, 4]
    for (text, removed, number), body in zip(decided, FORM_BODY, strict=True):
        assert text == f"\n{body}\n", (number, text)
        assert removed == [
            "CUI (when filled in)",
            "REQUEST FOR ANNUAL LEAVE",
            f"DD FORM 2656-5, OCT 2022 Page {number} of 4",
            "CUI (when filled in)",
        ]


WORDS = (
    "river basin catchment survey gauge flow station upstream delta estuary tributary channel "
    "levee floodplain sediment discharge watershed aquifer reservoir spillway culvert marsh"
).split()


def body(page: int, lines: int = 8) -> list[str]:
    """Lines of prose no other page repeats (no digits: a digit would be folded away)."""
    chosen = random.Random(page)
    return [" ".join(chosen.sample(WORDS, 8)).capitalize() + "." for _ in range(lines)]


def test_page_numbers_go_only_when_they_rise_with_the_page():
    pages = ["\n".join([*body(n), str(n + 10)]) for n in range(1, 7)]
    assert [removed for _, removed, _ in run(pages)] == [[str(n + 10)] for n in range(1, 7)]
    # The same number at every page's foot is a table's value, not a page number: kept.
    same = ["\n".join([*body(n), "11629."]) for n in range(1, 7)]
    assert all(removed == [] for _, removed, _ in run(same))
    roman = ["\n".join([*body(n), numeral]) for n, numeral in enumerate(["ii", "iii", "iv", "v"])]
    assert [removed for _, removed, _ in run(roman)] == [["ii"], ["iii"], ["iv"], ["v"]]


def test_a_head_read_differently_by_ocr_is_still_the_same_head():
    heads = [
        "VICKSBURG NATIONAL MILITARY PARK",
        "VICKSBUEG NATIONAL MILITARY PARK",
        "VICKSBURG NATIONAL MILITAEY PARK",
    ]
    pages = ["\n".join([heads[n % 3], *body(n)]) for n in range(6)]
    assert [removed for _, removed, _ in run(pages)] == [[heads[n % 3]] for n in range(6)]


def test_short_documents_and_lines_on_few_pages_are_content():
    two = [form_page(1), form_page(2)]
    assert all(removed == [] for _, removed, _ in run(two))
    once = ["\n".join(["Introduction", *body(n)]) if n == 1 else "\n".join(body(n)) for n in range(1, 8)]
    assert all(removed == [] for _, removed, _ in run(once))


def test_pages_are_decided_as_soon_as_their_window_is_read():
    lines = RunningLines()
    fed = [lines.feed(form_page(1 + n % 4), n) for n in range(WINDOW + 3)]
    assert [len(decided) for decided in fed] == [0] * WINDOW + [1, 1, 1]
    assert [extra for decided in fed for _, _, extra in decided] == [0, 1, 2]
    assert [extra for _, _, extra in lines.finish()] == list(range(3, WINDOW + 3))


def test_a_real_manuals_running_head_and_page_numbers_go_and_nothing_else():
    reader = pypdf.PdfReader(
        io.BytesIO((CORPUS / "pdf" / "GeoBase_NHNC1_Data_Model_UML_EN.pdf").read_bytes())
    )
    pages = [page.extract_text() or "" for page in reader.pages]
    decided = run(pages)
    removed = [line for _, lines, _ in decided for line in lines]
    assert removed, "the manual's running head is found"
    assert all("GeoBase" in line or "National Hydro Network" in line for line in removed), removed
    kept = "\n".join(text for text, _, _ in decided)
    assert "Data Model" in kept  # the title page's own text stays
    assert sum(len(text) for text, _, _ in decided) > 0.9 * sum(len(page) for page in pages)


def test_alike_lines_whose_numbers_do_not_follow_the_pages_are_content():
    """A bibliography's links differ only in their numbers: they are references, not a running foot."""
    pages = [
        "\n".join([*body(n), f"http://www.ncbi.nlm.nih.gov/pubmed/{2261906 + 7919 * n * n}."])
        for n in range(1, 7)
    ]
    assert all(removed == [] for _, removed, _ in run(pages))
    # A scan that skips a page skips its number too: the head still rises with the pages.
    numbers = [49, 50, 52, 53, 54, 55]
    heads = ["\n".join([f"THE SIEGE OF VICKSBURG. {number}", *body(n)]) for n, number in enumerate(numbers)]
    assert [len(removed) for _, removed, _ in run(heads)] == [1] * 6


def form_pdf() -> bytes:
    """A four-page form drawn like a real one: a classification head and foot, a title and a form
    number with "Page N of 4" on every page, and a different section of text on each."""
    import matplotlib

    matplotlib.use("pdf")
    from matplotlib.backends.backend_pdf import PdfPages
    from matplotlib.figure import Figure

    buffer = io.BytesIO()
    with PdfPages(buffer) as pdf:
        for number, text in enumerate(SECTIONS, start=1):
            figure = Figure(figsize=(8.5, 11))
            figure.text(0.5, 0.97, "CUI (when filled in)", ha="center", fontsize=9)
            figure.text(0.08, 0.93, "SURVIVOR BENEFIT PLAN ELECTION", fontsize=12)
            figure.text(0.08, 0.60, text, fontsize=10)
            figure.text(0.08, 0.04, "DD FORM 2656-5, OCT 2022", fontsize=8)
            figure.text(0.80, 0.04, f"Page {number} of {len(SECTIONS)}", fontsize=8)
            figure.text(0.5, 0.015, "CUI (when filled in)", ha="center", fontsize=9)
            pdf.savefig(figure)
    return buffer.getvalue()


SECTIONS = (
    "Section A. The member elects survivor benefit coverage for the spouse named below.",
    "Section B. Coverage begins on the first day of the month after the election is received.",
    "Section C. The annuity is reduced by six and one half percent of the base amount.",
    "Section D. Signatures of the member and a witness are required for the election to be valid.",
)
BOILERPLATE = ("CUI", "SURVIVOR BENEFIT PLAN ELECTION", "DD FORM", "Page 1 of 4")


@pytest.mark.django_db(transaction=True)
def test_a_forms_running_lines_are_in_neither_its_summary_nor_any_quote(alice, no_llm):
    from knowledge.models import Chunk, DocumentSummary
    from knowledge.services.collections import collection_create
    from knowledge.services.documents import DocumentUpload, document_upload
    from tests.asking import chat_ask

    collection = collection_create(name="Forms", owner=alice)
    document = document_upload(
        collection=collection, upload=DocumentUpload(filename="dd2656-5.pdf", data=form_pdf())
    ).document
    document.refresh_from_db()
    assert document.status == "ready", document.error
    chunks = list(Chunk.objects.filter(document=document).values_list("content", flat=True))
    assert len(chunks) >= 4 and all(not any(line in text for line in BOILERPLATE) for text in chunks), chunks
    summary = DocumentSummary.objects.get(document=document).summary
    assert summary.startswith("Section A") and not any(line in summary for line in BOILERPLATE), summary
    turn = chat_ask(
        user=alice, question="When does the survivor benefit coverage begin?", collection_ids=[collection.pk]
    )
    quoted = re.findall(r'^- "(.*)" \[Source \d+\]$', turn.answer, flags=re.MULTILINE)
    assert any("first day of the month" in quote for quote in quoted), turn.answer
    assert not any(line in turn.answer for line in BOILERPLATE)
