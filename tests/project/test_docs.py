"""The documentation site builds strictly, its configuration reference names everything the code reads,
and the README stays short with its links into docs/ alive."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_hooks"))
from docs_build.environment import SETTING, scan  # noqa: E402
from docs_build.reference import all_reads, configuration_page  # noqa: E402

from config.base.ingest_limits import SETTINGS as INGEST_LIMIT_SETTINGS
from knowledge.parameters import PARAMETERS

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# Independent of the AST scanner on purpose: a plain text search for the same reads.
HELPER_CALL = re.compile(r"\b_?env_\w+\(\s*\"([A-Z][A-Z0-9_]*)\"")
ENVIRON_READ = re.compile(r"os\.(?:environ\.get\(|environ\[|getenv\()\s*\"([A-Z][A-Z0-9_]*)\"")
SHELL_READ = re.compile(r"\$\{([A-Z][A-Z0-9_]*):-")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.fixture(scope="module")
def reference_page() -> str:
    return configuration_page(ROOT)


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    site = tmp_path / "site"
    result = subprocess.run(
        [Path(sys.executable).parent / "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "WARNING" not in result.stderr
    generated = (site / "reference" / "configuration.html").read_text()
    assert "KNOWLEDGE_MAX_UPLOAD_MB" in generated and "minAnswerability" in generated
    assert (site / "api" / "openapi.yaml").read_text().startswith("openapi: 3")
    assert "/api/v1/query/" in (site / "api" / "endpoints.html").read_text()
    assert "fonts.googleapis.com" not in (site / "index.html").read_text()


def variables_read_by_the_code() -> set[str]:
    names = set()
    for package in ("config", "knowledge", "accounts"):
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                text = path.read_text()
                names.update(HELPER_CALL.findall(text), ENVIRON_READ.findall(text))
    for path in (ROOT / "scripts").glob("*.sh"):
        names.update(SHELL_READ.findall(path.read_text()))
    return names


def test_every_variable_the_code_reads_is_in_the_reference(reference_page):
    expected = variables_read_by_the_code() | set(INGEST_LIMIT_SETTINGS.values())
    assert {"DATABASE_URL", "SECRET_KEY", "LLM_TIMEOUT", "API_THROTTLE_UPLOADS", "WEB_WORKERS"} <= expected
    missing = sorted(name for name in expected if f"`{name}`" not in reference_page)
    assert missing == []


def test_every_knowledge_parameter_is_in_the_reference_with_its_default(reference_page):
    rows = {
        line.split("|")[1].strip(): line for line in reference_page.splitlines() if line.startswith("| `")
    }
    for key, spec in PARAMETERS.items():
        assert f"`{key}`" in rows, key
        default = str(spec.default).lower() if isinstance(spec.default, bool) else str(spec.default)
        assert f"`{default}`" in rows[f"`{key}`"] or spec.default == "", key


def test_the_reference_gives_each_settings_default_from_the_code(reference_page):
    row = next(line for line in reference_page.splitlines() if line.startswith("| `KNOWLEDGE_MAX_UPLOAD_MB`"))
    assert "| integer | `50` | at least `1` |" in row
    row = next(line for line in reference_page.splitlines() if line.startswith("| `SECRET_KEY`"))
    assert "`SECRET_KEY_FILE`" in row  # env_str also reads a secret from NAME_FILE


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_readers_are_found_by_name_wherever_they_are_defined(tmp_path):
    """The typed readers moved into a subpackage are still found, and a computed name is reported."""
    write(
        tmp_path / "config" / "base" / "env.py",
        "import os\n\n"
        "def env_int(name, default, *, minimum=None):\n    return int(os.environ.get(name, default))\n",
    )
    write(
        tmp_path / "knowledge" / "limits.py",
        "from config.base.env import env_int\n\n"
        "# Pages per run.\nPAGES = env_int('MOVED_PAGES', 7, minimum=1)\n\n"
        "def computed(names):\n    return [env_int(name, 1) for name in names]\n",
    )
    (tmp_path / "scripts").mkdir()
    found = scan(tmp_path)
    [read] = [r for r in found.reads if r.kind == SETTING]
    assert (read.name, read.default, read.minimum, read.comment) == (
        "MOVED_PAGES",
        "`7`",
        "`1`",
        "Pages per run.",
    )
    assert [(u.function, u.location) for u in found.unresolved] == [("computed", "knowledge/limits.py:7")]
    with pytest.raises(ValueError, match="computed variable name in computed"):
        all_reads(tmp_path)


def test_the_readme_is_at_most_250_lines():
    assert len(README.read_text().splitlines()) <= 250


def test_every_readme_link_into_docs_names_a_file_that_exists():
    links = [link for link in MARKDOWN_LINK.findall(README.read_text()) if link.startswith("docs/")]
    assert len(links) >= 10
    missing = [link for link in links if not (ROOT / link.split("#")[0]).is_file()]
    assert missing == []


def test_the_readme_keeps_the_two_commands():
    text = README.read_text()
    assert "```sh\nmake run\n```" in text and "```sh\nmake test\n```" in text
