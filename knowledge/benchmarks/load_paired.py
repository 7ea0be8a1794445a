"""knowledge_bench load --reference-url URL: the same load against two servers, in alternating rounds.

A change's cost per request (an extra check, a middleware) is a few milliseconds, well inside the
drift of a shared machine over a minute. So both servers (the change, and the code before it, on
the same database) are measured in the same run, in short rounds that alternate which goes first,
and the figures are the medians over all rounds: drift hits both alike and the difference is the
change's own cost.
"""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path
from urllib.parse import urlsplit

from knowledge.benchmarks import load

SERVERS = ("candidate", "reference")


def run(
    stdout,
    *,
    url: str,
    reference_url: str,
    rounds: int,
    plan: load.LoadPlan,
    labels: tuple[str, str] = SERVERS,
    docs: Path | None = None,
) -> dict:
    """``rounds`` of ``plan`` against each server in turn; ``plan.seconds`` is one round's time."""
    clients, seconds = plan.clients, plan.seconds
    tokens, collection_id = load._prepare(stdout, users=plan.users)
    others = _other_chunks(collection_id)
    questions = load._questions()
    targets = {"candidate": urlsplit(url), "reference": urlsplit(reference_url)}
    for target in targets.values():
        load._warm_up(target, tokens[0], collection_id, questions[0])
    stdout.write(
        f"{rounds} rounds of {seconds:.0f} s per server, {clients} clients: {url} (candidate) "
        f"against {reference_url} (reference)\n"
    )
    results = {name: load.Results() for name in SERVERS}
    per_round = {name: [] for name in SERVERS}  # each round's retrieve requests
    for round_number in range(rounds):
        order = SERVERS if round_number % 2 == 0 else SERVERS[::-1]
        for name in order:
            work = load.LoadWork(tokens, collection_id, questions, plan.query_share)
            before = _retrieves(results[name])
            _round(targets[name], work, clients=clients, seconds=seconds, results=results[name])
            per_round[name].append(_retrieves(results[name]) - before)
            stdout.write(f"\r  round {round_number + 1} of {rounds}: {name} done   ")
            stdout.flush()
    stdout.write("\n")
    figures = _figures(results, rounds=rounds, seconds=seconds, clients=clients)
    # The spread of the rounds' ratios says how far one run's ratio can be trusted on this machine.
    figures["retrieve_round_ratios"] = [
        round(mine / theirs, 2) if theirs else None for mine, theirs in zip(*per_round.values(), strict=True)
    ]
    figures.update(candidate_url=url, reference_url=reference_url, other_chunks=others)
    _print(stdout, figures)
    row = table_row(figures, labels)
    stdout.write(f"docs row: {row}\n")
    if docs is not None:
        row_added(docs, row)
        stdout.write(f"The row is added to the paired table in {docs}.\n")
    stdout.write(json.dumps(figures) + "\n")
    return figures


def _retrieves(results: load.Results) -> int:
    with results.lock:
        return sum(1 for sample in results.samples if sample.endpoint == "retrieve")


def _other_chunks(collection_id: int) -> int:
    """Chunks of other collections in the database: a search must cost what its own scope holds."""
    from knowledge.models import Chunk

    return Chunk.objects.exclude(collection_id=collection_id).count()


def table_row(figures: dict, labels: tuple[str, str]) -> str:
    """The run as a row of docs/benchmarks.md's paired table: date, what against what, the
    database, each server's requests/s with p50 / p95, and the candidate's share of the reference's."""
    shape = f"{figures['rounds']} x {figures['seconds_per_round']:g} s, {figures['clients']} clients"
    database = f"{figures['other_chunks']:,} chunks of other collections"
    served = [_served(figures[name]) for name in SERVERS]
    mine, theirs = (figures[name]["retrieve"]["requests"] for name in SERVERS)
    share = f"{mine / theirs:.2f}" if theirs else "-"
    by_round = [r for r in figures.get("retrieve_round_ratios", []) if r is not None]
    if len(by_round) > 1:
        share += f" (rounds {min(by_round):.2f}-{max(by_round):.2f})"
    day = datetime.date.today().isoformat()
    cells = [day, f"{labels[0]} against {labels[1]}", f"{shape}; {database}", *served, share]
    return "| " + " | ".join(cells) + " |"


# The line after the paired table's last row in docs/benchmarks.md: ``--docs`` writes each run's row above it.
TABLE_END = "<!-- knowledge_bench load --reference-url ... --docs adds its row above this line -->"


def row_added(docs: Path, row: str) -> None:
    """Write ``row`` as the last row of the paired table in ``docs`` (the benchmark page)."""
    text = docs.read_text(encoding="utf-8")
    end = text.index(TABLE_END)  # checked by the command before the run
    docs.write_text(text[:end] + row + "\n" + text[end:], encoding="utf-8")


def _served(endpoints: dict) -> str:
    parts = []
    for endpoint in ("retrieve", "query"):
        f = endpoints[endpoint]
        if f["requests"]:
            parts.append(f"{endpoint} {f['requests_per_s']}/s ({f['p50_ms']:.0f} / {f['p95_ms']:.0f} ms)")
    return "; ".join(parts) or "-"


def _round(target, work: load.LoadWork, *, clients: int, seconds: float, results: load.Results) -> None:
    workers = load.clients_started(target, work, clients, time.monotonic() + seconds, results)
    for worker in workers:
        worker.join(timeout=load.REQUEST_TIMEOUT)


def _figures(results: dict, *, rounds: int, seconds: float, clients: int) -> dict:
    figures = {"benchmark": "load-paired", "rounds": rounds, "seconds_per_round": seconds, "clients": clients}
    for name in SERVERS:
        samples = results[name].samples
        figures[name] = {
            endpoint: load._endpoint_figures([s for s in samples if s.endpoint == endpoint], seconds * rounds)
            for endpoint in ("retrieve", "query")
        }
    candidate, base = figures["candidate"]["retrieve"], figures["reference"]["retrieve"]
    figures["retrieve_p50_added_ms"] = round(candidate["p50_ms"] - base["p50_ms"], 2)
    figures["retrieve_p95_added_ms"] = round(candidate["p95_ms"] - base["p95_ms"], 2)
    figures["retrieve_p50_ratio"] = round(candidate["p50_ms"] / base["p50_ms"], 3) if base["p50_ms"] else None
    return figures


def _print(stdout, figures: dict) -> None:
    header = ("server", "endpoint", "requests", "p50 ms", "p95 ms", "errors")
    stdout.write("{:<10} {:<9} {:>8} {:>8} {:>8} {:>6}\n".format(*header))
    for name in SERVERS:
        for endpoint in ("retrieve", "query"):
            f = figures[name][endpoint]
            row = (name, endpoint, f["requests"], f["p50_ms"], f["p95_ms"], f["errors"])
            stdout.write("{:<10} {:<9} {:>8} {:>8} {:>8} {:>6}\n".format(*row))
    stdout.write(
        f"retrieve: the candidate adds {figures['retrieve_p50_added_ms']} ms at the median "
        f"({figures['retrieve_p95_added_ms']} ms at p95), ratio {figures['retrieve_p50_ratio']}\n"
    )
