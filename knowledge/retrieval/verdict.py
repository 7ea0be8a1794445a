"""The answerability verdict of one retrieval: its evidence read from what the searches found,
then knowledge.retrieval.answerability's decision (the rules and their figures are there).

The lexical statistics the search already read give each of the question's words' chunk count over
the searched scope: the absent share, the coverage of the best chunk, the names never mentioned and
the words a closest match must hold all come from them, with no further scan.
"""

from __future__ import annotations

from dataclasses import replace

from django.conf import settings

from knowledge.retrieval import lexical
from knowledge.retrieval.answer_type import asked_kind, holds_kind
from knowledge.retrieval.answerability import (
    AGREEMENT_RANK,
    MAX_CLOSEST,
    Checks,
    Evidence,
    Verdict,
    coverage_of,
    holds_question,
    margin_of,
    overrulable,
    overruled,
    question_language,
    verdict_for,
)
from knowledge.retrieval.models_in_scope import available, embedding_reads_any
from knowledge.retrieval.named_terms import missing_named_terms
from knowledge.retrieval.scope import Scope
from knowledge.retrieval.scoring import Candidate
from knowledge.retrieval.typical import typical_similarity
from knowledge.text.words import is_grammatical_bigram, mostly_without_spaces


def retrieval_verdict(
    search, candidates: list[Candidate], chosen: list[Candidate], passages: list, config: dict
) -> Verdict:
    """The verdict on the best chunks chosen (``passages``: them loaded), from what both searches
    found; ``search`` is the retrieval's question, scope, statistics and models."""
    checks = Checks.from_config(config)
    evidence = answerability_evidence(
        search.question, candidates, chosen, search.scope, terms=search.terms, models=search.models
    )
    evidence = replace(evidence, **_explained_findings(search, candidates, passages, checks))
    verdict = verdict_for(
        evidence,
        min_answerability=config["minAnswerability"],
        min_relevance=config["minRelevanceScore"],
        # No vector (the embedding endpoint failed): no cosine to hold a floor against.
        similarity_floor=bool(available(search.vectors))
        and embedding_reads_any(search.question, search.models),
        checks=checks,
    )
    if overrulable(verdict, checks) and _closest_holds_question(search, chosen):
        return overruled(verdict)
    return verdict


# The best passages the answer-type test reads: those an extracted answer quotes from
# (knowledge.synthesis.extractive.MAX_SOURCES).
TOP_FOR_ANSWER_TYPE = 5


def _explained_findings(search, candidates: list[Candidate], passages: list, checks: Checks) -> dict:
    """The findings of the tests that say why (only those switched on are computed)."""
    findings: dict = {}
    if checks.language:
        findings["language"], findings["english_only"] = question_language(
            search.question, models=search.models
        )
    if checks.missing_terms and search.terms is not None:
        missing = missing_named_terms(
            search.question, search.terms.df, chunk_ids=[c.chunk_id for c in candidates]
        )
        findings["missing_terms"] = () if missing and _other_script(passages) else missing
    kind = asked_kind(search.question) if checks.answer_type else None
    if kind:
        top = passages[:TOP_FOR_ANSWER_TYPE]
        findings["asked_kind"] = kind
        findings["kind_found"] = any(holds_kind(kind, item.chunk.content) for item in top)
    return findings


def _other_script(passages: list) -> bool:
    """The best passage is written mostly without spaces (Japanese, Chinese, Korean, Thai): an
    English question's names are spelled in that script there ("New Year's Eve" is 大晦日 in the
    sales sheet), so an English name found nowhere is no evidence."""
    return bool(passages) and mostly_without_spaces(passages[0].chunk.content)


def _closest_holds_question(search, chosen: list[Candidate]) -> bool:
    """Whether one of the closest matches (those a refusal lists) would pass as the answer."""
    terms = search.terms
    if terms is None:
        return False
    used = {lexeme for lexeme, df in terms.df.items() if df > 0 and not is_grammatical_bigram(lexeme)}
    weights = dict.fromkeys(used, 1.0)
    return any(
        holds_question(used=used, held=_lexemes_held(c, weights, terms), similarity=c.similarity)
        for c in chosen[:MAX_CLOSEST]
    )


def answerability_evidence(
    question, candidates: list[Candidate], chosen: list[Candidate], scope, *, terms=None, models=None
) -> Evidence:
    similarities = [c.similarity for c in candidates if c.dense_rank is not None]
    if not chosen or not similarities:
        return Evidence(
            best_similarity=max(similarities, default=0.0), margin=0.0, coverage=0.0, agreement=0.0
        )
    best = chosen[0]
    weights = lexical.question_term_weights(
        query=question, scope_sql=scope.sql(), scope_params=scope.params(), stats=terms
    )
    present = _lexemes_held(best, weights, terms)
    top_dense = min((c for c in candidates if c.dense_rank is not None), key=lambda c: c.dense_rank)
    agree = top_dense.lexical_rank is not None and top_dense.lexical_rank <= AGREEMENT_RANK
    best_similarity = max(similarities)
    typical = _typical(scope, terms, models or _models_of(terms))
    return Evidence(
        best_similarity=best_similarity,
        margin=margin_of(similarities),
        coverage=coverage_of(weights, present),
        agreement=1.0 if agree else 0.0,
        absent=absent_share(terms),
        absent_words=sum(1 for df in terms.df.values() if df == 0) if terms is not None else 0,
        relative_similarity=best_similarity / typical if typical else None,
    )


def _models_of(terms: lexical.ScopeStatistics | None) -> tuple[str, ...]:
    if terms is not None and terms.models:
        return tuple(terms.models)
    return (settings.KNOWLEDGE_EMBEDDING_MODEL,)


def _typical(scope: Scope, terms: lexical.ScopeStatistics | None, models: tuple[str, ...]) -> float | None:
    """A typical answer's cosine in scope, under its one model: two models' cosines are not on one
    scale, so a scope that mixes models has no yardstick (the verdict then ignores it)."""
    if terms is None or len(models) != 1:
        return None
    return typical_similarity(scope.of_model(models[0]), chunks=terms.chunks)


def absent_share(terms: lexical.ScopeStatistics | None) -> float:
    """The share of the question's lexemes that no chunk in scope holds (0 without statistics)."""
    if terms is None or not terms.df:
        return 0.0
    return sum(1 for df in terms.df.values() if df == 0) / len(terms.df)


def _lexemes_held(best: Candidate, weights: dict[str, float], terms) -> set[str]:
    """Which of the question's lexemes the chunk holds: known from its lexical hit when the search
    scored every lexeme the scope holds (a round trip saved), else read from its vector."""
    scored_all = terms is not None and sum(df > 0 for df in terms.df.values()) <= lexical.MAX_TERMS
    if best.lexemes is not None and scored_all:
        return set(best.lexemes) & set(weights)
    return lexical.chunk_lexemes(chunk_id=best.chunk_id, lexemes=list(weights))
