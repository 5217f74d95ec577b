"""Issue 32, "Outputs are not protected": figures/ and docs/ are written only by the README's job and the
reference targets, a records folder is never taken for a run folder, a folder of records is never taken for a
record, a figures folder never goes inside a run folder, and 06 deletes only files it wrote. Each test failed on
the code before these guards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.job_options import JobError, parse_options, reference_outputs
from pipeline.layout import DOCS_DIR, FIGURES_DIR, PROVENANCE_NAME
from pipeline.runner import replace_figures

REFERENCE = FIGURES_DIR / "reference"
RECORDS = REFERENCE / "runs"
RECORD = RECORDS / "reference-en"
REFERENCE_RUNS = [RECORDS / f"reference-{lang}{tail}" for lang in ("en", "fr", "es") for tail in ("", "-seed1",
                                                                                                   "-seed2")]


def _refused(argv: list[str], *words: str) -> str:
    with pytest.raises(JobError) as err:
        parse_options(argv)
    message = str(err.value)
    for word in words:
        assert word in message, message
    return message


# ---------------------------------------------------------------- 1: only the README's jobs write figures/, docs/


def test_figures_from_a_run_into_figures_is_refused(tmp_path: Path) -> None:
    message = _refused(["--figures-from", str(RECORD), "--figures", str(FIGURES_DIR), "--out", str(tmp_path)],
                       "--figures", str(FIGURES_DIR), "--force")
    assert "README" in message


def test_docs_of_another_preset_are_refused(tmp_path: Path) -> None:
    _refused(["--preset", "reference", "--lang", "en", "--out", str(tmp_path), "--docs", str(DOCS_DIR)],
             "--docs", str(DOCS_DIR), "--force")


def test_force_lets_a_user_write_figures(tmp_path: Path) -> None:
    options = parse_options(["--figures-from", str(RECORD), "--figures", str(FIGURES_DIR), "--out", str(tmp_path),
                             "--force"])
    assert options.figures_dir == FIGURES_DIR.resolve()


def test_the_readme_and_reference_jobs_are_allowed(tmp_path: Path) -> None:
    readme = parse_options(["--out", str(tmp_path), "--docs", str(DOCS_DIR)])
    assert readme.figures_dir.resolve() == FIGURES_DIR.resolve() and readme.docs == DOCS_DIR.resolve()
    reference = parse_options(["--figures-from", *map(str, REFERENCE_RUNS), "--figures", str(REFERENCE), "--docs",
                               str(DOCS_DIR / "reference"), "--out", str(tmp_path)])
    assert reference.figures_dir == REFERENCE.resolve()


def test_reference_figures_from_runs_that_are_not_records_are_refused(tmp_path: Path) -> None:
    run = tmp_path / "my-run"
    (run / "pretrain").mkdir(parents=True)
    _refused(["--figures-from", str(run), "--figures", str(REFERENCE), "--out", str(tmp_path / "out")],
             "--figures", "figures/reference/runs")


def test_the_series_records_of_one_length_may_write_only_their_own_steps_folder(tmp_path: Path) -> None:
    series = (REFERENCE / "series").resolve()
    assert reference_outputs([series / "reference-en-steps2400"], None) == [REFERENCE / "steps2400"]
    assert reference_outputs([series / "reference-en-steps1200", series / "reference-fr-seed1-steps1200"],
                             None) == [REFERENCE / "steps1200"]
    assert reference_outputs([series / "reference-en-steps1200", series / "reference-en-steps2400"], None) == []
    assert reference_outputs([series / "reference-en-steps1200", tmp_path / "reference-fr-steps1200"], None) == []
    assert reference_outputs([series / "reference-en"], None) == []  # no length in its name: no steps folder
    assert reference_outputs([series / "reference-en-stepsX"], None) == []
    _refused(["--figures-from", str(series / "reference-en-steps2400"), "--figures", str(REFERENCE), "--out",
              str(tmp_path)], "--figures", "figures/reference/runs or series")


# ---------------------------------------------------------------- 2: a records folder is not a runs folder


def test_check_on_the_records_folder_is_refused() -> None:
    _refused(["--preset", "reference", "--lang", "en", "--out", str(RECORDS), "--check"], "--out", str(RECORDS),
             "runs/")


def test_out_inside_docs_is_refused(tmp_path: Path) -> None:
    _refused(["--figures-from", str(RECORD), "--figures", str(tmp_path / "f"), "--out", str(DOCS_DIR)], "--out",
             str(DOCS_DIR))


# ---------------------------------------------------------------- 3: the parent of records is not a record


def test_figures_from_the_parent_of_records_is_refused(tmp_path: Path) -> None:
    message = _refused(["--figures-from", str(RECORDS), "--figures", str(tmp_path / "f"), "--out", str(tmp_path)],
                       str(RECORDS), "subfolders", "reference-en")
    assert "pretrain" in message


# ---------------------------------------------------------------- 4: a figures folder is not inside a run folder


def test_figures_inside_a_figures_from_run_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "my-run"
    (run / "pretrain").mkdir(parents=True)
    _refused(["--figures-from", str(run), "--figures", str(run / "pretrain"), "--out", str(tmp_path / "out")],
             "--figures", str(run), "inside")


def test_figures_inside_the_jobs_run_folder_is_refused(tmp_path: Path) -> None:
    options = parse_options(["--preset", "demo", "--lang", "en", "--out", str(tmp_path)])
    run_dir = options.runs()[0].run_dir(options.out)
    _refused(["--preset", "demo", "--lang", "en", "--out", str(tmp_path), "--figures", str(run_dir / "static")],
             "--figures", str(run_dir), "inside")


# ---------------------------------------------------------------- 5: 06 deletes only what it wrote


def _provenance(folder: Path, generated_by: str, files: list[str]) -> None:
    (folder / PROVENANCE_NAME).write_text(json.dumps({"generated_by": generated_by, "files": files}))


@pytest.mark.parametrize("generated_by, kept", [
    ("my own script", True),  # a provenance.json 06 did not write: the files it lists are not 06's to delete
    ("evidence.figures.write_outputs (notebooks/06_figures.ipynb)", False),  # 06's own previous set is replaced
])
def test_06_deletes_only_the_files_its_own_provenance_lists(tmp_path: Path, generated_by: str, kept: bool) -> None:
    figures, staging = tmp_path / "figures", tmp_path / "staging"
    figures.mkdir()
    staging.mkdir()
    (figures / "listed.png").write_text("old")
    _provenance(figures, generated_by, ["listed.png"])
    (staging / "table1.md").write_text("new")
    replace_figures(staging, figures, log=lambda _: None)
    assert (figures / "listed.png").exists() == kept and (figures / "table1.md").read_text() == "new"
