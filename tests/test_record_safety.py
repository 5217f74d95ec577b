"""Issue 21, case 6 and item 9: a set of outputs is replaced whole or not at all, a folder of figures holds one
set, and a full disk leaves no half-written file (checkpoint, metrics, executed notebook) for a rerun to trust.
Each test fails on 0cc080c's behaviour."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from evidence import ablations
from pipeline.run import runner, steps
from pipeline.store import checkpoints, staging
from pipeline.store.layout import PROVENANCE_NAME, REPO_ROOT
from pipeline.train import training

REFERENCE = REPO_ROOT / "figures" / "reference"
PER_SEED_AS_TEXT = {"loss_per_seed": str, "accuracy_per_seed": str}


# An ablation table in the real format (the one committed at 62809b4, before its records were withdrawn as
# trained from uncommitted code): a fixture for how tables are written, not a result.
ABLATION_TABLE = Path(__file__).parent / "golden" / "ablations_table.csv"


def _reference_ablations() -> pd.DataFrame:
    return pd.read_csv(ABLATION_TABLE, dtype=PER_SEED_AS_TEXT)


def _ablation_set(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name.startswith(ablations.TABLE_NAME)}


# --------------------------------------------------------------------------- the ablation outputs


def test_an_ablation_figure_that_fails_leaves_the_previous_table_and_figure_whole(tmp_path: Path,
                                                                                 monkeypatch) -> None:
    """The issue: the figure failed after ablations.csv/.md were rewritten, leaving new tables beside old figures."""
    assert ablations.write_outputs(_reference_ablations(), tmp_path, {"runs": ["reference-en"]})
    before = _ablation_set(tmp_path)
    assert len(before) == 5
    edited = _reference_ablations()
    edited["eval_accuracy"] += 0.1

    def fails(table):
        raise ValueError("'xerr' must not contain negative values")

    monkeypatch.setattr(ablations, "plot_ablations", fails)
    with pytest.raises(ValueError, match="xerr"):
        ablations.write_outputs(edited, tmp_path, {"runs": ["reference-en"]})
    assert _ablation_set(tmp_path) == before
    assert [p.name for p in tmp_path.iterdir() if "incoming" in p.name] == []


def test_an_interval_that_misses_its_mean_is_drawn_and_named_in_the_figure_and_a_warning(tmp_path: Path,
                                                                                         capsys) -> None:
    table = _reference_ablations()
    table.loc[table["variant"] == "scale_bert", "accuracy_vs_paper"] += 1.0  # as after a record edited by hand
    assert ablations.intervals_missing_mean(table) == ["scale_bert (accuracy)"]
    written = ablations.write_outputs(table, tmp_path, {"runs": ["reference-en"]})
    assert len(written) == 5 and all(p.is_file() for p in written)
    assert "the interval of scale_bert (accuracy) does not hold its mean" in capsys.readouterr().err
    title = ablations.plot_ablations(table).get_suptitle()
    assert "intervals that miss their mean, drawn only up to it: scale_bert (accuracy)" in title.replace("\n", " ")
    assert ablations.intervals_missing_mean(_reference_ablations()) == []  # the committed table has none


def test_a_staging_folder_whose_process_is_gone_is_removed_by_the_next_writer_and_a_live_ones_kept(
        tmp_path: Path) -> None:
    import subprocess
    import sys

    gone = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    abandoned = tmp_path / staging.staging_name(ablations.TABLE_NAME, gone)
    live = tmp_path / staging.staging_name(ablations.TABLE_NAME, os.getppid())  # another writer, still running
    for folder in (abandoned, live):
        folder.mkdir()
        (folder / "ablations.csv").write_text("half")
    ablations.write_outputs(_reference_ablations(), tmp_path, {"runs": ["reference-en"]})
    assert not abandoned.exists() and live.exists() and (tmp_path / "ablations.csv").read_text() != "half"


# --------------------------------------------------------------------------- notebook 06's set of files


def _figures_notebook(write_notebook, names: list[str], fail: bool = False, text: str = "new") -> Path:
    """A stand-in for notebook 06 that writes ``names`` (each holding ``text`` and its name) and a provenance.json
    listing them, as 06 does; with ``fail``, its cell raises once they are written."""
    body = ("import json\nfrom pathlib import Path\n"
            f"for name in {names!r}:\n    (Path(out_dir) / name).write_text({text!r} + ' ' + name)\n"
            f"(Path(out_dir) / {PROVENANCE_NAME!r}).write_text(json.dumps({{'files': {names!r}, "
            f"'generated_by': 'evidence.figures.write_outputs (notebooks/06_figures.ipynb)'}}))\n")
    return write_notebook("06_figures", "run_dirs = None\nout_dir = None\nseries_csv = None\nsolve_exercises = False",
                          body + ("raise RuntimeError('plot failed')" if fail else ""))


def test_figures_the_new_runs_do_not_draw_are_removed_so_a_folder_holds_one_set(tmp_path: Path,
                                                                                write_notebook) -> None:
    """The issue: --figures-from over runs without metrics left another run's fig1a/1b/2 beside the new tables."""
    figures, executed = tmp_path / "figures", tmp_path / "exec"
    figures.mkdir()
    (figures / "vector_quality.csv").write_text("not 06's")
    _figures_notebook(write_notebook, ["fig1a_train_loss.png", "fig3_accuracy_by_language.png", "table2_loss.csv"])
    assert runner.run_figures([], figures, executed, log=lambda m: None)
    _figures_notebook(write_notebook, ["fig3_accuracy_by_language.png", "table2_loss.csv"])  # no run with metrics
    messages: list[str] = []
    assert runner.run_figures([], figures, executed, log=messages.append)
    assert sorted(p.name for p in figures.iterdir() if not p.name.startswith(".")) == [
        "fig3_accuracy_by_language.png", PROVENANCE_NAME, "table2_loss.csv", "vector_quality.csv"]
    assert any("did not draw fig1a_train_loss.png this time: removed" in m for m in messages)


def test_the_real_figures_step_lists_exactly_the_files_it_wrote(tmp_path: Path) -> None:
    """What the removal above relies on: 06's provenance.json names every file it wrote, and only those."""
    from evidence import figures
    from evidence.results import load_runs

    record = tmp_path / "runs" / "reference-en"
    shutil.copytree(REFERENCE / "runs" / "reference-en", record)
    for metrics in record.rglob("metrics.csv"):
        metrics.unlink()  # a run without metrics: Figures 1-2 are not drawn
    out = tmp_path / "figures"
    with pytest.warns(UserWarning, match="missing bert_tiny metrics"):
        written = figures.write_outputs(load_runs([record]), out)
    listed = json.loads((out / PROVENANCE_NAME).read_text())["files"]
    assert sorted(listed) == sorted(p.name for p in written if p.name != PROVENANCE_NAME)
    assert sorted(p.name for p in out.iterdir()) == sorted([*listed, PROVENANCE_NAME])
    assert not any(name.startswith("fig1") or name.startswith("fig2") for name in listed)


def test_a_failing_06_leaves_the_old_figures_and_a_kill_while_it_replaces_them_leaves_it_to_rerun(
        tmp_path: Path, write_notebook, monkeypatch) -> None:
    """Neither leaves a staging folder. The notebook fails before any file is replaced, so the previous set stays
    whole; a kill part-way through the replacement comes after the stamp is gone, so --check says 06 would rerun."""
    figures, executed = tmp_path / "figures", tmp_path / "exec"
    _figures_notebook(write_notebook, ["table2_loss.csv"])
    assert runner.run_figures([], figures, executed, log=lambda m: None)
    assert not runner.figures_stale([], figures)

    _figures_notebook(write_notebook, ["table2_loss.csv"], fail=True, text="newer")
    with pytest.raises(steps.StepFailed, match="plot failed"):
        runner.run_figures([], figures, executed, force=True, log=lambda m: None)
    assert (figures / "table2_loss.csv").read_text() == "new table2_loss.csv"
    assert [p.name for p in tmp_path.iterdir() if "incoming" in p.name] == []
    _figures_notebook(write_notebook, ["table2_loss.csv"])  # 06 as it was: its stamp still holds
    assert not runner.figures_stale([], figures)

    def killed(source: Path, target: Path) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "move_into", killed)
    with pytest.raises(KeyboardInterrupt):
        runner.run_figures([], figures, executed, force=True, log=lambda m: None)
    assert runner.figures_stale([], figures)  # --check: "would rerun 06_figures", not "up to date"
    assert [p.name for p in tmp_path.iterdir() if "incoming" in p.name] == []


# --------------------------------------------------------------------------- a full disk


def test_a_full_disk_while_papermill_writes_names_the_folder_and_leaves_no_broken_notebook(
        tmp_path: Path, write_notebook, monkeypatch) -> None:
    """The issue: papermill's raw `OSError: [Errno 28]` traceback, and an executed notebook that was not JSON."""
    import papermill.engines
    import papermill.execute

    notebook = _figures_notebook(write_notebook, ["table2_loss.csv"], fail=True)
    executed = tmp_path / "exec" / "06_figures.ipynb"

    def full_disk(nb, path):
        Path(path).write_text('{"cells": [')  # what a full disk leaves: the start of the JSON
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(papermill.engines, "write_ipynb", full_disk)
    monkeypatch.setattr(papermill.execute, "write_ipynb", full_disk)
    with pytest.raises(steps.StepFailed) as info:
        runner.execute_notebook(notebook, executed, {"out_dir": str(tmp_path / "out")})
    message = str(info.value)
    assert "\n" not in message and str(executed.parent) in message and "free space there" in message
    assert list(executed.parent.iterdir()) == []  # neither a broken copy nor its temporary file


def test_metrics_and_run_json_are_replaced_whole_or_not_at_all(tmp_path: Path, monkeypatch) -> None:
    metrics = tmp_path / "metrics.csv"
    row = {"step": 10, "train_loss": 5.0, "eval_loss": 5.1, "eval_accuracy": 0.1, "lr": 1e-4, "elapsed_s": 1.0}
    training.write_metrics(metrics, [row])
    before = metrics.read_text()
    with pytest.raises(KeyError):
        training.write_metrics(metrics, [{**row, "step": 20}, {"step": 30}])  # fails after writing a row
    assert metrics.read_text() == before and [p.name for p in tmp_path.iterdir()] == ["metrics.csv"]
    run_json = tmp_path / "run.json"
    checkpoints.write_run_json(run_json, {"finished": True})
    write_text = Path.write_text

    def full_disk(path: Path, text: str, *args, **kwargs) -> int:
        write_text(path, text[:5])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(OSError, match=rf"no space left to write {run_json}: free space on that disk \(in {tmp_path}\), "
                                      "then run the same command again"):
        checkpoints.write_run_json(run_json, {"finished": False})
    monkeypatch.undo()
    assert json.loads(run_json.read_text()) == {"finished": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.csv", "run.json"]
