"""Optional per-collection reranking: with the profile's rerank endpoint, else the configured LLM
(docs/design.md#scoring, docs/operator-guide/models.md).

The positions held by chunks of reranking collections are refilled in the
order the LLM prefers; chunks of other collections keep their positions, so
collections still compete on merit. Without an LLM, or when it fails or answers
something unusable, the unreranked order stands and the reason is reported.
"""

from __future__ import annotations

import logging

from knowledge.clients.llm import LLMError, complete, llm_config
from knowledge.clients.rerank_endpoints import RerankError, RerankSpec, rerank_scores
from knowledge.models import RerankEndpoint
from knowledge.quotas import quota_tokens_record, quota_tokens_refusal
from knowledge.text.json_reply import json_object

logger = logging.getLogger(__name__)

PASSAGE_CHARS = 700
_PROMPT = (
    "Rate how well each numbered passage answers the question, from 0 (irrelevant) to 10 "
    '(answers it directly). Reply with JSON only: {"scores": [score for passage 1, passage 2, ...]}.'
)


def reranker_of(profile) -> RerankSpec | None:
    """The profile's rerank endpoint, read now (None: the LLM reranks)."""
    if profile is None or profile.reranker_id is None:
        return None
    row = RerankEndpoint.objects.filter(pk=profile.reranker_id).first()
    return RerankSpec.of(row) if row else None


def rerank(
    question: str,
    items: list,
    *,
    collection_ids: set[int],
    ask=None,
    user_id: int | None = None,
    reranker: RerankSpec | None = None,
) -> tuple[list, str]:
    """Reorder ``items`` (RetrievedChunk) of ``collection_ids``; returns (items, status).

    ``reranker`` (the profile's rerank endpoint) scores them when given; otherwise the LLM does.

    ``ask(step, messages, max_tokens=...)`` makes the call within an agentic
    answer's budget (which counts its tokens); without it, the configured LLM is called
    directly, for ``user_id``: not once their month's LLM tokens are used up (the search
    keeps its order and says why), and what it spends goes to their ledger.
    """
    positions = [i for i, item in enumerate(items) if item.chunk.collection_id in collection_ids]
    if not positions:
        return items, "skipped: no chunk from a reranking collection"
    chosen = [items[i] for i in positions]
    if reranker is not None:
        return _endpoint_reranked(question, items, positions, reranker)
    messages, max_tokens = _messages(question, chosen), 20 + 6 * len(chosen)
    if ask is None:
        config = llm_config()
        if not config.configured:
            return items, f"skipped: {config.status}"
        if refusal := quota_tokens_refusal(user_id=user_id):
            return items, f"skipped: {refusal}"

        def ask(_step, messages, max_tokens):
            result = complete(config, messages, max_tokens=max_tokens)
            if user_id is not None:
                quota_tokens_record(user_id=user_id, tokens=result.input_tokens + result.output_tokens)
            return result

    try:
        scores = parse_scores(ask("rerank", messages, max_tokens=max_tokens).text, expected=len(chosen))
    except (LLMError, ValueError) as exc:
        logger.warning("Reranking failed; keeping the retrieval order: %s", exc)
        return items, f"failed: {exc}"
    return _reordered(items, positions, scores), "reranked"


def _endpoint_reranked(
    question: str, items: list, positions: list[int], reranker: RerankSpec
) -> tuple[list, str]:
    """The operator's rerank endpoint scores the passages (each whole: the reranker reads as much
    as its model takes); on failure the order stands and the reason is reported."""
    try:
        scores = rerank_scores(reranker, question, [items[i].chunk.content for i in positions])
    except RerankError as exc:
        logger.warning("Reranking failed; keeping the retrieval order: %s", exc)
        return items, f"failed: {exc}"
    for i in positions:
        items[i].scores["reranker"] = reranker.name
    return _reordered(items, positions, scores), f"reranked by {reranker.name}"


def _reordered(items: list, positions: list[int], scores: list[float]) -> list:
    """``items`` with the chosen positions refilled best score first, each score recorded."""
    chosen = [items[i] for i in positions]
    ranked = sorted(zip(chosen, scores, strict=True), key=lambda pair: -pair[1])
    reordered = list(items)
    for position, (item, score) in zip(positions, ranked, strict=True):
        item.scores["rerank"] = score
        reordered[position] = item
    return reordered


def _messages(question: str, items: list) -> list[dict]:
    passages = "\n\n".join(
        f"[{n}] {item.chunk.content[:PASSAGE_CHARS]}" for n, item in enumerate(items, start=1)
    )
    return [
        {"role": "system", "content": _PROMPT},
        {
            "role": "user",
            "content": f"Question: {question}\n\n{count_instruction(len(items))}Passages:\n{passages}",
        },
    ]


def count_instruction(count: int) -> str:
    # Small models otherwise answer with one score for the lot.
    return f"There are {count} passages: reply with exactly {count} scores, one per passage, in order.\n\n"


def parse_scores(text: str, *, expected: int) -> list[float]:
    """The scores list from the LLM's reply; ValueError when it is not usable."""
    scores = json_object(text).get("scores")
    if not isinstance(scores, list) or len(scores) != expected:
        raise ValueError(f"expected {expected} scores")
    if not all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in scores):
        raise ValueError("scores must be numbers")
    return [float(s) for s in scores]
