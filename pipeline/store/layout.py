"""Where things live: the repository's folders, and every folder and file a run writes, named once.

A run folder (``runs/<preset>-<lang>[-seed<N>]``) holds one folder per notebook step::

    <run>/
      masking/      01: masking_stats.json, plots
      tokenizer/    02: the trained tokenizer (tokenizer.json and the files save_pretrained writes), report.json
      static/       03: embeddings.npy, found.npy, manifest.json
      static_web/   the other-text vectors for bert_ft_web (pipeline.vectors.pretrained_vectors), where made
      pretrain/     04: data/ (prepared sequences), bert_tiny/, bert_ft/, EXTRA_MODELS (ModelFiles), comparison.json,
                        cloze_predictions.json, baseline.json and token_facts.npz (in a record, where data/ is not kept)
      probe/        05: results.csv, results.json, paired_differences.csv
      NN_<name>.ipynb            the executed copy of each notebook, when the main job ran it
      <step>/.step.json          written when the step finished: its fingerprint, time and parameters
      <step>/.step-started.json  the fingerprint the step was last started with, finished or not
      .job.lock, .job.owner.json  held by the job running on this folder
      .<step>.lock, .<step>.owner.json  held by whoever writes that step (pipeline.store.run_identity)

No other module spells out one of these names: each asks this module for the path.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]  # pipeline/store/layout.py
RUNS_DIR = REPO_ROOT / "runs"
INTERACTIVE_DIR = RUNS_DIR / "interactive"  # where a notebook run by hand in JupyterLab writes
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
FIGURES_DIR = REPO_ROOT / "figures"
DOCS_DIR = REPO_ROOT / "docs"
# The project's own packages: the taught code, its plots, the exercises' answers and the machinery.
PROJECT_PACKAGES = ("helpers", "plots", "exercises", "pipeline", "evidence")

MODEL_NAMES = ("bert_tiny", "bert_ft")  # the paper's pair: every finished run folder holds both
# The control arm: BERT_FT's vector rows permuted among themselves (helpers.model.permute_vector_rows); trained
# only where asked, so a run folder may or may not hold it.
CONTROL_MODEL = "bert_ft_perm"
# The other-text arm: BERT_FT started from vectors pretrained on web-scale text
# (pipeline.vectors.pretrained_vectors), and
# its own control with those rows permuted; trained apart by train_cli on a finished run's prepared data.
WEB_MODEL, WEB_CONTROL = "bert_ft_web", "bert_ft_web_perm"
WEB_SOURCE = "web"  # the source its static manifest names
EXTRA_MODELS = (CONTROL_MODEL, WEB_MODEL, WEB_CONTROL)  # a run folder or record holds each only where trained
TRAINABLE_MODELS = (*MODEL_NAMES, *EXTRA_MODELS)
PERMUTES = {CONTROL_MODEL: "bert_ft", WEB_CONTROL: WEB_MODEL}  # a control: the model whose vector rows it permutes
STEP_FOLDERS = ("masking", "tokenizer", "static", "pretrain", "probe")  # one per notebook 01-05, in order
STAMP_NAME = ".step.json"
STARTED_NAME = ".step-started.json"
INPUT_HASHES_NAME = ".input-hashes.json"  # the content hashes of a run's input files, by size and mtime
PROVENANCE_NAME = "provenance.json"  # in a figures folder: which runs and which commit drew it
SERIES_TABLE = "series_training_length"  # evidence.series writes it beside 06's figures; 06 shows its CSV


def repo_path(path: str | Path) -> Path:
    """An absolute path, relative ones taken from the repository root: a notebook works from notebooks/ too."""
    path = Path(path).expanduser()
    return (path if path.is_absolute() else REPO_ROOT / path).resolve()


def _at(relative: str, doc: str | None = None, kind: type = Path) -> property:
    """``relative`` under the layout's ``folder`` (as a ``kind``): each layout below is a table, one line a file."""
    return property(lambda self: kind(Path(self.folder) / relative), doc=doc)


@dataclass(frozen=True)
class ModelFiles:
    """``<run>/pretrain/<model_name>/``: what training one model writes."""

    folder: Path
    metrics = _at("metrics.csv")
    run_json = _at("run.json")
    checkpoint = _at("checkpoint.pt")
    positions = _at("eval_positions.npz", "Per masked position of the final evaluation: sequence, position, "
                    "correct, loss.")
    model = _at("model", "The trained model, as transformers' save_pretrained writes it.")


@dataclass(frozen=True)
class PreparedFiles:
    """``<run>/pretrain/data/``: the tokenised sequences training reads (all a GPU machine needs)."""

    folder: Path
    meta = _at("meta.json")
    tokenizer = _at("tokenizer")
    shards = _at("train_shards")

    def array(self, name: str) -> Path:
        """``train_ids``, ``train_lengths``, ``eval_ids``, ``eval_lengths``, ``eval_masked_ids``, ``eval_labels``."""
        return self.folder / f"{name}.npy"


@dataclass(frozen=True)
class StaticFiles:
    """``<run>/static/``: the aligned initial embedding matrix of BERT_FT."""

    folder: Path
    embeddings = _at("embeddings.npy")
    found = _at("found.npy")
    manifest = _at("manifest.json")


@dataclass(frozen=True)
class PretrainFiles:
    """A pretraining folder (``<run>/pretrain``, or any ``--out`` of the training command line): the prepared
    data, one :class:`ModelFiles` per model, and the comparison of the two."""

    folder: Path
    comparison = _at("comparison.json")
    cloze = _at("cloze_predictions.json", "Notebook 04's top-5 fill-mask predictions of each model on a fixed "
                "cloze set (kept in records).")
    baseline = _at("baseline.json", "The unigram baseline, saved in a record where the prepared data are not kept.")
    token_facts = _at("token_facts.npz", "Per vocabulary id: training count, piece, punctuation, static vector "
                      "(pipeline.store.baseline_files).")
    data = _at("data", kind=PreparedFiles)

    def model(self, name: str) -> ModelFiles:
        if name not in TRAINABLE_MODELS:
            raise ValueError(f"unknown model {name!r}; choose from {', '.join(TRAINABLE_MODELS)}")
        return ModelFiles(self.folder / name)


@dataclass(frozen=True)
class RunLayout:
    """Every folder and file of one run folder (see the module docstring for the tree)."""

    root: Path
    folder = property(lambda self: self.root)  # what _at reads: every other layout names its field so
    probe_table = _at("probe/results.csv")
    probe_record = _at("probe/results.json")
    probe_differences = _at("probe/paired_differences.csv", "The probe's paired differences, BERT_FT minus "
                            "BERT_TINY per test document.")
    identity = _at("identity.json", "What this run folder holds (preset, language, seed, corpus, ...), fixed by "
                   "its first step.")
    static = _at("static", kind=StaticFiles)
    static_web = _at("static_web", "The other-text vectors aligned to this run's tokenizer "
                     "(pipeline.vectors.pretrained_vectors).", kind=StaticFiles)
    pretrain = _at("pretrain", kind=PretrainFiles)

    def step(self, name: str) -> Path:
        if name not in STEP_FOLDERS:
            raise ValueError(f"unknown step folder {name!r}; choose from {', '.join(STEP_FOLDERS)}")
        return self.root / name

    def model(self, name: str) -> ModelFiles:
        return self.pretrain.model(name)

    def executed(self, notebook: str) -> Path:
        """The executed copy of a notebook (its file stem, e.g. '04_pretraining') the main job leaves in the run."""
        return self.root / f"{notebook}.ipynb"


def lock_of(folder: Path, holder: str = "job") -> tuple[Path, Path]:
    """``.<holder>.lock`` in ``folder`` and ``.<holder>.owner.json``, who holds it ('job', or a step's name)."""
    return Path(folder) / f".{holder}.lock", Path(folder) / f".{holder}.owner.json"


def stamp_of(step_folder: Path) -> Path:
    """The file a finished step leaves in its folder."""
    return Path(step_folder) / STAMP_NAME


def started_of(step_folder: Path) -> Path:
    return Path(step_folder) / STARTED_NAME


def read_json(path: Path, unreadable: str = "") -> dict[str, Any] | None:
    """The JSON object in one of a run's small files (a stamp, identity.json, a cache, a lock's owner), else None:
    absent, no object, or unreadable (a write cut short), which ``unreadable`` (with ``path``, ``err``) warns of."""
    try:
        found = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        if unreadable:
            print(f"warning: {unreadable.format(path=path, err=err)}", file=sys.stderr)
        return None
    return found if isinstance(found, dict) else None


# A language is a code, never a path: 2 or 3 lower-case letters (ISO 639), optionally a region after '_'.
LANG_CODE = re.compile(r"[a-z]{2,3}(?:_[a-z]{2,4})?")


def check_lang(lang: object) -> str:
    """``lang`` if it is a language code, else a ValueError: a language becomes part of folder names."""
    if not isinstance(lang, str) or not LANG_CODE.fullmatch(lang):
        raise ValueError(f"{lang!r} is not a language code: use 2 or 3 lower-case letters, optionally with a region "
                         "after '_' (en, fra, pt_br); a language names a run folder, so it can never be a path")
    return lang


def inside(path: Path, root: Path, what: str) -> Path:
    """``path`` resolved, if it lies inside ``root``; checked before anything is written there or removed."""
    resolved, boundary = Path(path).resolve(), Path(root).resolve()
    if not resolved.is_relative_to(boundary):
        raise ValueError(f"{what} {resolved} lies outside {boundary}; nothing was written or removed there")
    return resolved


RUN_FOLDER_NAME = re.compile(r"^(?P<preset>.+?)-(?P<lang>[^-]+?)(?:-seed(?P<seed>\d+))?(?:-max(?P<max_steps>\d+))?$")


def run_folder_name(preset: str, lang: str, seed: int = 0, max_steps: int | None = None) -> str:
    """``<preset>-<lang>`` for seed 0, ``<preset>-<lang>-seed<N>`` otherwise, and ``-max<N>`` for a trial capped at
    N pretraining steps, so a cheap trial never lands in (and never empties) the folder of a full run."""
    return (f"{preset}-{lang}" + ("" if seed == 0 else f"-seed{seed}")
            + ("" if max_steps is None else f"-max{max_steps}"))


def split_run_folder_name(name: str) -> tuple[str | None, str | None, int | None]:
    """'demo-en' -> ('demo', 'en', None); 'demo-en-seed2' -> ('demo', 'en', 2); another name -> Nones."""
    if not (match := RUN_FOLDER_NAME.match(name)):
        return None, None, None
    return match["preset"], match["lang"], int(match["seed"]) if match["seed"] else None


@dataclass(frozen=True)
class RunsFolder:
    """The main job's ``--out`` folder (default ``runs/``): one run folder per preset, language and seed."""

    folder: Path
    logs = _at("logs", "One log per run when runs are spread over GPUs, each in its own process.")

    def run(self, preset: str, lang: str, seed: int = 0, max_steps: int | None = None) -> RunLayout:
        """The run folder of one preset, language, seed and step cap, checked to lie inside this folder."""
        folder = self.folder / run_folder_name(preset, check_lang(lang), seed, max_steps)
        return RunLayout(inside(folder, self.folder, f"the run folder of --lang {lang!r}"))

    def figures_notebooks(self, name: str) -> Path:
        """Where notebook 06's executed copy goes, e.g. ``<out>/demo-figures/``."""
        return self.folder / f"{name}-figures"

    def log(self, run_name: str) -> Path:
        return self.logs / f"{run_name}.log"


@dataclass(frozen=True)
class VariantFiles:
    """``<ablations>/<run>/<variant>/``: one ablation's aligned vectors and the BERT_FT trained on them."""

    folder: Path
    static = _at("static", kind=StaticFiles)
    model = _at("bert_ft", kind=ModelFiles)


@dataclass(frozen=True)
class AblationLayout:
    """An ablations folder: a folder per ablated run holding one :class:`VariantFiles` per variant."""

    folder: Path
    vectors_cache = _at("vectors", "fastText vectors retrained for the variants, kept so that a rerun does not "
                        "train them again.")

    def variant(self, run_name: str, variant: str) -> VariantFiles:
        return VariantFiles(self.folder / run_name / variant)


@dataclass(frozen=True)
class ShardFiles:
    """``<data>/train_shards/``: memory-mapped training shards and the manifest that makes them resumable."""

    folder: Path
    manifest = _at("manifest.json")

    def shard(self, index: int, kind: str) -> Path:
        """Shard ``index``'s ``kind`` of array, 'ids' or 'lengths' (the names the manifest lists it under)."""
        return self.folder / f"shard_{index:05d}_{kind}.npy"


# A model's metrics.csv: one row per evaluation.
METRIC_COLUMNS = ("step", "train_loss", "eval_loss", "eval_accuracy", "lr", "elapsed_s")


def read_metrics(path: str | Path) -> list[dict[str, float]]:
    """metrics.csv as a list of rows (numbers as float, NaN where empty, step as int), without pandas."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no metrics file at {path}; train the model first (pipeline.train.training.train)")
    with open(path, newline="") as handle:
        rows = [{k: float(v or "nan") for k, v in row.items()} for row in csv.DictReader(handle)]
    return [{**row, "step": int(row["step"])} for row in rows]


def display_path(path: str | Path) -> str:
    """A path inside the repository as ``runs/demo-en``, so committed tables name no one's home folder."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(REPO_ROOT)) if resolved.is_relative_to(REPO_ROOT) else str(Path(path))


RECORD_MARK = "record.json"  # in every record's folder: what it is, so no job, train_cli or notebook runs in it


def record_holding(path: str | Path) -> Path | None:
    """The record that ``path`` is or lies in (a folder holding RECORD_MARK), else None."""
    resolved = Path(path).resolve()
    return next((folder for folder in (resolved, *resolved.parents) if (folder / RECORD_MARK).is_file()), None)
