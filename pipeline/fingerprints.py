"""What a step's result depends on, as one hash, and the stamps that record it in the step's folder.

A step's fingerprint covers its notebook's cell sources (never outputs or metadata, so a notebook
saved by JupyterLab reruns nothing), its parameters without absolute folders (so a moved runs folder
reruns nothing), the code of every project module the notebook imports, followed through the
imports of those modules, the content of the input files its parameters name (a ``files:`` corpus, a
vectors file: pipeline.content_hash), and the fingerprints of the steps it reads. A finished step leaves its
fingerprint in ``.step.json``; one that started leaves it in ``.step-started.json``.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from pipeline.content_hash import changed_inputs as compare_inputs
from pipeline.content_hash import content_digest, identity_of, input_digests, input_files, input_kind
from pipeline.layout import PROJECT_PACKAGES, REPO_ROOT, stamp_of, started_of
from pipeline.notebook_sync import cell_source, notebook_cells
from pipeline.steps import Step

FOLDER_PARAMETERS = ("run_dir", "out_dir", "run_dirs")  # absolute folders: left out of the fingerprint


def notebook_sources(notebook: Path) -> list[tuple[str, str]]:
    """(cell type, source) of every cell: what a student edits, never outputs, counts or metadata."""
    return [(cell.get("cell_type", ""), cell_source(cell)) for cell in notebook_cells(notebook)]


def _python_lines(source: str) -> str:
    """Cell source without IPython magics and shell escapes, so ``ast`` can read it."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def module_file(module: str) -> Path | None:
    """The file of a project module ('helpers.claims' -> helpers/claims.py), None if there is none."""
    base = REPO_ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@functools.lru_cache(maxsize=1024)
def _imports(source: str) -> tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    """The project names ``source`` imports: (``import a.b`` names, (``from m import x, y``: m, (x, y)) pairs).

    A pure function of the text, kept per text: parsing every module again for each step and check took seconds.
    """
    imports: list[str] = []
    froms: list[tuple[str, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imports.extend(alias.name for alias in node.names if alias.name.split(".")[0] in PROJECT_PACKAGES)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PROJECT_PACKAGES:
            froms.append((node.module, tuple(alias.name for alias in node.names)))
    return tuple(imports), tuple(froms)


def imported_project_modules(source: str) -> set[str]:
    """Names of the project's modules that ``source`` imports, anywhere in it (lazy imports included)."""
    imports, froms = _imports(source)
    found = set(imports)
    for module, names in froms:
        found.add(module)
        found.update(f"{module}.{name}" for name in names if module_file(f"{module}.{name}") is not None)
    return found


def project_modules(step: Step) -> list[str]:
    """Every project module the step's notebook imports, directly or through other project modules."""
    code = "\n".join(_python_lines(src) for kind, src in notebook_sources(step.notebook) if kind == "code")
    todo = sorted(imported_project_modules(code) | {"helpers"})
    seen: set[str] = set()
    while todo:
        module = todo.pop()
        if module in seen or module_file(module) is None:
            continue
        seen.add(module)
        parents = [".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)]
        todo.extend(parents)  # importing plots.x runs plots/__init__.py too
        todo.extend(imported_project_modules(module_file(module).read_text(encoding="utf-8")))
    return sorted(seen)


def portable(params: dict[str, Any]) -> dict[str, Any]:
    """Parameters without absolute folders or input paths, so moving a runs folder or an input changes no
    fingerprint (an input's content enters through its digest)."""
    kept = {k: v for k, v in params.items() if k not in FOLDER_PARAMETERS}
    for name in input_files(params):
        kept[name] = input_kind(params[name]) if name != "vectors" else "file"
    if "run_dirs" in params:
        kept["run_dirs"] = [Path(d).name for d in params["run_dirs"]]
    return kept


def fingerprint(step: Step, params: dict[str, Any], upstream: Sequence[Path] = ()) -> str:
    """Notebook cell sources, portable parameters, imported modules' code and upstream fingerprints."""
    digest = hashlib.sha256()
    digest.update(json.dumps(notebook_sources(step.notebook)).encode())
    digest.update(json.dumps(portable(params), sort_keys=True, default=str).encode())
    for module in project_modules(step):
        digest.update(module.encode())
        digest.update(module_file(module).read_bytes())
    digest.update(json.dumps(identity_of(input_digests(params)), sort_keys=True).encode())
    for folder in upstream:
        digest.update(f"{Path(folder).name}:{finished_with(folder) or 'missing'}".encode())
    return digest.hexdigest()


def with_contents(key: str, files: Sequence[Path]) -> str:
    """``key`` extended by the content of ``files`` (absent ones count as absent): for notebook 06, whose inputs
    are the record files of every run, so a record edited by hand reruns the figures."""
    digest = hashlib.sha256(key.encode())
    cache: dict[str, Any] = {}
    for path in files:
        digest.update(f"{Path(path).name}:{content_digest(Path(path), cache)}".encode())
    return digest.hexdigest()


def changed_inputs(step_folder: Path, params: dict[str, Any]) -> list[str]:
    """Why a step would rerun because of its input files: one line per file whose content is not the one it ran on."""
    try:
        recorded = json.loads(stamp_of(step_folder).read_text(encoding="utf-8")).get("inputs", {})
    except (OSError, ValueError):
        return []
    return compare_inputs(recorded, input_digests(params))


def _read_fingerprint(path: Path) -> str | None:
    """The fingerprint in a stamp; None if there is none, or if the stamp cannot be read (then the step reruns)."""
    if not path.is_file():
        return None
    try:
        stamp = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        print(f"warning: the stamp {path} cannot be read ({err}); the step counts as not finished and reruns",
              file=sys.stderr)
        return None
    return stamp.get("fingerprint") if isinstance(stamp, dict) else None


def finished_with(step_folder: Path) -> str | None:
    """The fingerprint the step in ``step_folder`` last finished with (None if it never finished)."""
    return _read_fingerprint(stamp_of(step_folder))


def started_with(step_folder: Path) -> str | None:
    """The fingerprint the step in ``step_folder`` was last started with (None if never, or unknown)."""
    return _read_fingerprint(started_of(step_folder))


def is_up_to_date(step_folder: Path, key: str) -> bool:
    return finished_with(step_folder) == key


def mark_started(step_folder: Path, key: str) -> None:
    """Record that the step starts with fingerprint ``key``, and remove its finished stamp.

    A step that fails now must not look finished later.
    """
    stamp_of(step_folder).unlink(missing_ok=True)
    started_of(step_folder).write_text(json.dumps({"fingerprint": key}))


def mark_finished(step_folder: Path, key: str, seconds: float, params: dict[str, Any], **more: Any) -> None:
    """The finished stamp: the fingerprint, how long the step took, its parameters and anything else worth keeping."""
    stamp = {"fingerprint": key, "seconds": round(seconds, 1), "params": params, **more}
    stamp_of(step_folder).write_text(json.dumps(stamp, indent=2))


def copy_fingerprint(step_folder: Path, into: Path) -> None:
    """A stamp holding only the fingerprint (parameters name local folders), for a record of a finished step."""
    key = finished_with(step_folder)
    if key is not None:
        Path(into).mkdir(parents=True, exist_ok=True)
        stamp_of(into).write_text(json.dumps({"fingerprint": key}) + "\n")
