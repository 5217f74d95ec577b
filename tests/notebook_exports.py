"""Keep the algorithm a notebook shows and the package's copy of it identical (like d2l's ``#@save``).

Each top-level definition in a code cell whose first line is ``#| export helpers.<module>`` must be character
for character that module's definition; ``python tests/notebook_exports.py --write`` copies the package's
definitions into the notebooks (without it, it only reports). The package stays the source, so nothing needs a
build step: the tests, the job and the GPU runner import it as it is. A developer's tool beside the tests that
hold it (tests/test_notebook_hygiene.py), not machinery: nothing in the job calls it.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys
from pathlib import Path
from typing import NamedTuple, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere
from pipeline.run.notebook_sync import cell_source, definitions, notebook_cells  # noqa: E402
from pipeline.store.layout import NOTEBOOKS_DIR  # noqa: E402

EXPORT_MARK = "#| export "


class Mismatch(NamedTuple):
    notebook: str
    cell: int
    module: str
    name: str
    problem: str

    def __str__(self) -> str:
        return f"{self.notebook} cell {self.cell}: {self.module}.{self.name}: {self.problem}"


def exported_cells(notebook: Path) -> list[tuple[int, str, str]]:
    """(cell index, module name, cell source) for every export cell of ``notebook``."""
    code = [(i, cell_source(c)) for i, c in enumerate(notebook_cells(notebook)) if c.get("cell_type") == "code"]
    return [(i, s.splitlines()[0][len(EXPORT_MARK):].strip(), s) for i, s in code if s.startswith(EXPORT_MARK)]


def package_definitions(module: str) -> dict[str, str]:
    return definitions(inspect.getsource(importlib.import_module(module)))


def check_notebook(notebook: Path) -> list[Mismatch]:
    """Every export cell's definitions against the package; an empty list means they agree."""
    problems = []
    name = Path(notebook).name
    for index, module, source in exported_cells(notebook):
        if not module.startswith("helpers."):
            problems.append(Mismatch(name, index, module, "-", "export target must be a helpers module"))
            continue
        package, shown = package_definitions(module), definitions(source)
        if not shown:
            problems.append(Mismatch(name, index, module, "-", "export cell defines nothing"))
        for def_name, text in shown.items():
            if def_name not in package:
                problems.append(Mismatch(name, index, module, def_name, "not defined in the package"))
            elif package[def_name] != text:
                problems.append(Mismatch(name, index, module, def_name,
                                         "differs from the package (run python tests/notebook_exports.py --write)"))
    return problems


def write_notebook(notebook: Path) -> int:
    """Copy the package's definitions into ``notebook``'s export cells; returns how many changed."""
    data = json.loads(Path(notebook).read_text(encoding="utf-8"))
    changed = 0
    for index, module, source in exported_cells(notebook):
        package, new = package_definitions(module), source
        for def_name, text in definitions(source).items():
            if def_name in package and package[def_name] != text:
                new = new.replace(text, package[def_name])
                changed += 1
        data["cells"][index]["source"] = new.splitlines(keepends=True)
    if changed:
        Path(notebook).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/notebook_exports.py", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="copy the package's definitions into the notebooks")
    notebooks = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
    if parser.parse_args(argv).write:
        for path in notebooks:
            if (n := write_notebook(path)):
                print(f"{path.name}: {n} definition(s) updated from the package")
    problems = [m for path in notebooks for m in check_notebook(path)]
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
