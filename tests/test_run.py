"""The main job's runner: chaining, skipping unchanged steps, and failing loudly."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from helpers import run as job


def _notebook(path: Path, body: str) -> None:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('out_dir = "x"\nvalue = 1')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


@pytest.fixture()
def toy_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> job.Step:
    """A one-cell notebook standing in for a real step, so the runner is tested on its own."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    _notebook(notebooks / "99_toy.ipynb",
              "from pathlib import Path\nPath(out_dir).mkdir(parents=True, exist_ok=True)\n"
              "(Path(out_dir) / 'value.txt').write_text(str(value))")
    monkeypatch.setattr(job, "NOTEBOOKS_DIR", notebooks)
    return job.Step("99_toy", "toy")


def test_step_runs_then_skips_until_something_changes(tmp_path: Path, toy_step: job.Step) -> None:
    run_dir = tmp_path / "runs" / "smoke-en"
    params = {"out_dir": str(run_dir / "toy"), "value": 1}
    messages: list[str] = []
    assert job.run_step(toy_step, run_dir, params, log=messages.append) is True
    assert (run_dir / "toy" / "value.txt").read_text() == "1"
    assert (run_dir / "99_toy.ipynb").exists()

    assert job.run_step(toy_step, run_dir, params, log=messages.append) is False
    assert any(m.startswith("[skip] 99_toy") for m in messages)

    changed = {**params, "value": 2}
    assert job.run_step(toy_step, run_dir, changed, log=messages.append) is True
    assert (run_dir / "toy" / "value.txt").read_text() == "2"


def test_rerun_after_a_change_starts_empty_but_a_rerun_after_a_crash_keeps_its_files(
        tmp_path: Path, toy_step: job.Step) -> None:
    """A stale checkpoint must not be resumed; a crashed run's checkpoint must be."""
    run_dir = tmp_path / "runs" / "smoke-en"
    out = run_dir / "toy"
    params = {"out_dir": str(out), "value": 1}
    assert job.run_step(toy_step, run_dir, params, log=lambda m: None)
    (out / "checkpoint.pt").write_text("state of value=1")
    (out / job.STAMP_NAME).unlink()  # as if it had crashed after writing its checkpoint
    assert job.run_step(toy_step, run_dir, params, log=lambda m: None)
    assert (out / "checkpoint.pt").exists()  # same inputs: kept for resuming
    messages: list[str] = []
    assert job.run_step(toy_step, run_dir, {**params, "value": 2}, log=messages.append)
    assert not (out / "checkpoint.pt").exists()  # other inputs: stale, removed
    assert (out / "value.txt").read_text() == "2"
    assert any(m.startswith("[new ] 99_toy") for m in messages)
    (out / "checkpoint.pt").write_text("state of value=2")
    assert job.run_step(toy_step, run_dir, {**params, "value": 2}, force=True, log=lambda m: None)
    assert not (out / "checkpoint.pt").exists()  # --force reruns from scratch


def test_the_figures_folder_is_never_emptied(tmp_path: Path, toy_step: job.Step) -> None:
    figures_like = job.Step(toy_step.name, "figures", owns_out_dir=False)
    out = tmp_path / "figures"
    out.mkdir()
    (out / "README.txt").write_text("kept")
    assert job.run_step(figures_like, tmp_path, {"out_dir": str(out), "value": 3}, force=True, log=lambda m: None)
    assert (out / "README.txt").read_text() == "kept" and (out / "value.txt").read_text() == "3"
    assert not job.FIGURES_STEP.owns_out_dir and all(step.owns_out_dir for step in job.STEPS)


def test_upstream_change_reruns_the_step(tmp_path: Path, toy_step: job.Step) -> None:
    upstream = tmp_path / "up"
    upstream.mkdir()
    (upstream / job.STAMP_NAME).write_text('{"fingerprint": "a"}')
    params = {"out_dir": str(tmp_path / "toy"), "value": 1}
    assert job.run_step(toy_step, tmp_path, params, [upstream], log=lambda m: None)
    assert not job.run_step(toy_step, tmp_path, params, [upstream], log=lambda m: None)
    (upstream / job.STAMP_NAME).write_text('{"fingerprint": "b"}')
    assert job.run_step(toy_step, tmp_path, params, [upstream], log=lambda m: None)


def test_failing_notebook_names_itself_the_error_and_the_partial_copy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    _notebook(notebooks / "98_broken.ipynb", "raise ValueError('corpus is empty')")
    monkeypatch.setattr(job, "NOTEBOOKS_DIR", notebooks)
    step = job.Step("98_broken", "broken")
    params = {"out_dir": str(tmp_path / "broken"), "value": 1}
    with pytest.raises(job.StepFailed) as info:
        job.run_step(step, tmp_path, params, log=lambda m: None)
    message = str(info.value)
    assert "98_broken.ipynb" in message
    assert "ValueError: corpus is empty" in message
    assert str(tmp_path / "98_broken.ipynb") in message
    assert (tmp_path / "98_broken.ipynb").exists()
    # a failed step leaves no stamp, so the next run does not skip it
    assert not (tmp_path / "broken" / job.STAMP_NAME).exists()


def test_parameters_chain_each_step_to_the_folders_it_reads(tmp_path: Path) -> None:
    run_dir = tmp_path / "demo-en"
    pretrain = job.step_parameters(job.STEP_BY_NAME["04_pretraining"], run_dir, "demo", "en")
    assert pretrain["out_dir"] == str(run_dir / "pretrain")
    assert pretrain["tokenizer_dir"] == str(run_dir / "tokenizer")
    assert pretrain["static_dir"] == str(run_dir / "static")
    assert pretrain["device"] == "auto"
    probe = job.step_parameters(job.STEP_BY_NAME["05_probing"], run_dir, "demo", "en")
    assert probe["pretrain_dir"] == str(run_dir / "pretrain")


def test_every_step_has_a_notebook_with_a_parameters_cell() -> None:
    for step in (*job.STEPS, job.FIGURES_STEP):
        nb = nbformat.read(step.notebook, as_version=4)
        tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, f"{step.notebook.name} needs exactly one cell tagged 'parameters'"
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
            f"{step.notebook.name} is committed with outputs"


@pytest.mark.parametrize("argv, expected", [
    (["--preset", "huge"], "unknown preset 'huge'"),
    (["--lang", ","], "--lang needs at least one language"),
    (["--lang", "xx"], "unknown language 'xx'"),
])
def test_bad_arguments_fail_with_one_clear_line(argv: list[str], expected: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert job.main([*argv, "--out", str(tmp_path)]) == 1
    assert expected in capsys.readouterr().err
