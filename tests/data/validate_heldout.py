#!/usr/bin/env python3
"""Check tests/data/heldout_questions.jsonl against the documents it is about.

    .venv/bin/python tests/data/validate_heldout.py [--corpus ../shared/corpus] [-v]

Checks, with the product's own extract_sections over the files in heldout_documents.txt:
every (document, source_ref) names exactly one section of exactly one listed file; no answerable
question shares 4 or more consecutive words with its gold sections (the paraphrase rule of
../shared/eval/paraphrased); every no-answer question's probe terms occur in no listed document.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

OVERLAP_LIMIT = 4
# The words an answer to each near miss would need; none may occur in any listed document.
NO_ANSWER_PROBES = {
    "noanswer-01": [r"transfer\W+(?:\w+\W+){0,4}gists?", r"gists?\W+(?:\w+\W+){0,4}transfer"],
    "noanswer-02": [r"celery"],
    "noanswer-03": [r"graves", r"orbitopathy"],
    "noanswer-04": [r"websockets?"],
    "noanswer-05": [r"DELETE /pet"],
    "noanswer-06": [r"keyset"],
    "noanswer-07": [r"feline", r"veterinar", r"\bcats\b"],
    "noanswer-08": [r"dark mode", r"dark theme"],
}


def words(text: str) -> list[str]:
    return re.findall(r"\w+", unicodedata.normalize("NFKC", text).lower())


def longest_shared_run(a: list[str], b: list[str]) -> int:
    best, prev = 0, [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        cur = [0] * (len(b) + 1)
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                cur[j] = prev[j - 1] + 1
                best = max(best, cur[j])
        prev = cur
    return best


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    import django

    django.setup()
    from knowledge.ingestion.extract import extract_sections

    paths = [
        Path(args.corpus) / line.strip()
        for line in (HERE / "heldout_documents.txt").read_text().splitlines()
        if line.strip()
    ]
    sections: dict[str, list[tuple[str, str]]] = {}
    for path in paths:
        sections.setdefault(path.name, []).extend(
            (s.source_ref, " ".join([*s.heading_path, s.text]))
            for s in extract_sections(path.name, path.read_bytes())
        )
    names = Counter(p.name for p in paths)
    questions = [
        json.loads(line)
        for line in (HERE / "heldout_questions.jsonl").read_text().splitlines()
        if line.strip()
    ]
    errors = []
    for q in questions:
        gold_text = []
        for source in q["expected_sources"]:
            doc, ref = source["document"], source["source_ref"]
            if names.get(doc) != 1:
                errors.append(
                    f"{q['id']}: {doc} is listed {names.get(doc, 0)} times in heldout_documents.txt"
                )
                continue
            found = [text for r, text in sections[doc] if r == ref]
            if len(found) != 1:
                errors.append(f"{q['id']}: {doc} {ref} names {len(found)} sections")
            gold_text += found
        if q["expected_sources"]:
            run = max((longest_shared_run(words(q["question"]), words(t)) for t in gold_text), default=0)
            if args.v:
                print(f"{q['id']}: longest shared run {run}")
            if run >= OVERLAP_LIMIT:
                errors.append(f"{q['id']}: shares {run} consecutive words with its gold text")
        else:
            for probe in NO_ANSWER_PROBES.get(q["id"], []):
                hits = [
                    (d, r) for d, items in sections.items() for r, t in items if re.search(probe, t, re.I)
                ]
                if hits:
                    errors.append(f"{q['id']}: probe {probe!r} occurs in {hits[:3]}")
            if q["id"] not in NO_ANSWER_PROBES:
                errors.append(f"{q['id']}: no probe terms for this no-answer question")
    kinds = Counter(q["kind"] for q in questions)
    print(f"{len(questions)} questions; " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    for e in errors:
        print("FAIL", e)
    print("OK" if not errors else f"{len(errors)} failures")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
