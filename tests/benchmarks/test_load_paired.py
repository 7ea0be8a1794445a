"""knowledge_bench load --reference-url: two real servers on one database, loaded in alternating rounds."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from knowledge.benchmarks.load_paired import TABLE_END
from tests.served import served_application

UNTHROTTLED = {"API_THROTTLE_RETRIEVE": "100000/minute", "WEB_WORKERS": "1"}


def test_both_servers_are_loaded_and_the_added_time_is_their_difference(transactional_db, tmp_path):
    docs = tmp_path / "benchmarks.md"
    docs.write_text(f"# Benchmarks\n\n| date | run |\n|---|---|\n| earlier | row |\n{TABLE_END}\n\nAfter.\n")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        served_application(tmp_path / "a", **UNTHROTTLED) as candidate,
        served_application(tmp_path / "b", **UNTHROTTLED) as reference,
    ):
        out = io.StringIO()
        call_command(
            "knowledge_bench",
            "load",
            f"--url=http://127.0.0.1:{candidate}",
            f"--reference-url=http://127.0.0.1:{reference}",
            "--rounds=2",
            "--seconds=1",
            "--clients=1",
            "--query-share=0",
            "--label=this tree",
            "--reference-label=main",
            f"--docs={docs}",
            stdout=out,
        )
    figures = json.loads(out.getvalue().strip().splitlines()[-1])
    row = next(line for line in out.getvalue().splitlines() if line.startswith("docs row: "))
    assert "| this tree against main | 2 x 1 s, 1 clients; 0 chunks of other collections |" in row
    assert row.count("retrieve ") == 2 and figures["other_chunks"] == 0
    # Each round's ratio (candidate's retrieve requests over the reference's), and their range in the row.
    ratios = figures["retrieve_round_ratios"]
    assert len(ratios) == 2 and all(r > 0 for r in ratios)
    assert f"(rounds {min(ratios):.2f}-{max(ratios):.2f}) |" in row
    assert figures["benchmark"] == "load-paired" and figures["rounds"] == 2
    for server in ("candidate", "reference"):
        retrieve = figures[server]["retrieve"]
        assert retrieve["requests"] > 0 and retrieve["errors"] == 0, retrieve
    added = figures["candidate"]["retrieve"]["p50_ms"] - figures["reference"]["retrieve"]["p50_ms"]
    assert figures["retrieve_p50_added_ms"] == round(added, 2)
    assert "the candidate adds" in out.getvalue()
    # The page's table gains the run's row as its last row; nothing else on the page changes.
    row_only = row.removeprefix("docs row: ")
    table = f"| date | run |\n|---|---|\n| earlier | row |\n{row_only}\n{TABLE_END}\n\nAfter.\n"
    assert docs.read_text() == "# Benchmarks\n\n" + table


def test_the_benchmark_page_names_the_table_end_the_command_writes_above():
    page = (Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md").read_text()
    assert page.count(TABLE_END) == 1


@pytest.mark.parametrize(
    "arguments",
    [
        ["--reference-url=ftp://127.0.0.1:1"],
        ["--reference-url=http://127.0.0.1:1", "--rounds=0"],
        ["--reference-url=http://127.0.0.1:1", "--sse=3"],
        ["--reference-url=http://127.0.0.1:1", "--docs=/nonexistent/benchmarks.md"],
        ["--reference-url=http://127.0.0.1:1", "--docs=README.md"],
        ["--docs=docs/benchmarks.md"],
    ],
)
def test_a_bad_reference_is_refused_before_anything_runs(db, arguments):
    with pytest.raises(CommandError):
        call_command("knowledge_bench", "load", *arguments)
