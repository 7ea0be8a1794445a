"""The shape of the code, measured: modules, import circles, imports that run back up a layer,
imports hidden inside functions, long functions, functions of many parameters and long modules.

``python -m tests.project.architecture`` prints the counts; tests/project/test_architecture.py asserts them.
The layer order is the import-linter contract in pyproject.toml (``[tool.importlinter]``),
written down with its reasons in docs/design.md; this module reads it from there so there is one list.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("knowledge", "accounts", "config")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60
# Parameters a function takes, ``self`` or ``cls`` of a method not counted; positional and keyword-only
# alike, and ``*args`` and ``**kwargs`` one each. Values that travel together go as one object.
MAX_PARAMETERS = 7


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    lines: int
    imports: set[str] = field(default_factory=set)  # project modules imported at module level
    inner_imports: list[tuple[int, str]] = field(default_factory=list)  # (line, project module) in functions
    inner_third_party: int = 0  # imports of other libraries inside functions (lazy heavy imports)
    private_names: list[tuple[str, str]] = field(default_factory=list)  # (module, _name) from elsewhere


def project_modules(root: Path = ROOT) -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            text = path.read_text()
            modules[name] = Module(name, path, ast.parse(text), text.count("\n"))
    for module in modules.values():
        _read_imports(module, modules)
    return modules


def _read_imports(module: Module, modules: dict[str, Module]) -> None:
    inside = {id(n) for f in _functions(module.tree) for n in ast.walk(f)}
    script = {id(n) for block in _main_blocks(module.tree) for n in ast.walk(block)}
    package = module.name if module.path.name == "__init__.py" else module.name.rpartition(".")[0]
    for node in ast.walk(module.tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in script:
            continue  # ``if __name__ == "__main__":`` runs only as a script, never on import
        targets, private = _targets(node, package, modules)
        targets.discard(module.name)
        if id(node) in inside:
            module.inner_imports += [(node.lineno, target) for target in sorted(targets)]
            module.inner_third_party += not targets
        else:
            module.imports |= targets
        module.private_names += [(target, name) for target, name in private if target != module.name]


def _targets(node, package: str, modules: dict[str, Module]) -> tuple[set[str], list[tuple[str, str]]]:
    if isinstance(node, ast.Import):
        candidates = [alias.name for alias in node.names]
        base = None
    else:
        base = node.module or ""
        if node.level:
            parts = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join(parts + ([base] if base else []))
        candidates = [f"{base}.{alias.name}" for alias in node.names] + [base]
    found = {_owner(candidate, modules) for candidate in candidates} - {None}
    private = []
    if base and _owner(base, modules) and not _is_same_package(base, package):
        private = [(_owner(base, modules), a.name) for a in node.names if _is_private(a.name)]
    return found, private


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _is_same_package(imported: str, package: str) -> bool:
    return imported == package or imported.startswith(package + ".")


def _owner(dotted: str, modules: dict[str, Module]) -> str | None:
    while dotted and dotted not in modules:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def _main_blocks(tree: ast.Module) -> list[ast.If]:
    return [
        node
        for node in tree.body
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
    ]


def _functions(tree: ast.AST):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def circles(modules: dict[str, Module], *, with_inner: bool = True) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), imports in functions included."""
    graph = {
        name: module.imports | ({t for _, t in module.inner_imports} if with_inner else set())
        for name, module in modules.items()
    }
    # A package's __init__ is imported whenever one of its modules is: only explicit edges count here.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = [0]

    def visit(start: str) -> None:
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return groups


def layers(root: Path = ROOT) -> list[list[str]]:
    """The layer contract's layers, top first; each a list of sibling module names."""
    config = tomllib.loads((root / "pyproject.toml").read_text()).get("tool", {}).get("importlinter", {})
    for contract in config.get("contracts", []):
        if contract.get("type") == "layers":
            return [_layer_members(layer) for layer in contract["layers"]]
    return []


def _layer_members(layer: str) -> list[str]:
    """``"a : (b) | c"`` -> ``["a", "b", "c"]`` (parentheses mark a layer that may not exist yet)."""
    return [part.strip().strip("()") for part in layer.replace(":", "|").split("|") if part.strip()]


def layer_of(name: str, order: list[list[str]]) -> int | None:
    best = None
    for position, members in enumerate(order):
        for member in members:
            if (name == member or name.startswith(member + ".")) and (
                best is None or len(member) > len(best[1])
            ):
                best = (position, member)
    return best[0] if best else None


def back_up_imports(modules: dict[str, Module], order: list[list[str]]) -> list[tuple[str, str]]:
    """Imports (at module level or in a function) from a lower layer to a higher one."""
    found = []
    for name, module in modules.items():
        mine = layer_of(name, order)
        for target in sorted(module.imports | {t for _, t in module.inner_imports}):
            theirs = layer_of(target, order)
            if mine is not None and theirs is not None and theirs < mine:
                found.append((name, target))
    return found


def app_imports_from(package: str, modules: dict[str, Module]) -> list[tuple[str, str]]:
    """Imports (at module level or in a function) from ``package`` or its modules into either app."""
    found = []
    for name, module in modules.items():
        if name != package and not name.startswith(package + "."):
            continue
        for target in sorted(module.imports | {t for _, t in module.inner_imports}):
            if target.split(".")[0] in ("knowledge", "accounts"):
                found.append((name, target))
    return found


def long_functions(modules: dict[str, Module], limit: int = MAX_FUNCTION_LINES) -> list[tuple[int, str]]:
    rows = []
    for name, module in modules.items():
        for function in _functions(module.tree):
            length = function.end_lineno - function.lineno + 1
            if length > limit:
                rows.append((length, f"{name}.{function.name}"))
    return sorted(rows, reverse=True)


def parameter_count(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """What ``MAX_PARAMETERS`` counts: every named parameter but a leading ``self`` or ``cls``, and
    ``*args`` and ``**kwargs`` one each."""
    arguments = function.args
    positional = [a.arg for a in arguments.posonlyargs + arguments.args]
    bound = 1 if positional and positional[0] in ("self", "cls") else 0
    starred = (arguments.vararg is not None) + (arguments.kwarg is not None)
    return len(positional) - bound + len(arguments.kwonlyargs) + starred


def many_parameters(modules: dict[str, Module], limit: int = MAX_PARAMETERS) -> list[tuple[int, str]]:
    rows = []
    for name, module in modules.items():
        for function in _functions(module.tree):
            count = parameter_count(function)
            if count > limit:
                rows.append((count, f"{name}.{function.name}"))
    return sorted(rows, reverse=True)


def long_modules(modules: dict[str, Module], limit: int = MAX_MODULE_LINES) -> list[tuple[int, str]]:
    return sorted(((m.lines, n) for n, m in modules.items() if m.lines > limit), reverse=True)


def report(root: Path = ROOT) -> str:
    modules = project_modules(root)
    order = layers(root)
    groups = circles(modules)
    back = back_up_imports(modules, order)
    inner = [(n, line, t) for n, m in modules.items() for line, t in m.inner_imports]
    private = [(n, t, name) for n, m in modules.items() for t, name in m.private_names]
    lines = [
        f"modules: {len(modules)} ({sum(m.path.name == '__init__.py' for m in modules.values())} packages)",
        f"import circles: {len(groups)}",
        *(f"  circle: {' -> '.join(g)}" for g in groups),
        f"imports back up a layer: {len(back)}" + ("" if order else " (no layer contract in pyproject.toml)"),
        *(f"  {a} -> {b}" for a, b in back),
        f"in-function imports of project modules: {len(inner)} in {len({n for n, _, _ in inner})} files; "
        f"of other libraries (lazy): {sum(m.inner_third_party for m in modules.values())}",
        *(f"  {n}:{line} -> {t}" for n, line, t in inner),
        f"private names imported from another package: {len(private)}",
        *(f"  {n} <- {t}.{name}" for n, t, name in private),
        f"functions over {MAX_FUNCTION_LINES} lines: {len(long_functions(modules))}",
        *(f"  {length} {name}" for length, name in long_functions(modules)),
        "longest functions: " + ", ".join(f"{n} {length}" for length, n in long_functions(modules, 0)[:5]),
        f"functions of over {MAX_PARAMETERS} parameters: {len(many_parameters(modules))}",
        *(f"  {count} {name}" for count, name in many_parameters(modules)),
        f"modules over {MAX_MODULE_LINES} lines: {len(long_modules(modules))}",
        *(f"  {length} {name}" for length, name in long_modules(modules)),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT))
