"""Content gaps: the questions the documents could not answer, grouped by what they ask about.

An operator reads the groups to know which documents to add. The questions are the period's
unanswered turns (knowledge.services.insight: mode no_results, not a "direct" reply), the most
recent ``KNOWLEDGE_INSIGHT_GAP_QUESTIONS`` of them (default 500) so the page stays fast: embedding
500 short questions on the ONNX question encoder takes about a second on one core, and the
clustering below works on a 500 x 500 matrix.

Grouping: each question is embedded with the product's question encoder (unit vectors, so a dot
product is the cosine similarity), then clustered by average-linkage agglomeration: start with one
group per question and keep merging the two groups whose questions are, on average, most similar,
while that average is at least GAP_SIMILARITY. Average linkage (unlike "connected above the
threshold") does not chain: A~B and B~C do not pull an unrelated C into A's group.
"""

from __future__ import annotations

import datetime
from collections import Counter
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from knowledge.clients.embedding import embed_short_texts
from knowledge.services.insight import (
    UNANSWERED,
    InsightFilter,
    collection_names,
    insight_turns,
    searched_collection_ids,
)

# With all-MiniLM-L6-v2, paraphrases of one question measured 0.55 to 0.87 ("What is the parental
# leave policy?" / "How many weeks of maternity leave do employees get?": 0.55; two wordings of a
# router password reset: 0.74 to 0.87) and unrelated questions -0.07 to 0.30.
GAP_SIMILARITY = 0.5
MAX_EXAMPLES = 3


@dataclass(frozen=True)
class GapQuestion:
    question: str
    asked_at: datetime.datetime
    collection_ids: tuple[int, ...]


@dataclass(frozen=True)
class GapGroup:
    count: int
    representative: str  # the question closest, on average, to the group's others
    examples: list[str]  # up to MAX_EXAMPLES other wordings, newest first
    collections: list[str]  # the names of the collections these questions searched
    last_asked: datetime.datetime


@dataclass(frozen=True)
class ContentGaps:
    groups: list[GapGroup]
    questions: int  # unanswered questions grouped
    unanswered: int  # unanswered questions in the period
    limit: int

    @property
    def capped(self) -> bool:
        return self.unanswered > self.questions


def insight_gaps(*, scope: InsightFilter, limit: int | None = None) -> ContentGaps:
    """The period's most recent unanswered questions (at most ``limit``), grouped; largest first."""
    limit = limit or settings.KNOWLEDGE_INSIGHT_GAP_QUESTIONS
    turns = insight_turns(scope=scope).filter(UNANSWERED)
    unanswered = turns.count()
    questions = gap_questions(turns=turns.order_by("-created_at", "-pk")[:limit])
    if not questions:
        return ContentGaps(groups=[], questions=0, unanswered=unanswered, limit=limit)
    vectors = embed_short_texts([q.question for q in questions])
    names = collection_names(ids={cid for q in questions for cid in q.collection_ids})
    groups = [
        _gap_group([questions[i] for i in members], vectors[members], names)
        for members in similar_groups(vectors, threshold=GAP_SIMILARITY)
    ]
    groups.sort(key=lambda g: (-g.count, -g.last_asked.timestamp()))
    return ContentGaps(groups=groups, questions=len(questions), unanswered=unanswered, limit=limit)


def gap_questions(*, turns) -> list[GapQuestion]:
    """The turns' questions (the follow-up resolved into a whole question where there was one), each
    with the collections its session searched; newest first."""
    rows = list(
        turns.values(
            "question", "resolved_question", "created_at", "session__profile_id", "session__collection_ids"
        )
    )
    searched = searched_collection_ids(
        profile_ids={row["session__profile_id"] for row in rows if row["session__profile_id"]}
    )
    return [
        GapQuestion(
            question=" ".join((row["resolved_question"] or row["question"]).split()),
            asked_at=row["created_at"],
            collection_ids=tuple(searched(row["session__profile_id"], row["session__collection_ids"])),
        )
        for row in rows
    ]


def similar_groups(vectors: np.ndarray, *, threshold: float) -> list[list[int]]:
    """Average-linkage agglomerative clustering of unit vectors: lists of row positions, each sorted.

    ``similarity[i, j]`` holds the mean cosine similarity between the members of groups i and j;
    merging j into i replaces row i by the size-weighted mean of rows i and j (Lance-Williams), so
    each merge costs one pass over the matrix.
    """
    count = len(vectors)
    similarity = (vectors @ vectors.T).astype(np.float64)
    np.fill_diagonal(similarity, -np.inf)
    sizes = np.ones(count)
    members: dict[int, list[int]] = {i: [i] for i in range(count)}
    while len(members) > 1:
        i, j = np.unravel_index(np.argmax(similarity), similarity.shape)
        if similarity[i, j] < threshold:
            break
        merged = (sizes[i] * similarity[i] + sizes[j] * similarity[j]) / (sizes[i] + sizes[j])
        similarity[i], similarity[:, i] = merged, merged
        similarity[i, i] = -np.inf
        similarity[j], similarity[:, j] = -np.inf, -np.inf
        sizes[i] += sizes[j]
        members[i] += members.pop(j)
    return [sorted(group) for group in members.values()]


def _gap_group(questions: list[GapQuestion], vectors: np.ndarray, names: dict[int, str]) -> GapGroup:
    """``questions`` are newest first (their positions were sorted)."""
    centrality = (vectors @ vectors.T).mean(axis=1)
    representative = questions[int(np.argmax(centrality))].question
    examples = list(dict.fromkeys(q.question for q in questions if q.question != representative))
    searched = Counter(cid for q in questions for cid in q.collection_ids)
    return GapGroup(
        count=len(questions),
        representative=representative,
        examples=examples[:MAX_EXAMPLES],
        collections=[names[cid] for cid, _ in searched.most_common()],
        last_asked=max(q.asked_at for q in questions),
    )
