"""The unigram baseline of a run (helpers.baselines) from its prepared data, and the copy a record keeps.

A run record keeps no prepared data (too large), so the baseline is computed while the data are there
and saved beside the run's metrics (pipeline.layout.PretrainFiles.baseline); tables regenerated from
the record read that file.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers.baselines import Baseline, unigram_baseline
from pipeline.layout import PretrainFiles
from pipeline.prepare import load_data, prepared_files


def special_ids_of(data_dir: str | Path) -> list[int]:
    """The special ids of the tokenizer saved beside the prepared data (from its tokenizer.json)."""
    path = prepared_files(data_dir).tokenizer / "tokenizer.json"
    if not path.is_file():
        raise FileNotFoundError(f"no {path}; rerun pipeline.prepare.prepare_data (notebook 04) to save the tokenizer")
    added = json.loads(path.read_text(encoding="utf-8")).get("added_tokens", [])
    return sorted(int(t["id"]) for t in added if t.get("special"))


def compute_baseline(data_dir: str | Path, eval_sequences: int | None = None) -> Baseline:
    """Unigram and most-frequent-token baselines from the prepared data at ``data_dir`` (or its parent)."""
    data = load_data(data_dir)
    return unigram_baseline(data.train_ids, data.train_lengths, data.eval_labels, int(data.meta["vocab_size"]),
                            special_ids_of(data.directory), eval_sequences)


def save_baseline(baseline: Baseline, pretrain_dir: str | Path, eval_sequences: int | None) -> Path:
    """Write the baseline beside a run's metrics, so its tables regenerate without the prepared data."""
    path = PretrainFiles(Path(pretrain_dir)).baseline
    path.write_text(json.dumps({**baseline.as_dict(), "eval_sequences": eval_sequences}, indent=2) + "\n")
    return path


def load_baseline(pretrain_dir: str | Path, eval_sequences: int | None = None) -> Baseline:
    """The baseline from the prepared data when they are there, else from a saved baseline file.

    A saved file computed on a different number of evaluation sequences is refused, not silently used.
    """
    saved = PretrainFiles(Path(pretrain_dir)).baseline
    try:
        return compute_baseline(pretrain_dir, eval_sequences)
    except FileNotFoundError:
        if not saved.is_file():
            raise
    values = json.loads(saved.read_text(encoding="utf-8"))
    if values.pop("eval_sequences", None) != eval_sequences:
        raise ValueError(f"{saved} was computed for another number of evaluation sequences than {eval_sequences}")
    return Baseline(**values)
