"""The layer order of docs/design.md#layers holds: no import back up a layer, no circle, no private
name borrowed across packages, no module over 600 lines, no function over 60 (see tests/architecture.py)."""

from __future__ import annotations

import pytest
from importlinter.cli import lint_imports

from tests import architecture


@pytest.fixture(scope="module")
def modules():
    return architecture.project_modules()


def test_the_layer_contract_is_kept():
    assert lint_imports(config_filename=str(architecture.ROOT / "pyproject.toml"), no_cache=True) == 0


def test_the_contract_names_the_layers_the_design_document_lists():
    order = architecture.layers()
    names = {name for layer in order for name in layer}
    assert {"knowledge.clients", "knowledge.config", "knowledge.access", "knowledge.models"} <= names
    assert {"accounts", "config.errors"} <= names
    assert {"knowledge.web", "knowledge.admin", "knowledge.chat", "knowledge.services"} <= names
    design = (architecture.ROOT / "docs" / "design.md").read_text()
    assert "## Layers" in design and "import-linter" in design


def test_no_import_circle(modules):
    assert architecture.circles(modules) == []


def test_no_import_runs_back_up_a_layer(modules):
    assert architecture.back_up_imports(modules, architecture.layers()) == []


def test_no_private_name_is_borrowed_from_another_package(modules):
    borrowed = [(name, target, private) for name, m in modules.items() for target, private in m.private_names]
    assert borrowed == []


def test_no_module_is_over_600_lines(modules):
    assert architecture.long_modules(modules) == []


def test_no_function_is_over_60_lines(modules):
    assert architecture.long_functions(modules) == []


def test_the_checks_see_a_circle_and_a_back_up_import(tmp_path):
    """The checks can fail: a two-module circle and an import from models up to retrieval are found."""
    package = tmp_path / "knowledge"
    (package / "models").mkdir(parents=True)
    (package / "retrieval").mkdir()
    for folder in (package, package / "models", package / "retrieval"):
        (folder / "__init__.py").write_text("")
    (package / "models" / "a.py").write_text("from knowledge.retrieval import b\n")
    (package / "retrieval" / "b.py").write_text("def f():\n    from knowledge.models import a\n")
    found = architecture.project_modules(tmp_path)
    assert architecture.circles(found) == [["knowledge.models.a", "knowledge.retrieval.b"]]
    order = [["knowledge.retrieval"], ["knowledge.models"]]
    assert architecture.back_up_imports(found, order) == [
        ("knowledge.models.a", "knowledge.retrieval"),  # the package's __init__ runs too
        ("knowledge.models.a", "knowledge.retrieval.b"),
    ]
