"""The main job (``python -m pipeline.job``, ``make figures``): notebooks 01-05 per language and seed, then 06, in
order, spread over GPUs when asked to (the steps: :mod:`pipeline.run.steps`; running them:
:mod:`pipeline.run.runner`)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from queue import Queue
from typing import Callable, Sequence, TypeVar

from pipeline.run.job_options import JobOptions, parse_options
from pipeline.run.runner import figures_stale, render_docs, run_figures, run_language, stale_steps
from pipeline.run.steps import FIGURES_STEP, JobError, RunSettings, StepFailed
from pipeline.store.layout import REPO_ROOT, RunLayout, RunsFolder
from pipeline.store.run_identity import folder_lock, identity_conflict
from pipeline.store.runinfo import quiet_libraries

Job = TypeVar("Job")


def spread_over_devices(jobs: Sequence[Job], devices: Sequence[int], launch: Callable[[Job, int], int]) -> list[int]:
    """Run ``launch(job, device)`` for every job, at most one job per device at a time; return the exit codes. The
    jobs are independent (one language and seed each), so a free device simply takes the next one."""
    free: Queue[int] = Queue()
    for device in devices:
        free.put(device)

    def one(job: Job) -> int:
        device = free.get()
        try:
            return launch(job, device)
        finally:
            free.put(device)

    with ThreadPoolExecutor(max_workers=len(devices)) as pool:
        return list(pool.map(one, jobs))


def worker_command(settings: RunSettings, out: Path, force: bool) -> list[str]:
    """The command line of one worker process: one language and seed on the one GPU it sees, no figures."""
    command = [sys.executable, "-m", "pipeline.job", "--preset", settings.preset, "--lang", settings.lang,
               "--seeds", str(settings.seed), "--corpus", str(settings.corpus), "--out", str(out),
               "--device", "cuda", "--no-figures"]
    given = {"--vectors": settings.vectors, "--max-steps": settings.max_steps or None,
             "--labelled": settings.labelled if settings.labelled.kind != "auto" else None}
    command += [part for option, value in given.items() if value is not None for part in (option, str(value))]
    return command + [flag for flag, on in {"--control": settings.control, "--force": force}.items() if on]


def run_on_gpus(options: JobOptions) -> None:
    """Every run in its own process, one per GPU at a time; JobError naming the runs that failed and their logs."""
    runs, folder = options.runs(), RunsFolder(options.out)
    logs = {run: folder.log(run.run_dir(options.out).name) for run in runs}
    print(f"{len(runs)} runs over GPU(s) {', '.join(map(str, options.gpus))}; logs in {folder.logs}")

    def launch(run: RunSettings, gpu: int) -> int:  # a worker that sees only its GPU, its output in its log
        logs[run].parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu)}
        with logs[run].open("w") as handle:
            command = worker_command(run, options.out, options.force)
            return subprocess.run(command, cwd=REPO_ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT).returncode

    codes = spread_over_devices(runs, options.gpus, launch)
    if failed := [f"{run.lang} seed {run.seed} (see {logs[run]})" for run, code in zip(runs, codes) if code != 0]:
        raise JobError(f"{len(failed)} run(s) failed: {'; '.join(failed)}")


def refusals(options: JobOptions) -> dict[RunSettings, str]:
    """Why each run's folder would refuse it (:func:`pipeline.store.run_identity.identity_conflict`); none with
    --force."""
    runs = [] if options.force else options.runs()
    found = {run: identity_conflict(RunLayout(run.run_dir(options.out)), run.identity()) for run in runs}
    return {run: conflict for run, conflict in found.items() if conflict}


def check_runs(options: JobOptions) -> int:
    """``--check``: print per run the steps that would rerun, or why the run would be refused; 1 if any."""
    stale: list[str] = []
    refused = refusals(options)
    for run in options.runs():
        reasons = [refused[run]] if run in refused else stale_steps(run, options.out)
        said = ("would be refused: " if run in refused else "would rerun ") + ", ".join(reasons)
        print(f"{run.run_dir(options.out).name}: {said if reasons else 'up to date'}")
        stale += reasons
    if not options.no_figures:  # 06 too: a kill during it, or an edited record, leaves old figures
        figures = bool(stale) or figures_stale([run.run_dir(options.out) for run in options.runs()],
                                               options.figures_dir)
        print(f"{options.figures_dir}: {'would rerun ' + FIGURES_STEP.name if figures else 'up to date'}")
        stale += [FIGURES_STEP.name] if figures else []
    return 1 if stale else 0


def figures_and_docs(options: JobOptions, run_dirs: Sequence[Path]) -> None:
    """Notebook 06 over ``run_dirs`` (with ``--records``, over their records, saved first), then (with ``--docs``)
    the run folders' executed notebooks and 06 rendered as Markdown (records hold no executed notebooks)."""
    sources = run_dirs
    if options.records is not None:
        from pipeline.store.records import save_records  # imports torch; only this option needs it

        sources = save_records(run_dirs, options.records, options.draft)
        print(f"saved {len(sources)} run records into {options.records}")
    folder = RunsFolder(options.out)
    executed_dir = folder.figures_notebooks(options.figures_dir.name if options.run_dirs else options.preset)
    with folder_lock(executed_dir):
        run_figures(sources, options.figures_dir, executed_dir, force=options.force)
    if options.docs is not None:
        written = render_docs(run_dirs, RunLayout(executed_dir).executed(FIGURES_STEP.name), options.docs)
        print(f"rendered {len(written)} notebooks into {options.docs}")


def run_job(options: JobOptions) -> int:
    """Notebooks 01-05 for every language and seed (on GPUs when asked), then 06 and the docs."""
    started = time.perf_counter()
    # Every run's folder checked before any step runs: a job never spends an hour on English to be refused on
    # French (each run checks again as it starts, under its folder's lock).
    if refused := refusals(options):
        raise JobError("\n".join(refused.values()))
    if options.gpus is not None:
        run_on_gpus(options)
    else:
        for run in options.runs():
            print(f"== {run.preset} · {run.lang} · seed {run.seed}")
            run_language(run, options.out, options.force)
    if options.no_figures:
        return 0
    figures_and_docs(options, [run.run_dir(options.out) for run in options.runs()])
    minutes = (time.perf_counter() - started) / 60
    print(f"finished in {minutes:.1f} min; executed notebooks under {options.out}, figures in {options.figures_dir}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        options = parse_options(argv)
        quiet_libraries()
        for name in ("papermill", "traitlets", "jupyter_client", "nbclient", "asyncio"):
            logging.getLogger(name).setLevel(logging.ERROR)
        if options.run_dirs is not None:  # --figures-from: notebook 06 only, over existing run folders
            figures_and_docs(options, options.run_dirs)
            return 0
        return check_runs(options) if options.check else run_job(options)
    except (StepFailed, JobError, ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
