"""The unigram baseline of a run (helpers.baselines) from its prepared data, and the copy a record keeps.

A record keeps no prepared data (too large), so the baseline and the **token facts** (per vocabulary id its
training-text count, ``##`` piece, punctuation, static vector; the ``[MASK]`` id) are saved beside its metrics
while the data are there, for the tables regenerated from the record."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np

from helpers.baselines import Baseline, unigram_baseline, unigram_counts
from pipeline.store.layout import PretrainFiles


def _prepared(data_dir: str | Path) -> tuple[Any, dict, list[int]]:
    """The prepared data at ``data_dir`` (or its parent), the tokenizer.json saved beside it, and its special ids."""
    from pipeline.train.prepare import (  # here: reading saved files (notebook 06) needs no torch
        load_data,
        prepared_files,
    )

    data = load_data(data_dir)
    path = prepared_files(data.directory).tokenizer / "tokenizer.json"
    if not path.is_file():
        raise FileNotFoundError(f"no {path}; rerun pipeline.train.prepare.prepare_data (notebook 04) to save the "
                                "tokenizer")
    tokenizer = json.loads(path.read_text(encoding="utf-8"))
    return data, tokenizer, sorted(int(t["id"]) for t in tokenizer.get("added_tokens", []) if t.get("special"))


def compute_baseline(data_dir: str | Path, eval_sequences: int | None = None) -> Baseline:
    """Unigram and most-frequent-token baselines from the prepared data at ``data_dir`` (or its parent)."""
    data, _, special = _prepared(data_dir)
    return unigram_baseline(data.train_ids, data.train_lengths, data.eval_labels, int(data.meta["vocab_size"]),
                            special, eval_sequences)


def save_baseline(baseline: Baseline, pretrain_dir: str | Path, eval_sequences: int | None) -> Path:
    path = PretrainFiles(Path(pretrain_dir)).baseline
    path.write_text(json.dumps({**baseline.as_dict(), "eval_sequences": eval_sequences}, indent=2) + "\n")
    return path


def load_baseline(pretrain_dir: str | Path, eval_sequences: int | None = None) -> Baseline:
    """From the prepared data when they are there, else from a record's saved file; a file computed on another
    number of evaluation sequences is refused, not silently used."""
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


def compute_token_facts(pretrain_dir: str | Path, found_path: str | Path | None) -> dict[str, np.ndarray]:
    """Per vocabulary id what the analyses of issue 22 need; ``found_path``: the static step's found.npy."""
    data, tokenizer, special = _prepared(pretrain_dir)
    vocab: dict[str, int] = {**(tokenizer.get("model") or {}).get("vocab", {}),
                             **{t["content"]: int(t["id"]) for t in tokenizer.get("added_tokens", [])}}
    size = int(data.meta["vocab_size"])
    tokens = [""] * size
    for token, index in vocab.items():
        tokens[index] = token
    known = found_path is not None and Path(found_path).is_file()
    found = np.load(found_path) if known else np.zeros(size, bool)
    punctuation = [bool(t) and all(unicodedata.category(ch).startswith("P") for ch in t) for t in tokens]
    return {"train_count": unigram_counts(data.train_ids, data.train_lengths, size, special).astype(np.int64),
            "special": np.asarray(special, dtype=np.int64), "mask_id": np.asarray(vocab["[MASK]"], dtype=np.int64),
            "is_piece": np.array([t.startswith("##") for t in tokens]), "is_punctuation": np.array(punctuation),
            "has_vector": found.astype(bool), "has_vector_known": np.asarray(known)}


def save_token_facts(facts: dict[str, np.ndarray], pretrain_dir: str | Path) -> Path:
    path = PretrainFiles(Path(pretrain_dir)).token_facts
    np.savez_compressed(path, **facts)
    return path


def load_token_facts(pretrain_dir: str | Path, found_path: str | Path | None) -> dict[str, np.ndarray]:
    saved = PretrainFiles(Path(pretrain_dir)).token_facts
    try:
        return compute_token_facts(pretrain_dir, found_path)
    except FileNotFoundError:
        if not saved.is_file():
            raise
    with np.load(saved) as data:
        return {key: data[key] for key in data.files}
