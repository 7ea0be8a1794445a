"""The configuration reference page, written from the code on every build of the site.

Environment variables come from the source scan (``docs_build.environment``); the knowledge
parameters from their declarations (``knowledge.parameters``, pure: no Django). Run as
``python -m docs_build.reference [PATH]`` (from docs/_hooks) to write the page to a file (default:
standard output).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from docs_build.environment import (
    LIBRARY_DEFAULT,
    PROCESS,
    SCRIPT,
    SETTING,
    EnvRead,
    Scan,
    render_value,
    scan,
)

ROOT = Path(__file__).resolve().parents[3]  # docs/_hooks/docs_build/ -> the repository
PAGE = "reference/configuration.md"
READER_TYPES = {
    "str": "text",
    "bool": "true / false",
    "int": "integer",
    "choice": "one of",
    "list": "comma-separated list",
    "int_or_none": "integer, or unset for no limit",
    "size_or_none": "bytes or a size (`500MB`, `2GB`), or unset for no limit",
    "rate": "rate (`N/second`, `/minute`, `/hour`, `/day`)",
    "float": "number",
    "origin": "URL origin (`https://host[:port]`)",
}


def ingest_limit_reads() -> list[EnvRead]:
    """The per-document ingestion limits, which ``config/base/ingest_limits.py`` reads in a loop over
    this table."""
    from config.base.ingest_limits import DEFAULT_LIMITS, MEGABYTE_FIELDS, SETTINGS

    reads = []
    for field, name in SETTINGS.items():
        default = getattr(DEFAULT_LIMITS, field)
        if field in MEGABYTE_FIELDS:
            default //= 1024 * 1024
        words = field.removeprefix("max_").replace("_", " ")
        reads.append(
            EnvRead(
                name=name,
                kind=SETTING,
                location="config/base/ingest_limits.py (SETTINGS)",
                reader="env_int",
                default=render_value(default),
                minimum="`1`",
                comment=f"Per-document limit: most {words}"
                + (" (in MB)" if field in MEGABYTE_FIELDS else "")
                + ".",
            )
        )
    return reads


# Reads whose names are computed in the named function, and where the names come from. A computed
# read that is not listed here stops the build: the reference must name every variable.
COMPUTED_READS: dict[str, Callable[[], list[EnvRead]]] = {"ingest_limits_from_env": ingest_limit_reads}


def all_reads(root: Path = ROOT) -> list[EnvRead]:
    found: Scan = scan(root)
    reads = list(found.reads)
    for unresolved in found.unresolved:
        expand = COMPUTED_READS.get(unresolved.function)
        if expand is None:
            raise ValueError(
                f"{unresolved.location}: {unresolved.reader} reads a computed variable name in "
                f"{unresolved.function}(); list where its names come from in "
                "docs_build.reference.COMPUTED_READS"
            )
        reads.extend(expand())
    return reads


def _by_name(reads: list[EnvRead], kind: str) -> dict[str, list[EnvRead]]:
    grouped: dict[str, list[EnvRead]] = {}
    for read in reads:
        if read.kind == kind:
            grouped.setdefault(read.name, []).append(read)
    return dict(sorted(grouped.items()))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _first_sentence(comment: str) -> str:
    sentence = re.split(r"(?<=\.)\s", comment, maxsplit=1)[0]
    return sentence if len(sentence) <= 240 else sentence[:237] + "..."


def _locations(reads: list[EnvRead]) -> str:
    return "<br>".join(f"`{read.location}`" for read in reads)


def _reader_type(reader: str) -> str:
    suffix = reader.lstrip("_").removeprefix("env_")
    return READER_TYPES.get(suffix, suffix.replace("_", " "))


def settings_table(reads: list[EnvRead]) -> list[str]:
    lines = [
        "| variable | type | default | limits | read in | why (the code's comment) |",
        "|---|---|---|---|---|---|",
    ]
    for name, rows in _by_name(reads, SETTING).items():
        first = rows[0]
        label = f"`{name}`" + (f" or `{name}_FILE`" if first.reads_file_variant else "")
        limits = f"at least {first.minimum}" if first.minimum else ""
        limits = f"{first.choices}" if first.choices else limits
        comment = next((row.comment for row in rows if row.comment), "")
        cells = [
            label,
            _reader_type(first.reader),
            first.default,
            limits,
            _locations(rows),
            _first_sentence(comment),
        ]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return lines


def plain_table(reads: list[EnvRead], kind: str, value_heading: str) -> list[str]:
    lines = [f"| variable | {value_heading} | where | why (the code's comment) |", "|---|---|---|---|"]
    for name, rows in _by_name(reads, kind).items():
        defaults = sorted({row.default for row in rows})
        comment = next((row.comment for row in rows if row.comment), "")
        cells = [f"`{name}`", " / ".join(defaults), _locations(rows), _first_sentence(comment)]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return lines


def parameters_table() -> list[str]:
    from knowledge.parameters import PARAMETERS, parameter_order, parameter_words

    lines = [
        "| parameter | type | default | range | lock | in words (group: label) | what it does |",
        "|---|---|---|---|---|---|---|",
    ]
    for key in parameter_order():
        spec = PARAMETERS[key]
        group, label, _ = parameter_words(key)
        if spec.max_length is not None:
            bounds = f"up to {spec.max_length} characters"
        elif spec.minimum is not None or spec.maximum is not None:
            bounds = f"{spec.minimum} to {spec.maximum}"
        else:
            bounds = ""
        cells = [
            f"`{key}`",
            spec.kind.__name__,
            render_value(spec.default),
            bounds,
            "unlocked (lockable)",
            f"{group}: {label}",
            spec.help_text,
        ]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return lines


INTRO = """# Configuration reference

This page is generated from the code every time the site is built (`docs/_hooks/docs_build/reference.py`, run
by the `hooks:` entry of `mkdocs.yml`): it cannot drift from what the application reads. What each
setting is for, with advice, is in [Environment variables](../operator-guide/configuration.md) and
[Settings and locks](../operator-guide/settings-and-locks.md).

Every typed reader fails loudly on a bad value: the process stops with a message naming the
variable, instead of falling back to the default.
"""

PARAMETERS_INTRO = """## Knowledge parameters

Resolved for every request in three tiers, **admin lock > profile override > global default**
(`knowledge/parameter_values.py`). None is locked until an operator locks it, in the admin or with
`manage.py knowledge_config --set KEY=VALUE --lock`; a locked value wins over every profile's.
"""


def configuration_page(root: Path = ROOT) -> str:
    reads = all_reads(root)
    sections = [
        INTRO,
        "## Environment variables\n\nRead through the typed readers (`env_*`); "
        "a reader that takes `NAME_FILE` reads a secret from that file instead.\n",
        *settings_table(reads),
        "\n## Read by the start scripts\n\n`make run` (`scripts/run.sh`) and `scripts/serve.sh`.\n",
        *plain_table(reads, SCRIPT, "default"),
        "\n## Read directly from the process environment\n\n"
        "Not settings: where the environment of a process or of a library is consulted.\n",
        *plain_table(reads, PROCESS, "default"),
        "\n## Set by the application when unset\n\nDefaults the application gives its libraries.\n",
        *plain_table(reads, LIBRARY_DEFAULT, "value"),
        "\n" + PARAMETERS_INTRO,
        *parameters_table(),
    ]
    return "\n".join(sections) + "\n"


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    page = configuration_page()
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(page)
    else:
        sys.stdout.write(page)
