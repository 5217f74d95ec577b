"""Run records: the small files of a finished run regenerate its figures and tables without the run folder."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from evidence import results
from pipeline import job
from pipeline.store import layout, records


def test_a_record_holds_only_small_files_and_loads_like_its_run(smoke_figures: Path, smoke_run_dir: Path,
                                                                 tmp_path: Path) -> None:
    record = records.save_record(smoke_run_dir, tmp_path / "records")
    files = [p for p in record.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 1_000_000
    assert not any(p.suffix in (".pt", ".npy") for p in files)  # no checkpoints, data or embeddings
    original, copy = results.load_run(smoke_run_dir), results.load_run(record)
    assert copy.missing == [] and copy.baseline == original.baseline and copy.baseline is not None
    assert (copy.lang, copy.preset, copy.seed) == (original.lang, original.preset, original.seed)
    stamp = json.loads((record / "pretrain" / layout.STAMP_NAME).read_text())
    assert set(stamp) == {"fingerprint"}  # no parameters: they name local folders


def test_figures_from_records_match_the_figures_from_the_run(smoke_figures: Path, smoke_run_dir: Path,
                                                              tmp_path: Path) -> None:
    out, docs = tmp_path / "regenerated", tmp_path / "docs"
    # --draft: the smoke run may come from uncommitted code while tests run during development
    code = job.main(["--figures-from", str(smoke_run_dir), "--records", str(tmp_path / "records"), "--draft",
                     "--figures", str(out), "--out", str(tmp_path / "runs"), "--docs", str(docs)])
    assert code == 0
    # --docs renders 06 and the run folder's own executed notebooks (its record holds none)
    assert (docs / "figures" / "06_figures.md").is_file()
    assert (docs / smoke_run_dir.name / "04_pretraining.md").is_file()
    for render in (docs / smoke_run_dir.name).glob("*.md"):  # no progress bar frozen at its first state
        assert "0%|" not in render.read_text(), render.name
    for name in ("table2_loss", "table3_accuracy", "claims_check"):
        regenerated, original = (pd.read_csv(folder / f"{name}.csv").drop(columns="run_dir", errors="ignore")
                                 for folder in (out, smoke_figures))
        pd.testing.assert_frame_equal(regenerated, original)
    provenance = json.loads((out / "provenance.json").read_text())
    assert [Path(r["run_dir"]).parent.name for r in provenance["runs"]] == ["records"]


def test_an_unfinished_run_is_refused_before_any_record_is_written(smoke_figures: Path, smoke_run_dir: Path,
                                                                   tmp_path: Path) -> None:
    unfinished = tmp_path / "smoke-fr"
    (unfinished / "pretrain").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="not a finished run.*metrics.csv"):
        records.save_records([smoke_run_dir, unfinished], tmp_path / "records")
    assert not (tmp_path / "records").exists()


def test_a_run_whose_model_stopped_early_is_refused_as_a_record(smoke_figures: Path, smoke_run_dir: Path,
                                                                tmp_path: Path) -> None:
    """train_cli --stop-at over a finished run leaves every file but an unfinished model: never a record."""
    stopped = tmp_path / "copied" / smoke_run_dir.name
    shutil.copytree(smoke_run_dir, stopped, ignore=shutil.ignore_patterns("data", "checkpoint.pt", "model", "*.npy"))
    path = layout.RunLayout(stopped).model("bert_ft").run_json
    path.write_text(json.dumps({**json.loads(path.read_text()), "finished": False, "steps_done": 3}))
    with pytest.raises(FileNotFoundError, match="bert_ft stopped before its last step"):
        records.save_records([stopped], tmp_path / "records", draft=True)
    assert not (tmp_path / "records").exists()


@pytest.fixture
def finished_run(smoke_figures: Path, smoke_run_dir: Path) -> Path:
    """The smoke run once notebooks 01-06 have run on it, so a test needs no other test to have finished it."""
    return smoke_run_dir


def _with_commits(run_dir: Path, tmp_path: Path, tiny: str, ft: str) -> Path:
    copy = tmp_path / "copied" / run_dir.name
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("data", "checkpoint.pt", "model", "*.npy"))
    for name, commit in (("bert_tiny", tiny), ("bert_ft", ft)):
        path = layout.RunLayout(copy).model(name).run_json
        info = json.loads(path.read_text())
        info.setdefault("environment", {})["git_commit"] = commit
        path.write_text(json.dumps(info))
    return copy


@pytest.mark.parametrize("tiny, ft, expected", [
    ("a" * 40 + "+dirty", "a" * 40, "uncommitted code"),
    ("a" * 40, "b" * 40, "different commits"),
])
def test_a_run_not_trained_at_one_clean_commit_is_refused_as_a_record(finished_run: Path, tmp_path: Path,
                                                                       tiny: str, ft: str, expected: str) -> None:
    run = _with_commits(finished_run, tmp_path, tiny, ft)
    with pytest.raises(records.UncommittedRun, match=expected):
        records.save_records([run], tmp_path / "records")
    assert not (tmp_path / "records").exists()


def test_the_records_command_refuses_a_run_of_uncommitted_code_in_one_line(finished_run: Path,
                                                                          tmp_path: Path) -> None:
    run = _with_commits(finished_run, tmp_path, "a" * 40 + "+dirty", "a" * 40 + "+dirty")
    argv = [sys.executable, "-m", "pipeline.store.records", "--runs", str(run), str(tmp_path / "records")]
    done = subprocess.run(argv,
                          cwd=layout.REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stderr.startswith("error: ") and "uncommitted code" in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert not (tmp_path / "records").exists()


def test_one_clean_commit_for_both_models_is_what_a_record_names(finished_run: Path, tmp_path: Path) -> None:
    run = _with_commits(finished_run, tmp_path, "c" * 40, "c" * 40)
    assert records.trained_commit(layout.RunLayout(run)) == "c" * 40


def test_a_draft_record_never_goes_into_figures(finished_run: Path) -> None:
    with pytest.raises(records.UncommittedRun, match="--draft records may not go into"):
        records.save_records([finished_run], layout.FIGURES_DIR / "drafts", draft=True)
    assert not (layout.FIGURES_DIR / "drafts").exists()


@pytest.mark.parametrize("argv, expected", [
    (["--figures-from", "nowhere", "--figures", "f"], "no such run folder"),
    (["--figures-from", "."], "needs --figures"),
    (["--records", "r"], "--records and --draft go with --figures-from"),
    (["--draft"], "--records and --draft go with --figures-from"),
])
def test_figures_only_arguments_fail_with_one_clear_line(argv: list[str], expected: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert job.main([*argv, "--out", str(tmp_path / "runs")]) == 1
    assert expected in capsys.readouterr().err


def test_a_render_leaves_out_progress_widgets_and_keeps_other_outputs() -> None:
    import nbformat

    from pipeline.run.runner import WIDGET_MIME, without_progress_widgets

    cell = nbformat.v4.new_code_cell("train()")
    cell.outputs = [nbformat.v4.new_output("display_data", data={WIDGET_MIME: {"model_id": "x"},
                                                                  "text/plain": "bert_tiny:   0%|  | 0/300"}),
                    nbformat.v4.new_output("stream", name="stdout", text="training time: 12 s\n")]
    notebook = without_progress_widgets(nbformat.v4.new_notebook(cells=[cell, nbformat.v4.new_markdown_cell("x")]))
    assert [o["output_type"] for o in notebook.cells[0].outputs] == ["stream"]


def _file_hashes(folder: Path) -> dict[str, str]:
    import hashlib

    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_record_passed_back_into_its_own_folder_is_left_as_it_is(finished_run: Path, tmp_path: Path) -> None:
    record = records.save_record(finished_run, tmp_path / "records")
    before = _file_hashes(record)
    assert records.save_records([record], tmp_path / "records", draft=True) == [record]
    assert _file_hashes(record) == before


def test_a_record_of_another_configuration_is_never_replaced(finished_run: Path, tmp_path: Path) -> None:
    record = records.save_record(finished_run, tmp_path / "records")
    before = _file_hashes(record)
    other = _with_commits(finished_run, tmp_path, "a" * 40, "a" * 40)
    path = layout.RunLayout(other).model("bert_ft").run_json
    info = json.loads(path.read_text())
    info["identity"]["seed"] = 99
    path.write_text(json.dumps(info))
    with pytest.raises(records.RecordConflict, match="another configuration"):
        records.save_records([other], tmp_path / "records")
    assert _file_hashes(record) == before


def test_a_failure_while_recording_leaves_the_previous_record_whole(finished_run: Path, tmp_path: Path,
                                                                      monkeypatch) -> None:
    record = records.save_record(finished_run, tmp_path / "records")
    before = _file_hashes(record)
    retrained = _with_commits(finished_run, tmp_path, "b" * 40, "b" * 40)  # same configuration, other run.json

    def failing(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(records, "compute_baseline", failing)  # after the run's files are copied
    with pytest.raises(OSError, match="disk full"):
        records.save_record(retrained, tmp_path / "records")
    assert _file_hashes(record) == before
    assert sorted(p.name for p in (tmp_path / "records").iterdir()) == [finished_run.name]  # no staging left
