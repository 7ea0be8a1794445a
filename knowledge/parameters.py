"""The knowledge parameters: each one's type, range, default and help, and their validation.

Pure (no database, no Django models), so models, forms and every layer may
import it. Resolving the value in force for a request (admin lock > per-call
override > profile > global) is knowledge.parameter_values's job.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from config.base.errors import FieldValueError


class ConfigError(FieldValueError):
    """A parameter name or value was refused; the message says why."""

    field = "overrides"


@dataclass(frozen=True)
class Parameter:
    key: str
    kind: type
    default: Any
    help_text: str
    minimum: float | None = None
    maximum: float | None = None
    max_length: int | None = None


# Multi-step retrieval (docs/design.md#agents): off unless a profile or the operator switches it on.
AGENTIC_PARAMETERS = (
    Parameter(
        "agentic.enabled",
        bool,
        False,
        "Answer with the agentic loop: classify, route, plan, expand, grade, rewrite, check grounding.",
    ),
    Parameter(
        "agentic.maxRetries",
        int,
        2,
        "Rewrites after weak grading, and retries after an ungrounded answer (each at most this).",
        0,
        5,
    ),
    Parameter("agentic.grading", bool, True, "Grade each retrieved passage's relevance with the LLM."),
    Parameter("agentic.expansion", bool, True, "Search with two or three rephrasings of the question too."),
    Parameter(
        "agentic.decomposition",
        bool,
        True,
        "Multi-hop questions: route to documents by their summaries and plan focused retrieval steps.",
    ),
    Parameter(
        "agentic.hallucinationCheck", bool, True, "Check that every claim of the answer is in its sources."
    ),
    Parameter(
        "agentic.strictCheck",
        bool,
        False,
        "Strict: every claim must be stated in the sources; lenient: reasonable inferences pass.",
    ),
    Parameter(
        "agentic.confidenceThreshold",
        float,
        0.5,
        "Minimum relevance grade (0.0-1.0) for a retrieved passage to be used.",
        0.0,
        1.0,
    ),
    Parameter(
        "agentic.minRelevant",
        int,
        2,
        "Fewer passages than this passing the grade triggers a rewrite of the query.",
        1,
        20,
    ),
    Parameter("agentic.routerTopK", int, 3, "Documents the router picks for a multi-hop question.", 1, 20),
    Parameter("agentic.maxPlanSteps", int, 4, "Most retrieval steps in a plan.", 1, 8),
    Parameter(
        "agentic.timeBudgetSeconds",
        float,
        120.0,
        "Wall-clock budget of one agentic answer; when spent, it answers with what it has.",
        5.0,
        1800.0,
    ),
    Parameter(
        "agentic.tokenBudget",
        int,
        30000,
        "LLM tokens (input + output) one agentic answer may spend; when spent, it answers with what it has.",
        1000,
        1000000,
    ),
)

PARAMETERS: dict[str, Parameter] = {
    p.key: p
    for p in (
        Parameter("maxDocs", int, 3, "Maximum chunks returned after scoring and deduplication.", 1, 100),
        Parameter(
            "minRelevanceScore",
            float,
            0.0,
            "Minimum cosine similarity (0.0-1.0); chunks below it are discarded.",
            0.0,
            1.0,
        ),
        Parameter(
            "minAnswerability",
            float,
            0.18,
            "Answerability score (0.0-1.0: best similarity, its margin, rare-word coverage, search "
            "agreement) below which the question is judged not covered by the documents; 0 never refuses.",
            0.0,
            1.0,
        ),
        Parameter(
            "refuseMissingTerms",
            bool,
            True,
            "Judge a question not covered when it names something (a product, acronym, version, year, "
            "quoted term) that no searched document mentions, and say which name is missing.",
        ),
        Parameter(
            "refuseAnswerType",
            bool,
            True,
            "Judge a question asking for a price, date or duration not covered when none of the best "
            "passages states one.",
        ),
        Parameter(
            "refuseOtherLanguages",
            bool,
            True,
            "Judge a German, French or Spanish question not covered when the collections' embedding model "
            "reads English only and the documents lack most of its words, and say how to change the model.",
        ),
        Parameter(
            "answerFromClosestMatch",
            bool,
            True,
            "Answer instead of refusing on the score when a closest passage holds every word of the "
            "question the documents use.",
        ),
        Parameter(
            "maxTokens", int, 2000, "Token budget for the knowledge context sent to the LLM.", 100, 128000
        ),
        Parameter(
            "maxChunksPerDocument", int, 0, "Maximum chunks from one document; 0 means unlimited.", 0, 100
        ),
        Parameter(
            "freshnessWeight",
            float,
            0.0,
            "Blend of relevance and freshness: 0.0 pure relevance, 1.0 pure freshness.",
            0.0,
            1.0,
        ),
        Parameter(
            "freshnessDecayRate",
            float,
            0.005,
            "Exponential decay per day of a document's age in the freshness score.",
            0.0,
            1.0,
        ),
        Parameter(
            "synthesisPromptOverride",
            str,
            "",
            "Custom system prompt for synthesis; replaces the default when not empty.",
            max_length=20000,
        ),
        Parameter(
            "hybrid", bool, True, "Fuse lexical (full-text) with semantic search; off = semantic only."
        ),
        Parameter(
            "semanticWeight",
            float,
            0.65,
            "Weight of the semantic search in the fusion (the lexical search has the rest).",
            0.0,
            1.0,
        ),
        Parameter(
            "spreadSources",
            bool,
            True,
            "Rank each page's or section's best chunk before any page's second chunk.",
        ),
        Parameter(
            "scoreFusion",
            bool,
            True,
            "Fuse the two searches by their scores, each divided by its best hit's, weighted by "
            "semanticWeight; off = by rank (Reciprocal Rank Fusion with rrfK).",
        ),
        Parameter(
            "rrfK", int, 60, "Smoothing constant k of Reciprocal Rank Fusion (scoreFusion off).", 1, 1000
        ),
        Parameter(
            "queryIntent",
            bool,
            False,
            "Narrow API-spec chunks to operations or schemas when the question's wording asks for one.",
        ),
        *AGENTIC_PARAMETERS,
    )
}


# The parameters in words, for the profile page and the admin alike: groups, each with a name, and per
# parameter a label and one sentence a user understands. Groups marked advanced sit behind a
# disclosure; a parameter missing here lands in OTHER_GROUP under its key in words and its help text.
PARAMETER_GROUPS = [
    (
        "What an answer draws on",
        False,
        {
            "maxDocs": ("Passages per answer", "How many passages, at most, an answer is built from."),
            "maxChunksPerDocument": (
                "Passages from one document",
                "Stops one long document from crowding out the others (0: no limit).",
            ),
            "minRelevanceScore": (
                "Minimum relevance",
                "Passages less similar to the question than this (0 to 1) are left out.",
            ),
            "minAnswerability": (
                "When to say “nothing on this”",
                "Below this confidence (0 to 1) the answer says the documents do not cover the question "
                "instead of guessing (0: never).",
            ),
            "hybrid": ("Match exact words too", "Combine word matching with meaning-based search."),
        },
    ),
    (
        "When to say “nothing on this”",
        True,
        {
            "refuseMissingTerms": (
                "Names the documents never mention",
                "Say so when the question names something no searched document mentions.",
            ),
            "refuseAnswerType": (
                "Prices, dates and durations",
                "Say so when the question asks for one and no passage found states one.",
            ),
            "refuseOtherLanguages": (
                "Questions the model cannot read",
                "Say so when a question in German, French or Spanish meets an English-only model.",
            ),
            "answerFromClosestMatch": (
                "Answer from a close passage",
                "Quote a passage holding all of the question's words rather than refuse on the score.",
            ),
        },
    ),
    (
        "Newer documents first",
        False,
        {
            "freshnessWeight": (
                "Weight of freshness",
                "0 ranks by relevance only; towards 1, newer documents rank higher.",
            ),
            "freshnessDecayRate": (
                "How fast documents age",
                "How quickly a document's freshness fades per day.",
            ),
        },
    ),
    (
        "The language model",
        True,
        {
            "maxTokens": ("Context size", "How much text (in tokens) from your documents the model reads."),
            "synthesisPromptOverride": (
                "Instructions to the model",
                "Replaces the default instructions for writing answers; leave empty for the default.",
            ),
            "agentic.enabled": (
                "Multi-step answering",
                "The model plans searches, checks passages and verifies its answer (slower, needs a model).",
            ),
        },
    ),
    (
        "Search ranking",
        True,
        {
            "semanticWeight": (
                "Weight of meaning-based search",
                "How much meaning counts against exact words.",
            ),
            "rrfK": (
                "Rank fusion smoothing",
                "Higher values flatten the difference between top and lower ranks.",
            ),
            "spreadSources": (
                "One passage per page first",
                "Show the best passage of each page or section before a second passage of any.",
            ),
            "queryIntent": (
                "Guess API questions' target",
                "Search only an API spec's operations, or only its schemas, when the question asks for one.",
            ),
        },
    ),
]
OTHER_GROUP = "Multi-step answering in detail"


def parameter_order() -> list[str]:
    """Every parameter key in the order pages show them: by group, as declared; the others last."""
    grouped = [key for _, _, described in PARAMETER_GROUPS for key in described]
    return grouped + [key for key in PARAMETERS if key not in grouped]


def parameter_words(key: str) -> tuple[str, str, str]:
    """(group, label, sentence) of a parameter, as pages and the admin show it."""
    for group, _, described in PARAMETER_GROUPS:
        if key in described:
            label, text = described[key]
            return group, label, text
    return OTHER_GROUP, _humanised(key), parameter(key).help_text


def value_in_words(key: str, value: Any) -> str:
    """A value as pages and the admin show it: switches as on/off, empty text as "(empty)"."""
    if parameter(key).kind is bool and isinstance(value, bool):
        return "on" if value else "off"
    if value == "":
        return "(empty)"
    return str(value)


def _humanised(key: str) -> str:
    """'agentic.timeBudgetSeconds' -> 'Time budget seconds'."""
    words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", key.rpartition(".")[2]).lower()
    return words[:1].upper() + words[1:]


def parameter(key: str) -> Parameter:
    try:
        return PARAMETERS[key]
    except KeyError:
        known = ", ".join(PARAMETERS)
        raise ConfigError(f"unknown parameter {key!r}; known parameters: {known}") from None


def validate_value(key: str, raw: Any) -> Any:
    """Return ``raw`` as the parameter's type, or raise ConfigError saying what is wrong.

    Strings are parsed (they come from the command line and forms); other
    values must already have the right JSON type.
    """
    spec = parameter(key)
    value = _coerce(spec, raw)
    _check_range(spec, value)
    return value


def validate_overrides(overrides: Any) -> dict[str, Any]:
    if not isinstance(overrides, dict):
        raise ConfigError("overrides must be an object mapping parameter names to values")
    return {key: validate_value(key, value) for key, value in overrides.items()}


def _coerce(spec: Parameter, raw: Any) -> Any:
    if spec.kind is str:
        if not isinstance(raw, str):
            raise ConfigError(f"{spec.key} must be text, got {json.dumps(raw)}")
        return raw
    if spec.kind is bool:
        return _coerce_bool(spec, raw)
    if isinstance(raw, bool):
        raise ConfigError(f"{spec.key} must be a number, got {json.dumps(raw)}")
    if isinstance(raw, str):
        raw = _parse_number(spec, raw)
    if spec.kind is int:
        if isinstance(raw, float) and raw.is_integer():
            raw = int(raw)
        if not isinstance(raw, int):
            raise ConfigError(f"{spec.key} must be a whole number, got {raw!r}")
        return raw
    if not isinstance(raw, (int, float)) or not math.isfinite(raw):
        raise ConfigError(f"{spec.key} must be a number, got {raw!r}")
    return float(raw)


def _coerce_bool(spec: Parameter, raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in {"true", "1", "yes", "on"}:
        return True
    if isinstance(raw, str) and raw.strip().lower() in {"false", "0", "no", "off"}:
        return False
    raise ConfigError(f"{spec.key} must be true or false, got {raw!r}")


def _parse_number(spec: Parameter, raw: str) -> int | float:
    text = raw.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise ConfigError(f"{spec.key} must be a number, got {raw!r}") from None


def _check_range(spec: Parameter, value: Any) -> None:
    if spec.minimum is not None and value < spec.minimum:
        raise ConfigError(f"{spec.key} must be at least {spec.minimum}, got {value}")
    if spec.maximum is not None and value > spec.maximum:
        raise ConfigError(f"{spec.key} must be at most {spec.maximum}, got {value}")
    if spec.max_length is not None and len(value) > spec.max_length:
        raise ConfigError(f"{spec.key} must be at most {spec.max_length} characters, got {len(value)}")
