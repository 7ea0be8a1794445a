"""Document summaries for the router (docs/design.md#agents): type, summary, key topics, what to use it for.

Made from a document's chunks once they are embedded, before anything is
written. With an LLM configured, the LLM writes it from the document's title,
headings and most central passages, and its reply is validated; without one,
or when the reply is unusable, it is extracted: the title, the headings (or
the most frequent terms) as topics, and the sentences closest to the
document's centroid, quoted verbatim. A summary never fails a document.
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

import numpy as np
from django.core.exceptions import ImproperlyConfigured

from knowledge.clients.embedding import embed_for_ranking
from knowledge.clients.llm import LLMConfig, LLMError, complete, llm_config
from knowledge.ingestion.headers import title_from_filename
from knowledge.ingestion.types import ChunkDraft
from knowledge.models.documents import summary_router_text
from knowledge.text.json_reply import json_object, text_field, text_list
from knowledge.text.sentences import split_sentences
from knowledge.text.words import STOPWORDS, WORD, stem

logger = logging.getLogger(__name__)

CENTRAL_CHUNKS = 5
SUMMARY_SENTENCES = 3
SUMMARY_CHARS = 900
MAX_TOPICS = 8
LLM_EXCERPT_CHARS = 600
LLM_HEADINGS = 40
LLM_MAX_TOKENS = 400

DOCUMENT_TYPES = {
    ".pdf": "PDF document",
    ".docx": "Word document",
    ".pptx": "Slide deck",
    ".xlsx": "Spreadsheet",
    ".csv": "Spreadsheet (CSV)",
    ".html": "Web page",
    ".htm": "Web page",
    ".md": "Markdown document",
    ".markdown": "Markdown document",
    ".txt": "Text document",
    ".rst": "Text document",
}
OPENAPI_TYPE = "OpenAPI specification"
# Headings that say nothing about what a document is about.
BOILERPLATE_HEADINGS = frozenset(
    (
        "see also", "references", "external links", "notes", "further reading", "bibliography",
        "contents", "table of contents", "other", "index", "acknowledgements", "acknowledgments",
        "footnotes", "sources", "citations",
    )
)  # fmt: skip
# Early text describes a document best (the lead of an article, a paper's abstract).
POSITION_WEIGHT = 0.3
MIN_SUMMARY_WORDS = 10
# Sentences ranked for the summary: the first ones of the opening and the most central chunks,
# in document order. The position weight favours early sentences, and on 26 corpus documents
# every chosen sentence was among the first 12 candidates (with 8, one summary changed); each
# candidate is one more encoder call the pipeline waits for.
CANDIDATE_SENTENCES = 16
# Reference lists, quotations and markup are central to nothing a reader wants.
_NOT_SUMMARY = re.compile(r'^["“]|[>|]|https?:|\bArchived\b|\bRetrieved\b')
URL_WORDS = frozenset(("http", "https", "www", "wiki", "wikipedia", "html"))
# The summary is made while the pipeline's encoder is idle: its sentence batches take every core
# (one onnxruntime thread each; the vectors are the same as on one thread).
SENTENCE_WORKERS = max(1, min(4, os.cpu_count() or 1))

SUMMARY_SYSTEM_PROMPT = (
    "You describe a document for a router that decides which documents can answer a question. "
    "Use only the excerpts given. Reply with JSON only, no prose: "
    '{"document_type": "what kind of document it is, e.g. Rate Manual, API reference", '
    '"summary": "two to four sentences on what it contains", '
    '"key_topics": ["three to eight short topics"], '
    '"use_for": "the questions it answers, e.g. pricing, rating calculations"}'
)


@dataclass
class SummaryDraft:
    document_type: str
    summary: str
    key_topics: list[str] = field(default_factory=list)
    use_for: str = ""
    method: str = "extractive"
    model: str = ""
    note: str = ""
    input_tokens: int = 0
    output_tokens: int = 0

    def router_text(self) -> str:
        return summary_router_text(self.document_type, self.summary, self.key_topics, self.use_for)


def summary_draft(
    *, filename: str, title: str, drafts: Sequence[ChunkDraft], vectors: np.ndarray
) -> SummaryDraft:
    """The LLM's summary when an LLM is configured and answers usably, else the extracted one."""
    return summary_by(summary_writer(), filename=filename, title=title, drafts=drafts, vectors=vectors)


@dataclass(frozen=True)
class SummaryWriter:
    """Who writes a summary: the LLM, or nobody (it is extracted), with a note when the LLM's
    configuration was refused."""

    llm: LLMConfig | None = None
    note: str = ""


def summary_writer() -> SummaryWriter:
    """Read once (it reads the database): the summary itself may then be made in any thread."""
    try:
        llm = llm_config()
    except ImproperlyConfigured as exc:
        return SummaryWriter(note=f"LLM configuration refused ({exc}); extracted instead")
    return SummaryWriter(llm=llm if llm.configured else None)


def summary_by(
    writer: SummaryWriter,
    *,
    filename: str,
    title: str,
    drafts: Sequence[ChunkDraft],
    vectors: np.ndarray,
    model: str | None = None,
) -> SummaryDraft:
    """The summary ``writer`` makes: the LLM's if it answers usably, else the extracted one.
    ``model`` is the embedding model of ``vectors`` (default: KNOWLEDGE_EMBEDDING_MODEL)."""
    extracted = extractive_summary(
        filename=filename, title=title, drafts=drafts, vectors=vectors, model=model
    )
    extracted.note = writer.note
    if writer.llm is None:
        return extracted
    try:
        return llm_summary(
            writer.llm, filename=filename, title=title, drafts=drafts, vectors=vectors, fallback=extracted
        )
    except (LLMError, ValueError) as exc:
        logger.warning("LLM summary of %s unusable, extracted instead: %s", filename, exc)
        extracted.note = f"the LLM's summary was unusable ({exc}); extracted instead"
        return extracted


# -- extracted ------------------------------------------------------------------


def extractive_summary(
    *, filename: str, title: str, drafts: Sequence[ChunkDraft], vectors: np.ndarray, model: str | None = None
) -> SummaryDraft:
    # Only a real title opens the summary (and is left out of the topics): a title that is just the
    # file name ("pasa. PaSa…", "flag_day. National…") reads as noise.
    real_title = title if title and title.lower() != title_from_filename(filename).lower() else ""
    topics = key_topics(drafts, title=real_title)
    name = title or title_from_filename(filename)
    # What the document says it is (its abstract or first paragraph); the most central sentences only
    # when its opening says nothing usable.
    sentences = lead_sentences(drafts) or central_sentences(drafts, vectors, model=model)
    body = " ".join(sentences) if sentences else _opening(drafts[central_chunk_order(vectors)[0]].content)
    summary = f"{real_title}. {body}" if real_title and not body.startswith(real_title) else body
    return SummaryDraft(
        document_type=document_type(filename, drafts),
        summary=_cut(summary, SUMMARY_CHARS),
        key_topics=topics,
        use_for=f"Questions about {', '.join(topics[:5])}" if topics else f"Questions about {name}",
    )


# Where a paper's abstract starts ("Abstract", "ABSTRACT:", "Abstract —"), in its first passages.
_ABSTRACT = re.compile(r"\b(?:Abstract|ABSTRACT)\b\s*[:.—–-]?\s*")
LEAD_CHUNKS = 3
# Latin filler ("Lorem ipsum dolor sit amet…"): a sentence holding several of these words is not the
# document speaking. Common Latin words only; English never holds two of them.
_PLACEHOLDER_WORDS = frozenset(
    (
        "lorem", "ipsum", "dolor", "amet", "consectetur", "adipiscing", "elit", "aenean", "curabitur",
        "phasellus", "pellentesque", "vestibulum", "fusce", "nunc", "eget", "duis", "turpis", "pulvinar",
        "nisl", "mauris", "morbi", "nulla", "donec", "quisque", "tempor", "sollicitudin", "lectus",
    )
)  # fmt: skip


def is_placeholder(sentence: str) -> bool:
    """Lorem-ipsum filler rather than the document's own words."""
    words = {word.lower() for word in WORD.findall(sentence)}
    return len(words & _PLACEHOLDER_WORDS) >= 2


def lead_sentences(drafts: Sequence[ChunkDraft]) -> list[str]:
    """What a document says it is: its abstract when its first passages have one, else the first
    paragraph that reads as prose (no quotation, markup or filler), up to SUMMARY_SENTENCES."""
    if document_type("", drafts) == OPENAPI_TYPE:
        return api_outline(drafts)
    opening = [plain_text(draft.content) for draft in drafts[:LEAD_CHUNKS]]
    for text in opening:
        abstract = _ABSTRACT.search(text)
        if abstract:
            sentences = _describing(text[abstract.end() :])
            if sentences:
                return sentences
    for text in opening:
        sentences = _describing(text)
        if sentences:
            return sentences
    return []


# Operations and schemas an API spec's summary names before "and N more".
OUTLINE_NAMES = 5


def api_outline(drafts: Sequence[ChunkDraft]) -> list[str]:
    """An API spec said in two sentences: its operations and its schemas, the first few by name.
    (Operation descriptions are often filler; the spec's shape is what it is.)"""
    operations = _named(drafts, "operation=")
    schemas = [name.partition("/")[2] for name in _named(drafts, "component=schemas/")]
    sentences = []
    if operations:
        sentences.append(f"An API of {_counted(operations, 'operation')}.")
    if schemas:
        sentences.append(f"It defines {_counted(schemas, 'schema')}.")
    return sentences


def _named(drafts: Sequence[ChunkDraft], prefix: str) -> list[str]:
    refs = (d.section.source_ref for d in drafts)
    return list(dict.fromkeys(ref.partition("=")[2] for ref in refs if ref.startswith(prefix)))


def _counted(names: list[str], noun: str) -> str:
    shown = ", ".join(names[:OUTLINE_NAMES])
    more = f" and {len(names) - OUTLINE_NAMES} more" if len(names) > OUTLINE_NAMES else ""
    return f"{len(names)} {noun}{'s' if len(names) != 1 else ''}: {shown}{more}"


def _describing(text: str) -> list[str]:
    """The first sentences of ``text`` that describe something, up to SUMMARY_SENTENCES."""
    sentences = []
    for sentence in split_sentences(" ".join(text.split())):
        usable = (
            len(sentence.split()) >= MIN_SUMMARY_WORDS
            and not _NOT_SUMMARY.search(sentence)
            and not is_placeholder(sentence)
        )
        if usable:
            sentences.append(sentence)
        elif sentences:
            break  # the paragraph ended (a heading, a list, a quotation)
        if len(sentences) == SUMMARY_SENTENCES:
            break
    return sentences


def document_type(filename: str, drafts: Sequence[ChunkDraft]) -> str:
    refs = (d.section.source_ref for d in drafts[:50])
    if any(ref.startswith(("operation=", "component=")) for ref in refs):
        return OPENAPI_TYPE
    return DOCUMENT_TYPES.get(PurePath(filename).suffix.lower(), "Document")


def key_topics(drafts: Sequence[ChunkDraft], *, title: str = "") -> list[str]:
    """The headings that carry the most text (in document order), else the most frequent terms."""
    weight: Counter[str] = Counter()
    for draft in drafts:
        section = draft.section
        label = section.heading_path[-1] if section.heading_path else (section.sheet or "")
        label = " ".join(label.split())
        if label and label.lower() not in {title.lower(), *BOILERPLATE_HEADINGS}:
            weight[label] += draft.token_count
    if weight:
        chosen = {label for label, _ in weight.most_common(MAX_TOPICS)}
        return [label for label in weight if label in chosen]  # Counter keeps first-seen order
    return frequent_terms(drafts)


def frequent_terms(drafts: Sequence[ChunkDraft], limit: int = 6) -> list[str]:
    """The most frequent words (one spelling per stem), for documents without headings."""
    counts: Counter[str] = Counter()
    spelling: dict[str, str] = {}
    for draft in drafts:
        for word in WORD.findall(plain_text(draft.content).lower()):
            if len(word) > 3 and word not in STOPWORDS | URL_WORDS and not word.isdigit():
                root = stem(word)
                counts[root] += 1
                spelling.setdefault(root, word)
    return [spelling[stem] for stem, _ in counts.most_common(limit)]


def central_chunk_order(vectors: np.ndarray) -> np.ndarray:
    """Chunk indexes, closest to the document's centroid first."""
    centroid = vectors.mean(axis=0)
    norm = np.linalg.norm(centroid)
    if norm == 0:
        return np.arange(len(vectors))
    return np.argsort(-(vectors @ (centroid / norm)), kind="stable")


def central_sentences(
    drafts: Sequence[ChunkDraft], vectors: np.ndarray, *, model: str | None = None
) -> list[str]:
    """The sentences of the most central chunks that are closest to the centroid, in document order."""
    central = sorted({0, *central_chunk_order(vectors)[:CENTRAL_CHUNKS].tolist()})
    candidates = [
        (index, position, sentence)
        for index in central
        for position, sentence in enumerate(split_sentences(plain_text(drafts[index].content)))
        if len(sentence.split()) >= MIN_SUMMARY_WORDS and not _NOT_SUMMARY.search(sentence)
    ][:CANDIDATE_SENTENCES]
    if not candidates:
        return []
    centroid = vectors.mean(axis=0)
    sentences = [sentence for _, _, sentence in candidates]
    # In the chunks' model: the centroid is one of its vectors.
    sentence_vectors = embed_for_ranking(sentences, workers=SENTENCE_WORKERS, model=model)
    early = np.array([1.0 - index / len(drafts) for index, _, _ in candidates])
    score = sentence_vectors @ centroid + POSITION_WEIGHT * early
    best = np.argsort(-score, kind="stable")[:SUMMARY_SENTENCES]
    chosen = sorted(candidates[i] for i in best.tolist())
    return list(dict.fromkeys(sentence for _, _, sentence in chosen))


# -- by the LLM -----------------------------------------------------------------


def llm_summary(llm, *, filename, title, drafts, vectors, fallback: SummaryDraft) -> SummaryDraft:
    """The LLM's summary; LLMError or ValueError when the call fails or the reply is unusable."""
    result = complete(
        llm, summary_messages(filename, title, drafts, vectors, fallback), max_tokens=LLM_MAX_TOKENS
    )
    data = json_object(result.text)
    return SummaryDraft(
        document_type=text_field(data, "document_type", max_chars=200),
        summary=text_field(data, "summary", max_chars=2000),
        key_topics=text_list(data, "key_topics", max_items=12, max_chars=200),
        use_for=text_field(data, "use_for", max_chars=1000),
        method="llm",
        model=result.model,
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
    )


def summary_messages(filename, title, drafts, vectors, fallback: SummaryDraft) -> list[dict]:
    order = central_chunk_order(vectors)[:CENTRAL_CHUNKS].tolist()
    excerpts = [drafts[0]] + [drafts[i] for i in sorted(order) if i != 0]
    headings = list(dict.fromkeys(h for d in drafts for h in d.section.heading_path))[:LLM_HEADINGS]
    text = "\n\n".join(f"[{d.section.source_ref}] {_cut(d.content, LLM_EXCERPT_CHARS)}" for d in excerpts)
    user = (
        f"File: {filename}\nTitle: {title or '(none)'}\nFormat: {fallback.document_type}\n"
        f"Headings: {'; '.join(headings) or '(none)'}\n\nExcerpts:\n{text}"
    )
    return [{"role": "system", "content": SUMMARY_SYSTEM_PROMPT}, {"role": "user", "content": user}]


def plain_text(text: str) -> str:
    """Markdown links and emphasis reduced to their words (a summary is read, not quoted)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"(\*\*|__|\*|`)(\S(?:.*?\S)?)\1", r"\2", text)


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _opening(text: str) -> str:
    return _cut(text, 300)
