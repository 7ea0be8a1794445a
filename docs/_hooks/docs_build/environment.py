"""Every environment variable the code reads, found by reading the source (AST), not by importing it.

The typed readers are found by their names wherever they are defined (a function named ``env_*`` or
``_env_*`` whose first parameter is ``name``), so moving ``config/env.py`` elsewhere changes nothing
here. Besides those calls it finds direct reads of ``os.environ`` (``get``, ``[...]``,
``os.getenv``), the defaults the application sets for its libraries (``os.environ.setdefault``) and
the ``${NAME:-default}`` reads of the shell scripts that start the processes.

A read whose name is not a string (a loop over a table of names) cannot be listed from the source
alone: it is returned as unresolved, with the function it sits in, for the caller to expand from
that table or to refuse.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

HELPER_NAME = re.compile(r"^_?env_\w+$")
SHELL_READ = re.compile(r"\$\{([A-Z][A-Z0-9_]*):-([^}]*)\}")
# Not configuration: migrations only replay history, tests set up their own environment.
SKIPPED_PARTS = {"migrations", "tests", "__pycache__"}

SETTING = "setting"  # through a typed reader
PROCESS = "process"  # os.environ read directly
LIBRARY_DEFAULT = "library default"  # os.environ.setdefault
SCRIPT = "script"  # ${NAME:-default} in a start script


@dataclass(frozen=True)
class Helper:
    """A typed reader: its parameters and their defaults, and whether it also reads NAME_FILE."""

    name: str
    params: tuple[str, ...]
    defaults: dict[str, ast.expr]
    reads_file_variant: bool


@dataclass
class EnvRead:
    name: str
    kind: str
    location: str
    reader: str = ""
    default: str = ""
    minimum: str = ""
    choices: str = ""
    comment: str = ""
    reads_file_variant: bool = False


@dataclass
class Unresolved:
    """A read whose variable name is computed: the function it is in and where."""

    function: str
    location: str
    reader: str


@dataclass
class Scan:
    reads: list[EnvRead] = field(default_factory=list)
    unresolved: list[Unresolved] = field(default_factory=list)


def python_files(root: Path, packages: tuple[str, ...]) -> list[Path]:
    files = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if not SKIPPED_PARTS.intersection(path.relative_to(root).parts):
                files.append(path)
    return files


def scan(root: Path, packages: tuple[str, ...] = ("config", "knowledge", "accounts")) -> Scan:
    """Every environment read in the packages' Python files and in ``scripts/*.sh``."""
    modules = {path: ast.parse(path.read_text(), filename=str(path)) for path in python_files(root, packages)}
    helpers = find_helpers(modules.values())
    result = Scan()
    for path, tree in modules.items():
        _ModuleScan(path.relative_to(root).as_posix(), path.read_text(), tree, helpers, result).run()
    result.reads.extend(scan_shell_scripts(root))
    return result


def find_helpers(trees) -> dict[str, Helper]:
    """The typed readers of every module, by function name; a reader that passes its name on to one
    that reads NAME_FILE reads it too (``env_rate`` calls ``env_str``)."""
    defs = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and HELPER_NAME.match(node.name):
                params = [a.arg for a in node.args.posonlyargs + node.args.args]
                if params[:1] == ["name"]:
                    defs[node.name] = node
    file_readers = {name for name, node in defs.items() if _formats_file_variant(node)}
    changed = True
    while changed:  # a fixpoint over wrappers of wrappers
        changed = False
        for name, node in defs.items():
            if name not in file_readers and _passes_name_to(node, file_readers):
                file_readers.add(name)
                changed = True
    return {name: _helper(node, name in file_readers) for name, node in defs.items()}


def _helper(node: ast.FunctionDef, reads_file_variant: bool) -> Helper:
    positional = node.args.posonlyargs + node.args.args
    params = tuple(a.arg for a in positional) + tuple(a.arg for a in node.args.kwonlyargs)
    names = [a.arg for a in positional]
    count = len(node.args.defaults)  # Python gives defaults for the last positional parameters
    defaults = dict(zip(names[len(names) - count :], node.args.defaults, strict=True)) if count else {}
    for arg, default in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True):
        if default is not None:
            defaults[arg.arg] = default
    return Helper(node.name, params, defaults, reads_file_variant)


def _formats_file_variant(node: ast.FunctionDef) -> bool:
    """Whether the reader builds the name ``f"{name}_FILE"`` (a secret read from a file)."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.JoinedStr):
            parts = inner.values
            if (
                len(parts) == 2
                and isinstance(parts[0], ast.FormattedValue)
                and isinstance(parts[0].value, ast.Name)
                and parts[0].value.id == "name"
                and isinstance(parts[1], ast.Constant)
                and parts[1].value == "_FILE"
            ):
                return True
    return False


def _passes_name_to(node: ast.FunctionDef, readers: set[str]) -> bool:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and _called_name(inner) in readers and inner.args:
            first = inner.args[0]
            if isinstance(first, ast.Name) and first.id == "name":
                return True
    return False


def _called_name(call: ast.Call) -> str:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return ""


def _is_environ(node: ast.expr) -> bool:
    """``os.environ`` or a bare ``environ`` (``from os import environ``)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ" and isinstance(node.value, ast.Name) and node.value.id == "os"
    return isinstance(node, ast.Name) and node.id == "environ"


class _ModuleScan:
    """One module's reads: a walk with each node's enclosing function and statement known."""

    def __init__(
        self, location: str, source: str, tree: ast.Module, helpers: dict[str, Helper], result: Scan
    ):
        self.location, self.lines, self.tree = location, source.splitlines(), tree
        self.helpers, self.result = helpers, result
        self.constants = _module_constants(tree)

    def run(self) -> None:
        self._visit(self.tree, function=None, statement=None)

    def _visit(self, node: ast.AST, function: ast.FunctionDef | None, statement: ast.stmt | None) -> None:
        for child in ast.iter_child_nodes(node):
            inner_function = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            inner_statement = child if isinstance(child, ast.stmt) else statement
            if isinstance(child, ast.Call):
                self._call(child, function, inner_statement)
            elif (
                isinstance(child, ast.Subscript)
                and isinstance(child.ctx, ast.Load)
                and _is_environ(child.value)
            ):
                self._direct(child.slice, PROCESS, "os.environ[...]", None, child, function, inner_statement)
            self._visit(child, inner_function, inner_statement)

    def _call(self, call: ast.Call, function, statement) -> None:
        called = _called_name(call)
        if called in self.helpers and call.args:
            self._helper_call(call, self.helpers[called], function, statement)
            return
        func = call.func
        if not (isinstance(func, ast.Attribute) and call.args):
            return
        if _is_environ(func.value) and func.attr == "get":
            default = call.args[1] if len(call.args) > 1 else None
            self._direct(call.args[0], PROCESS, "os.environ.get", default, call, function, statement)
        elif _is_environ(func.value) and func.attr == "setdefault":
            default = call.args[1] if len(call.args) > 1 else None
            self._direct(
                call.args[0], LIBRARY_DEFAULT, "os.environ.setdefault", default, call, function, statement
            )
        elif func.attr == "getenv" and isinstance(func.value, ast.Name) and func.value.id == "os":
            default = call.args[1] if len(call.args) > 1 else None
            self._direct(call.args[0], PROCESS, "os.getenv", default, call, function, statement)

    def _helper_call(self, call: ast.Call, helper: Helper, function, statement) -> None:
        name = self._name(call.args[0], function)
        if name is None:
            return
        if name == "":
            self._unresolved(call, helper.name, function)
            return
        arguments = _bind(helper, call)
        self.result.reads.append(
            EnvRead(
                name=name,
                kind=SETTING,
                location=f"{self.location}:{call.lineno}",
                reader=helper.name,
                default=render(arguments["default"]) if "default" in helper.params else "unset",
                minimum=render(arguments["minimum"]) if arguments.get("minimum") is not None else "",
                choices=render(arguments["choices"]) if arguments.get("choices") is not None else "",
                comment=self._comment(call, statement),
                reads_file_variant=helper.reads_file_variant,
            )
        )

    def _direct(self, argument, kind, reader, default, node, function, statement) -> None:
        name = self._name(argument, function)
        if name is None:
            return
        if name == "":
            self._unresolved(node, reader, function)
            return
        self.result.reads.append(
            EnvRead(
                name=name,
                kind=kind,
                location=f"{self.location}:{node.lineno}",
                reader=reader,
                default=render(default) if default is not None else "unset",
                comment=self._comment(node, statement),
            )
        )

    def _name(self, argument: ast.expr, function) -> str | None:
        """The variable's name; None inside a reader (it passes its own ``name`` on); "" when computed."""
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            return argument.value
        if function is not None and HELPER_NAME.match(function.name):
            return None  # the reader's own body: ``name``, ``f"{name}_FILE"``
        if isinstance(argument, ast.Name) and argument.id in self.constants:
            return self.constants[argument.id]
        return ""

    def _unresolved(self, node, reader, function) -> None:
        self.result.unresolved.append(
            Unresolved(function.name if function else "<module>", f"{self.location}:{node.lineno}", reader)
        )

    def _comment(self, node: ast.AST, statement: ast.stmt | None) -> str:
        """The comment lines right above the call, else right above its statement: they say why."""
        for line in (node.lineno, statement.lineno if statement else node.lineno):
            found = []
            index = line - 2
            while index >= 0 and self.lines[index].strip().startswith("#"):
                found.insert(0, self.lines[index].strip().lstrip("#").strip())
                index -= 1
            if found:
                return " ".join(found)
        return ""


def _module_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "TEXT"`` assignments, so ``os.environ.get(SUPERVISOR_PID)`` is named."""
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        constants[target.id] = node.value.value
    return constants


def _bind(helper: Helper, call: ast.Call) -> dict[str, ast.expr | None]:
    """The call's arguments by the reader's parameter names, the reader's defaults filling the rest."""
    bound: dict[str, ast.expr | None] = dict(helper.defaults)
    for param, argument in zip(helper.params, call.args, strict=False):  # defaults fill the rest
        bound[param] = argument
    for keyword in call.keywords:
        if keyword.arg:
            bound[keyword.arg] = keyword.value
    return bound


def render(expression: ast.expr | None) -> str:
    """A default as an operator reads it: literals as values, anything computed as its source."""
    if expression is None:
        return "unset"
    try:
        value = ast.literal_eval(expression)
    except ValueError:
        return f"`{ast.unparse(expression)}`"
    return render_value(value)


def render_value(value) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, (list, tuple)):
        return ", ".join(f"`{item}`" for item in value) if value else "empty"
    if value == "":
        return "empty"
    return f"`{value}`"


def scan_shell_scripts(root: Path) -> list[EnvRead]:
    """``${NAME:-default}`` in the start scripts (``scripts/run.sh``, ``scripts/serve.sh``, ...)."""
    reads = []
    for path in sorted((root / "scripts").glob("*.sh")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            for match in SHELL_READ.finditer(line):
                name, default = match.groups()
                reads.append(
                    EnvRead(
                        name=name,
                        kind=SCRIPT,
                        location=f"{path.relative_to(root).as_posix()}:{number}",
                        reader="shell",
                        default=f"`{default}`" if default else "empty",
                    )
                )
    return reads
