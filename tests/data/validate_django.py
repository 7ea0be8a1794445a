#!/usr/bin/env python3
"""Check tests/data/django_questions.jsonl against the whole Django documentation.

    .venv/bin/python tests/data/validate_django.py [--corpus ../shared/corpus] [-v]

The set is asked of a collection holding every file of django-docs (django_documents.txt), so
the checks run the product's own extract_sections over all of them:

1. every line is an object with exactly id, question, expected_sources, answer, kind; ids are
   unique; kind is fact, multi or no-answer (no-answer: no sources; multi: two or more);
2. django_documents.txt lists every file under django-docs/, once;
3. every gold document is a basename that occurs once in django-docs (an upload replaces the
   collection's document of the same name, so a shared name would make the gold ambiguous),
   and is none of the development set's five files;
4. every gold (document, source_ref) names exactly one section of that file;
5. the answer's key words occur in its gold sections: every token with a digit, and at least
   KEYWORD_COVERAGE of the other content words;
6. no answerable question shares OVERLAP_LIMIT or more consecutive words with its gold text
   (the paraphrase rule of ../shared/eval/paraphrased);
7. completeness: a section of any file that contains all of a question's EVIDENCE patterns is
   either gold or listed in NOT_ANSWERING with the reason it is not (it was read and judged not
   to answer, or it cannot be gold: a shared file name or a source_ref naming two sections);
8. no-answer questions: none of their NO_ANSWER_PROBES terms occurs in any of the files.

Exit status 0 when everything passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path, PurePosixPath

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

QUESTIONS = HERE / "django_questions.jsonl"
DOCUMENTS = HERE / "django_documents.txt"
FIELDS = {"id", "question", "expected_sources", "answer", "kind"}
MIN_SOURCES = {"fact": 1, "multi": 2, "no-answer": 0}
OVERLAP_LIMIT = 4
KEYWORD_COVERAGE = 0.8
MIN_GOLD_DOCUMENTS = 40
# The development set's files: this set must measure something else.
DEV_SET_FILES = {
    "django-docs/topics/signals.txt",
    "django-docs/topics/db/transactions.txt",
    "django-docs/topics/cache.txt",
    "django-docs/howto/csrf.txt",
    "django-docs/ref/middleware.txt",
}

# Regular expressions (case-insensitive, on whitespace-collapsed section text) that a section
# must all contain to hold the answer. Every such section of any file must be gold or below.
EVIDENCE = {
    "ref-01": ["xframe_options_exempt"],
    "ref-02": ["safe=False"],
    "ref-03": ["database is locked"],
    "ref-04": ["disable_action"],
    "ref-05": ["(410|HttpResponseGone)", "new_path"],
    "ref-06": ["ManifestStaticFilesStorage", "(far future|long-term)"],
    "ref-07": ["pluralize:"],
    "ref-08": ["parallel", "messages", "window"],
    "ref-09": ["model changes without migrations", "non-zero status"],
    "ref-10": [r"CurrentSiteManager\(\)"],
    "ref-11": [r"d1\.mi"],
    "ref-12": ["order_with_respect_to", r"set_\w+_order"],
    "ref-13": ["add_post_render_callback"],
    "ref-14": [r"StringAgg\(", "delimiter="],
    "ref-15": ["(yesterday|minutes ago)", "(naturalday|naturaltime|humanize)"],
    "ref-16": ["orphans", "(last page|overflow)"],
    "topics-01": ["AUTH_USER_MODEL", "(mid-project|after you've created database tables)"],
    "topics-02": ["tablespace.{0,200}(MySQL|MariaDB)|(MySQL|MariaDB).{0,200}tablespace"],
    "topics-03": ["(spanning multiple databases|cross-database relationships)"],
    "topics-04": ["Swiss", "separator"],
    "topics-05": ["blog_id", r"blog\.id"],
    "topics-06": ["SynchronousOnlyOperation", "(autoawait|Jupyter|IPython|create a synchronous thread)"],
    "topics-07": ["(Dictionary params|except on SQLite)"],
    "topics-08": ["extend ?= ?False"],
    "topics-09": ["serializ", "multi-table inheritance", "base class"],
    "topics-10": ["ALLOWED_HOSTS", "(running tests|test client)"],
    "topics-11": ["Too many open files", "clos"],
    "howto-01": ["unique non-nullable field"],
    "howto-02": ["INSTALLED_APPS", "(delete an application|remove the app)"],
    "howto-03": ["daphne", "ASGI_APPLICATION"],
    "howto-04": ["file association"],
    "howto-05": ['extends \\"admin/base_site\\.html\\"', r"block\.super"],
    "howto-06": ["expects_localtime=True"],
    "howto-07": ["non_db_attrs"],
    "howto-08": ["WSGIDaemonProcess", "python-path"],
    "releases-01": ["update_fields", "update_or_create"],
    "releases-02": ["UUIDField", r"MariaDB 10\.7", r"char\(32\)"],
    "releases-03": ["utf8mb4", "utf8mb3"],
    "releases-04": ["X-XSS-Protection"],
    "releases-05": ["initial_data.{0,40}fixtures"],
    "faq-01": ["Lawrence, Kansas", "(cite|citation)"],
    "faq-02": [r"chmod \+x"],
    "faq-03": ["volunteers", "(more specific|different channel)"],
    "intro-01": ["relative paths", "static"],
    "intro-02": [r"django-`*\s*prefix"],
    "intro-03": ["debug toolbar", "installation guide"],
    "misc-01": ["leading underscore"],
    "misc-02": ["security", "(compatibility guarantee|backwards compatibility)", "(trumps|unavoidable)"],
}

# Sections that match a question's EVIDENCE but were read and judged not to answer it (or that
# cannot be gold). Keys are "path under django-docs|source_ref"; values say why.
NOT_ANSWERING = {
    "ref-01": {
        "releases/5.0.txt|section=Decorators": "lists it among decorators that support async views",
        "topics/async.txt|section=Decorators": "lists it among decorators that support async views",
    },
    "ref-12": {
        "releases/1.8.7.txt|section=Bugfixes": "a crash fix",
    },
    "ref-13": {
        "ref/template-response.txt|section=Methods": "answers too; two sections are titled Methods",
    },
    "topics-03": {
        "topics/db/multi-db.txt|section=Behavior of contrib apps": "contrib models only",
    },
    "topics-05": {
        "ref/models/querysets.txt|section=extra()": "in example SQL only",
    },
    "topics-09": {
        'topics/db/models.txt|section=Field name "hiding" is not permitted': "models.txt is not unique",
    },
    "topics-10": {
        "releases/1.11.txt|section=Miscellaneous": "answers too, but two sections are titled Miscellaneous",
        "ref/settings.txt|section=ALLOWED_HOSTS": "a pointer only; settings.txt is not unique",
        "releases/1.3.6.txt|section=Host header poisoning": "says tests skip the validation (true then)",
        "releases/1.4.4.txt|section=Host header poisoning": "says tests skip the validation (true then)",
    },
    "howto-07": {
        "howto/custom-model-fields.txt|section=Field deconstruction": "a pointer only",
    },
    "releases-02": {
        "releases/5.0.txt|section=Models": "announces the change, not what to do",
        "ref/models/fields.txt|section=UUIDField": "column types only; fields.txt is not unique",
    },
    "releases-04": {
        "ref/checks.txt|section=Security": "a system check removed in 3.0",
    },
    "intro-01": {
        "ref/contrib/staticfiles.txt|section=findstatic": "findstatic arguments",
        "releases/1.7.txt|section=django.contrib.staticfiles": "findstatic output",
        "releases/3.1.txt|section=Miscellaneous": "unrelated",
    },
    "misc-01": {
        "releases/1.8.txt|section=django.forms.Field._has_changed()": "one method's rename",
    },
}

# Terms an answer to each no-answer question would need (a trailing * makes a prefix; matching
# is on whole words, case-insensitive). None may occur in any of the 656 files.
NO_ANSWER_PROBES = {
    "noanswer-01": ["graphql*", "graphene"],
    "noanswer-02": [
        "two-factor",
        "two factor",
        "multi-factor",
        "mfa",
        "2fa",
        "totp",
        "authenticator app*",
        "one-time code*",
    ],
    "noanswer-03": ["soft-delet*", "deleted_at", "is_deleted", "undelete*", "soft_delete"],
    "noanswer-04": ["thumbnail*", "image resiz*", "resize the image*", "resized cop*"],
    "noanswer-05": [
        "livereload",
        "live reload*",
        "live-reload*",
        "hot reload*",
        "refresh the browser",
        "reload the browser",
        "browser refresh*",
        "auto-refresh*",
    ],
    "noanswer-06": ["openapi", "swagger", "api schema*"],
    "noanswer-07": ["push notification*", "firebase", "apns", "fcm"],
    "noanswer-08": ["jwt", "json web token*", "bearer"],
    "noanswer-09": ["cors", "access-control-allow*", "cross-origin resource sharing"],
    "noanswer-10": ["fts5", "fts4", "fts3"],
    "noanswer-11": ["csv import*", "import from csv", "importing csv", "import-export", "import button"],
    "noanswer-12": ["prometheus", "opentelemetry", "/metrics", "metrics endpoint*", "scrape*"],
}

STOPWORDS = frozenset(
    """a about above after again all also an and any are as at be because been before being both
    but by can could did do does doing each either else for from had has have having he her here
    him his how i if in into is it its itself just like may more most much must no nor not now of
    off on once only or other our out over own same she should so some such than that the their
    them then there these they this those through to too under until up very was we were what when
    where which while who whom why will with would yes you your one two three four five six seven
    eight nine ten per via e.g i.e etc""".split()
)


def normalise(text: str) -> str:
    """Lowercase, NFKC, plain dashes and quotes, no thousands separators, one space."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[\u2010-\u2015\u2212]", "-", text)
    text = re.sub(r"[\u2018\u2019]", "'", text)
    text = re.sub(r"[\u201c\u201d]", '"', text)
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    return " ".join(text.split())


def words(text: str) -> list[str]:
    return re.findall(r"\w+", unicodedata.normalize("NFKC", text).lower())


def longest_shared_run(a: list[str], b: list[str]) -> tuple[int, list[str]]:
    """Longest run of consecutive words common to a and b (dynamic programming)."""
    best, end, prev = 0, 0, [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        cur = [0] * (len(b) + 1)
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                cur[j] = prev[j - 1] + 1
                if cur[j] > best:
                    best, end = cur[j], i
        prev = cur
    return best, a[end - best : end]


def key_words(answer: str) -> list[str]:
    """Tokens of the answer that carry its content: anything with a digit, else non-stopwords."""
    tokens = re.split(r"[\s,;:!?\"'()\[\]{}]+", normalise(answer))
    out = []
    for token in tokens:
        token = token.strip(".-=*/")
        if any(c.isdigit() for c in token) or (token not in STOPWORDS and len(token) >= 3):
            out.append(token)
    return list(dict.fromkeys(out))


def found(token: str, haystack: str) -> bool:
    """Token or a simple stem of it occurs in the haystack (so "fetches" matches "fetch")."""
    forms = [token]
    for suffix in ("'s", "ies", "es", "s", "ed", "ing", "ly"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 4:
            forms.append(token[: -len(suffix)])
    return any(form in haystack for form in forms)


def probe_matches(term: str, text: str) -> bool:
    term = normalise(term)
    prefix = term.endswith("*")
    pattern = r"(?<!\w)" + re.escape(term.rstrip("*")) + (r"" if prefix else r"(?!\w)")
    return re.search(pattern, text) is not None


def load_sections(corpus: Path, paths: list[str]) -> dict[str, list[tuple[str, str]]]:
    """corpus path -> [(source_ref, title + text)] as the product's extractor cuts the file."""
    import django

    django.setup()
    from knowledge.ingestion.extract import extract_sections

    sections = {}
    for rel in paths:
        data = (corpus / rel).read_bytes()
        sections[rel] = [
            (s.source_ref, " ".join([*s.heading_path, s.text]))
            for s in extract_sections(PurePosixPath(rel).name, data)
        ]
    return sections


def read_questions(errors: list[str]) -> list[dict]:
    questions, ids = [], Counter()
    for number, line in enumerate(QUESTIONS.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"line {number}: not valid JSON: {exc}")
            continue
        if not isinstance(item, dict) or set(item) != FIELDS:
            errors.append(f"line {number}: must have exactly the fields {sorted(FIELDS)}")
            continue
        if not isinstance(item["expected_sources"], list) or not all(
            isinstance(item[k], str) and item[k].strip() for k in FIELDS - {"expected_sources"}
        ):
            errors.append(f"line {number}: expected_sources must be a list, the rest non-empty strings")
            continue
        ids[item["id"]] += 1
        questions.append(item)
    errors += [f"{qid}: id used {n} times" for qid, n in ids.items() if n > 1]
    return questions


def check_document_list(corpus: Path, paths: list[str], errors: list[str]) -> None:
    on_disk = {str(p.relative_to(corpus)) for p in (corpus / "django-docs").rglob("*") if p.is_file()}
    listed = Counter(paths)
    errors += [f"django_documents.txt lists {p} {n} times" for p, n in listed.items() if n > 1]
    errors += [f"django_documents.txt misses {p}" for p in sorted(on_disk - set(listed))]
    errors += [f"django_documents.txt lists {p}, not a file" for p in sorted(set(listed) - on_disk)]


def check_answerable(item, by_name, sections, verbose, errors) -> tuple[int, list[str]]:
    """Checks 3-7 for one answerable question; returns its shared-run length and gold keys."""
    qid, gold_keys, gold_text = item["id"], [], []
    for source in item["expected_sources"]:
        doc, ref = source["document"], source["source_ref"]
        paths = by_name.get(doc, [])
        if len(paths) != 1:
            errors.append(f"{qid}: {doc} names {len(paths)} files of django-docs")
            continue
        if paths[0] in DEV_SET_FILES:
            errors.append(f"{qid}: {paths[0]} belongs to the development set")
        matching = [text for r, text in sections[paths[0]] if r == ref]
        if len(matching) != 1:
            errors.append(f"{qid}: {doc} {ref!r} names {len(matching)} sections")
        gold_keys.append(section_key(paths[0], ref))
        gold_text += matching
    if not gold_text:
        return 0, gold_keys
    haystack = normalise("\n".join(gold_text))
    keys = key_words(item["answer"])
    missing = [k for k in keys if not found(k, haystack)]
    missing_numbers = [k for k in missing if any(c.isdigit() for c in k)]
    if missing_numbers or len(missing) > (1 - KEYWORD_COVERAGE) * len(keys):
        errors.append(f"{qid}: answer key words not in the gold sections: {missing}")
    elif verbose and missing:
        print(f"  {qid}: key words not found verbatim: {missing}")
    run, shared = max(longest_shared_run(words(item["question"]), words(t)) for t in gold_text)
    if run >= OVERLAP_LIMIT:
        errors.append(f"{qid}: shares {run} consecutive words with its gold text: {' '.join(shared)!r}")
    elif verbose:
        print(f"  {qid}: longest shared run {run}: {' '.join(shared)!r}")
    check_completeness(qid, set(gold_keys), sections, errors)
    return run, gold_keys


def check_completeness(qid, gold_keys, sections, errors) -> None:
    patterns = EVIDENCE.get(qid)
    if not patterns:
        errors.append(f"{qid}: no EVIDENCE patterns")
        return
    hits = {
        section_key(path, ref)
        for path, items in sections.items()
        for ref, text in items
        if all(re.search(p, " ".join(text.split()), re.I) for p in patterns)
    }
    judged = set(NOT_ANSWERING.get(qid, {}))
    errors += [f"{qid}: gold section holds no EVIDENCE match: {k}" for k in sorted(gold_keys - hits)]
    errors += [f"{qid}: unjudged section matches EVIDENCE: {k}" for k in sorted(hits - gold_keys - judged)]
    errors += [f"{qid}: NOT_ANSWERING entry matches no more: {k}" for k in sorted(judged - hits)]


def check_no_answer(item, sections, errors) -> None:
    probes = NO_ANSWER_PROBES.get(item["id"])
    if not probes:
        errors.append(f"{item['id']}: no NO_ANSWER_PROBES terms")
        return
    for term in probes:
        hits = [
            f"{path}|{ref}"
            for path, items in sections.items()
            for ref, text in items
            if probe_matches(term, normalise(text))
        ]
        if hits:
            errors.append(f"{item['id']}: probe {term!r} occurs in {hits[:3]}")


def section_key(path: str, ref: str) -> str:
    return f"{PurePosixPath(path).relative_to('django-docs')}|{ref}"


def part_of(path: str) -> str:
    """ref, topics, howto, releases, faq, intro, misc ... (top-level files: 'top')."""
    parts = PurePosixPath(path).parts
    return parts[1] if len(parts) > 2 else "top"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)

    errors: list[str] = []
    paths = [line.strip() for line in DOCUMENTS.read_text().splitlines() if line.strip()]
    check_document_list(args.corpus, paths, errors)
    sections = load_sections(args.corpus, paths)
    by_name: dict[str, list[str]] = {}
    for path in paths:
        by_name.setdefault(PurePosixPath(path).name, []).append(path)

    questions = read_questions(errors)
    runs, parts, gold_files = [], Counter(), set()
    for item in questions:
        kind, sources = item["kind"], item["expected_sources"]
        if kind not in MIN_SOURCES:
            errors.append(f"{item['id']}: unknown kind {kind!r}")
            continue
        if kind == "no-answer":
            if sources:
                errors.append(f"{item['id']}: a no-answer question must have no sources")
            check_no_answer(item, sections, errors)
            parts["no-answer"] += 1
            continue
        if len(sources) < MIN_SOURCES[kind]:
            errors.append(f"{item['id']}: kind {kind} needs {MIN_SOURCES[kind]} or more sources")
        run, gold_keys = check_answerable(item, by_name, sections, args.verbose, errors)
        runs.append(run)
        files = [f"django-docs/{key.split('|')[0]}" for key in gold_keys]
        gold_files |= set(files)
        parts[part_of(files[0]) if files else "?"] += 1
    if len(gold_files) < MIN_GOLD_DOCUMENTS:
        errors.append(f"gold sections come from {len(gold_files)} files, fewer than {MIN_GOLD_DOCUMENTS}")

    kinds = Counter(item["kind"] for item in questions)
    print(f"{len(questions)} questions; by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    print("by part (of the first gold file): " + ", ".join(f"{k} {n}" for k, n in parts.most_common()))
    print(
        f"gold files: {len(gold_files)}; files checked: {len(sections)}, "
        f"sections: {sum(len(v) for v in sections.values())}"
    )
    if runs:
        print(f"longest question/gold shared word run: max {max(runs)} (limit < {OVERLAP_LIMIT})")
    for error in errors:
        print("FAIL", error)
    print("OK: all checks passed" if not errors else f"FAILED: {len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
