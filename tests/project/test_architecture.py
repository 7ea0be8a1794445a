"""The layer order of docs/design.md#layers holds: no import back up a layer, no circle, no private
name borrowed across packages, no module over 600 lines, no function over 60 nor of more than 7
parameters (see tests/project/architecture.py)."""

from __future__ import annotations

import pytest
from importlinter.cli import lint_imports

from tests.project import architecture


@pytest.fixture(scope="module")
def modules():
    return architecture.project_modules()


def test_the_layer_contract_is_kept():
    assert lint_imports(config_filename=str(architecture.ROOT / "pyproject.toml"), no_cache=True) == 0


def test_the_contract_names_the_layers_the_design_document_lists():
    order = architecture.layers()
    names = {name for layer in order for name in layer}
    assert {"knowledge.clients", "knowledge.parameter_values", "knowledge.access"} <= names
    assert "knowledge.models" in names
    assert {"accounts", "config.base"} <= names
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


def test_the_shared_base_imports_neither_app(modules):
    """config.base sits below both apps: only the entry points of config (settings, urls, asgi, wsgi)
    import knowledge. The one import up is ``python -m config.base.database`` loading config.settings
    to join the embedded server; it sits in the ``__main__`` block, which runs only as a script and is
    not read as an import here (nor by the contract: pyproject's ignore_imports)."""
    assert architecture.app_imports_from("config.base", modules) == []
    # Settings are read before any app loads: what they parse (the ingestion limits) lives in the base.
    assert architecture.app_imports_from("config.settings", modules) == []
    assert any(name.startswith("config.base.") for name in modules)


def test_no_module_is_over_600_lines(modules):
    assert architecture.long_modules(modules) == []


def test_no_function_is_over_60_lines(modules):
    assert architecture.long_functions(modules) == []


def test_no_function_takes_more_than_7_parameters(modules):
    """Values that travel together go as one object (a frozen dataclass such as SourceSpec or LoadPlan)."""
    assert architecture.many_parameters(modules) == []


def test_the_checks_see_a_circle_and_a_back_up_import(tmp_path):
    """The checks can fail: a two-module circle, an import from models up to retrieval and one from the
    shared base into an app are found."""
    package = tmp_path / "knowledge"
    (package / "models").mkdir(parents=True)
    (package / "retrieval").mkdir()
    for folder in (package, package / "models", package / "retrieval"):
        (folder / "__init__.py").write_text("")
    (package / "models" / "a.py").write_text("from knowledge.retrieval import b\n")
    (package / "retrieval" / "b.py").write_text("def f():\n    from knowledge.models import a\n")
    found = architecture.project_modules(tmp_path)
    assert architecture.circles(found) == [["knowledge.models.a", "knowledge.retrieval.b"]]
    (tmp_path / "config" / "base").mkdir(parents=True)
    (tmp_path / "config" / "__init__.py").write_text("")
    (tmp_path / "config" / "base" / "__init__.py").write_text("")
    (tmp_path / "config" / "base" / "env.py").write_text("def f():\n    from knowledge.models import a\n")
    found = architecture.project_modules(tmp_path)
    assert architecture.app_imports_from("config.base", found) == [
        ("config.base.env", "knowledge.models"),
        ("config.base.env", "knowledge.models.a"),
    ]
    order = [["knowledge.retrieval"], ["knowledge.models"]]
    assert architecture.back_up_imports(found, order) == [
        ("knowledge.models.a", "knowledge.retrieval"),  # the package's __init__ runs too
        ("knowledge.models.a", "knowledge.retrieval.b"),
    ]


def test_the_checks_see_a_function_of_8_parameters(tmp_path):
    """The checks can fail: 8 parameters are found however they are passed (``*args`` and ``**kwargs``
    one each); 7, or a method's 7 beside ``self``, are not."""
    package = tmp_path / "knowledge"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "wide.py").write_text(
        "def eight(a, b, /, c, d, *args, e, f=1, **kwargs):\n    pass\n\n\n"
        "def seven(a, b, c, d, e, f, g):\n    pass\n\n\n"
        "class Shape:\n"
        "    def seven(self, a, b, c, d, e, f, g):\n        pass\n\n"
        "    def eight_in_a_method(self, a, b, c, d, e, f, g, *, h):\n        pass\n"
    )
    found = architecture.project_modules(tmp_path)
    assert architecture.many_parameters(found) == [
        (8, "knowledge.wide.eight_in_a_method"),
        (8, "knowledge.wide.eight"),
    ]
