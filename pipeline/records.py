"""Run records: the few small files of a run folder that notebook 06 needs, kept so figures regenerate.

A run folder holds hundreds of megabytes (prepared data, checkpoints, the aligned embedding matrix)
but its figures and tables read only what is listed in :data:`RECORD_FILES`, plus the unigram
baseline, which is computed from the prepared data and therefore saved as ``pretrain/baseline.json``
in the record. :func:`save_record` copies them into a folder of the same name; notebook 06 (and
``pipeline.results.load_run``) reads a record exactly as it reads the run folder it came from.
Each step's fingerprint (from its ``.step.json``, without the parameters, which name local folders)
goes along, so the figures step knows when a record changed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Sequence

from helpers.baselines import compute_baseline, save_baseline
from pipeline.job import STAMP_NAME
from pipeline.notebook import STEP_FOLDERS

MODELS = ("bert_tiny", "bert_ft")
RECORD_FILES: tuple[str, ...] = (
    "static/manifest.json",
    "pretrain/comparison.json",
    *(f"pretrain/{m}/{name}" for m in MODELS for name in ("metrics.csv", "run.json", "eval_positions.npz")),
    "probe/results.csv",
    "probe/paired_differences.csv",
)


def eval_sequences_of(run_dir: Path) -> int | None:
    """The number of evaluation sequences BERT_TINY was scored on (run.json), which the baseline must match."""
    info = json.loads((run_dir / "pretrain" / "bert_tiny" / "run.json").read_text(encoding="utf-8"))
    return (info.get("train_config") or {}).get("eval_sequences")


def check_finished(run_dir: Path) -> None:
    missing = [name for name in RECORD_FILES if not (run_dir / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{run_dir} is not a finished run (missing {', '.join(missing)}); "
                                "run notebooks 01-05 for it first (python -m pipeline.job)")


def save_record(run_dir: str | Path, records_dir: str | Path) -> Path:
    """Copy the record files of one finished run into ``records_dir/<run folder name>`` and save its baseline."""
    run_dir = Path(run_dir)
    check_finished(run_dir)
    dest = Path(records_dir) / run_dir.name
    for name in RECORD_FILES:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run_dir / name, target)
    for folder in STEP_FOLDERS.values():
        stamp = run_dir / folder / STAMP_NAME
        if stamp.is_file():
            key = json.loads(stamp.read_text(encoding="utf-8")).get("fingerprint")
            (dest / folder).mkdir(parents=True, exist_ok=True)
            (dest / folder / STAMP_NAME).write_text(json.dumps({"fingerprint": key}) + "\n")
    eval_sequences = eval_sequences_of(run_dir)
    save_baseline(compute_baseline(run_dir / "pretrain", eval_sequences), dest / "pretrain", eval_sequences)
    return dest


def save_records(run_dirs: Sequence[str | Path], records_dir: str | Path) -> list[Path]:
    """:func:`save_record` for every run folder; all are checked before anything is written."""
    run_dirs = [Path(d) for d in run_dirs]
    for run_dir in run_dirs:
        check_finished(run_dir)
    return [save_record(run_dir, records_dir) for run_dir in run_dirs]
