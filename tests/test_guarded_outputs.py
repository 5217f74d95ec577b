"""Issue 32, "Outputs are not protected": figures/ and docs/ are written only by the README's job and the
reference targets, a records folder is never taken for a run folder, a folder of records is never taken for a
record, a figures folder never goes inside a run folder, and 06 deletes only files it wrote. Each test failed on
the code before these guards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.run.job_options import JobError, parse_options, reference_outputs
from pipeline.run.runner import replace_figures
from pipeline.store.layout import DOCS_DIR, FIGURES_DIR, PROVENANCE_NAME

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


# ---------------------------------------------------------------- issue 58: records are never run folders, and the
# committed results are written only by the commands meant for them. Each test failed on the code before.


def _contents(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def smoke_record(smoke_figures: Path, smoke_run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pipeline.store.records import save_records

    return save_records([smoke_run_dir], tmp_path_factory.mktemp("records"), draft=True)[0]


def test_a_record_says_what_it_is(smoke_record: Path) -> None:
    from pipeline.store.layout import RECORD_MARK, record_holding

    assert json.loads((smoke_record / RECORD_MARK).read_text())["record"] == f"run {smoke_record.name}"
    assert record_holding(smoke_record / "pretrain" / "bert_ft") == smoke_record.resolve()
    assert record_holding(smoke_record.parent) is None  # the folder of records is not itself one


def test_the_job_pointed_at_a_record_refuses_and_leaves_it_byte_identical(smoke_record: Path,
                                                                          capsys: pytest.CaptureFixture) -> None:
    from pipeline import job

    before = _contents(smoke_record)
    preset, lang = smoke_record.name.split("-")[:2]
    assert job.main(["--preset", preset, "--lang", lang, "--out", str(smoke_record.parent), "--no-figures"]) != 0
    assert "is in the record" in capsys.readouterr().err
    assert _contents(smoke_record) == before


def test_train_cli_and_a_notebook_pointed_at_a_record_refuse_and_leave_it_byte_identical(smoke_record: Path) -> None:
    from pipeline.notebook import start
    from pipeline.store.run_identity import RecordNotARun, claim_step_by_hand

    before = _contents(smoke_record)
    with pytest.raises(RecordNotARun, match="python -m pipeline.job --figures-from"):
        claim_step_by_hand(smoke_record / "pretrain", "train_cli")  # train_cli --out RECORD/pretrain holds it first
    with pytest.raises(RecordNotARun):
        start("smoke", "en", run_dir=smoke_record)
    assert _contents(smoke_record) == before


def test_reference_figures_from_part_of_the_committed_records_are_refused(tmp_path: Path) -> None:
    """One record redrew 33 committed files, table3 down from 17 lines to 11."""
    _refused(["--figures-from", str(RECORD), "--figures", str(REFERENCE), "--out", str(tmp_path)],
             "--figures", str(REFERENCE), "--force")
    assert reference_outputs([d.resolve() for d in REFERENCE_RUNS], None)  # the whole set still may


def test_a_smoke_run_is_never_recorded_among_the_reference_records(smoke_run_dir: Path, tmp_path: Path) -> None:
    _refused(["--figures-from", str(smoke_run_dir), "--records", str(RECORDS), "--figures", str(REFERENCE),
              "--out", str(tmp_path)], str(smoke_run_dir.name), "not a run of the reference preset")


def test_docs_that_would_land_in_the_run_folders_are_refused(tmp_path: Path) -> None:
    _refused(["--preset", "smoke", "--lang", "en", "--out", str(tmp_path), "--docs", str(tmp_path)],
             "--docs", "run folder")


@pytest.mark.parametrize("option", [["--labelled", "none"], ["--control"]])  # --vectors: test_run's table
def test_the_readme_job_with_another_option_keeps_its_figures_beside_its_runs(tmp_path: Path,
                                                                              option: list[str]) -> None:
    options = parse_options(["--out", str(tmp_path), *option])
    assert options.figures_dir != FIGURES_DIR and options.figures_dir.is_relative_to(tmp_path)


def test_one_vectors_file_for_two_languages_is_refused(tmp_path: Path) -> None:
    """French was aligned to English vectors (345 of 2,000 tokens found) with exit 0."""
    _refused(["--lang", "en,fr", "--vectors", __file__, "--out", str(tmp_path)], "--vectors", "one --lang per vectors")
