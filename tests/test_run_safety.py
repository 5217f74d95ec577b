"""Issue 21: a run never writes outside its folder, never replaces a run of another configuration, and the
options that would fail late fail when they are parsed. Each test fails on 0cc080c's behaviour."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import job, notebook
from pipeline.corpora.data import CorpusSpec
from pipeline.notebook import start
from pipeline.run import job_options
from pipeline.run.job_options import JobError, parse_options
from pipeline.run.runner import run_language
from pipeline.run.steps import STEPS, RunSettings, upstream_of
from pipeline.store import fingerprints, layout, run_identity
from pipeline.store.layout import REPO_ROOT, RunLayout, RunsFolder


def _job(*args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, "-m", "pipeline.job", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


# ---------------------------------------------------------------- case 1: a language is a code, not a path


def test_a_language_that_is_a_path_is_refused_and_nothing_outside_out_is_touched(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "text.txt").write_text("A first document of real words.\nA second one, just as real.\n")
    victim = tmp_path / "victim" / "masking"
    victim.mkdir(parents=True)
    (victim / "mine.txt").write_text("a user's file")
    done = _job("--preset", "smoke", "--lang", "x/../../victim", "--corpus", f"files:{corpus}",
                "--out", str(tmp_path / "o"), "--no-figures")
    assert done.returncode == 1 and "is not a language code" in done.stderr and "--lang" in done.stderr
    assert (victim / "mine.txt").read_text() == "a user's file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus", "victim"]  # not even --out was made


@pytest.mark.parametrize("lang", ["../x", "en/../../x", "EN", "e", "english", "en-us", "", "en,fr"])
def test_run_folders_and_notebooks_refuse_anything_but_a_language_code(tmp_path: Path, lang: str) -> None:
    with pytest.raises(ValueError, match="is not a language code"):
        RunsFolder(tmp_path).run("demo", lang)
    with pytest.raises(ValueError, match="is not a language code"):
        start("smoke", lang, run_dir=tmp_path / "r", quiet=False)
    assert not (tmp_path / "r").exists()


def test_codes_with_a_region_name_a_folder_inside_the_runs_folder(tmp_path: Path) -> None:
    assert RunsFolder(tmp_path).run("demo", "pt_br").root == (tmp_path / "demo-pt_br").resolve()
    assert layout.split_run_folder_name("demo-pt_br-seed2") == ("demo", "pt_br", 2)


def test_a_folder_outside_its_root_is_refused_before_anything_is_removed(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="lies outside"):
        layout.inside(tmp_path / "runs" / ".." / "elsewhere", tmp_path / "runs", "a step folder")
    assert layout.inside(tmp_path / "runs" / "a", tmp_path / "runs", "x") == (tmp_path / "runs" / "a").resolve()


# ---------------------------------------------------------------- cases 2 and 5: one run per folder


def test_a_capped_trial_gets_its_own_folder_beside_the_full_run(tmp_path: Path) -> None:
    full = RunSettings("reference", "en").run_dir(tmp_path)
    trial = RunSettings("reference", "en", max_steps=2).run_dir(tmp_path)
    assert full.name == "reference-en" and trial.name == "reference-en-max2" and full != trial
    assert layout.split_run_folder_name("reference-en-seed1-max2") == ("reference", "en", 1)


def _finished_run(tmp_path: Path, settings: RunSettings) -> Path:
    run_dir = settings.run_dir(tmp_path)
    run_identity.claim_identity(RunLayout(run_dir), settings.identity())
    model = RunLayout(run_dir).model("bert_tiny")
    model.folder.mkdir(parents=True)
    model.metrics.write_text("step,train_loss\n1200,5.0\n")
    return run_dir


def test_a_run_of_another_configuration_is_refused_and_the_finished_run_kept(tmp_path: Path) -> None:
    _finished_run(tmp_path, RunSettings("smoke", "en"))
    other = RunSettings("smoke", "en", corpus=CorpusSpec.parse(f"files:{tmp_path}"))
    with pytest.raises(run_identity.IdentityMismatch, match=r"holds another run .*corpus=embedded.*--force") as err:
        run_language(other, tmp_path, log=lambda _: None)
    assert f"corpus=files:{tmp_path}" in str(err.value)
    assert RunLayout(other.run_dir(tmp_path)).model("bert_tiny").metrics.exists()


def _job_as_left(out: Path, with_identity: bool, lang: str = "en") -> Path:
    """A finished smoke run in ``out/smoke-en`` as the main job leaves it: every step stamped with its parameters, a
    model's metrics and checkpoint; ``with_identity=False``: as a version from before identity.json left it."""
    settings = RunSettings("smoke", lang)
    run_dir = settings.run_dir(out)
    for step in STEPS:
        folder = run_dir / step.out
        folder.mkdir(parents=True)
        fingerprints.mark_finished(folder, "0" * 64, 1.0, settings.parameters(step, run_dir))
    model = RunLayout(run_dir).model("bert_tiny")
    model.folder.mkdir(parents=True)
    model.metrics.write_text("step,train_loss\n1200,5.0\n")
    model.checkpoint.write_bytes(b"hours of work")
    if with_identity:
        run_identity.claim_identity(RunLayout(run_dir), settings.identity())
    return run_dir


def _untouched(run_dir: Path) -> bool:
    model = RunLayout(run_dir).model("bert_tiny")
    return (model.checkpoint.read_bytes() == b"hours of work" and model.metrics.exists()
            and all(layout.stamp_of(run_dir / step.out).exists() for step in STEPS))


def test_a_capped_trial_on_the_out_of_a_finished_run_lands_in_its_own_folder(tmp_path: Path, capsys) -> None:
    finished = _job_as_left(tmp_path / "o", with_identity=True)
    argv = ["--preset", "smoke", "--lang", "en", "--max-steps", "2", "--out", str(tmp_path / "o"), "--no-figures"]
    assert job.main([*argv, "--check"]) == 1
    printed = capsys.readouterr().out
    assert "smoke-en-max2: would rerun 01_masking" in printed and "smoke-en:" not in printed
    assert _untouched(finished)


@pytest.mark.parametrize("with_identity", [True, False], ids=["identity.json", "made-before-identity-files"])
def test_a_job_of_another_configuration_on_a_finished_run_is_refused_and_names_it(tmp_path: Path, capsys,
                                                                                 with_identity: bool) -> None:
    finished = _job_as_left(tmp_path / "o", with_identity)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "text.txt").write_text("A first document of real words.\nA second one, just as real.\n")
    argv = ["--preset", "smoke", "--lang", "en", "--corpus", f"files:{corpus}", "--out", str(tmp_path / "o"),
            "--no-figures"]
    assert job.main(argv) == 1
    error = capsys.readouterr().err
    assert f"{finished} holds another run" in error and "corpus=embedded" in error
    assert f"asks for corpus=files:{corpus}" in error and "--force" in error
    assert _untouched(finished)
    assert job.main([*argv, "--check"]) == 1
    assert f"smoke-en: would be refused: {finished} holds another run" in capsys.readouterr().out


def test_a_job_over_several_languages_is_refused_before_its_first_step(tmp_path: Path, capsys) -> None:
    french = _job_as_left(tmp_path / "o", with_identity=True, lang="fr")
    argv = ["--preset", "smoke", "--lang", "en,fr", "--out", str(tmp_path / "o"), "--no-figures",
            "--corpus", "hub"]  # another corpus: another run (refused before anything is fetched)
    assert job.main(argv) == 1
    assert f"{french} holds another run" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["smoke-fr"]  # English never started
    assert _untouched(french)


@pytest.mark.parametrize("first_vectors, then_vectors", [(None, "v.vec"), ("v.vec", None)])
def test_a_run_with_its_own_vectors_and_one_with_a_vectors_file_are_different_runs(
        tmp_path: Path, first_vectors: str | None, then_vectors: str | None) -> None:
    folder = RunLayout(tmp_path / "run")
    run_identity.claim_identity(folder, RunSettings("smoke", "en", vectors=first_vectors and tmp_path / first_vectors,
                                                    ).identity())
    other = RunSettings("smoke", "en", vectors=then_vectors and tmp_path / then_vectors).identity()
    with pytest.raises(run_identity.IdentityMismatch, match="asks for vectors="):
        run_identity.claim_identity(folder, other)
    # the same file at another path is the same run (content is each step's check, not the folder's)
    moved = RunSettings("smoke", "en", vectors=first_vectors and tmp_path / "elsewhere" / first_vectors).identity()
    run_identity.claim_identity(folder, moved)


def test_force_replaces_the_recorded_identity_on_purpose(tmp_path: Path) -> None:
    run_dir = _finished_run(tmp_path, RunSettings("smoke", "en"))
    other = RunSettings("smoke", "en", vectors=tmp_path / "v.vec")
    run_identity.claim_identity(RunLayout(run_dir), other.identity(), force=True)
    assert layout.read_json(RunLayout(run_dir).identity)["vectors"] == str(tmp_path / "v.vec")


def test_a_notebook_run_by_hand_cannot_mix_languages_in_one_folder(tmp_path: Path) -> None:
    start("smoke", "fr", run_dir=tmp_path / "r", quiet=False)
    with pytest.raises(run_identity.IdentityMismatch, match=r"lang=fr.*asks for lang=en"):
        start("smoke", "en", run_dir=tmp_path / "r", quiet=False)
    start("smoke", "fr", run_dir=tmp_path / "r", quiet=False)  # the same run again is fine
    assert json.loads(RunLayout(tmp_path / "r").identity.read_text())["lang"] == "fr"


def test_a_notebook_run_by_hand_with_another_seed_gets_its_own_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(notebook, "INTERACTIVE_DIR", tmp_path / "interactive")
    first, second = start("smoke", "en", quiet=False), start("smoke", "en", seed=1, quiet=False)
    assert (first.run_dir.name, second.run_dir.name) == ("smoke-en", "smoke-en-seed1")
    assert json.loads(second.layout.identity.read_text())["seed"] == "1"


# ---------------------------------------------------------------- case 9: options that failed late


def test_repeated_seeds_are_refused_even_when_written_differently() -> None:
    with pytest.raises(JobError, match=r"--seeds: lists 1 more than once"):
        parse_options(["--seeds", "1,01"])


def test_a_seed_outside_numpys_range_is_refused_when_parsed() -> None:
    with pytest.raises(JobError, match=r"--seeds: a seed must be an integer from 0 to 4,294,967,295"):
        parse_options(["--seeds", "4294967296"])
    assert parse_options(["--seeds", "4294967295", "--no-figures"]).seeds == (4_294_967_295,)


def test_asking_for_cuda_on_a_machine_without_one_fails_before_any_notebook(tmp_path: Path, monkeypatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for device in ("cuda", "cuda:1"):
        with pytest.raises(JobError, match=rf"--device: device '{device}' was asked for but torch sees no CUDA GPU"
                                           r".*use --device"):
            parse_options(["--device", device, "--out", str(tmp_path / "o")])
    assert not (tmp_path / "o").exists()  # refused before any folder or notebook


def test_relative_corpus_and_vectors_paths_are_both_taken_from_the_working_folder(tmp_path: Path,
                                                                                   monkeypatch) -> None:
    (tmp_path / "corp").mkdir()
    (tmp_path / "corp" / "a.txt").write_text("some text\n")
    (tmp_path / "v.vec").write_text("1 2\nword 0.1 0.2\n")
    monkeypatch.chdir(tmp_path)
    options = parse_options(["--lang", "en", "--corpus", "files:corp", "--vectors", "v.vec", "--no-figures",
                             "--out", "o"])
    assert options.corpus.path == (tmp_path / "corp").resolve() and options.vectors == (tmp_path / "v.vec").resolve()
    run = options.runs()[0]
    params = run.parameters(STEPS[2], run.run_dir(options.out))  # 03 reads both: the notebooks get absolute paths
    assert params["corpus"] == f"files:{(tmp_path / 'corp').resolve()}"
    assert params["vectors"] == str((tmp_path / "v.vec").resolve())
    assert params["run_dir"] == str((tmp_path / "o" / "demo-en").resolve())


# ---------------------------------------------------------------- case 7: the README's job is what figures/ holds


def test_the_readmes_main_job_runs_exactly_the_committed_figures_languages_and_preset() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    default = lambda name: re.search(rf"^{name} \?= (\S+)$", makefile, re.M).group(1)  # noqa: E731
    readme = (REPO_ROOT / "README.md").read_text()
    assert "\nmake figures\n" in readme  # the command, with the Makefile's defaults
    provenance = json.loads((REPO_ROOT / "figures" / layout.PROVENANCE_NAME).read_text())
    committed = sorted({(run["preset"], run["lang"], run["seed"]) for run in provenance["runs"]})
    wanted = sorted((default("PRESET"), lang, 0) for lang in default("LANGS").split(","))
    assert wanted == committed
    options = parse_options(["--preset", default("PRESET"), "--lang", default("LANGS")])
    assert options.figures_dir == layout.FIGURES_DIR and options.docs is None
    assert tuple(default("LANGS").split(",")) == job_options.README_LANGS


def test_a_job_that_is_not_the_readmes_never_writes_the_committed_figures() -> None:
    for argv in (["--lang", "en"], ["--max-steps", "5"], ["--seeds", "0,1"], ["--preset", "reference"]):
        assert parse_options(argv).figures_dir != layout.FIGURES_DIR, argv


def test_a_figure_saved_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from evidence.figure_plots import save_figure

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = save_figure(fig, tmp_path / "a", "f", "title")
    second = save_figure(fig, tmp_path / "b", "f", "title")
    plt.close(fig)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]  # no creation date in the PDF


def _finished_smoke_run(runs: Path) -> tuple[RunSettings, Path]:
    """A smoke run whose every step is stamped finished with the current code, as the job leaves it."""
    settings = RunSettings("smoke", "en")
    run_dir = settings.run_dir(runs)
    run_identity.claim_identity(RunLayout(run_dir), settings.identity())
    for step in STEPS:
        params = settings.parameters(step, run_dir)
        folder = run_dir / step.out
        folder.mkdir(parents=True, exist_ok=True)
        key = fingerprints.fingerprint(step, params, upstream_of(step, run_dir))
        (folder / layout.STAMP_NAME).write_text(json.dumps({"fingerprint": key}))
    return settings, run_dir


def test_a_notebook_run_by_hand_on_a_jobs_folder_leaves_its_step_unfinished_and_stops_the_next_job(
        tmp_path: Path, monkeypatch) -> None:
    from pipeline.run import runner

    settings, run_dir = _finished_smoke_run(tmp_path)
    assert runner.stale_steps(settings, tmp_path) == []
    finished = fingerprints.finished_with(run_dir / "static")
    setup = start("smoke", "en", run_dir=run_dir)
    setup.folder("static", create=True)  # notebook 03 by hand (JupyterLab, papermill) about to rewrite static/
    assert runner.stale_steps(settings, tmp_path) == [s.name for s in STEPS[2:]]  # 03 and all it feeds
    assert fingerprints.started_with(run_dir / "static") == finished  # so the job reruns it in place, resuming
    ran: list[str] = []
    monkeypatch.setattr(runner, "run_step", lambda step, *args, **kwargs: ran.append(step.name))
    with pytest.raises(run_identity.FolderInUse, match=rf"{run_dir / 'static'} \(pid {os.getpid()}"):
        run_language(settings, tmp_path)  # the kernel still holds static/: the job stops before its first step
    assert ran == []


def test_a_notebook_run_by_hand_is_refused_while_a_job_holds_the_folder(tmp_path: Path, monkeypatch) -> None:
    settings, run_dir = _finished_smoke_run(tmp_path)
    setup = start("smoke", "en", run_dir=run_dir)
    with run_identity.folder_lock(run_dir):
        with pytest.raises(run_identity.FolderInUse, match="another job is using"):
            setup.folder("tokenizer", create=True)
        with pytest.raises(run_identity.FolderInUse, match="another job is using"):
            start("smoke", "en", run_dir=run_dir)  # before it could write identity.json
    monkeypatch.setenv(run_identity.JOB_FOLDER_ENV, str(run_dir.resolve()))  # a kernel the job started
    with run_identity.folder_lock(run_dir):
        setup.folder("masking", create=True)
    from pipeline.run import runner

    assert runner.stale_steps(settings, tmp_path) == []  # the job stamps its own steps


def test_train_cli_on_the_pretraining_folder_of_a_running_job_is_refused(tmp_path: Path, capsys) -> None:
    from pipeline.train import train_cli

    _, run_dir = _finished_smoke_run(tmp_path)
    with run_identity.folder_lock(run_dir):
        code = train_cli.main(["--data", str(run_dir / "pretrain"), "--out", str(run_dir / "pretrain"),
                               "--model", "bert_tiny", "--preset", "smoke"])
    assert code == 1 and "another job is using" in capsys.readouterr().err
