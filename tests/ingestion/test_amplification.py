"""Small hostile files that expand into enormous work are refused early, with bounded memory.

The extraction of each bomb runs in a child process (as the worker would) so
its peak memory can be measured; an address-space cap keeps a regression from
taking the machine down with it (it then fails the test with MemoryError).
"""

from __future__ import annotations

import dataclasses
import json
import resource
import subprocess
import sys

import pytest
import yaml

from knowledge.ingestion.chunking import chunk_sections
from knowledge.ingestion.extract import detect_format, extract_sections
from knowledge.ingestion.limits import DEFAULT_LIMITS, IngestLimits, LimitExceeded, yaml_load_bounded
from knowledge.ingestion.types import ExtractionError, Section
from tests.conftest import REPO_ROOT
from tests.ingestion import hostile_files as hostile

pytestmark = pytest.mark.security

GIB = 1 << 30
MIB = 1 << 20
# Far above what a refused file needs (about 100 MB for the interpreter and
# parsers), far below what any of these bombs needs once expanded.
PEAK_RSS_BOUND_MB = 400

# Peak RSS is VmHWM of the child's own address space: ru_maxrss would also count
# the copy of the (large) test process that existed between fork and exec.
_CHILD = """
import json, sys
from knowledge.ingestion.extract import extract_sections
from knowledge.ingestion.types import ExtractionError
data = open(sys.argv[1], "rb").read()
try:
    sections = extract_sections(sys.argv[2], data)
    result = {"sections": len(sections), "chars": sum(len(s.text) for s in sections)}
except ExtractionError as exc:
    result = {"error": str(exc)}
status = open("/proc/self/status").read()
result["peak_rss_mb"] = int(status.split("VmHWM:")[1].split()[0]) / 1024
print(json.dumps(result))
"""


def _cap_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 * GIB, 3 * GIB))


def extract_in_child(tmp_path, filename: str, data: bytes, timeout: float = 180) -> dict:
    path = tmp_path / "upload.bin"
    path.write_bytes(data)
    process = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), filename],
        cwd=REPO_ROOT,
        capture_output=True,
        timeout=timeout,
        preexec_fn=_cap_address_space,
    )
    if process.returncode != 0:
        pytest.fail(f"extraction died (exit {process.returncode}): {process.stderr.decode()[-1500:]}")
    return json.loads(process.stdout)


def assert_refused(result: dict, *phrases: str) -> None:
    assert "error" in result, result
    for phrase in phrases:
        assert phrase in result["error"], result["error"]
    assert result["peak_rss_mb"] < PEAK_RSS_BOUND_MB, result


# --------------------------------------------------------------------------
# Office zip bombs: refused from the zip directory, before any part is parsed
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filename", "make", "part", "expanded"),
    [
        ("numbers.xlsx", hostile.marked_xlsx_shared_strings, "xl/sharedStrings.xml", GIB),
        ("numbers-inline.xlsx", hostile.marked_xlsx, "xl/worksheets/sheet1.xml", 300 * MIB),
        ("report.docx", hostile.marked_docx, "word/document.xml", 300 * MIB),
        ("deck.pptx", hostile.marked_pptx, "ppt/slides/slide1.xml", 300 * MIB),
    ],
)
def test_office_zip_bombs_are_refused_from_the_directory(tmp_path, filename, make, part, expanded):
    bomb = hostile.office_bomb(make(), part, expanded)
    assert len(bomb) < 2 * MIB  # about a thousandth of what it unpacks to
    result = extract_in_child(tmp_path, filename, bomb)
    assert_refused(result, f"the part {part} expands", "KNOWLEDGE_MAX_COMPRESSION_RATIO")


def test_the_total_unpacked_size_is_limited_too():
    bomb = hostile.office_bomb(hostile.marked_docx(), "word/document.xml", 64 * MIB)
    limits = IngestLimits(max_uncompressed_bytes=32 * MIB, max_compression_ratio=10_000)
    with pytest.raises(
        LimitExceeded, match=r"unpack to 6[45] MB.*limit is 32 MB.*KNOWLEDGE_MAX_UNCOMPRESSED_MB"
    ):
        detect_format("report.docx", bomb, limits=limits)
    assert detect_format("report.docx", bomb, limits=dataclasses.replace(limits, max_uncompressed_bytes=GIB))


def test_a_zip_with_too_many_parts_is_refused_before_its_directory_is_read():
    limits = IngestLimits(max_zip_members=10)
    with pytest.raises(LimitExceeded, match="too many parts.*KNOWLEDGE_MAX_ZIP_MEMBERS"):
        detect_format("deck.pptx", hostile.marked_pptx(), limits=limits)


@pytest.mark.parametrize(
    ("filename", "make", "part"),
    [
        ("numbers.xlsx", hostile.marked_xlsx, "xl/worksheets/sheet1.xml"),
        ("numbers.xlsx", hostile.marked_xlsx_shared_strings, "xl/sharedStrings.xml"),
        ("report.docx", hostile.marked_docx, "word/document.xml"),
        ("deck.pptx", hostile.marked_pptx, "ppt/slides/slide1.xml"),
    ],
)
def test_xml_entity_bombs_in_office_parts_fail_with_a_reason(tmp_path, filename, make, part):
    result = extract_in_child(tmp_path, filename, hostile.entity_bomb(make(), part))
    assert_refused(result, filename.rsplit(".", 1)[1].upper())  # "the file is not a valid DOCX document: ..."


def test_ordinary_office_files_pass_the_zip_checks(corpus):
    for name in ("dummy.docx", "dummy.pptx", "dummy.xlsx", "dummy_jap.docx"):
        assert extract_sections(name, (corpus / "office" / name).read_bytes())


# --------------------------------------------------------------------------
# YAML and JSON: alias bombs and deep nesting
# --------------------------------------------------------------------------


def test_yaml_alias_bomb_is_refused_while_parsing(tmp_path):
    bomb = hostile.yaml_alias_bomb()
    assert len(bomb) < 1000  # 3 * 9**9 = 1.2 billion "lol"s once expanded
    with pytest.raises(LimitExceeded, match="YAML aliases expand.*KNOWLEDGE_MAX_YAML_ALIAS_EXPANSION"):
        detect_format("laughs.yaml", bomb)  # the upload check
    assert_refused(extract_in_child(tmp_path, "laughs.yaml", bomb), "KNOWLEDGE_MAX_YAML_ALIAS_EXPANSION")


def test_a_description_that_is_not_text_is_previewed_not_expanded():
    """Second line of defence: with the alias limit lifted, the aliased description stays small."""
    bomb = hostile.yaml_alias_bomb(levels=6)  # 12 million characters if turned into text
    sections = extract_sections("laughs.yaml", bomb, limits=IngestLimits(max_yaml_alias_expansion=10**12))
    assert sum(len(section.text) for section in sections) < 5_000
    assert '["lol", "lol", "lol"]' in sections[0].text


def test_modest_yaml_aliases_are_still_fine():
    spec = hostile.yaml_alias_bomb(levels=3)  # 3 * 9**3 = 2,187 strings
    assert detect_format("small.yaml", spec) == "openapi"
    assert extract_sections("small.yaml", spec)


@pytest.mark.parametrize("levels", [100, 100_000])
@pytest.mark.parametrize("make", [hostile.deep_json_spec, hostile.deep_yaml_spec], ids=["json", "yaml"])
def test_deeply_nested_specs_are_refused(tmp_path, make, levels):
    name = "deep.json" if make is hostile.deep_json_spec else "deep.yaml"
    spec = make(levels)
    with pytest.raises(LimitExceeded, match="nested too deeply.*64 levels.*KNOWLEDGE_MAX_NESTING_DEPTH"):
        detect_format(name, spec)  # the upload check
    if levels == 100_000:
        # PyYAML's C loader, which the OpenAPI extractor used, crashes the process (SIGSEGV) on this one.
        assert_refused(extract_in_child(tmp_path, name, spec), "KNOWLEDGE_MAX_NESTING_DEPTH")


@pytest.mark.parametrize("kind", ["json", "yaml"])
def test_too_many_nodes_are_refused_at_upload_and_by_the_extractor(kind):
    name, spec = f"many.{kind}", hostile.spec_with_many_nodes(2_000, kind)
    limits = IngestLimits(max_openapi_nodes=1_000)
    pattern = "more values and keys.*1,000 nodes.*KNOWLEDGE_MAX_OPENAPI_NODES"
    with pytest.raises(LimitExceeded, match=pattern):
        detect_format(name, spec, limits=limits)  # the upload check
    with pytest.raises(LimitExceeded, match=pattern):
        extract_sections(name, spec, limits=limits)  # the worker, for files stored before the limit
    assert detect_format(name, spec) == "openapi"
    assert extract_sections(name, spec)


@pytest.mark.parametrize(
    "name",
    ["api.github.com.json", "circular-3.0.json", "petstore-expanded-3.0.json", "petstore-simple-3.1.json"],
)
def test_corpus_specs_still_upload_and_extract_as_json_and_as_yaml(corpus, name):
    data = (corpus / "openapi" / name).read_bytes()
    as_yaml = yaml.dump(json.loads(data), Dumper=yaml.CSafeDumper, sort_keys=False).encode()
    yaml_name = name.replace(".json", ".yaml")
    assert detect_format(name, data) == "openapi"
    assert detect_format(yaml_name, as_yaml) == "openapi"
    from_json, from_yaml = extract_sections(name, data), extract_sections(yaml_name, as_yaml)
    assert len(from_json) > 0
    assert [s.text for s in from_json] == [s.text for s in from_yaml]


# --------------------------------------------------------------------------
# PDF pages, sections, text and chunks
# --------------------------------------------------------------------------


def test_pdf_listing_one_page_twenty_thousand_times_is_refused(tmp_path, corpus):
    pdf = hostile.pdf_with_one_page_repeated((corpus / "pdf" / "pasa.pdf").read_bytes(), 20_000)
    assert len(pdf) < 400_000
    result = extract_in_child(tmp_path, "pages.pdf", pdf)
    assert_refused(result, "the PDF has 20,000 pages", "limit is 2,000 pages", "KNOWLEDGE_MAX_PDF_PAGES")


def test_slides_are_counted_before_they_are_read():
    limits = IngestLimits(max_sections=3)
    deck = hostile.marked_pptx(slides=5)
    with pytest.raises(LimitExceeded, match="5 slides.*KNOWLEDGE_MAX_SECTIONS"):
        extract_sections("deck.pptx", deck, limits=limits)
    assert len(extract_sections("deck.pptx", deck, limits=IngestLimits(max_sections=5))) == 5


def test_sheet_rows_stop_at_the_text_limit():
    workbook = hostile.marked_xlsx(rows=2_000)  # about 100,000 characters of rows
    with pytest.raises(
        LimitExceeded, match="more extracted text.*10,000 characters.*KNOWLEDGE_MAX_TEXT_CHARS"
    ):
        extract_sections("rows.xlsx", workbook, limits=IngestLimits(max_text_chars=10_000))
    assert extract_sections("rows.xlsx", workbook)


@pytest.mark.parametrize(
    ("filename", "data"),
    [
        ("notes.txt", ("A line of plain text.\n\n" * 5_000).encode()),
        ("notes.md", ("# Heading\n\nSome text.\n\n" * 5_000).encode()),
        ("table.csv", ("name,value\n" + "alpha,1\n" * 20_000).encode()),
        ("page.html", b"<html><body>" + b"<p>Some words here.</p>" * 5_000 + b"</body></html>"),
    ],
)
def test_text_formats_stop_at_the_text_limit(filename, data):
    with pytest.raises(LimitExceeded, match="KNOWLEDGE_MAX_TEXT_CHARS"):
        extract_sections(filename, data, limits=IngestLimits(max_text_chars=20_000))


def test_a_csv_built_to_stall_the_delimiter_sniffer_is_read_promptly(tmp_path):
    """64 KB of ``,"`` kept csv.Sniffer busy for minutes (the child's timeout fails the test)."""
    result = extract_in_child(tmp_path, "quotes.csv", b',"' * 32_768)
    assert result.get("sections") == 1, result


def test_ordinary_csv_dialects_are_still_recognised():
    semicolons = "name;city;note\n" + "".join(f'p{n};"Paris";"a, b"\n' for n in range(400))
    sections = extract_sections("people.csv", semicolons.encode())
    assert sections[0].text.startswith("name: p0; city: Paris; note: a, b")


def test_many_headings_stop_at_the_section_limit():
    text = "".join(f"# Heading {n}\n\nText {n}.\n\n" for n in range(50)).encode()
    with pytest.raises(LimitExceeded, match="KNOWLEDGE_MAX_SECTIONS"):
        extract_sections("many.md", text, limits=IngestLimits(max_sections=20))


def test_html_with_a_million_elements_is_refused_before_it_is_parsed(tmp_path):
    html = b"<html><body>" + b"<b>x</b>" * 1_000_000 + b"</body></html>"  # 8 MB
    result = extract_in_child(tmp_path, "tags.html", html)
    assert_refused(result, "about 1,000,002 HTML elements", "KNOWLEDGE_MAX_HTML_ELEMENTS")


def test_a_text_file_of_newlines_is_refused_before_it_is_split(tmp_path):
    result = extract_in_child(tmp_path, "lines.txt", b"\n" * 20_000_000 + b"end")
    assert_refused(result, "20,000,003 characters", "KNOWLEDGE_MAX_TEXT_CHARS")


def test_html_nested_twenty_thousand_levels_fails_with_a_reason():
    html = b"<html><body>" + b"<div>" * 20_000 + b"deep" + b"</div>" * 20_000 + b"</body></html>"
    with pytest.raises(ExtractionError, match="nested too deeply"):
        extract_sections("deep.html", html)


def test_chunking_stops_at_the_chunk_limit():
    sections = [Section(source_ref=f"section={n}", text=f"Paragraph number {n}.") for n in range(30)]
    options = {"strategy": "paragraph", "chunk_size": 200, "chunk_overlap": 0, "count_tokens": len}
    with pytest.raises(LimitExceeded, match="KNOWLEDGE_MAX_CHUNKS"):
        chunk_sections(sections, max_chunks=10, **options)
    assert len(chunk_sections(sections, max_chunks=30, **options)) == 30


def test_defaults_are_the_documented_ones():
    assert DEFAULT_LIMITS == IngestLimits(
        max_uncompressed_bytes=200 * MIB,
        max_compression_ratio=100,
        max_zip_members=20_000,
        max_text_chars=10_000_000,
        max_sections=10_000,
        max_chunks=10_000,
        max_pdf_pages=2_000,
        max_html_elements=100_000,
        max_nesting_depth=64,
        max_yaml_alias_expansion=1_000_000,
        max_pdf_page_content_bytes=8 * MIB,
        max_pdf_content_bytes=256 * MIB,
        max_page_cpu_seconds=30,
        max_extraction_cpu_seconds=900,
        max_extraction_memory_bytes=2048 * MIB,
        max_docx_paragraphs=100_000,
        max_office_xml_elements=2_000_000,
        max_openapi_nodes=1_000_000,
    )


@pytest.mark.parametrize(
    "deep_value",
    ["{a: " * 100_000 + "b" + "}" * 100_000, "[{k: " * 50_000 + "v" + "}]" * 50_000],
    ids=["flow-mappings", "sequences-of-mappings"],
)
def test_deep_flow_collections_are_refused_as_the_products_limit(deep_value):
    # Whichever refuses first, this product's composer or the library's own scanner, the refusal is ours.
    with pytest.raises(LimitExceeded, match="nested too deeply.*KNOWLEDGE_MAX_NESTING_DEPTH"):
        yaml_load_bounded("x-deep: " + deep_value)


def test_a_yaml_syntax_error_is_not_mistaken_for_deep_nesting():
    with pytest.raises(yaml.YAMLError):
        yaml_load_bounded("a: [1, 2\nb: {c: ]")
