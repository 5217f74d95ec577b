"""The main job: execute notebooks 01 to 06 in order with papermill, chaining their output folders.

``python -m helpers.run --preset demo --lang en`` (``make figures``) writes executed notebooks and
their artifacts under ``runs/<preset>-<lang>/`` and the figures under ``figures/``. A step whose
notebook, parameters, helpers code and upstream outputs are unchanged since its last successful
run is skipped, so a rerun after a failure resumes where it stopped. The tests run the same steps
with ``preset='smoke'`` through :func:`run_step`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from helpers.presets import PRESET_HELP, check_preset
from helpers.runinfo import REPO_ROOT

NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
DEFAULT_RUNS_DIR = REPO_ROOT / "runs"
DEFAULT_FIGURES_DIR = REPO_ROOT / "figures"
STAMP_NAME = ".step.json"
STARTED_NAME = ".step-started.json"  # the fingerprint a step was last started with, finished or not


@dataclass(frozen=True)
class Step:
    """One notebook, the folder it writes inside the run folder, and the steps it reads from."""

    name: str  # notebook file stem, e.g. '02_tokenizer'
    out: str  # output folder name inside the run folder (a key of notebook_setup.STEP_FOLDERS)
    needs: tuple[str, ...] = ()  # names of steps whose outputs it reads
    owns_out_dir: bool = True  # the job may empty out_dir before a rerun with other inputs

    @property
    def notebook(self) -> Path:
        return NOTEBOOKS_DIR / f"{self.name}.ipynb"


STEPS: tuple[Step, ...] = (
    Step("01_masking", "masking"),
    Step("02_tokenizer", "tokenizer"),
    Step("03_static_vectors", "static", ("02_tokenizer",)),
    Step("04_pretraining", "pretrain", ("02_tokenizer", "03_static_vectors")),
    Step("05_probing", "probe", ("02_tokenizer", "03_static_vectors", "04_pretraining")),
)
# 06 draws from every language's run folder at once, so it runs after the per-language steps.
FIGURES_STEP = Step("06_figures", "figures", owns_out_dir=False)
STEP_BY_NAME = {s.name: s for s in (*STEPS, FIGURES_STEP)}


class StepFailed(RuntimeError):
    """A notebook raised: the message names the notebook, the failing cell's error and the executed copy."""


def run_dir_for(runs_dir: Path, preset: str, lang: str) -> Path:
    return Path(runs_dir) / f"{preset}-{lang}"


def step_parameters(step: Step, run_dir: Path, preset: str, lang: str, seed: int = 0, device: str = "auto",
                    corpus: str = "embedded", vectors: str | None = None, max_steps: int | None = None,
                    solve_exercises: bool = False) -> dict[str, Any]:
    """The papermill parameters of one per-language step; every folder derives from ``run_dir``."""
    params: dict[str, Any] = {"preset": preset, "lang": lang, "seed": seed, "corpus": corpus,
                              "run_dir": str(Path(run_dir).resolve()), "solve_exercises": solve_exercises}
    if step.name in ("04_pretraining", "05_probing"):
        params["device"] = device
    if step.name == "03_static_vectors":
        params["vectors"] = vectors
    if step.name == "04_pretraining":
        params["max_steps"] = max_steps
    return params


def out_dir_of(step: Step, params: dict[str, Any]) -> Path:
    """The folder a step writes: run_dir/<step folder>, or out_dir for the figures step."""
    return Path(params["out_dir"]) if "out_dir" in params else Path(params["run_dir"]) / step.out


def _hash_files(paths: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def fingerprint(step: Step, params: dict[str, Any], upstream: Sequence[Path] = ()) -> str:
    """What a step's result depends on: its notebook, parameters, the helpers code and upstream stamps."""
    digest = hashlib.sha256()
    digest.update(step.notebook.read_bytes())
    digest.update(json.dumps(params, sort_keys=True).encode())
    digest.update(_hash_files(list((REPO_ROOT / "helpers").glob("*.py"))).encode())
    for folder in upstream:
        stamp = Path(folder) / STAMP_NAME
        digest.update(stamp.read_bytes() if stamp.exists() else b"missing")
    return digest.hexdigest()


def is_up_to_date(out_dir: Path, key: str) -> bool:
    stamp = Path(out_dir) / STAMP_NAME
    return stamp.exists() and json.loads(stamp.read_text()).get("fingerprint") == key


def execute_notebook(notebook: Path, executed: Path, params: dict[str, Any], cwd: Path | None = None) -> None:
    """Run one notebook with papermill; on failure raise StepFailed naming the cell's error and the copy."""
    import papermill as pm

    executed.parent.mkdir(parents=True, exist_ok=True)
    try:
        pm.execute_notebook(str(notebook), str(executed), parameters=params, cwd=str(cwd or REPO_ROOT),
                            kernel_name="python3", progress_bar=False, log_output=True)
    except pm.PapermillExecutionError as err:
        raise StepFailed(
            f"{notebook.name} failed in cell {err.exec_count}: {err.ename}: {err.evalue}\n"
            f"the partially executed copy is {executed}"
        ) from None


def started_with(out_dir: Path) -> str | None:
    """The fingerprint ``out_dir``'s step was last started with (None if never, or unknown)."""
    started = Path(out_dir) / STARTED_NAME
    return json.loads(started.read_text()).get("fingerprint") if started.exists() else None


def run_step(step: Step, run_dir: Path, params: dict[str, Any], upstream: Sequence[Path] = (),
             force: bool = False, log: Any = print) -> bool:
    """Execute ``step`` unless its stamp says nothing changed. Returns True if it ran.

    A step rerun after a crash with the same inputs keeps its folder, so pretraining resumes from
    its checkpoint. A step rerun because something changed (or with ``force``) starts from an empty
    folder: a checkpoint or metrics file of the old inputs must never be resumed or reported as new.
    """
    out_dir = out_dir_of(step, params)
    key = fingerprint(step, params, upstream)
    if not force and is_up_to_date(out_dir, key):
        log(f"[skip] {step.name}: inputs and parameters unchanged since its last successful run ({out_dir})")
        return False
    stamp = out_dir / STAMP_NAME
    if stamp.exists():
        stamp.unlink()  # a step that fails now must not look finished later
    if step.owns_out_dir and out_dir.exists() and (force or started_with(out_dir) != key):
        log(f"[new ] {step.name}: inputs changed, so {out_dir} starts empty")
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / STARTED_NAME).write_text(json.dumps({"fingerprint": key}))
    log(f"[run ] {step.name} -> {out_dir}")
    started = time.perf_counter()
    execute_notebook(step.notebook, Path(run_dir) / f"{step.name}.ipynb", params)
    seconds = time.perf_counter() - started
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps({"fingerprint": key, "seconds": round(seconds, 1), "params": params}, indent=2))
    log(f"[done] {step.name} in {seconds:.0f} s")
    return True


def run_language(preset: str, lang: str, runs_dir: Path = DEFAULT_RUNS_DIR, seed: int = 0,
                 device: str = "auto", force: bool = False, log: Any = print) -> Path:
    """Steps 01 to 05 for one language; returns the run folder."""
    run_dir = run_dir_for(runs_dir, preset, lang)
    for step in STEPS:
        params = step_parameters(step, run_dir, preset, lang, seed, device)
        upstream = [run_dir / STEP_BY_NAME[n].out for n in step.needs]
        run_step(step, run_dir, params, upstream, force=force, log=log)
    return run_dir


def figures_parameters(run_dirs: Sequence[Path], figures_dir: Path) -> dict[str, Any]:
    return {"run_dirs": [str(d) for d in run_dirs], "out_dir": str(figures_dir)}


def run_figures(run_dirs: Sequence[Path], figures_dir: Path, executed_dir: Path, force: bool = False,
                log: Any = print) -> None:
    params = figures_parameters(run_dirs, figures_dir)
    upstream = [Path(d) / s.out for d in run_dirs for s in STEPS]
    run_step(FIGURES_STEP, executed_dir, params, upstream, force=force, log=log)


def parse_langs(text: str) -> list[str]:
    """'en,fr' -> ['en', 'fr']; the main job runs on the embedded corpus, so only its languages are known."""
    from helpers.data import EMBEDDED_FILES

    langs = [part.strip() for part in text.split(",") if part.strip()]
    if not langs:
        raise ValueError("--lang needs at least one language code, e.g. en or en,fr,es")
    for lang in langs:
        if lang not in EMBEDDED_FILES:
            raise ValueError(f"unknown language {lang!r} for the offline main job; choose from "
                             f"{', '.join(EMBEDDED_FILES)} (other languages need Hub data: see README)")
    return langs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.run", description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="demo", help=PRESET_HELP)
    parser.add_argument("--lang", default="en", help="language code(s), comma-separated: en, fr, es offline")
    parser.add_argument("--out", default=str(DEFAULT_RUNS_DIR), help="folder for run folders (default: runs/)")
    parser.add_argument("--figures", default=str(DEFAULT_FIGURES_DIR), help="folder for figures (default: figures/)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--force", action="store_true", help="rerun every step even if unchanged")
    args = parser.parse_args(argv)
    try:
        preset = check_preset(args.preset)
        langs = parse_langs(args.lang)
        started = time.perf_counter()
        run_dirs = [run_language(preset, lang, Path(args.out), args.seed, args.device, args.force) for lang in langs]
        executed_dir = Path(args.out) / f"{preset}-figures"
        run_figures(run_dirs, Path(args.figures), executed_dir, force=args.force)
    except (StepFailed, ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    minutes = (time.perf_counter() - started) / 60
    print(f"finished in {minutes:.1f} min; executed notebooks under {Path(args.out)}, figures in {Path(args.figures)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
