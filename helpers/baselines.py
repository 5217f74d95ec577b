"""What a model that ignores context scores on the same evaluation positions: the floor our runs must clear.

A **unigram** model predicts every masked token from the token frequencies of the training text,
whatever the sentence says. Its loss on the fixed evaluation positions is the "plateau" a
pretraining run sits on before it learns to use context; its top prediction is always the most
frequent token, so its accuracy is also the **most-frequent-token** accuracy. (The most-frequent-
token model as a distribution puts all mass on one token and has infinite loss, so only the
unigram's loss is reported.)

Counts come from the prepared training sequences (``pretrain/data/``, see
:func:`helpers.pretrain.load_data`): real positions only, special tokens never counted (they are
never masked, so never a label). Add-one (Laplace) smoothing gives every non-special id a count of
at least one, so a label never seen in training costs a finite ``log(N + K)`` nats rather than
infinity. Scored positions are the first ``eval_sequences`` sequences of the evaluation set, the
ones :func:`helpers.pretrain.evaluate` scores.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from helpers.masking import IGNORE_INDEX
from helpers.pretrain import load_data, resolve_data_dir

SMOOTHING = 1.0  # add-one (Laplace)


@dataclass(frozen=True)
class Baseline:
    """Context-free baselines on one run's evaluation positions (losses in nats, per masked token)."""

    unigram_loss: float  # mean -log p(label) under the smoothed training unigram
    unigram_train_loss: float  # the same model's cross-entropy on its own training tokens
    unigram_accuracy: float  # its top prediction is the most frequent token, so = most_frequent_accuracy
    most_frequent_accuracy: float
    most_frequent_id: int
    n_positions: int  # masked evaluation positions scored
    n_train_tokens: int

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def special_ids_of(data_dir: str | Path) -> list[int]:
    """The special ids of the tokenizer saved beside the prepared data (from its tokenizer.json)."""
    path = resolve_data_dir(data_dir) / "tokenizer" / "tokenizer.json"
    if not path.is_file():
        raise FileNotFoundError(f"no {path}; rerun helpers.pretrain.prepare_data (notebook 04) to save the tokenizer")
    added = json.loads(path.read_text(encoding="utf-8")).get("added_tokens", [])
    return sorted(int(t["id"]) for t in added if t.get("special"))


def unigram_counts(ids: np.ndarray, lengths: np.ndarray, vocab_size: int, special: list[int],
                   rows: int = 1 << 16) -> np.ndarray:
    """How often each id occurs in the real (non-padding) positions of ``ids``, specials set to zero.

    Counted a block of rows at a time, so memory-mapped shards of the paper's size are never loaded whole.
    """
    counts = np.zeros(vocab_size, dtype=np.float64)
    for start in range(0, len(ids), rows):
        block = np.asarray(ids[start:start + rows])
        width = np.asarray(lengths[start:start + rows]).astype(np.int64)
        real = np.arange(block.shape[1])[None, :] < width[:, None]
        counts += np.bincount(block[real].astype(np.int64), minlength=vocab_size)
    counts[special] = 0.0
    return counts


def unigram_log_probs(counts: np.ndarray, special: list[int], smoothing: float = SMOOTHING) -> np.ndarray:
    """log p(id) with add-``smoothing`` over the non-special ids; specials get -inf (never a label)."""
    smoothed = counts + smoothing
    smoothed[special] = 0.0
    with np.errstate(divide="ignore"):
        return np.log(smoothed) - math.log(smoothed.sum())


def score_labels(log_probs: np.ndarray, labels: np.ndarray) -> tuple[float, float, int]:
    """Mean loss and accuracy of the context-free prediction at every labelled position, and their count."""
    targets = labels[labels != IGNORE_INDEX].astype(np.int64)
    if targets.size == 0:
        raise ValueError("the evaluation labels hold no masked position; prepare more evaluation documents")
    loss = float(-log_probs[targets].mean())
    accuracy = float((targets == int(np.argmax(log_probs))).mean())
    return loss, accuracy, int(targets.size)


def compute_baseline(data_dir: str | Path, eval_sequences: int | None = None) -> Baseline:
    """Unigram and most-frequent-token baselines from the prepared data at ``data_dir`` (or its parent)."""
    data = load_data(data_dir)
    special = special_ids_of(data.directory)
    vocab_size = int(data.meta["vocab_size"])
    counts = unigram_counts(data.train_ids, data.train_lengths, vocab_size, special)
    log_probs = unigram_log_probs(counts, special)
    n = len(data.eval_labels) if eval_sequences is None else min(int(eval_sequences), len(data.eval_labels))
    loss, accuracy, n_positions = score_labels(log_probs, data.eval_labels[:n])
    nonzero = counts > 0
    train_loss = float(-(counts[nonzero] * log_probs[nonzero]).sum() / counts.sum())
    return Baseline(unigram_loss=loss, unigram_train_loss=train_loss, unigram_accuracy=accuracy,
                    most_frequent_accuracy=accuracy, most_frequent_id=int(np.argmax(log_probs)),
                    n_positions=n_positions, n_train_tokens=int(counts.sum()))


BASELINE_FILE = "baseline.json"  # in pretrain/ of a run record, where the prepared data are not kept


def save_baseline(baseline: Baseline, pretrain_dir: str | Path, eval_sequences: int | None) -> Path:
    """Write the baseline beside a run's metrics, so its tables regenerate without the prepared data."""
    path = Path(pretrain_dir) / BASELINE_FILE
    path.write_text(json.dumps({**baseline.as_dict(), "eval_sequences": eval_sequences}, indent=2) + "\n")
    return path


def load_baseline(pretrain_dir: str | Path, eval_sequences: int | None = None) -> Baseline:
    """The baseline from the prepared data when they are there, else from a saved ``baseline.json``.

    A saved file computed on a different number of evaluation sequences is refused, not silently used.
    """
    pretrain_dir = Path(pretrain_dir)
    saved = pretrain_dir / BASELINE_FILE
    try:
        return compute_baseline(pretrain_dir, eval_sequences)
    except FileNotFoundError:
        if not saved.is_file():
            raise
    values = json.loads(saved.read_text(encoding="utf-8"))
    if values.pop("eval_sequences", None) != eval_sequences:
        raise ValueError(f"{saved} was computed for another number of evaluation sequences than {eval_sequences}")
    return Baseline(**values)
