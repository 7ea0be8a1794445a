"""The grounding check (docs/design.md#agents): is every claim of the answer supported by its sources?

With an LLM, a separate call lists the answer's claims and whether each is
supported by the numbered sources: strictly (stated in them) or leniently
(stated, or a reasonable inference). An extracted answer is checked
mechanically: every quote must be its source's own text. When the answer
cannot be fixed by retrying, ``supported_only`` keeps the sentences that hold
no unsupported claim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from knowledge.clients.llm import LLMError
from knowledge.synthesis.extractive import normalise
from knowledge.text.json_reply import json_object, text_field
from knowledge.text.words import content_terms

SOURCE_CHARS = 1500
STRICT = (
    "A claim is supported only if a source states it directly; an inference, a calculation not shown "
    "in the sources, or outside knowledge is unsupported."
)
LENIENT = (
    "A claim is supported if a source states it or it follows from the sources by a reasonable, "
    "direct inference; outside knowledge is unsupported."
)
CHECK_PROMPT = (
    "Check an answer against its numbered sources. List every factual claim the answer makes and "
    "whether the sources support it. {rule} Reply with JSON only: "
    '{{"claims": [{{"claim": "...", "supported": true | false, "sources": [n]}}]}}'
)
_QUOTE = re.compile(r'^- "(.+)" \[Source (\d+)\]$', re.MULTILINE)
_SENTENCE = re.compile(r"(?<=[.!?\]])\s+(?=[A-Z0-9\"'(])")
# A sentence holds a claim when most of the claim's content words are in it.
CLAIM_OVERLAP = 0.6


@dataclass
class Check:
    grounded: bool | None  # None: could not be checked
    method: str  # llm | verbatim | skipped
    claims: list[dict] = field(default_factory=list)
    note: str = ""

    @property
    def unsupported(self) -> list[str]:
        return [c["claim"] for c in self.claims if not c["supported"]]

    def as_detail(self) -> dict:
        return {
            "grounded": self.grounded,
            "claims": len(self.claims),
            "unsupported": self.unsupported,
        }


def check(answer_text: str, sources: list, *, extracted: bool, strict: bool, ask, cited: int) -> Check:
    """``sources``: the context's RetrievedChunks in [Source N] order; ``ask`` None without an LLM.

    ``cited`` is how many valid [Source N] markers the answer has: an LLM answer
    that cites nothing is unsupported as a whole, with no call needed.
    """
    if extracted:
        return check_quotes(answer_text, sources)
    if cited == 0:
        claim = {"claim": " ".join(answer_text.split())[:500], "supported": False, "sources": []}
        return Check(False, "citations", [claim], note="the answer cites none of its sources")
    if ask is None:
        return Check(None, "skipped", note="no LLM configured")
    try:
        return _llm_check(answer_text, sources, strict, ask)
    except (LLMError, ValueError) as exc:
        return Check(None, "llm", note=f"grounding check unusable: {exc}")


def check_quotes(answer_text: str, sources: list) -> Check:
    """Every quoted sentence of an extracted answer must be in the source it cites."""
    by_number = {s.source_number: normalise(s.chunk.content) for s in sources if s.source_number}
    claims = [
        {"claim": quote, "supported": normalise(quote) in by_number.get(int(n), ""), "sources": [int(n)]}
        for quote, n in _QUOTE.findall(answer_text)
    ]
    return Check(all(c["supported"] for c in claims), "verbatim", claims)


def _llm_check(answer_text, sources, strict, ask) -> Check:
    numbered = "\n\n".join(
        f"[Source {s.source_number}] {s.chunk.content[:SOURCE_CHARS]}" for s in sources if s.source_number
    )
    messages = [
        {"role": "system", "content": CHECK_PROMPT.format(rule=STRICT if strict else LENIENT)},
        {"role": "user", "content": f"Sources:\n{numbered}\n\nAnswer:\n{answer_text}"},
    ]
    raw = json_object(ask("check", messages, max_tokens=700).text).get("claims")
    if not isinstance(raw, list) or not raw:
        raise ValueError("'claims' must be a non-empty list")
    claims = [_claim(item) for item in raw]
    return Check(all(c["supported"] for c in claims), "llm", claims)


def _claim(item) -> dict:
    if not isinstance(item, dict) or not isinstance(item.get("supported"), bool):
        raise ValueError("each claim needs 'claim' text and 'supported' true or false")
    sources = item.get("sources") if isinstance(item.get("sources"), list) else []
    return {
        "claim": text_field(item, "claim", max_chars=500),
        "supported": item["supported"],
        "sources": sources,
    }


def supported_only(answer_text: str, unsupported: list[str]) -> tuple[str, int] | None:
    """The answer without the sentences that hold unsupported claims, and how many went.

    None when a claim cannot be located in a sentence, or nothing cited is left:
    the caller then answers by extraction instead.
    """
    sentences = [s for s in _SENTENCE.split(answer_text.strip()) if s.strip()]
    drop = set()
    for claim in unsupported:
        terms = content_terms(claim) or {claim.lower()}
        overlaps = [len(terms & content_terms(s)) / len(terms) for s in sentences]
        best = max(range(len(sentences)), key=overlaps.__getitem__, default=None)
        if best is None or overlaps[best] < CLAIM_OVERLAP:
            return None
        drop.add(best)
    kept = [s for i, s in enumerate(sentences) if i not in drop]
    if not any("[Source" in s for s in kept):
        return None
    return " ".join(kept), len(drop)
