"""The main job's runner: chaining, skipping unchanged steps, and failing loudly."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

import nbformat
import pytest

from pipeline import job
from pipeline.corpora.data import CorpusSpec
from pipeline.corpora.labelled import LabelledSpec
from pipeline.run import job_options, runner, steps
from pipeline.store import fingerprints, layout

TOY_PARAMETERS = 'run_dir = "x"\nvalue = 1'


@pytest.fixture()
def toy_step(write_notebook) -> steps.Step:
    """A one-cell notebook standing in for a real step, so the runner is tested on its own."""
    write_notebook("99_toy", TOY_PARAMETERS, "from pathlib import Path\nout = Path(run_dir) / 'toy'\n"
                   "out.mkdir(parents=True, exist_ok=True)\n(out / 'value.txt').write_text(str(value))")
    return steps.Step("99_toy", "toy")


def test_step_runs_then_skips_until_something_changes(tmp_path: Path, toy_step: steps.Step) -> None:
    run_dir = tmp_path / "runs" / "smoke-en"
    params = {"run_dir": str(run_dir), "value": 1}
    messages: list[str] = []
    assert runner.run_step(toy_step, run_dir, params, log=messages.append) is True
    assert (run_dir / "toy" / "value.txt").read_text() == "1"
    assert (run_dir / "99_toy.ipynb").exists()

    assert runner.run_step(toy_step, run_dir, params, log=messages.append) is False
    assert any(m.startswith("[skip] 99_toy") for m in messages)

    changed = {**params, "value": 2}
    assert runner.run_step(toy_step, run_dir, changed, log=messages.append) is True
    assert (run_dir / "toy" / "value.txt").read_text() == "2"


def test_rerun_after_a_change_starts_empty_but_a_rerun_after_a_crash_keeps_its_files(
        tmp_path: Path, toy_step: steps.Step) -> None:
    """A stale checkpoint must not be resumed; a crashed run's checkpoint must be."""
    run_dir = tmp_path / "runs" / "smoke-en"
    out = run_dir / "toy"
    params = {"run_dir": str(run_dir), "value": 1}
    assert runner.run_step(toy_step, run_dir, params, log=lambda m: None)
    (out / "checkpoint.pt").write_text("state of value=1")
    (out / layout.STAMP_NAME).unlink()  # as if it had crashed after writing its checkpoint
    assert runner.run_step(toy_step, run_dir, params, log=lambda m: None)
    assert (out / "checkpoint.pt").exists()  # same inputs: kept for resuming
    messages: list[str] = []
    assert runner.run_step(toy_step, run_dir, {**params, "value": 2}, log=messages.append)
    assert not (out / "checkpoint.pt").exists()  # other inputs: stale, removed
    assert (out / "value.txt").read_text() == "2"
    assert any(m.startswith("[new ] 99_toy") for m in messages)
    (out / "checkpoint.pt").write_text("state of value=2")
    assert runner.run_step(toy_step, run_dir, {**params, "value": 2}, force=True, log=lambda m: None)
    assert not (out / "checkpoint.pt").exists()  # --force reruns from scratch


def test_a_new_input_that_fails_leaves_the_finished_result_whole(tmp_path: Path, write_notebook) -> None:
    """Issue 58: --vectors with NaN values failed only after static/ had been deleted. The previous result now waits
    aside while the step reruns and comes back, stamp and all, when the new input fails."""
    write_notebook("97_checks", TOY_PARAMETERS, "from pathlib import Path\nassert value != 'bad', 'NaN in the vectors'"
                   "\nout = Path(run_dir) / 'checked'\nout.mkdir(parents=True, exist_ok=True)\n"
                   "(out / 'value.txt').write_text(str(value))")
    step, run_dir = steps.Step("97_checks", "checked"), tmp_path / "runs" / "smoke-en"
    params = {"run_dir": str(run_dir), "value": 1}
    assert runner.run_step(step, run_dir, params, log=lambda m: None)
    before = {p.name: p.read_bytes() for p in (run_dir / "checked").iterdir()}
    with pytest.raises(runner.StepFailed, match="NaN in the vectors"):
        runner.run_step(step, run_dir, {**params, "value": "bad"}, log=lambda m: None)
    assert {p.name: p.read_bytes() for p in (run_dir / "checked").iterdir()} == before
    assert not list(run_dir.glob(".checked*"))  # nothing left aside
    assert runner.run_step(step, run_dir, params, log=lambda m: None) is False  # still finished: nothing reruns
    (run_dir / ".checked.previous").mkdir()  # as a run killed while it made the new content leaves it
    assert runner.run_step(step, run_dir, {**params, "value": 2}, log=lambda m: None)
    assert not (run_dir / ".checked.previous").exists()  # a step that finishes keeps nothing aside


def test_upstream_change_reruns_the_step(tmp_path: Path, toy_step: steps.Step) -> None:
    upstream = tmp_path / "up"
    upstream.mkdir()
    (upstream / layout.STAMP_NAME).write_text('{"fingerprint": "a"}')
    params = {"run_dir": str(tmp_path), "value": 1}
    assert runner.run_step(toy_step, tmp_path, params, [upstream], log=lambda m: None)
    assert not runner.run_step(toy_step, tmp_path, params, [upstream], log=lambda m: None)
    (upstream / layout.STAMP_NAME).write_text('{"fingerprint": "b"}')
    assert runner.run_step(toy_step, tmp_path, params, [upstream], log=lambda m: None)


def test_failing_notebook_names_itself_the_error_and_the_partial_copy(tmp_path: Path, write_notebook) -> None:
    write_notebook("98_broken", TOY_PARAMETERS, "raise ValueError('corpus is empty')")
    step = steps.Step("98_broken", "broken")
    params = {"run_dir": str(tmp_path), "value": 1}
    with pytest.raises(steps.StepFailed) as info:
        runner.run_step(step, tmp_path, params, log=lambda m: None)
    message, executed = str(info.value), tmp_path / "98_broken.ipynb"
    assert "98_broken.ipynb failed in cell" in message
    assert f"ValueError: corpus is empty\nthe partially executed copy is {executed}" in message
    # the copy, with the cell's error, is whole where the message says, and its temporary file is gone
    assert nbformat.read(executed, as_version=4).cells and not list(tmp_path.glob(".98_broken*"))
    # a failed step leaves no stamp, so the next run does not skip it
    assert not (tmp_path / "broken" / layout.STAMP_NAME).exists()


def test_parameters_give_every_step_the_run_folder_and_only_what_its_notebook_declares(tmp_path: Path) -> None:
    run_dir = tmp_path / "demo-en"
    settings = steps.RunSettings("demo", "en", corpus=CorpusSpec.parse("files:/data"), max_steps=5)
    for step in steps.STEPS:
        params = settings.parameters(step, run_dir)
        assert params["run_dir"] == str(run_dir.resolve()) and params["corpus"] == "files:/data"
        steps.check_parameters(step.notebook, params)  # raises if the notebook does not declare one
        assert steps.out_dir_of(step, params) == run_dir.resolve() / step.out
    pretraining = steps.STEP_BY_NAME["04_pretraining"]
    assert steps.RunSettings("demo", "en").parameters(pretraining, run_dir)["device"] == "auto"
    steps.check_parameters(steps.FIGURES_STEP.notebook, steps.figures_parameters([run_dir], tmp_path / "f"))


def test_notebook_06_is_handed_the_series_table_beside_its_figures_and_reruns_when_it_changes(tmp_path: Path) -> None:
    figures_dir = tmp_path / "figures"
    assert steps.figures_parameters([tmp_path / "demo-en"], figures_dir)["series_csv"] is None
    series_csv = figures_dir / f"{layout.SERIES_TABLE}.csv"
    series_csv.parent.mkdir()
    series_csv.write_text("steps,epochs\n1200,0.5\n")
    assert steps.figures_parameters([tmp_path / "demo-en"], figures_dir)["series_csv"] == str(series_csv.resolve())
    before = runner.figures_key([tmp_path / "demo-en"], figures_dir)
    series_csv.write_text("steps,epochs\n1200,0.6\n")
    assert runner.figures_key([tmp_path / "demo-en"], figures_dir) != before


def test_a_parameter_the_notebook_does_not_declare_is_an_error_not_a_log_line(tmp_path: Path,
                                                                             toy_step: steps.Step) -> None:
    with pytest.raises(steps.JobError, match="does not take the parameter.*corpus_source"):
        runner.run_step(toy_step, tmp_path, {"run_dir": str(tmp_path), "corpus_source": "files"}, log=lambda m: None)


def test_every_step_has_a_notebook_with_a_parameters_cell() -> None:
    for step in (*steps.STEPS, steps.FIGURES_STEP):
        nb = nbformat.read(step.notebook, as_version=4)
        tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, f"{step.notebook.name} needs exactly one cell tagged 'parameters'"
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
            f"{step.notebook.name} is committed with outputs"


@pytest.mark.parametrize("argv, expected", [
    (["--preset", "huge"], "unknown preset 'huge'"),
    (["--lang", ","], "argument --lang: needs at least one value"),
    (["--lang", "xx"], "unknown language 'xx'"),
])
def test_bad_arguments_fail_with_one_clear_line(argv: list[str], expected: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert job.main([*argv, "--out", str(tmp_path)]) == 1
    assert expected in capsys.readouterr().err


def _save_as_autosave_would(path: Path) -> None:
    """Outputs, execution counts and metadata added, sources untouched: what JupyterLab's autosave writes."""
    nb = nbformat.read(path, as_version=4)
    for n, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            cell.execution_count = n + 1
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="hello\n")]
            cell.metadata["scrolled"] = True
    nb.metadata["widgets"] = {"state": {}}
    nbformat.write(nb, path)


def test_a_notebook_saved_with_outputs_does_not_rerun_its_step(tmp_path: Path, toy_step: steps.Step) -> None:
    run_dir = tmp_path / "runs" / "smoke-en"
    params = {"run_dir": str(run_dir), "value": 1}
    assert runner.run_step(toy_step, run_dir, params, log=lambda m: None)
    _save_as_autosave_would(toy_step.notebook)
    assert not runner.run_step(toy_step, run_dir, params, log=lambda m: None)
    nb = nbformat.read(toy_step.notebook, as_version=4)
    nb.cells[1].source += "\n# an edited line"
    nbformat.write(nb, toy_step.notebook)
    assert runner.run_step(toy_step, run_dir, params, log=lambda m: None)  # a source edit does rerun


def test_moving_the_runs_folder_reruns_nothing(tmp_path: Path, toy_step: steps.Step) -> None:
    first = tmp_path / "a" / "smoke-en"
    assert runner.run_step(toy_step, first, {"run_dir": str(first), "value": 1}, log=lambda m: None)
    moved = tmp_path / "b" / "smoke-en"
    moved.parent.mkdir()
    first.rename(moved)
    assert not runner.run_step(toy_step, moved, {"run_dir": str(moved), "value": 1}, log=lambda m: None)


def test_a_step_fingerprint_follows_only_the_helpers_it_imports(tmp_path: Path, toy_step: steps.Step,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(layout.REPO_ROOT / "helpers", tmp_path / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(fingerprints, "REPO_ROOT", tmp_path)
    nb = nbformat.read(toy_step.notebook, as_version=4)
    nb.cells[1].source = "from helpers import crossing\n" + nb.cells[1].source
    nbformat.write(nb, toy_step.notebook)
    params = {"run_dir": str(tmp_path / "r"), "value": 1}
    modules = fingerprints.project_modules(toy_step)
    assert "helpers.crossing" in modules and "evidence.figures" not in modules
    before = fingerprints.fingerprint(toy_step, params)
    (tmp_path / "helpers" / "figures.py").write_text("# only a plot label changed\n")
    assert fingerprints.fingerprint(toy_step, params) == before
    with (tmp_path / "helpers" / "crossing.py").open("a") as handle:
        handle.write("\n# an edit\n")
    assert fingerprints.fingerprint(toy_step, params) != before


def test_editing_the_figures_module_reruns_only_the_figures_step() -> None:
    assert "evidence.figures" in fingerprints.project_modules(steps.FIGURES_STEP)
    for step in steps.STEPS:
        assert "evidence.figures" not in fingerprints.project_modules(step), step.name


def test_a_second_job_on_the_same_folder_stops_and_names_the_holder(tmp_path: Path) -> None:
    from pipeline.store.run_identity import FolderInUse, folder_lock

    with folder_lock(tmp_path / "demo-en"):
        with pytest.raises(FolderInUse, match=rf"another job is using .*pid {os.getpid()}"):
            with folder_lock(tmp_path / "demo-en"):
                pass
    with folder_lock(tmp_path / "demo-en"):  # released on exit, so the next job may start
        pass


@pytest.mark.parametrize("argv, expected", [
    (["--device", "tpu"], "unknown device 'tpu'"),
    (["--lang", "en,en"], "argument --lang: lists en more than once"),
    (["--seeds", "0,x"], "argument --seeds: takes non-negative integers"),
    (["--corpus", "files:/no/such/folder"], "does not exist"),
    (["--corpus", "ftp"], "unknown corpus 'ftp'"),
    (["--vectors", "/no/such.vec"], "no such file"),
    (["--lang", "cs"], "other languages need --corpus hub"),
])
def test_more_bad_arguments_fail_before_any_step_runs(argv: list[str], expected: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert job.main([*argv, "--out", str(tmp_path / "out")]) == 1
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "out" / "demo-en").exists()


def test_an_out_that_is_a_file_or_read_only_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert job.main(["--out", str(a_file)]) == 1
    assert "is a file, not a folder" in capsys.readouterr().err
    if os.geteuid() != 0:  # root may write anywhere, so the read-only case is only testable as a user
        read_only = tmp_path / "ro"
        read_only.mkdir(mode=0o555)
        assert job.main(["--out", str(read_only)]) == 1
        assert "not writable" in capsys.readouterr().err


def test_a_zero_max_steps_is_refused_by_the_parser() -> None:
    with pytest.raises(steps.JobError, match="argument --max-steps: max_steps must be at least 1, got 0"):
        job_options.build_parser().parse_args(["--max-steps", "0"])


def test_only_the_readme_job_writes_the_committed_figures(tmp_path: Path) -> None:
    readme = argparse.Namespace(preset="demo", langs=job_options.README_LANGS, corpus=CorpusSpec("embedded"),
                                max_steps=None, seeds=[0], vectors=None, labelled=LabelledSpec("auto"), control=False,
                                out=tmp_path)
    assert job_options.default_figures_dir(readme) == layout.FIGURES_DIR
    for change in ({"preset": "smoke"}, {"langs": ("en",)}, {"max_steps": 20}, {"corpus": CorpusSpec("hub")},
                   {"seeds": [0, 1]}, {"vectors": tmp_path / "v.vec"}, {"labelled": LabelledSpec("none")},
                   {"control": True}):
        other = argparse.Namespace(**{**vars(readme), **change})
        assert job_options.default_figures_dir(other) == tmp_path / f"figures-{other.preset}-{'-'.join(other.langs)}"


def test_run_folders_name_their_seed(tmp_path: Path) -> None:
    assert steps.RunSettings("demo", "en", 0).run_dir(tmp_path) == tmp_path.resolve() / "demo-en"
    assert steps.RunSettings("demo", "en", 2).run_dir(tmp_path) == tmp_path.resolve() / "demo-en-seed2"
    assert layout.split_run_folder_name("demo-en-seed2") == ("demo", "en", 2)
    assert layout.split_run_folder_name("demo-en") == ("demo", "en", None)
    assert layout.split_run_folder_name("figures") == (None, None, None)


def test_rendered_notebooks_keep_their_images_and_no_absolute_paths(tmp_path: Path) -> None:
    import base64

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("plot()")
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"0" * 32).decode()
    cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"}),
                    nbformat.v4.new_output("stream", name="stdout", text=f"wrote {layout.REPO_ROOT}/runs/x.csv\n")]
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), cell]
    executed = tmp_path / "01_masking.ipynb"
    nbformat.write(nb, executed)
    page = runner.render_notebook(executed, tmp_path / "docs")
    text = page.read_text()
    assert "# Title" in text and str(layout.REPO_ROOT) not in text and "wrote runs/x.csv" in text
    images = list((tmp_path / "docs").rglob("*.png"))
    assert len(images) == 1 and images[0].parent.name == "01_masking_files"
    assert f"01_masking_files/{images[0].name}" in text  # the page links to the image where it was written


def test_runs_spread_over_gpus_use_each_device_for_one_run_at_a_time() -> None:
    import threading

    busy: dict[int, int] = {}
    seen: list[tuple[tuple[str, int], int]] = []
    lock = threading.Lock()

    def launch(job: tuple[str, int], device: int) -> int:
        with lock:
            busy[device] = busy.get(device, 0) + 1
            assert busy[device] == 1, f"device {device} got two runs at once"
            seen.append((job, device))
        time.sleep(0.05)
        with lock:
            busy[device] -= 1
        return 0 if job != ("fr", 1) else 3

    jobs = [(lang, seed) for lang in ("en", "fr", "es") for seed in (0, 1)]
    codes = job.spread_over_devices(jobs, [0, 1], launch)
    assert codes == [0, 0, 0, 3, 0, 0]  # in job order, whatever order they finished in
    assert sorted(j for j, _ in seen) == sorted(jobs) and {d for _, d in seen} == {0, 1}


def test_gpus_that_torch_does_not_see_are_refused_before_any_work(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    with pytest.raises(argparse.ArgumentTypeError, match="torch sees"):
        job_options.gpu_indices(str(torch.cuda.device_count()))
    with pytest.raises(argparse.ArgumentTypeError, match="non-negative integers"):
        job_options.gpu_indices("0,a")
    assert job.main(["--gpus", str(torch.cuda.device_count()), "--out", str(tmp_path)]) == 1
    assert "argument --gpus" in capsys.readouterr().err and not (tmp_path / "demo-en").exists()


def test_a_gpu_worker_runs_one_language_and_seed_without_figures(tmp_path: Path) -> None:
    settings = steps.RunSettings("paper", "cs", 2, CorpusSpec("hub"), vectors=Path("/v/cc.cs.300.vec.gz"),
                                 max_steps=20)
    text = " ".join(job.worker_command(settings, tmp_path, force=False))
    assert "--lang cs --seeds 2" in text and "--device cuda" in text and "--no-figures" in text
    assert "--max-steps 20" in text and "--vectors /v/cc.cs.300.vec.gz" in text and "--corpus hub" in text


def test_check_lists_the_steps_whose_results_do_not_come_from_the_current_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    names = [s.name for s in steps.STEPS]
    settings = steps.RunSettings("smoke", "en")
    assert runner.stale_steps(settings, tmp_path) == names  # nothing has run
    run_dir = settings.run_dir(tmp_path)
    for step in steps.STEPS:  # stamp every step as the main job would after running it with the current code
        params = settings.parameters(step, run_dir)
        out_dir = steps.out_dir_of(step, params)
        out_dir.mkdir(parents=True, exist_ok=True)
        key = fingerprints.fingerprint(step, params, steps.upstream_of(step, run_dir))
        (out_dir / layout.STAMP_NAME).write_text(json.dumps({"fingerprint": key}))
    assert runner.stale_steps(settings, tmp_path) == []
    assert job.main(["--preset", "smoke", "--lang", "en", "--out", str(tmp_path), "--check", "--no-figures"]) == 0
    assert "smoke-en: up to date" in capsys.readouterr().out
    assert job.main(["--preset", "smoke", "--lang", "en", "--out", str(tmp_path), "--check"]) == 1  # 06 counts too
    assert "would rerun 06_figures" in capsys.readouterr().out
    (run_dir / "tokenizer" / layout.STAMP_NAME).write_text(json.dumps({"fingerprint": "older code"}))
    assert runner.stale_steps(settings, tmp_path) == names[1:]  # 02 and everything after it
    assert job.main(["--preset", "smoke", "--lang", "en", "--out", str(tmp_path), "--check", "--no-figures"]) == 1
