"""What every committed notebook guarantees: no outputs, algorithm cells equal to the package, exercises."""

from __future__ import annotations

import json
from pathlib import Path

import notebook_exports
import pytest

from pipeline.run.notebook_sync import cell_source
from pipeline.run.steps import FIGURES_STEP, STEPS

NOTEBOOKS = [step.notebook for step in (*STEPS, FIGURES_STEP)]
FIX = "run: .venv/bin/nbstripout notebooks/*.ipynb (or make strip)"


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebooks_carry_no_outputs_or_execution_counts(path: Path) -> None:
    for n, cell in enumerate(_cells(path)):
        if cell["cell_type"] == "code":
            assert not cell.get("outputs") and cell.get("execution_count") is None, f"{path.name} cell {n}: {FIX}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_shows_its_algorithm_in_export_cells_equal_to_the_package(path: Path) -> None:
    assert notebook_exports.exported_cells(path), f"{path.name} shows no algorithm in a '#| export' cell"
    problems = notebook_exports.check_notebook(path)
    assert not problems, "\n".join(map(str, problems))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_ends_with_self_checked_exercises(path: Path) -> None:
    sources = ["".join(c["source"]) for c in _cells(path)]
    checks = [s for s in sources if "exercises.check(" in s]
    assert len(checks) >= 2, f"{path.name} needs at least two exercises with a self-check cell"
    assert any("solve_exercises" in s for s in sources if "answer" in s)


def test_the_sync_check_catches_a_notebook_that_drifted_from_the_package(tmp_path: Path) -> None:
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": "#| export helpers.crossing\ndef fraction_of(step, total):\n    return 0.5\n"}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "drift.ipynb"
    path.write_text(json.dumps(nb))
    [problem] = notebook_exports.check_notebook(path)
    assert problem.name == "fraction_of" and "differs" in problem.problem
    assert notebook_exports.write_notebook(path) == 1
    assert notebook_exports.check_notebook(path) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_has_an_explanation_exercise_whose_reference_answer_shows_only_after_the_check(
        path: Path) -> None:
    checks = ["".join(c["source"]) for c in _cells(path) if "exercises.check(" in "".join(c["source"])]
    assert any("explanation=" in s for s in checks), (
        f"{path.name}: no exercise asks for a prediction or an explanation with a written reference answer "
        "(pass explanation=... to exercises.check, which prints it after a right answer)")


# Reading pace of a lesson (issue 31, item 8). Prose at 150 words a minute and code at 5 lines a minute (12 s a
# line, run and read); import statements are skimmed, not read, and do not count. With these rates notebook 04 as
# a student read it (3,093 words and 495 lines before its exercises) comes out at 101 minutes; that student took
# 2 to 2.5 hours, running it included. The other five lessons come out at 42 to 59 minutes.
WORDS_PER_MINUTE, CODE_LINES_PER_MINUTE, LESSON_MINUTES = 150, 5, 70


def _code_lines_read(source: str) -> int:
    """Non-blank lines of a code cell, less the lines of its import statements."""
    import ast

    lines = {n for n, line in enumerate(source.splitlines(), 1) if line.strip()}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            lines -= set(range(node.lineno, node.end_lineno + 1))
    return len(lines)


def lesson_minutes(path: Path) -> float:
    """Minutes to read a notebook's lesson: every cell before its exercises and appendices."""
    minutes = 0.0
    for cell in _cells(path):
        source = cell_source(cell)
        if cell["cell_type"] == "markdown" and source.startswith(("## Exercises", "## Appendix")):
            break
        if cell["cell_type"] == "markdown":
            minutes += len(source.split()) / WORDS_PER_MINUTE
        else:
            minutes += _code_lines_read(source.replace("%matplotlib", "# %matplotlib")) / CODE_LINES_PER_MINUTE
    return minutes


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_lesson_takes_much_more_than_an_hour_to_read(path: Path) -> None:
    minutes = lesson_minutes(path)
    assert minutes <= LESSON_MINUTES, (
        f"{path.name}: its lesson reads in about {minutes:.0f} minutes ({WORDS_PER_MINUTE} words and "
        f"{CODE_LINES_PER_MINUTE} code lines a minute), over {LESSON_MINUTES}; move material after '## Exercises' "
        "into an '## Appendix · ...' section, or into the package")


def test_the_readme_states_each_lessons_reading_time_as_measured() -> None:
    minutes = {path.stem: lesson_minutes(path) for path in NOTEBOOKS}
    others = [m for stem, m in minutes.items() if not stem.startswith("04")]
    readme = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8").split())
    assert (f"A test holds every lesson to {LESSON_MINUTES} minutes at {WORDS_PER_MINUTE} words and "
            f"{CODE_LINES_PER_MINUTE} lines of code a minute (imports not counted); notebook 04's reads in "
            f"{minutes['04_pretraining']:.0f}, the others in {min(others):.0f} to {max(others):.0f}.") in readme
