"""Hostile files built at test time: zip bombs in real Office files, YAML alias bombs, page-reference PDFs.

Each is small on disk and enormous once read, like the files of the security
review; nothing large is kept in the repository or written to disk.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

MARKER = "BOMBMARKER"
_DOS_DATE_1980 = 0x21


def office_bomb(document: bytes, part: str, expanded_bytes: int) -> bytes:
    """``document`` with the text MARKER in ``part`` replaced by ``expanded_bytes`` letters.

    The letters are deflated to about a thousandth of their size, and the
    stream is built from one compressed megabyte repeated, so a 1 GiB part
    costs a second to make. The result is a valid zip: sizes and CRC-32 are
    the true ones, so a reader that inflates the part gets the whole text.
    """
    members = []
    with zipfile.ZipFile(io.BytesIO(document)) as archive:
        for info in archive.infolist():
            data = archive.read(info)
            if info.filename == part:
                prefix, suffix = data.split(MARKER.encode(), 1)
                members.append((info.filename, *_deflate_repeated(prefix, expanded_bytes, suffix)))
            else:
                members.append((info.filename, _deflate(data), zlib.crc32(data), len(data)))
    return _zip(members)


def _deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush()


def _deflate_repeated(prefix: bytes, size: int, suffix: bytes) -> tuple[bytes, int, int]:
    """Raw deflate of prefix + b"a" * size + suffix, built from one compressed block repeated.

    A full flush resets the compressor, so every megabyte of letters
    compresses to the same bytes and the block can simply be repeated.
    """
    unit = b"a" * (1 << 20)
    repeats, rest = divmod(size, len(unit))
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = compressor.compress(prefix) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(unit) + compressor.flush(zlib.Z_FULL_FLUSH)
    tail = compressor.compress(b"a" * rest + suffix) + compressor.flush()
    crc = zlib.crc32(prefix)
    for _ in range(repeats):
        crc = zlib.crc32(unit, crc)
    crc = zlib.crc32(b"a" * rest + suffix, crc)
    return head + block * repeats + tail, crc, len(prefix) + size + len(suffix)


def _zip(members: list[tuple[str, bytes, int, int]]) -> bytes:
    """A plain zip (no zip64) of already-deflated members: (name, deflated, crc, size)."""
    out = io.BytesIO()
    central = []
    for name, deflated, crc, size in members:
        offset = out.tell()
        encoded = name.encode()
        out.write(
            struct.pack(
                "<4s5H3I2H",
                b"PK\x03\x04",
                20,
                0,
                8,
                0,
                _DOS_DATE_1980,
                crc,
                len(deflated),
                size,
                len(encoded),
                0,
            )
        )
        out.write(encoded + deflated)
        central.append(
            struct.pack(
                "<4s6H3I5H2I",
                b"PK\x01\x02",
                20,
                20,
                0,
                8,
                0,
                _DOS_DATE_1980,
                crc,
                len(deflated),
                size,
                len(encoded),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + encoded
        )
    directory = b"".join(central)
    start = out.tell()
    out.write(directory)
    out.write(
        struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, len(members), len(members), len(directory), start, 0)
    )
    return out.getvalue()


def entity_bomb(document: bytes, part: str) -> bytes:
    """``document`` with MARKER in ``part`` replaced by a 'billion laughs' entity (10**9 "lol"s)."""
    entities = ['<!ENTITY lol0 "lol">'] + [
        f'<!ENTITY lol{level} "' + f"&lol{level - 1};" * 10 + '">' for level in range(1, 10)
    ]
    doctype = "<!DOCTYPE bomb [" + "".join(entities) + "]>"
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(document)) as source, zipfile.ZipFile(buffer, "w") as target:
        for name in source.namelist():
            data = source.read(name)
            if name == part:
                text = data.decode()
                declaration, root = text.split("?>", 1) if text.startswith("<?xml") else ("", text)
                declaration += "?>" if declaration else ""
                data = (declaration + doctype + root.replace(MARKER, "&lol9;")).encode()
            target.writestr(name, data)
    return buffer.getvalue()


def marked_docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Quarterly report", level=1)
    document.add_paragraph(MARKER)
    return _saved(document)


def marked_pptx(slides: int = 1) -> bytes:
    import pptx
    from pptx.util import Inches

    presentation = pptx.Presentation()
    for number in range(slides):
        slide = presentation.slides.add_slide(presentation.slide_layouts[5])
        slide.shapes.title.text = f"Slide {number + 1}"
        box = slide.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(1))
        box.text_frame.text = MARKER if number == 0 else f"Text of slide {number + 1}"
    return _saved(presentation)


def marked_xlsx(rows: int = 1) -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Data"
    sheet.append(["name", "note"])
    sheet.append(["first", MARKER])
    for number in range(rows - 1):
        sheet.append([f"row {number}", f"a note about row {number} of the sheet"])
    return _saved(workbook)


def marked_xlsx_shared_strings() -> bytes:
    """An XLSX whose MARKER cell is a shared string (openpyxl writes inline strings; Excel shares them)."""
    sst = (
        '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="1" uniqueCount="1">'
        f"<si><t>{MARKER}</t></si></sst>"
    )
    edits = {
        "xl/worksheets/sheet1.xml": (
            f'<c r="B2" t="inlineStr"><is><t>{MARKER}</t></is></c>',
            '<c r="B2" t="s"><v>0</v></c>',
        ),
        "[Content_Types].xml": (
            "</Types>",
            '<Override PartName="/xl/sharedStrings.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>',
        ),
        "xl/_rels/workbook.xml.rels": (
            "</Relationships>",
            '<Relationship Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
            'sharedStrings" Target="sharedStrings.xml" Id="rIdShared"/></Relationships>',
        ),
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(marked_xlsx())) as source, zipfile.ZipFile(buffer, "w") as target:
        for name in source.namelist():
            text = source.read(name).decode()
            if name in edits:
                old, new = edits[name]
                assert old in text, name
                text = text.replace(old, new)
            target.writestr(name, text)
        target.writestr("xl/sharedStrings.xml", sst)
    return buffer.getvalue()


def _saved(document) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def yaml_alias_bomb(levels: int = 9) -> bytes:
    """A 'billion laughs' OpenAPI spec: each level lists the previous one nine times.

    The operation's description is the last level: read as text it is
    3 * 9**levels "lol"s (levels=6: 12 million characters from 512 bytes).
    """
    lines = ["openapi: 3.0.0", "info: {title: Laughs, version: '1'}", 'x-l0: &l0 ["lol", "lol", "lol"]']
    for level in range(1, levels + 1):
        lines.append(f"x-l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 9) + "]")
    lines += [
        "paths:",
        "  /laughs:",
        "    get:",
        f"      description: *l{levels}",
        "      responses: {'200': {description: ok}}",
    ]
    return "\n".join(lines).encode()


def deep_json_spec(levels: int) -> bytes:
    return b'{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "x-deep": ' + (
        b"[" * levels + b"]" * levels + b', "paths": {}}'
    )


def deep_yaml_spec(levels: int) -> bytes:
    return b"openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {}\nx-deep: " + (
        b"[" * levels + b"]" * levels + b"\n"
    )


def yaml_flow_sequence(size: int) -> bytes:
    """A YAML flow sequence of one-letter scalars (``[a,a,...]``) of ``size`` bytes: one node per 2 bytes."""
    return b"[" + b"a," * (size // 2 - 1) + b"a]"


def json_list_of_empty_objects(size: int) -> bytes:
    """A JSON list of ``{}`` of about ``size`` bytes: one object per 3 bytes."""
    return b"[" + b"{}," * (size // 3 - 1) + b"{}]"


def spec_with_many_nodes(nodes: int, kind: str = "yaml") -> bytes:
    """A small valid OpenAPI spec whose extension ``x-list`` holds ``nodes`` scalars."""
    if kind == "json":
        items = b",".join([b"1"] * nodes)
        return (
            b'{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, '
            b'"paths": {"/x": {"get": {"summary": "s"}}}, "x-list": [' + items + b"]}"
        )
    return (
        b"openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {/x: {get: {summary: s}}}\nx-list: ["
        + b",".join([b"1"] * nodes)
        + b"]\n"
    )


def pdf_with_one_page_repeated(source: bytes, times: int) -> bytes:
    """A PDF whose page tree lists its first page ``times`` times (one page object, many references)."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import ArrayObject, NameObject, NumberObject

    writer = PdfWriter()
    writer.add_page(PdfReader(io.BytesIO(source)).pages[0])
    pages = writer._root_object["/Pages"].get_object()
    page_ref = pages["/Kids"][0]
    pages[NameObject("/Kids")] = ArrayObject([page_ref] * times)
    pages[NameObject("/Count")] = NumberObject(times)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def pdf_pages_sharing_one_heavy_stream(pages: int = 2_000, operators: int = 950_000) -> bytes:
    """A PDF of ``pages`` pages that all draw one content stream of ``operators`` empty text operators.

    The stream is stored once and deflates to a few kilobytes, but a reader
    interprets it again for every page (pypdf: seconds per page). Written by
    hand: object 3 is the shared stream, 4 a font, the pages are objects 5 onwards.
    """
    content = zlib.compress(b"BT\n/F1 12 Tf\n" + b"() Tj\n" * operators + b"ET\n", 9)
    kids = " ".join(f"{5 + n} 0 R" for n in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Count {pages} /Kids [{kids}] >>".encode(),
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R"
        b" /Resources << /Font << /F1 4 0 R >> >> >>"
    )
    objects += [page] * pages
    return _pdf(objects)


def _pdf(objects: list[bytes]) -> bytes:
    """A PDF of ``objects`` (numbered from 1, the first is the catalog) with its cross-reference table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    start = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % offset for offset in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, start))
    return out.getvalue()


def docx_with_many_elements(count: int, *, paragraphs: bool) -> bytes:
    """A DOCX whose body holds ``count`` one-letter paragraphs, or one paragraph of ``count`` one-letter runs.

    The letters are random a's and b's, so the parts deflate only about 70-80
    times: within the compression-ratio limit, unlike a part of one repeated letter.
    """
    import random

    letters = random.Random(count).choices("ab", k=count)
    if paragraphs:
        inserted = "</w:t></w:r></w:p>" + "".join(f"<w:p><w:r><w:t>{c}</w:t></w:r></w:p>" for c in letters)
        inserted += "<w:p><w:r><w:t>"
    else:
        inserted = "</w:t></w:r>" + "".join(f"<w:r><w:t>{c}</w:t></w:r>" for c in letters) + "<w:r><w:t>"
    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(marked_docx())) as source,
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for name in source.namelist():
            data = source.read(name)
            if name == "word/document.xml":
                data = data.replace(MARKER.encode(), inserted.encode())
            target.writestr(name, data)
    return buffer.getvalue()
