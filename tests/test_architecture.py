"""The layout's budget (issue 20): a small package for the student, the machinery beside it, imports one way."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import layout_budget as arch


def test_the_student_package_the_plots_and_the_exercises_stay_within_their_budgets() -> None:
    lines = arch.package_lines()
    over = {p: (lines[p], cap) for p, cap in arch.BUDGETS.items() if p not in arch.LINE_CEILINGS and lines[p] > cap}
    assert not over, f"formatted lines over budget (package: (lines, budget)): {over}"


def test_the_measure_is_formatted_lines_so_denser_code_does_not_meet_it(tmp_path: Path) -> None:
    _tree(tmp_path, {"helpers/__init__.py": "", "helpers/a.py": "def f(a,b): return [a,\n b]\n"})
    assert arch.formatted_lines(tmp_path, "helpers") == 2  # 'def f(a, b):' and its return on a line of its own


def test_the_machinery_and_the_evidence_do_not_grow_past_their_last_size() -> None:
    lines = arch.package_lines()
    grown = {p: (lines[p], cap, arch.BUDGETS[p]) for p, cap in arch.LINE_CEILINGS.items() if lines[p] > cap}
    assert not grown, (f"over the size held after the last cut (package: (lines, ceiling, budget)): {grown}; pay for "
                       "new code by removing as much")


def test_the_architecture_page_states_the_budgets_and_their_ceilings() -> None:
    text = " ".join((arch.REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").split())
    for package, ceiling in arch.LINE_CEILINGS.items():
        assert (f"`{package}/`: budget {arch.BUDGETS[package]:,} formatted lines, held by a test to the {ceiling:,} "
                "it holds now") in text


def test_no_module_and_no_function_is_over_its_limit() -> None:
    modules = arch.read_modules()
    too_long = {m.name: m.lines for m in modules.values() if m.lines > arch.MODULE_LINE_LIMIT}
    assert not too_long
    assert not [(m.name, m.long_functions) for m in modules.values() if m.long_functions]


def test_the_project_has_no_import_circle() -> None:
    assert arch.import_circles(arch.read_modules()) == []


def test_imports_run_from_the_machinery_to_the_student_package_only() -> None:
    assert arch.wrong_direction(arch.read_modules()) == []


def test_the_machinery_reaches_the_evidence_only_through_the_notebooks_door_and_lazily(tmp_path: Path) -> None:
    door = next(iter(arch.LAZY_DOORS))
    _tree(tmp_path, {"pipeline/__init__.py": "", "evidence/__init__.py": "", "evidence/results.py": "X = 1\n",
                     f"{door.replace('.', '/')}.py": "def f():\n    from evidence.results import X\n",
                     "pipeline/job.py": "def f():\n    from evidence.results import X\n",
                     "pipeline/run/steps.py": "from evidence.results import X\n"})
    wrong = arch.wrong_direction(arch.read_modules(tmp_path, ("pipeline", "evidence")))
    assert wrong == [("pipeline.job", "evidence.results"), ("pipeline.run.steps", "evidence.results")]


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_the_measurement_finds_a_circle_through_an_import_inside_a_function(tmp_path: Path) -> None:
    _tree(tmp_path, {"helpers/__init__.py": "", "helpers/a.py": "import helpers.b\n",
                     "helpers/b.py": "def f():\n    from helpers import a\n"})
    modules = arch.read_modules(tmp_path, ("helpers",))
    assert arch.import_circles(modules) == [["helpers.a", "helpers.b"]]


def test_the_measurement_finds_an_import_against_the_direction_and_a_long_function(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(arch.FUNCTION_LINE_LIMIT))
    _tree(tmp_path, {"helpers/__init__.py": "", "pipeline/__init__.py": "", "pipeline/job.py": "X = 1\n",
                     "helpers/a.py": "from pipeline.job import X\n\n\ndef long():\n" + body})
    modules = arch.read_modules(tmp_path, ("helpers", "pipeline"))
    assert arch.wrong_direction(modules) == [("helpers.a", "pipeline.job")]
    assert modules["helpers.a"].long_functions == [("long", arch.FUNCTION_LINE_LIMIT + 1)]


def test_reading_runs_and_records_loads_neither_torch_nor_transformers() -> None:
    # Notebook 06, make reference-figures and the series read saved numbers: importing torch and transformers cost
    # its kernel about 10 s of a loaded 2-core machine before this was held (baselines and the prepared data load
    # them only where they compute).
    code = ("import sys; from evidence import figures, series; from pipeline import job; "
            "from pipeline.store import records; "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=arch.REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_architecture_page_names_every_folder_and_module_as_the_packages_hold_them() -> None:
    page = (arch.REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| ")]
    for package in ("pipeline", "evidence"):
        for path in sorted((arch.REPO_ROOT / package).rglob("*.py")):
            if path.name == "__init__.py":
                continue
            folder = path.parent.relative_to(arch.REPO_ROOT / package)
            where = "(top)" if package == "pipeline" and folder == Path(".") else f"`{folder}/`"
            if package == "pipeline":
                named = [row for row in rows if row.split("|")[1].strip() == where
                         and f"`{path.stem}`" in row.split("|")[2]]
            else:
                named = [row for row in rows if f"`{path.stem}`" in row.split("|")[1]]
            assert named, f"docs/architecture.md has no row for {package}/{path.relative_to(arch.REPO_ROOT / package)}"
