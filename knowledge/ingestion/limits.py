"""Limits that keep a small hostile file from becoming a huge amount of work.

A 1 MB spreadsheet can hold a 1 GiB string, a 600-byte YAML file can expand
through nested aliases into hundreds of millions of characters, a 120 KB PDF
can list one page 20,000 times. Every limit here is checked as early as the
input allows: Office zips from their directory before any part is parsed,
YAML and JSON while they are parsed, extracted text and sections while they
are produced, chunks while they are cut. Breaking a limit raises
:class:`LimitExceeded`, an :class:`ExtractionError` whose message names the
limit and the setting that raises it, so the document ends ``failed`` with
that reason (or the upload is refused) within seconds.

Pure: no Django. The limits themselves (fields, defaults, variables) are
declared in ``config/base/ingest_limits.py`` and re-exported here; the pipeline
and the upload path pass the limits built from settings (``config/settings.py``,
``KNOWLEDGE_INGEST_LIMITS``); callers that pass nothing get the defaults.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import zipfile
from collections.abc import Iterator
from typing import Any

import yaml
import yaml.cyaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from config.base.ingest_limits import DEFAULT_LIMITS, SETTINGS, IngestLimits
from config.base.ingest_limits import MIB as _MIB
from config.base.validation import nests_deeper_than
from knowledge.ingestion.types import ExtractionError, UnreadableDocument

# Office parts smaller than this may compress as well as they like: they cannot hurt.
_RATIO_CHECK_FROM_BYTES = _MIB
_ZIP_CENTRAL_ENTRY = b"PK\x01\x02"


class LimitExceeded(ExtractionError):
    """The document breaks one of the ingestion limits; the message says which."""

    def __init__(self, what: str, limit: int, field: str, unit: str = "") -> None:
        unit = f" {unit}" if unit else ""
        super().__init__(
            f"the document exceeds a processing limit: {what} "
            f"(the limit is {limit:,}{unit}, set by {SETTINGS[field]})"
        )


# --------------------------------------------------------------------------
# Extracted text and sections, counted while they are produced
# --------------------------------------------------------------------------


class TextBudget:
    """Counts extracted characters and sections and stops extraction at the first excess."""

    def __init__(self, limits: IngestLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.chars = 0
        self.sections = 0

    def charge(self, text: str) -> str:
        self.chars += len(text)
        if self.chars > self.limits.max_text_chars:
            raise LimitExceeded(
                "it holds more extracted text than allowed",
                self.limits.max_text_chars,
                "max_text_chars",
                "characters",
            )
        return text

    def add_section(self, count: int = 1) -> None:
        self.sections += count
        self.check_sections(self.sections)

    def check_sections(self, count: int, what: str = "sections") -> None:
        if count > self.limits.max_sections:
            raise LimitExceeded(
                f"it has {count:,} {what} or more", self.limits.max_sections, "max_sections", "sections"
            )


def pdf_pages_check(count: int, limits: IngestLimits) -> None:
    if count > limits.max_pdf_pages:
        raise LimitExceeded(f"the PDF has {count:,} pages", limits.max_pdf_pages, "max_pdf_pages", "pages")


def page_cpu_check(what: str, seconds: float, limits: IngestLimits) -> None:
    """Refuse a document one of whose pages took longer to read than allowed (CPU time, measured after it)."""
    if seconds > limits.max_page_cpu_seconds:
        raise LimitExceeded(
            f"reading its {what} took {seconds:,.0f} seconds",
            limits.max_page_cpu_seconds,
            "max_page_cpu_seconds",
            "seconds of CPU time per page",
        )


def extraction_cpu_exceeded(limits: IngestLimits) -> LimitExceeded:
    """The extraction process was stopped by its CPU-time limit (RLIMIT_CPU, set per document)."""
    return LimitExceeded(
        "reading it used too much processor time",
        limits.max_extraction_cpu_seconds,
        "max_extraction_cpu_seconds",
        "seconds of CPU time",
    )


def extraction_memory_exceeded(limits: IngestLimits) -> LimitExceeded:
    """The extraction process ran out of its address space (RLIMIT_AS) while reading the document."""
    return LimitExceeded(
        "reading it needs more memory than allowed",
        limits.max_extraction_memory_bytes // _MIB,
        "max_extraction_memory_bytes",
        "MB",
    )


def html_elements_check(data: bytes, limits: IngestLimits) -> None:
    """Refuse HTML with more elements than allowed, before BeautifulSoup builds its tree.

    Every element costs about a kilobyte and tens of microseconds in the
    parsed tree, so 50 MB of ``<b>x</b>`` would take gigabytes and most of an
    hour. Opening tags are counted from the raw bytes ("<" not followed by "/").
    """
    elements = data.count(b"<") - data.count(b"</")
    if elements > limits.max_html_elements:
        raise LimitExceeded(
            f"the page has about {elements:,} HTML elements", limits.max_html_elements, "max_html_elements"
        )


def text_size_check(text: str, limits: IngestLimits) -> None:
    """Plain text and Markdown are their own extracted text: refuse an oversize one before splitting it."""
    if len(text) > limits.max_text_chars:
        raise LimitExceeded(
            f"it holds {len(text):,} characters of text",
            limits.max_text_chars,
            "max_text_chars",
            "characters",
        )


# --------------------------------------------------------------------------
# Office zips: judged from the central directory, before any part is parsed
# --------------------------------------------------------------------------


def zip_members_checked(data: bytes, limits: IngestLimits) -> list[str]:
    """The part names of an Office zip whose directory promises a bounded amount of work.

    The sizes in the directory can be trusted as upper bounds: Python's zipfile
    (used by python-docx, python-pptx and openpyxl) stops inflating a part at
    its declared size and then fails its CRC check. The member count is
    estimated from the raw bytes first, because reading a directory of a
    million entries is itself the attack.
    """
    if data.count(_ZIP_CENTRAL_ENTRY) > limits.max_zip_members:
        raise LimitExceeded(
            "the archive has too many parts", limits.max_zip_members, "max_zip_members", "parts"
        )
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = archive.infolist()
    total = 0
    for member in members:
        total += member.file_size
        _check_member_ratio(member, limits)
    if total > limits.max_uncompressed_bytes:
        raise LimitExceeded(
            f"its parts unpack to {total / _MIB:,.0f} MB",
            limits.max_uncompressed_bytes // _MIB,
            "max_uncompressed_bytes",
            "MB",
        )
    return [member.filename for member in members]


def _check_member_ratio(member: zipfile.ZipInfo, limits: IngestLimits) -> None:
    if member.file_size < _RATIO_CHECK_FROM_BYTES:
        return
    ratio = member.file_size / max(member.compress_size, 1)
    if ratio > limits.max_compression_ratio:
        raise LimitExceeded(
            f"the part {member.filename} expands {ratio:,.0f} times when unpacked (a zip bomb)",
            limits.max_compression_ratio,
            "max_compression_ratio",
            "times",
        )


_WORD_PARAGRAPH = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}p"
_XML_READ_BYTES = 1 << 16


def office_xml_elements_check(data: bytes, limits: IngestLimits, *, count_paragraphs: bool = False) -> None:
    """Refuse an Office file whose XML parts hold more elements (or Word paragraphs) than allowed.

    python-docx and python-pptx build the whole tree of every part (measured:
    100 MB of runs within the zip limits took 1.6 GB), and python-docx spends
    per paragraph. So the parts are first streamed through lxml with a parser
    target that only counts start tags: no tree, constant memory, stopped at
    the first element over the limit. XML the counter cannot parse passes
    through as lxml's error (the document's own parser would refuse it too).
    """
    counter = _ElementCounter(limits, count_paragraphs)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in archive.namelist():
            if name.endswith((".xml", ".rels")):
                _count_part(archive, name, counter)


def _count_part(archive: zipfile.ZipFile, name: str, counter: _ElementCounter) -> None:
    from lxml import etree

    parser = etree.XMLParser(target=counter, resolve_entities=False, no_network=True)
    with archive.open(name) as part:
        while chunk := part.read(_XML_READ_BYTES):
            parser.feed(chunk)
    parser.close()


class _ElementCounter:
    """An lxml parser target: counts elements and Word paragraphs, raises at the first excess."""

    def __init__(self, limits: IngestLimits, count_paragraphs: bool) -> None:
        self.limits = limits
        self.count_paragraphs = count_paragraphs
        self.elements = 0
        self.paragraphs = 0

    def start(self, tag, attributes) -> None:
        self.elements += 1
        if self.elements > self.limits.max_office_xml_elements:
            raise LimitExceeded(
                f"its XML parts hold more than {self.limits.max_office_xml_elements:,} elements",
                self.limits.max_office_xml_elements,
                "max_office_xml_elements",
                "elements",
            )
        if self.count_paragraphs and tag == _WORD_PARAGRAPH:
            self.paragraphs += 1
            if self.paragraphs > self.limits.max_docx_paragraphs:
                raise LimitExceeded(
                    f"it has more than {self.limits.max_docx_paragraphs:,} paragraphs",
                    self.limits.max_docx_paragraphs,
                    "max_docx_paragraphs",
                    "paragraphs",
                )

    def close(self) -> None:
        return None


# --------------------------------------------------------------------------
# JSON and YAML: bounded nodes, bounded nesting, bounded alias expansion
# --------------------------------------------------------------------------


class NodeBudget:
    """Counts the values and keys of a JSON/YAML file and stops at the first one over the limit.

    Each one costs the web process tens to hundreds of bytes once loaded (a
    4 MB YAML list of one-letter scalars took 1.8 GB), so the count is checked
    while the file is read, before the tree exists.
    """

    def __init__(self, limits: IngestLimits, what: str) -> None:
        self.limit = limits.max_openapi_nodes
        self.what = what
        self.count = 0

    def charge(self, count: int = 1) -> None:
        self.count += count
        if self.count > self.limit:
            what = f"{self.what} holds more values and keys than allowed"
            raise LimitExceeded(what, self.limit, "max_openapi_nodes", "nodes")


def nesting_depth_check(value: Any, max_depth: int, what: str = "the document") -> None:
    """Raise LimitExceeded when lists/mappings nest deeper than ``max_depth`` (iteratively)."""
    if nests_deeper_than(value, max_depth):
        raise too_deep(what, max_depth)


def too_deep(what: str, max_depth: int) -> LimitExceeded:
    return LimitExceeded(f"{what} is nested too deeply", max_depth, "max_nesting_depth", "levels")


def alias_expansion_check(expansion: int, limits: IngestLimits) -> None:
    if expansion > limits.max_yaml_alias_expansion:
        raise LimitExceeded(
            "its YAML aliases expand too much (a 'billion laughs' file)",
            limits.max_yaml_alias_expansion,
            "max_yaml_alias_expansion",
            "characters",
        )


def json_loads_bounded(text: str, limits: IngestLimits = DEFAULT_LIMITS, what: str = "the JSON") -> Any:
    """json.loads with a nesting limit.

    The C decoder raises RecursionError at Python's recursion limit (about
    1,000 levels), which is turned into the same limit error as a document
    nested more than ``max_nesting_depth`` levels; ValueError passes through.
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise too_deep(what, limits.max_nesting_depth) from None
    nesting_depth_check(value, limits.max_nesting_depth, what)
    NodeBudget(limits, what).charge(_json_nodes(value))
    return value


def _json_nodes(value: Any) -> int:
    """Values and keys in a loaded JSON value (iteratively; its depth is already bounded); their text is
    checked on the way (json_text_check)."""
    count, stack = 0, [value]
    while stack:
        node = stack.pop()
        count += 1
        if isinstance(node, dict):
            count += len(node)
            for key in node:
                json_text_check(key)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str):
            json_text_check(node)
    return count


_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text_check(text: str, what: str = "the JSON") -> str:
    """Refuse a JSON string holding a lone surrogate (``"\\ud800"``): JSON allows the escape, but it is
    not Unicode text, and PostgreSQL cannot store it (a title or chunk with one failed the database write)."""
    if not text.isascii():
        found = _SURROGATE.search(text)
        if found:
            raise UnreadableDocument(
                f"{what} holds a lone surrogate (\\u{ord(found.group()):04x}) in a string, which is not text"
            )
    return text


class _BoundedComposer(Composer):
    """PyYAML's composer with two bounds checked while the node graph is built.

    Depth: the C composer of CSafeLoader recurses without limit and crashes
    the process (SIGSEGV) on 100,000 nested brackets, and libyaml slows
    quadratically with depth, so composing stops at the first node below
    ``max_nesting_depth``. Aliases: PyYAML shares an aliased node instead of
    copying it, so a "billion laughs" file loads small but becomes enormous
    when walked; each node's expanded size (scalars by length) is computed as
    it completes, and the sizes that aliases add are capped.
    """

    limits: IngestLimits

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            self._nodes.charge()
            if self._depth > self.limits.max_nesting_depth:
                raise too_deep("the YAML", self.limits.max_nesting_depth)
            is_alias = self.check_event(yaml.AliasEvent)
            node = super().compose_node(parent, index)
            if is_alias:
                self._charge_alias(node)
            return node
        finally:
            self._depth -= 1

    def compose_scalar_node(self, anchor):
        node = super().compose_scalar_node(anchor)
        self._sizes[id(node)] = max(len(node.value), 1)
        return node

    def compose_sequence_node(self, anchor):
        node = super().compose_sequence_node(anchor)
        self._sizes[id(node)] = 1 + sum(self._size(item) for item in node.value)
        return node

    def compose_mapping_node(self, anchor):
        node = super().compose_mapping_node(anchor)
        self._sizes[id(node)] = 1 + sum(self._size(key) + self._size(value) for key, value in node.value)
        return node

    def _size(self, node: ScalarNode | SequenceNode | MappingNode) -> int:
        # An alias to a node that is still open (a recursive alias) has no size yet: count it as one.
        return self._sizes.get(id(node), 1)

    def _charge_alias(self, node: ScalarNode | SequenceNode | MappingNode) -> None:
        self._alias_expansion += self._size(node)
        alias_expansion_check(self._alias_expansion, self.limits)


class BoundedYamlLoader(_BoundedComposer, yaml.cyaml.CParser, SafeConstructor, Resolver):
    """A safe loader: libyaml's fast scanner and parser, the bounded Python composer, safe types only."""

    def __init__(self, stream, limits: IngestLimits = DEFAULT_LIMITS) -> None:
        yaml.cyaml.CParser.__init__(self, stream)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.limits = limits
        self._depth = 0
        self._sizes: dict[int, int] = {}
        self._alias_expansion = 0
        self._nodes = NodeBudget(limits, "the YAML")


def yaml_load_bounded(text: str, limits: IngestLimits = DEFAULT_LIMITS) -> Any:
    """Load one YAML document safely within the nesting and alias limits (YAMLError passes through).

    Some libyaml builds (PyYAML 6.0.4's) refuse flow collections nested about 1,000 deep while their
    scanner reads ahead, before the composer's own limit is reached, with a message of their own. A
    parse error at a point where more flow collections are open than the limit allows is that case,
    whatever the library calls it, and is refused as this product's nesting limit.
    """
    loader = BoundedYamlLoader(text, limits)
    try:
        with yaml_errors_translated(text, limits):
            return loader.get_single_data()
    finally:
        loader.dispose()


@contextlib.contextmanager
def yaml_errors_translated(text: str, limits: IngestLimits) -> Iterator[None]:
    """A libyaml parse error where more flow collections are open than allowed is the nesting limit."""
    try:
        yield
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if mark is not None and _open_flow_collections(text, mark.index) > limits.max_nesting_depth:
            raise too_deep("the YAML", limits.max_nesting_depth) from None
        raise


def _open_flow_collections(text: str, end: int) -> int:
    """How many ``[`` and ``{`` are still open at ``end`` (quotes ignored: this only sizes an error)."""
    before = text[: end + 1]
    return before.count("[") + before.count("{") - before.count("]") - before.count("}")
