"""The main job: execute notebooks 01 to 06 in order with papermill, chaining their run folders.

``python -m pipeline.job --preset demo --lang en`` (``make figures``) writes executed notebooks and
their artifacts under ``runs/<preset>-<lang>/``, the figures under ``figures/`` and readable copies
of the executed notebooks under ``docs/``. A step whose notebook sources, parameters, the helper
modules it imports and its upstream steps are unchanged since its last successful run is skipped,
so a rerun after a failure resumes where it stopped. The tests run the same steps with
``preset='smoke'`` through :func:`run_step`.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import logging
import os
import shutil
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from helpers.presets import PRESET_HELP, check_preset
from pipeline.notebook import CORPUS_HELP, STEP_FOLDERS, parse_corpus, quiet_libraries
from pipeline.runinfo import REPO_ROOT, check_device

NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
HELPERS_DIR = REPO_ROOT / "helpers"
DEFAULT_RUNS_DIR = REPO_ROOT / "runs"
COMMITTED_FIGURES_DIR = REPO_ROOT / "figures"
DOCS_DIR = REPO_ROOT / "docs"
README_PRESET = "demo"  # the preset of the README's main job: the only one that writes the committed figures/
STARTED_NAME = ".step-started.json"  # the fingerprint a step was last started with, finished or not
STAMP_NAME = ".step.json"  # written when a step finished: its fingerprint, time and parameters
LOCK_NAME = ".job.lock"
OWNER_NAME = ".job.owner.json"


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
    Step("01_masking", STEP_FOLDERS["masking"]),
    Step("02_tokenizer", STEP_FOLDERS["tokenizer"]),
    Step("03_static_vectors", STEP_FOLDERS["static"], ("02_tokenizer",)),
    Step("04_pretraining", STEP_FOLDERS["pretrain"], ("02_tokenizer", "03_static_vectors")),
    Step("05_probing", STEP_FOLDERS["probe"], ("02_tokenizer", "03_static_vectors", "04_pretraining")),
)
# 06 draws from every language's run folder at once, so it runs after the per-language steps.
FIGURES_STEP = Step("06_figures", "figures", owns_out_dir=False)
STEP_BY_NAME = {s.name: s for s in (*STEPS, FIGURES_STEP)}


class StepFailed(RuntimeError):
    """A notebook raised: the message names the notebook, the failing cell's error and the executed copy."""


class JobError(ValueError):
    """A user error caught before or between steps: one line that says what to do."""


# --------------------------------------------------------------------------------------------
# Run folders and parameters
# --------------------------------------------------------------------------------------------


def run_dir_for(runs_dir: Path, preset: str, lang: str, seed: int = 0) -> Path:
    """``<runs>/<preset>-<lang>`` for seed 0, ``<runs>/<preset>-<lang>-seed<N>`` otherwise."""
    suffix = "" if seed == 0 else f"-seed{seed}"
    return Path(runs_dir) / f"{preset}-{lang}{suffix}"


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


def declared_parameters(notebook: Path) -> set[str]:
    """The names assigned in a notebook's cell tagged ``parameters``."""
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            tree = ast.parse(_source(cell))
            return {t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                    if isinstance(t, ast.Name)}
    raise JobError(f"{Path(notebook).name} has no cell tagged 'parameters'")


def check_parameters(notebook: Path, params: dict[str, Any]) -> None:
    """Refuse parameters a notebook does not declare: papermill would only log them and run on defaults."""
    unknown = sorted(set(params) - declared_parameters(notebook))
    if unknown:
        raise JobError(f"{Path(notebook).name} does not take the parameter(s) {', '.join(unknown)}; "
                       f"it takes {', '.join(sorted(declared_parameters(notebook)))}")


# --------------------------------------------------------------------------------------------
# Fingerprints: what a step's result depends on
# --------------------------------------------------------------------------------------------


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def notebook_sources(notebook: Path) -> list[tuple[str, str]]:
    """(cell type, source) of every cell: what a student edits, never outputs, counts or metadata."""
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    return [(cell.get("cell_type", ""), _source(cell)) for cell in cells]


def _python_lines(source: str) -> str:
    """Cell source without IPython magics and shell escapes, so ``ast`` can read it."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _module_file(module: str) -> Path | None:
    parts = module.split(".")
    base = REPO_ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


PROJECT_PACKAGES = ("helpers", "pipeline", "exercises")  # the project's own code, whose edits rerun a step


def _imported_helpers(source: str) -> set[str]:
    """Names of the project's modules that ``source`` imports, anywhere in it (lazy imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] in PROJECT_PACKAGES)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PROJECT_PACKAGES:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names
                         if _module_file(f"{node.module}.{alias.name}") is not None)
    return found


def helper_modules(step: Step) -> list[str]:
    """Every project module the step's notebook imports, directly or through other project modules."""
    code = "\n".join(_python_lines(src) for kind, src in notebook_sources(step.notebook) if kind == "code")
    todo = sorted(_imported_helpers(code) | {"helpers"})
    seen: set[str] = set()
    while todo:
        module = todo.pop()
        if module in seen or _module_file(module) is None:
            continue
        seen.add(module)
        parents = [".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)]
        todo.extend(parents)  # importing helpers.plots.x runs helpers/plots/__init__.py too
        todo.extend(_imported_helpers(_module_file(module).read_text(encoding="utf-8")))
    return sorted(seen)


def _portable(params: dict[str, Any]) -> dict[str, Any]:
    """Parameters without absolute folders, so moving a runs folder changes no fingerprint."""
    portable = {k: v for k, v in params.items() if k not in ("run_dir", "out_dir", "run_dirs")}
    if "run_dirs" in params:
        portable["run_dirs"] = [Path(d).name for d in params["run_dirs"]]
    return portable


def fingerprint(step: Step, params: dict[str, Any], upstream: Sequence[Path] = ()) -> str:
    """Notebook cell sources, portable parameters, imported helpers' code and upstream fingerprints."""
    digest = hashlib.sha256()
    digest.update(json.dumps(notebook_sources(step.notebook)).encode())
    digest.update(json.dumps(_portable(params), sort_keys=True, default=str).encode())
    for module in helper_modules(step):
        digest.update(module.encode())
        digest.update(_module_file(module).read_bytes())
    for folder in upstream:
        stamp = Path(folder) / STAMP_NAME
        key = json.loads(stamp.read_text()).get("fingerprint", "") if stamp.exists() else "missing"
        digest.update(f"{Path(folder).name}:{key}".encode())
    return digest.hexdigest()


def is_up_to_date(out_dir: Path, key: str) -> bool:
    stamp = Path(out_dir) / STAMP_NAME
    return stamp.exists() and json.loads(stamp.read_text()).get("fingerprint") == key


def started_with(out_dir: Path) -> str | None:
    """The fingerprint ``out_dir``'s step was last started with (None if never, or unknown)."""
    started = Path(out_dir) / STARTED_NAME
    return json.loads(started.read_text()).get("fingerprint") if started.exists() else None


# --------------------------------------------------------------------------------------------
# Executing steps
# --------------------------------------------------------------------------------------------


def execute_notebook(notebook: Path, executed: Path, params: dict[str, Any]) -> None:
    """Run one notebook with papermill; on failure raise StepFailed naming the cell's error and the copy."""
    import papermill as pm

    check_parameters(notebook, params)
    executed.parent.mkdir(parents=True, exist_ok=True)
    try:
        pm.execute_notebook(str(notebook), str(executed), parameters=params, cwd=str(REPO_ROOT),
                            kernel_name="python3", progress_bar={"desc": f"  {notebook.stem}", "leave": False},
                            log_output=False, extra_arguments=["--IPKernelApp.log_level=ERROR"])
    except pm.PapermillExecutionError as err:
        raise StepFailed(
            f"{notebook.name} failed in cell {err.exec_count}: {err.ename}: {err.evalue}\n"
            f"the partially executed copy is {executed}"
        ) from None


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
        log(f"[skip] {step.name}: unchanged since its last successful run")
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
    stamp.write_text(json.dumps({"fingerprint": key, "seconds": round(seconds, 1), "params": params,
                                 "helpers": helper_modules(step)}, indent=2))
    log(f"[done] {step.name} in {seconds:.0f} s")
    return True


def run_language(preset: str, lang: str, runs_dir: Path = DEFAULT_RUNS_DIR, seed: int = 0, device: str = "auto",
                 force: bool = False, log: Any = print, corpus: str = "embedded", vectors: str | None = None,
                 max_steps: int | None = None) -> Path:
    """Steps 01 to 05 for one language and seed; returns the run folder."""
    run_dir = run_dir_for(runs_dir, preset, lang, seed).resolve()
    with folder_lock(run_dir):
        for step in STEPS:
            params = step_parameters(step, run_dir, preset, lang, seed, device, corpus, vectors, max_steps)
            upstream = [run_dir / STEP_BY_NAME[n].out for n in step.needs]
            run_step(step, run_dir, params, upstream, force=force, log=log)
    return run_dir


def stale_steps(preset: str, lang: str, runs_dir: Path = DEFAULT_RUNS_DIR, seed: int = 0, device: str = "auto",
                corpus: str = "embedded", vectors: str | None = None, max_steps: int | None = None) -> list[str]:
    """The steps a run of the same arguments would execute now (none: its results come from the current code)."""
    run_dir = run_dir_for(runs_dir, preset, lang, seed).resolve()
    stale: list[str] = []
    for step in STEPS:
        params = step_parameters(step, run_dir, preset, lang, seed, device, corpus, vectors, max_steps)
        upstream = [run_dir / STEP_BY_NAME[n].out for n in step.needs]
        if stale or not is_up_to_date(out_dir_of(step, params), fingerprint(step, params, upstream)):
            stale.append(step.name)  # everything after a stale step reruns too
    return stale


def figures_parameters(run_dirs: Sequence[Path], figures_dir: Path) -> dict[str, Any]:
    return {"run_dirs": [str(Path(d).resolve()) for d in run_dirs], "out_dir": str(Path(figures_dir).resolve())}


def run_figures(run_dirs: Sequence[Path], figures_dir: Path, executed_dir: Path, force: bool = False,
                log: Any = print, solve_exercises: bool = False) -> bool:
    """Run 06 into a temporary folder and move its files into ``figures_dir`` only once all are written.

    A failure part-way therefore leaves ``figures_dir`` as it was: never new figures beside old
    tables and an old provenance. Files in ``figures_dir`` that 06 does not write are kept.
    """
    figures_dir = Path(figures_dir).resolve()
    params = {**figures_parameters(run_dirs, figures_dir), "solve_exercises": solve_exercises}
    upstream = [Path(d) / s.out for d in run_dirs for s in STEPS]
    key = fingerprint(FIGURES_STEP, params, upstream)
    if not force and is_up_to_date(figures_dir, key):
        log(f"[skip] {FIGURES_STEP.name}: unchanged since its last successful run")
        return False
    staging = figures_dir.parent / f".{figures_dir.name}.incoming-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    log(f"[run ] {FIGURES_STEP.name} -> {figures_dir}")
    started = time.perf_counter()
    try:
        executed = Path(executed_dir) / f"{FIGURES_STEP.name}.ipynb"
        execute_notebook(FIGURES_STEP.notebook, executed, {**params, "out_dir": str(staging)})
        figures_dir.mkdir(parents=True, exist_ok=True)
        for path in sorted(p for p in staging.rglob("*") if p.is_file()):
            target = figures_dir / path.relative_to(staging)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
        # The files now live in figures_dir: the executed copy (and the docs rendered from it) says so.
        executed.write_text(executed.read_text(encoding="utf-8").replace(str(staging), str(figures_dir)),
                            encoding="utf-8")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    seconds = time.perf_counter() - started
    (figures_dir / STAMP_NAME).write_text(json.dumps({"fingerprint": key, "seconds": round(seconds, 1),
                                                      "params": params}, indent=2))
    log(f"[done] {FIGURES_STEP.name} in {seconds:.0f} s")
    return True


# --------------------------------------------------------------------------------------------
# Locks: one job per run folder
# --------------------------------------------------------------------------------------------


class folder_lock:  # noqa: N801 - used as a context manager, reads like `with folder_lock(path):`
    """Hold ``folder/.job.lock`` for the duration; a second job on the same folder stops at once.

    The lock is an OS file lock (``filelock``), released when the process ends, even by ``kill -9``,
    so no stale lock outlives its job. The holder writes who it is beside the lock for the message.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def __enter__(self) -> "folder_lock":
        from filelock import FileLock, Timeout

        self.folder.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(str(self.folder / LOCK_NAME))
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            raise JobError(f"another job is using {self.folder} ({self._holder()}); wait for it to finish, "
                           f"or give this one another --out") from None
        owner = {"pid": os.getpid(), "host": socket.gethostname(), "argv": sys.argv,
                 "since": time.strftime("%Y-%m-%d %H:%M:%S")}
        (self.folder / OWNER_NAME).write_text(json.dumps(owner))
        return self

    def _holder(self) -> str:
        try:
            owner = json.loads((self.folder / OWNER_NAME).read_text())
            return f"pid {owner['pid']} on {owner['host']} since {owner['since']}: {' '.join(owner['argv'])}"
        except (OSError, ValueError, KeyError):
            return "holder unknown"

    def __exit__(self, *exc: Any) -> None:
        (self.folder / OWNER_NAME).unlink(missing_ok=True)
        self._lock.release()


# --------------------------------------------------------------------------------------------
# Readable copies of the executed notebooks
# --------------------------------------------------------------------------------------------


def render_notebook(executed: Path, out_dir: Path) -> Path:
    """Markdown with its images beside it, paths made repository-relative, for readers on the web."""
    from nbconvert import MarkdownExporter

    files_dir_name = f"{executed.stem}_files"  # one images folder per notebook, so names never collide
    body, resources = MarkdownExporter().from_filename(
        str(executed), resources={"output_files_dir": files_dir_name, "unique_key": executed.stem})
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out_dir / files_dir_name, ignore_errors=True)
    for name, data in resources.get("outputs", {}).items():
        target = out_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    body = body.replace(f"{REPO_ROOT}/", "").replace(str(REPO_ROOT), ".")
    target = out_dir / f"{executed.stem}.md"
    target.write_text(body, encoding="utf-8")
    return target


def render_docs(run_dirs: Sequence[Path], figures_executed: Path, docs_dir: Path = DOCS_DIR) -> list[Path]:
    """Render every executed notebook into ``docs/<run folder>/`` and 06 into ``docs/figures/``."""
    written = []
    for run_dir in run_dirs:
        for step in STEPS:
            executed = Path(run_dir) / f"{step.name}.ipynb"
            if executed.exists():
                written.append(render_notebook(executed, docs_dir / Path(run_dir).name))
    if figures_executed.exists():
        written.append(render_notebook(figures_executed, docs_dir / "figures"))
    return written


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def parse_list(text: str, what: str) -> list[str]:
    items = [part.strip() for part in str(text).split(",") if part.strip()]
    if not items:
        raise JobError(f"--{what} needs at least one value, e.g. --{what} " + ("en,fr" if what == "lang" else "0,1,2"))
    duplicates = sorted({item for item in items if items.count(item) > 1})
    if duplicates:
        raise JobError(f"--{what} lists {', '.join(duplicates)} more than once")
    return items


def parse_langs(text: str, corpus: str = "embedded") -> list[str]:
    """'en,fr' -> ['en', 'fr'], checked against the languages the chosen corpus has."""
    from helpers.paper_values import LANGS as C4_PAPER_LANGS
    from pipeline.data import EMBEDDED_FILES

    langs = parse_list(text, "lang")
    source = parse_corpus(corpus)["source"]
    known = {"embedded": tuple(EMBEDDED_FILES), "hub": C4_PAPER_LANGS}.get(source)
    for lang in langs:
        if known is not None and lang not in known:
            hint = " (other languages need --corpus hub or --corpus files:PATH)" if source == "embedded" else ""
            raise JobError(f"unknown language {lang!r} for the {source} corpus; choose from {', '.join(known)}{hint}")
    return langs


def parse_indices(text: str, what: str, example: str) -> list[int]:
    """'0,1,2' -> [0, 1, 2] for --seeds and --gpus: non-negative integers, each once."""
    items = parse_list(text, what)
    wrong = [item for item in items if not item.isdigit()]
    if wrong:
        raise JobError(f"--{what} takes non-negative integers such as {example}, got {wrong[0]!r}")
    return [int(item) for item in items]


def parse_seeds(text: str) -> list[int]:
    return parse_indices(text, "seeds", "0,1,2")


def positive_int(text: str) -> int:
    if not str(text).isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return int(text)


def writable_folder(path: str | Path, option: str) -> Path:
    """Resolve once, here, against the current directory; refuse a file or a folder we cannot write."""
    folder = Path(path).expanduser().resolve()
    if folder.exists() and not folder.is_dir():
        raise JobError(f"{option} {folder} is a file, not a folder; give a folder path")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise JobError(f"{option} {folder} cannot be created ({err.strerror}); choose a folder you can write") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise JobError(f"{option} {folder} is not writable; choose a folder you can write")
    return folder


def default_figures_dir(preset: str, corpus: str, max_steps: int | None, seeds: Sequence[int], out: Path) -> Path:
    """figures/ only for the README's main job; any other run keeps its figures inside its runs folder."""
    if preset == README_PRESET and corpus == "embedded" and max_steps is None and list(seeds) == [0]:
        return COMMITTED_FIGURES_DIR
    return out / f"figures-{preset}"


def parse_gpus(text: str) -> list[int]:
    """'0,1' -> [0, 1], checked against the GPUs torch sees, before any work starts."""
    gpus = parse_indices(text, "gpus", "0,1,2,3")
    import torch

    available = torch.cuda.device_count()
    missing = [g for g in gpus if g >= available]
    if missing:
        raise JobError(f"--gpus asks for GPU(s) {', '.join(map(str, missing))} but torch sees {available} CUDA "
                       "device(s); leave --gpus out to run on the CPU")
    return gpus


def spread_over_devices(jobs: Sequence[Any], devices: Sequence[int], launch: Any) -> list[int]:
    """Run ``launch(job, device)`` for every job, at most one job per device at a time; return the exit codes.

    Jobs are independent (one language and seed each), so a free device simply takes the next one.
    """
    import queue
    from concurrent.futures import ThreadPoolExecutor

    free: queue.Queue[int] = queue.Queue()
    for device in devices:
        free.put(device)

    def one(job: Any) -> int:
        device = free.get()
        try:
            return launch(job, device)
        finally:
            free.put(device)

    with ThreadPoolExecutor(max_workers=len(devices)) as pool:
        return list(pool.map(one, jobs))


def _worker_command(args: argparse.Namespace, lang: str, seed: int, out: Path, vectors: str | None) -> list[str]:
    command = [sys.executable, "-m", "pipeline.job", "--preset", args.preset, "--lang", lang, "--seeds", str(seed),
               "--corpus", args.corpus, "--out", str(out), "--device", "cuda", "--no-figures"]
    if vectors:
        command += ["--vectors", vectors]
    if args.max_steps:
        command += ["--max-steps", str(args.max_steps)]
    if args.force:
        command.append("--force")
    return command


def _launch_on_gpu(command: list[str], gpu: int, log_path: Path) -> int:
    """One worker process that sees only GPU ``gpu``; its output goes to ``log_path``."""
    import subprocess

    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as handle:
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu)}
        return subprocess.run(command, cwd=REPO_ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT).returncode


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pipeline.job", description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default=README_PRESET, help=PRESET_HELP)
    parser.add_argument("--lang", default="en", help="language code(s), comma-separated (offline: en, fr, es)")
    parser.add_argument("--corpus", default="embedded", help=CORPUS_HELP)
    parser.add_argument("--vectors", default=None, help="a local .vec/.vec.gz/.bin file for notebook 03 "
                        "(default: per the preset: trained here, or the published cc.LANG.300 for paper)")
    parser.add_argument("--max-steps", type=positive_int, default=None, help="cap pretraining at N steps")
    parser.add_argument("--seeds", default="0", help="seeds, comma-separated; each language runs once per seed")
    parser.add_argument("--out", default=str(DEFAULT_RUNS_DIR), help="folder for run folders (default: runs/)")
    parser.add_argument("--figures", default=None, help="folder for figures (default: figures/ for the README's "
                        "demo job, else <out>/figures-<preset>)")
    parser.add_argument("--docs", default=None, help="folder for rendered notebooks (default: docs/ when writing "
                        "figures/, else none)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    parser.add_argument("--gpus", default=None, help="GPU indices, comma-separated (e.g. 0,1,2,3): the independent "
                        "runs (language x seed) are spread one per GPU, each in its own process")
    parser.add_argument("--no-figures", action="store_true", help="run notebooks 01-05 only (for example to "
                        "collect runs with different seeds per language, then --figures-from)")
    parser.add_argument("--figures-from", nargs="+", default=None, metavar="RUN_DIR",
                        help="run only notebook 06, over these run folders (or saved records); needs --figures")
    parser.add_argument("--records", default=None, help="with --figures-from: first save each run's record (the "
                        "small files 06 reads, pipeline.records) into this folder, then make the figures from them")
    parser.add_argument("--force", action="store_true", help="rerun every step even if unchanged")
    parser.add_argument("--check", action="store_true", help="run nothing: list, per run, the steps a run would "
                        "execute now (exit status 1 if any), i.e. whose results do not come from the current code")
    return parser


def _configure_logging() -> None:
    quiet_libraries()
    for name in ("papermill", "traitlets", "jupyter_client", "nbclient", "asyncio"):
        logging.getLogger(name).setLevel(logging.ERROR)


def _job_runs(args: argparse.Namespace) -> tuple[str, list[str], list[int], Path, Path, Path | None, str | None]:
    preset = check_preset(args.preset)
    source = parse_corpus(args.corpus)
    if source["source"] == "files" and not Path(source["path"]).exists():
        raise JobError(f"--corpus {args.corpus}: {source['path']} does not exist")
    langs = parse_langs(args.lang, args.corpus)
    seeds = parse_seeds(args.seeds)
    check_device(args.device)
    vectors = None
    if args.vectors is not None:
        path = Path(args.vectors).expanduser().resolve()
        if not path.is_file():
            raise JobError(f"--vectors {args.vectors}: no such file; give a .vec, .vec.gz or .bin file")
        vectors = str(path)
    out = writable_folder(args.out, "--out")
    figures_dir = (writable_folder(args.figures, "--figures") if args.figures is not None
                   else default_figures_dir(preset, args.corpus, args.max_steps, seeds, out))
    docs = (Path(args.docs).resolve() if args.docs is not None
            else DOCS_DIR if figures_dir == COMMITTED_FIGURES_DIR else None)
    return preset, langs, seeds, out, figures_dir, docs, vectors


def _iterate(langs: Sequence[str], seeds: Sequence[int]) -> Iterator[tuple[str, int]]:
    for lang in langs:
        for seed in seeds:
            yield lang, seed


def figures_only(args: argparse.Namespace) -> int:
    """``--figures-from``: notebook 06 over existing run folders, optionally through their saved records."""
    if args.figures is None:
        raise JobError("--figures-from needs --figures FOLDER (where the figures and tables go)")
    run_dirs = [Path(d).expanduser().resolve() for d in args.figures_from]
    absent = [str(d) for d in run_dirs if not d.is_dir()]
    if absent:
        raise JobError(f"--figures-from: no such run folder: {', '.join(absent)}")
    figures_dir = writable_folder(args.figures, "--figures")
    notebooks_from = run_dirs  # records hold no executed notebooks: --docs renders the run folders' own
    if args.records is not None:
        from pipeline.records import save_records  # imports torch; only this option needs it

        run_dirs = save_records(run_dirs, writable_folder(args.records, "--records"))
        print(f"saved {len(run_dirs)} run records into {args.records}")
    executed_dir = writable_folder(args.out, "--out") / f"{figures_dir.name}-figures"
    with folder_lock(executed_dir):
        run_figures(run_dirs, figures_dir, executed_dir, force=args.force)
    if args.docs is not None:
        docs = writable_folder(args.docs, "--docs")
        written = render_docs(notebooks_from, executed_dir / f"{FIGURES_STEP.name}.ipynb", docs)
        print(f"rendered {len(written)} notebooks into {docs}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _configure_logging()
    try:
        if args.figures_from is not None:
            return figures_only(args)
        if args.records is not None:
            raise JobError("--records goes with --figures-from")
        preset, langs, seeds, out, figures_dir, docs, vectors = _job_runs(args)
        started = time.perf_counter()
        jobs = list(_iterate(langs, seeds))
        if args.check:
            stale = {run_dir_for(out, preset, lang, seed).name: stale_steps(
                preset, lang, out, seed, args.device, args.corpus, vectors, args.max_steps) for lang, seed in jobs}
            for name, steps in stale.items():
                print(f"{name}: {'would rerun ' + ', '.join(steps) if steps else 'up to date'}")
            return 1 if any(stale.values()) else 0
        run_dirs = [run_dir_for(out, preset, lang, seed).resolve() for lang, seed in jobs]
        if args.gpus is not None:
            gpus = parse_gpus(args.gpus)
            logs = {job: out / "logs" / f"{run_dir_for(out, preset, *job).name}.log" for job in jobs}
            print(f"{len(jobs)} runs over GPU(s) {', '.join(map(str, gpus))}; logs in {out / 'logs'}")
            codes = spread_over_devices(jobs, gpus, lambda job, gpu: _launch_on_gpu(
                _worker_command(args, job[0], job[1], out, vectors), gpu, logs[job]))
            failed = [f"{lang} seed {seed} (see {logs[(lang, seed)]})" for (lang, seed), code in zip(jobs, codes)
                      if code != 0]
            if failed:
                raise JobError(f"{len(failed)} run(s) failed: {'; '.join(failed)}")
        else:
            for lang, seed in jobs:
                print(f"== {preset} · {lang} · seed {seed}")
                run_language(preset, lang, out, seed, args.device, args.force, corpus=args.corpus,
                             vectors=vectors, max_steps=args.max_steps)
        if args.no_figures:
            return 0
        executed_dir = out / f"{preset}-figures"
        with folder_lock(executed_dir):
            run_figures(run_dirs, figures_dir, executed_dir, force=args.force)
        if docs is not None:
            written = render_docs(run_dirs, executed_dir / f"{FIGURES_STEP.name}.ipynb", docs)
            print(f"rendered {len(written)} notebooks into {docs}")
    except (StepFailed, JobError, ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    minutes = (time.perf_counter() - started) / 60
    print(f"finished in {minutes:.1f} min; executed notebooks under {out}, figures in {figures_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
