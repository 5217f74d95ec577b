"""Measure the layout's budget: lines per package and module, long functions, imports and their circles.

``python tests/layout_budget.py`` prints the table the closing notes and the README quote;
``tests/test_architecture.py`` holds the limits. It lives beside the tests, not in the machinery it measures.
Imports are read with ``ast``, those inside
functions included, so a lazy import counts as much as one at the top of a module.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere
from pipeline.store.layout import PROJECT_PACKAGES as PACKAGES  # noqa: E402
from pipeline.store.layout import REPO_ROOT  # noqa: E402

# Which package may import which: the student's package imports none of the others, the plots and the
# exercises read the taught code only, the machinery may use those three, and the evidence (notebook 06's analysis)
# reads all of them. Of the machinery, only the notebooks' entry module may reach the evidence, and lazily.
ALLOWED_IMPORTS = {"helpers": {"helpers"}, "plots": {"plots", "helpers"}, "exercises": {"exercises", "helpers"},
                   "pipeline": {"pipeline", "helpers", "plots", "exercises"},
                   "evidence": {"evidence", "pipeline", "helpers", "plots", "exercises"}}
LAZY_DOORS = {"pipeline.notebook": "evidence"}  # the one way from the machinery into the evidence, inside functions
# Budgets in lines as `ruff format` writes them (the project's 120 columns), so denser lines cannot meet them.
HELPERS_LINE_BUDGET = 4_000
PIPELINE_LINE_BUDGET = 5_500
EVIDENCE_LINE_BUDGET = 2_800
# Ratchets until each meets its budget: what they hold, formatted, in their folders (2026-12-07; before the evidence had
# a package of its own pipeline/ held 10,136 with it). Lower one whenever its package shrinks, never raise it.
LINE_CEILINGS = {"pipeline": 7_484, "evidence": 2_881}
BUDGETS = {"helpers": HELPERS_LINE_BUDGET, "pipeline": PIPELINE_LINE_BUDGET, "evidence": EVIDENCE_LINE_BUDGET,
           "plots": 550, "exercises": 650}
MODULE_LINE_LIMIT = 600
FUNCTION_LINE_LIMIT = 60


@dataclass
class Module:
    name: str  # dotted, e.g. 'helpers.pretrain'
    path: Path
    lines: int
    imports: set[str] = field(default_factory=set)  # project modules it imports, anywhere in its body
    top_imports: set[str] = field(default_factory=set)  # those imported outside any function, as it loads
    long_functions: list[tuple[str, int]] = field(default_factory=list)  # (qualified name, lines) over the limit


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(target: str, known: set[str]) -> str | None:
    """The longest known module that ``target`` names or lies in ('helpers.model.build_model' -> 'helpers.model')."""
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


def _imported(node: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    found: set[str] = set()
    if isinstance(node, ast.Import):
        found = {_resolve(alias.name, known) for alias in node.names}
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = module.split(".")[: None if is_package else -1]
            parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join([*parts, base] if base else parts)
        # 'from helpers import model' names a module; 'from helpers.model import build_model' names a definition.
        found = {_resolve(f"{base}.{alias.name}", known) for alias in node.names}
    found.discard(module)
    return {name for name in found if name}


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, int]]:
    """Every function and method with its length in lines, decorators excluded."""
    found = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((prefix + node.name, node.end_lineno - node.lineno + 1))
            found += _functions(node, prefix + node.name + ".")
        elif isinstance(node, ast.ClassDef):
            found += _functions(node, prefix + node.name + ".")
    return found


def _outside_functions(tree: ast.AST) -> list[ast.AST]:
    """The nodes that run as the module loads: everything but the bodies of functions and of TYPE_CHECKING."""
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        stack += [c for c in ast.iter_child_nodes(node) if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef))
                  and not (isinstance(c, ast.If) and ast.unparse(c.test) == "TYPE_CHECKING")]  # type hints only
    return found


def read_modules(root: Path = REPO_ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Module]:
    paths = {module_name(p, root): p for package in packages for p in sorted((root / package).rglob("*.py"))}
    known = set(paths)
    modules = {}
    for name, path in paths.items():
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        package = path.name == "__init__.py"
        imports = set().union(*(_imported(n, name, package, known) for n in ast.walk(tree)))
        top = set().union(*(_imported(n, name, package, known) for n in _outside_functions(tree)))
        long = [(f, n) for f, n in _functions(tree) if n > FUNCTION_LINE_LIMIT]
        modules[name] = Module(name, path, len(text.splitlines()), imports, top, long)
    return modules


def import_circles(modules: dict[str, Module]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        for other in sorted(modules[name].imports):
            if other not in index:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in stack:
                low[name] = min(low[name], index[other])
        if low[name] == index[name]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == name:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for name in sorted(modules):
        if name not in index:
            visit(name)
    return circles


def wrong_direction(modules: dict[str, Module]) -> list[tuple[str, str]]:
    """(importer, imported) pairs that cross between packages against ALLOWED_IMPORTS, or through a lazy door
    (LAZY_DOORS) as the module loads."""
    def allowed(module: Module, other: str) -> bool:
        target = other.split(".")[0]
        if target in ALLOWED_IMPORTS[module.name.split(".")[0]]:
            return True
        return LAZY_DOORS.get(module.name) == target and other not in module.top_imports

    return sorted((m.name, other) for m in modules.values() for other in m.imports if not allowed(m, other))


def formatted_lines(root: Path, package: str) -> int:
    """The package's lines as `ruff format` writes them with the project's settings, on a copy (the budgets'
    measure); the raw count where ruff is not installed."""
    ruff = Path(sys.executable).with_name("ruff")
    files = sorted((root / package).rglob("*.py"))
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            copy = Path(tmp) / path.relative_to(root)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
        shutil.copyfile(REPO_ROOT / "pyproject.toml", Path(tmp) / "pyproject.toml")
        if ruff.is_file():
            subprocess.run([str(ruff), "format", "-q", str(Path(tmp) / package)], check=True, cwd=tmp)
        return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in Path(tmp, package).rglob("*.py"))


def package_lines(root: Path = REPO_ROOT) -> dict[str, int]:
    """Formatted lines per package (:func:`formatted_lines`)."""
    return {package: formatted_lines(root, package) for package in PACKAGES if (root / package).is_dir()}


def report(modules: dict[str, Module]) -> str:
    lines = [f"{package}: {total:,} formatted lines" + (f" (budget {BUDGETS[package]:,})" if package in BUDGETS else "")
             for package, total in package_lines().items()]
    lines += [f"  {m.name:<32} {m.lines:>5}" for m in sorted(modules.values(), key=lambda m: m.name)]
    lines.append(f"import circles: {import_circles(modules) or 'none'}")
    lines.append(f"imports against the direction: {wrong_direction(modules) or 'none'}")
    long = [(m.name, f, n) for m in modules.values() for f, n in m.long_functions]
    lines.append(f"functions over {FUNCTION_LINE_LIMIT} lines: {long or 'none'}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(read_modules()))
    sys.exit(0)
