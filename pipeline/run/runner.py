"""Running the main job's steps: one notebook with papermill, a language's steps 01-05, notebook 06, the docs. A step
whose fingerprint (:mod:`pipeline.store.fingerprints`) is unchanged since it last succeeded is skipped: a rerun
resumes."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable, Sequence
from unittest.mock import patch

from pipeline.run.render_tables import tables_as_markdown
from pipeline.run.steps import (
    FIGURES_STEP,
    STEPS,
    RunSettings,
    Step,
    StepFailed,
    check_parameters,
    figures_parameters,
    out_dir_of,
    upstream_of,
)
from pipeline.store import fingerprints as fp
from pipeline.store.layout import (
    DOCS_DIR,
    NOTEBOOKS_DIR,
    PROVENANCE_NAME,
    REPO_ROOT,
    RunLayout,
    inside,
    read_json,
    stamp_of,
)
from pipeline.store.records import record_files
from pipeline.store.run_identity import JOB_FOLDER_ENV, claim_identity, folder_lock
from pipeline.store.runinfo import git_commit, git_output
from pipeline.store.staging import move_into, remove_files, set_aside, staged

Log = Callable[[str], Any]


def execute_notebook(notebook: Path, executed: Path, params: dict[str, Any]) -> None:
    """Run one notebook with papermill; on failure raise StepFailed naming the cell's error and the copy. The copy
    replaces ``executed`` only once written whole (not on a full disk), so nothing later reads a broken notebook."""
    import papermill as pm

    check_parameters(notebook, params)
    executed.parent.mkdir(parents=True, exist_ok=True)
    partial = executed.with_name(f".{executed.stem}.partial{executed.suffix}")
    # The kernel learns that this job holds the folder, so its first cell takes no lock of its own
    # (run_identity.claim_step_by_hand); a notebook run by hand has no such variable and does.
    try:
        with patch.dict(os.environ, {JOB_FOLDER_ENV: str(executed.parent.resolve())}):
            pm.execute_notebook(str(notebook), str(partial), parameters=params, cwd=str(REPO_ROOT),
                                kernel_name="python3", progress_bar={"desc": f"  {notebook.stem}", "leave": False},
                                log_output=False, extra_arguments=["--IPKernelApp.log_level=ERROR"],
                                # every cell has written its files; a graceful exit of a kernel holding torch and
                                # transformers took 2.8-3.6 s a notebook on this machine, a kill 0.1-0.2 s
                                shutdown_kernel="immediate")
    except pm.PapermillExecutionError as err:
        os.replace(partial, executed)  # papermill wrote the copy whole, with the cell's error, before raising
        raise StepFailed(f"{notebook.name} failed in cell {err.exec_count}: {err.ename}: {err.evalue}\n"
                         f"the partially executed copy is {executed}") from None
    except OSError as err:
        if err.errno != errno.ENOSPC:
            raise
        raise StepFailed(f"{notebook.name} stopped: no space left on the disk of {executed.parent} ({err.strerror}); "
                         "free space there, then run the same command again (finished steps are skipped)") from None
    else:
        os.replace(partial, executed)
    finally:
        partial.unlink(missing_ok=True)


def run_step(step: Step, run_dir: Path, params: dict[str, Any], upstream: Sequence[Path] = (),
             force: bool = False, log: Log = print) -> bool:
    """Execute ``step`` unless its stamp says nothing changed; True if it ran. A rerun after a crash keeps its
    folder, so pretraining resumes from its checkpoint; a rerun because something changed (or with ``force``)
    starts empty, so nothing of the old inputs is resumed or reported as new."""
    out_dir = out_dir_of(step, params)
    key = fp.fingerprint(step, params, upstream)
    if not force and fp.is_up_to_date(out_dir, key):
        log(f"[skip] {step.name}: unchanged since its last successful run")
        return False
    renewed = out_dir.exists() and (force or fp.started_with(out_dir) != key)
    with set_aside(inside(out_dir, run_dir, f"{step.name}'s folder")) if renewed else nullcontext() as previous:
        if previous is not None:
            log(f"[new ] {step.name}: inputs changed, so {out_dir} starts empty (the previous result waits in "
                f"{previous.name} and comes back if this step fails)")
        out_dir.mkdir(parents=True, exist_ok=True)
        fp.mark_started(out_dir, key)
        log(f"[run ] {step.name} -> {out_dir}")
        started = time.perf_counter()
        execute_notebook(step.notebook, RunLayout(Path(run_dir)).executed(step.name), params)
        seconds = time.perf_counter() - started
        out_dir.mkdir(parents=True, exist_ok=True)
        fp.mark_finished(out_dir, key, seconds, params, modules=fp.project_modules(step),
                         inputs=fp.input_digests(params))
    shutil.rmtree(out_dir.with_name(f".{out_dir.name}.previous"), ignore_errors=True)  # left by a run killed mid-way
    log(f"[done] {step.name} in {seconds:.0f} s")
    return True


def run_language(settings: RunSettings, runs_dir: Path, force: bool = False, log: Log = print) -> Path:
    """Steps 01 to 05 for one language and seed; returns the run folder."""
    run_dir = settings.run_dir(runs_dir)
    with folder_lock(run_dir):
        claim_identity(RunLayout(run_dir), settings.identity(), force)
        for step in STEPS:  # a step held by hand stops the job now, not after hours of the steps before it
            with folder_lock(run_dir, step.out):
                pass
        for step in STEPS:
            with folder_lock(run_dir, step.out):  # a notebook or train_cli writing this step by hand stops us here
                run_step(step, run_dir, settings.parameters(step, run_dir), upstream_of(step, run_dir), force, log)
    return run_dir


def stale_steps(settings: RunSettings, runs_dir: Path) -> list[str]:
    """The steps a run of these settings would execute now (none: its results come from the current code and
    inputs), each with why when an input file changed: 'name (input vectors /v.vec changed (sha256 ...))'."""
    run_dir = settings.run_dir(runs_dir)
    stale: list[str] = []
    for step in STEPS:
        params = settings.parameters(step, run_dir)
        out_dir = out_dir_of(step, params)
        if stale or not fp.is_up_to_date(out_dir, fp.fingerprint(step, params, upstream_of(step, run_dir))):
            reasons = fp.changed_inputs(out_dir, params)  # everything after a stale step reruns too
            stale.append(f"{step.name} ({'; '.join(reasons)})" if reasons else step.name)
    return stale


def figures_key(run_dirs: Sequence[Path], figures_dir: Path, solve_exercises: bool = False) -> str:
    """Notebook 06's fingerprint: its own, the steps' stamps, and the content of every record file it reads."""
    params = figures_parameters(run_dirs, Path(figures_dir).resolve(), solve_exercises)
    layouts = [RunLayout(Path(d)) for d in run_dirs]
    series = [Path(params["series_csv"])] if params["series_csv"] else []  # the table 06 shows, by content
    return fp.fingerprint(FIGURES_STEP, params, [Path(d) / s.out for d in run_dirs for s in STEPS],
                          [path for run in layouts for path in (*record_files(run), run.pretrain.baseline)] + series)


def figures_stale(run_dirs: Sequence[Path], figures_dir: Path) -> bool:
    """Whether notebook 06 would run again over ``run_dirs`` (for --check)."""
    return not fp.is_up_to_date(Path(figures_dir).resolve(), figures_key(run_dirs, figures_dir))


def replace_figures(staging: Path, figures_dir: Path, log: Log = print) -> None:
    """The new set of 06's files in place of the previous set. The stamp goes first (a kill from here on leaves 06
    to rerun), then every file the previous 06's provenance.json lists and this one did not draw, then the new
    files; what a provenance.json not written by 06 lists is someone else's, never deleted."""
    figures_dir.mkdir(parents=True, exist_ok=True)
    stamp_of(figures_dir).unlink(missing_ok=True)
    provenance = read_json(figures_dir / PROVENANCE_NAME) or {}
    # 06's writer, by its module's name now and before the evidence had a package of its own
    written_by_06 = str(provenance.get("generated_by")).startswith(("evidence.figures.", "pipeline.figures."))
    listed = provenance.get("files", []) if written_by_06 else []
    previous = {name for name in listed if isinstance(name, str)} | ({PROVENANCE_NAME} if listed else set())
    if removed := remove_files(figures_dir, previous - {p.name for p in staging.iterdir() if p.is_file()}):
        log(f"[del ] {FIGURES_STEP.name} did not draw {', '.join(p.name for p in removed)} this time: removed "
            f"from {figures_dir}, so no figure of other runs stays beside the new tables")
    move_into(staging, figures_dir)


def run_figures(run_dirs: Sequence[Path], figures_dir: Path, executed_dir: Path, force: bool = False,
                log: Log = print, solve_exercises: bool = False) -> bool:
    """Run 06 into a staging folder and move its files into ``figures_dir`` only once all are written, so a
    failure part-way leaves ``figures_dir`` as it was; files there that 06 never wrote (records) are kept."""
    figures_dir = Path(figures_dir).resolve()
    params = figures_parameters(run_dirs, figures_dir, solve_exercises)
    key = figures_key(run_dirs, figures_dir, solve_exercises)
    if not force and fp.is_up_to_date(figures_dir, key):
        log(f"[skip] {FIGURES_STEP.name}: unchanged since its last successful run")
        return False
    log(f"[run ] {FIGURES_STEP.name} -> {figures_dir}")
    started = time.perf_counter()
    with staged(figures_dir.parent, figures_dir.name) as staging:
        executed = RunLayout(Path(executed_dir)).executed(FIGURES_STEP.name)
        execute_notebook(FIGURES_STEP.notebook, executed, {**params, "out_dir": str(staging)})
        replace_figures(staging, figures_dir, log)
        # The files now live in figures_dir: the executed copy (and the docs rendered from it) says so.
        executed.write_text(executed.read_text(encoding="utf-8").replace(str(staging), str(figures_dir)),
                            encoding="utf-8")
    seconds = time.perf_counter() - started
    fp.mark_finished(figures_dir, key, seconds, params)
    log(f"[done] {FIGURES_STEP.name} in {seconds:.0f} s")
    return True


WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def without_progress_widgets(notebook: Any) -> Any:
    """The notebook without widget outputs (tqdm.auto's progress bars): a render would show them frozen at
    their first state, '0%|'; an interactive session still shows them live."""
    for cell in notebook.cells:
        if cell.get("cell_type") == "code":
            cell.outputs = [o for o in cell.get("outputs", []) if WIDGET_MIME not in o.get("data", {})]
    return notebook


INJECTED_TAG = "injected-parameters"  # papermill's tag on the one code cell it adds: not in the notebook
OLDER = " Older than today's notebook: its code differs."


def code_cells_hash(sources: Sequence[str]) -> str:
    """The code cells' SHA-256 (16 hex digits) a render's first line names: a hand-edited code block breaks it."""
    return hashlib.sha256(json.dumps(list(sources)).encode("utf-8")).hexdigest()[:16]


def code_cells(notebook: Any) -> list[str]:
    """A notebook's code cells as its render shows them, without the parameters cell papermill injects."""
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    return [cell.source for cell in code if INJECTED_TAG not in cell.get("metadata", {}).get("tags", [])]


def commit_with_code(name: str, digest: str) -> str | None:
    """The latest commit of ``notebooks/NAME.ipynb`` whose code cells hash to ``digest`` (None: none, or no git)."""
    import nbformat

    path = f"{NOTEBOOKS_DIR.name}/{name}.ipynb"
    for sha in (git_output("log", "--format=%H", "--", path) or "").split():
        text = git_output("show", f"{sha}:{path}")
        if text is not None and code_cells_hash(code_cells(nbformat.reads(text, as_version=4))) == digest:
            return sha
    return None


def render_header(name: str, sources: Sequence[str]) -> str:
    """A render's first line: notebook, commit and code hash; code unlike today's names its commit and says older."""
    import nbformat

    digest, today = code_cells_hash(sources), NOTEBOOKS_DIR / f"{name}.ipynb"
    current = today.exists() and code_cells(nbformat.read(str(today), as_version=4)) == list(sources)
    commit = git_commit() if current else commit_with_code(name, digest)
    at = f"commit {commit[:12]}{'+dirty' * commit.endswith('+dirty')}" if commit else "an unrecorded commit"
    older = "" if current else OLDER
    return f"*Render of {NOTEBOOKS_DIR.name}/{name}.ipynb at {at}, code cells sha256:{digest}.{older}*\n\n"


def render_notebook(executed: Path, out_dir: Path) -> Path:
    """Markdown with its images beside it, tables as Markdown (no raw HTML), paths made repository-relative,
    for readers on the web; its first line names where it came from (``render_header``)."""
    import nbformat
    from nbconvert import MarkdownExporter
    from nbconvert.writers import FilesWriter

    files_dir_name = f"{executed.stem}_files"  # one images folder per notebook, so names never collide
    notebook = tables_as_markdown(without_progress_widgets(nbformat.read(str(executed), as_version=4)))
    body, resources = MarkdownExporter().from_notebook_node(
        notebook, resources={"output_files_dir": files_dir_name, "unique_key": executed.stem}
    )
    shutil.rmtree(out_dir / files_dir_name, ignore_errors=True)
    body = body.replace(f"{REPO_ROOT}/", "").replace(str(REPO_ROOT), ".")
    body = render_header(executed.stem, code_cells(notebook)) + body
    return Path(FilesWriter(build_directory=str(out_dir)).write(body, resources, notebook_name=executed.stem))


def render_docs(run_dirs: Sequence[Path], figures_executed: Path, docs_dir: Path = DOCS_DIR) -> list[Path]:
    """Render every executed notebook into ``docs/<run folder>/`` and 06 into ``docs/figures/``."""
    notebooks = [(RunLayout(Path(d)).executed(s.name), docs_dir / Path(d).name) for d in run_dirs for s in STEPS]
    notebooks.append((figures_executed, docs_dir / "figures"))
    return [render_notebook(executed, out_dir) for executed, out_dir in notebooks if executed.exists()]
