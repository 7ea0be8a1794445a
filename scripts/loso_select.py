#!/usr/bin/env python3
"""Leave-one-set-out choice of retrieval settings from scripts/side_by_side.py --rows output.

    python scripts/loso_select.py ROWS.jsonl [ROWS.jsonl ...]

For each question set: the product setting with the best score on the OTHER sets (the mean over
those sets of (recall@5 + MRR) / 2, each set counting once), and its figure on the held-out set,
next to the naive pipeline's. Then, per stage (a setting that switches a retrieval stage), the same
choice made among the settings with the stage on and among those with it off: a stage earns its
place when the held-out figures are better with it. Ties go to the setting with fewer stages on.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

NAIVE = "naive rrf 0.7"


def load(paths):
    figures = defaultdict(lambda: defaultdict(list))  # pipeline -> set -> [(recall, rr)]
    for path in paths:
        for line in open(path):
            row = json.loads(line)
            if "rr" in row:
                figures[row["pipeline"]][row["set"]].append((row["recall@5"], row["rr"]))
    return {
        p: {s: (sum(r for r, _ in v) / len(v), sum(m for _, m in v) / len(v)) for s, v in sets.items()}
        for p, sets in figures.items()
    }


def settings_of(pipeline: str) -> dict:
    text = pipeline.removeprefix("product ").strip()
    return dict(item.split("=", 1) for item in text.split(",") if "=" in item)


def stages_on(pipeline: str) -> int:
    s = settings_of(pipeline)
    return (
        (s.get("spreadSources") == "true")
        + (s.get("queryIntent") == "true")
        + (s.get("scoreFusion") == "true")
        + (s.get("semanticWeight") not in ("1.0", "0.0"))
    )


def choose(metrics, candidates, train_sets):
    def score(p):
        return sum(sum(metrics[p][s]) / 2 for s in train_sets) / len(train_sets)

    return max(candidates, key=lambda p: (round(score(p), 6), -stages_on(p)))


def main(paths):
    metrics = load(paths)
    sets = sorted({s for p in metrics.values() for s in p})
    products = [p for p in metrics if p.startswith("product") and all(s in metrics[p] for s in sets)]
    print(
        "| held-out set | chosen on the other sets | held-out recall@5 / MRR | naive recall@5 / MRR"
        " | margin |"
    )
    print("|---|---|---|---|---|")
    for held in sets:
        chosen = choose(metrics, products, [s for s in sets if s != held])
        r, m = metrics[chosen][held]
        nr, nm = metrics[NAIVE][held]
        print(
            f"| {held} | {chosen.removeprefix('product ')} | {r:.3f} / {m:.3f} | {nr:.3f} / {nm:.3f} | "
            f"{r - nr:+.3f} / {m - nm:+.3f} |"
        )
    stages = {
        "lexical side (hybrid, semanticWeight < 1)": lambda p: settings_of(p).get("semanticWeight") != "1.0",
        "dense side (semanticWeight > 0)": lambda p: settings_of(p).get("semanticWeight") != "0.0",
        "spreadSources": lambda p: settings_of(p).get("spreadSources") == "true",
        "scoreFusion (scores, not ranks)": lambda p: settings_of(p).get("scoreFusion") == "true",
        "queryIntent": lambda p: settings_of(p).get("queryIntent") == "true",
    }
    print(
        "\n| stage | held-out set | with it: chosen -> recall@5 / MRR |"
        " without it: chosen -> recall@5 / MRR |"
    )
    print("|---|---|---|---|")
    for name, on in stages.items():
        for held in sets:
            train = [s for s in sets if s != held]
            cells = []
            for group in ([p for p in products if on(p)], [p for p in products if not on(p)]):
                if not group:
                    cells.append("-")
                    continue
                chosen = choose(metrics, group, train)
                r, m = metrics[chosen][held]
                cells.append(f"{chosen.removeprefix('product ')} -> {r:.3f} / {m:.3f}")
            print(f"| {name} | {held} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main(sys.argv[1:])
