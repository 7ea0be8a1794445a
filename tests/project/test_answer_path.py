"""The question's path keeps its shape (docs/design.md#the-walk-of-a-question): the chat orders the steps,
the synthesis component decides and writes the answer, and nothing below the chat knows the chat.

- no module below ``knowledge.chat`` imports it, or names any class or function the chat defines (the
  duck typing the layer contract cannot see);
- the chat hands the layers below it no callbacks: no call from ``knowledge.chat`` into
  ``knowledge.agents`` or ``knowledge.synthesis`` passes a lambda, a function defined on the spot or
  one of the chat's own methods;
- ``ChatStream`` and ``AgenticRun`` stay small (at most 15 methods each).
"""

from __future__ import annotations

import ast

import pytest

from tests.project import architecture

BELOW_CHAT = ("knowledge.agents", "knowledge.synthesis", "knowledge.retrieval", "knowledge.ingestion")
CALLED_FROM_CHAT = ("knowledge.agents", "knowledge.synthesis")
MAX_METHODS = 15


@pytest.fixture(scope="module")
def modules():
    return architecture.project_modules()


def chat_names(modules) -> set[str]:
    """The classes, functions and methods only the chat package defines (a name also defined
    elsewhere, such as ``run``, says nothing about who is meant)."""

    def defined(module) -> set[str]:
        return {
            node.name
            for node in ast.walk(module.tree)
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and not node.name.startswith("__")
        }

    in_chat = lambda name: name == "knowledge.chat" or name.startswith("knowledge.chat.")  # noqa: E731
    chat = set().union(*(defined(m) for n, m in modules.items() if in_chat(n)))
    elsewhere = set().union(*(defined(m) for n, m in modules.items() if not in_chat(n)))
    return chat - elsewhere


def chat_known_below(modules) -> list[tuple[str, str]]:
    """(module, name) where a module below the chat imports it or uses a name only the chat defines."""
    own = chat_names(modules)
    found = []
    for name, module in modules.items():
        if not name.startswith(BELOW_CHAT):
            continue
        found += [(name, target) for target in sorted(module.imports) if target.startswith("knowledge.chat")]
        used = {n.id for n in ast.walk(module.tree) if isinstance(n, ast.Name)}
        used |= {n.attr for n in ast.walk(module.tree) if isinstance(n, ast.Attribute)}
        found += [(name, chat_name) for chat_name in sorted(own & used)]
    return found


def callbacks_from_chat(modules) -> list[tuple[str, int, str]]:
    """(module, line, argument) for every callable the chat passes into the agents or the synthesis."""
    found = []
    for name, module in modules.items():
        if not name.startswith("knowledge.chat"):
            continue
        imported = _names_imported_from(module.tree, CALLED_FROM_CHAT)
        local_functions = {n.name for n in ast.walk(module.tree) if isinstance(n, ast.FunctionDef)}
        for call in (n for n in ast.walk(module.tree) if isinstance(n, ast.Call)):
            if _called_name(call) not in imported:
                continue
            for argument in [*call.args, *(k.value for k in call.keywords)]:
                if _is_callable_argument(argument, local_functions):
                    found.append((name, call.lineno, ast.unparse(argument)))
    return found


def _names_imported_from(tree: ast.Module, packages: tuple[str, ...]) -> set[str]:
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(packages)
        for alias in node.names
    }


def _called_name(call: ast.Call) -> str | None:
    function = call.func
    while isinstance(function, ast.Attribute):  # Synthesis(...).respond(...) is still Synthesis's call
        function = function.value
    if isinstance(function, ast.Call):
        return _called_name(function)
    return function.id if isinstance(function, ast.Name) else None


def _is_callable_argument(argument: ast.expr, local_functions: set[str]) -> bool:
    if isinstance(argument, ast.Lambda):
        return True
    if isinstance(argument, ast.Name):
        return argument.id in local_functions
    return (
        isinstance(argument, ast.Attribute)
        and isinstance(argument.value, ast.Name)
        and argument.value.id == "self"
        and argument.attr in local_functions
    )


def method_counts(modules, classes: dict[str, str]) -> dict[str, int]:
    counts = {}
    for module_name, class_name in classes.items():
        tree = modules[module_name].tree
        found = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
        counts[class_name] = sum(isinstance(n, ast.FunctionDef) for n in found.body)
    return counts


def test_nothing_below_the_chat_imports_it_or_names_its_types(modules):
    assert chat_names(modules)  # the check looks at something
    assert chat_known_below(modules) == []


def test_the_chat_hands_the_layers_below_it_no_callbacks(modules):
    assert callbacks_from_chat(modules) == []


def test_the_chat_stream_and_the_agentic_run_stay_small(modules):
    counts = method_counts(
        modules, {"knowledge.chat.stream": "ChatStream", "knowledge.agents.loop": "AgenticRun"}
    )
    assert all(0 < count <= MAX_METHODS for count in counts.values()), counts


def test_the_checks_see_a_callback_and_a_duck_typed_chat_name(tmp_path):
    """The checks can fail: a chat that passes its own method into the synthesis, and a synthesis
    module that names a chat function, are both found."""
    package = tmp_path / "knowledge"
    for folder in ("chat", "synthesis"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "chat" / "stream.py").write_text(
        "from knowledge.synthesis.answer import Synthesis\n\n\n"
        "class ChatStream:\n"
        "    def _answer(self):\n        return 1\n\n"
        "    def run(self):\n        return Synthesis(generate=self._answer, emit=lambda e: e)\n"
    )
    (package / "synthesis" / "answer.py").write_text(
        "class Synthesis:\n    def __init__(self, generate, emit):\n        self.answer = generate._answer\n"
    )
    found = architecture.project_modules(tmp_path)
    assert callbacks_from_chat(found) == [
        ("knowledge.chat.stream", 9, "self._answer"),
        ("knowledge.chat.stream", 9, "lambda e: e"),
    ]
    assert chat_known_below(found) == [("knowledge.synthesis.answer", "_answer")]
