"""What a model that ignores context scores on the same evaluation positions: the floor our runs must clear.

A **unigram** model predicts every masked token from the token frequencies of the training text,
whatever the sentence says. Its loss on the fixed evaluation positions is the "plateau" a
pretraining run sits on before it learns to use context; its top prediction is always the most
frequent token, so its accuracy is also the **most-frequent-token** accuracy. (The most-frequent-
token model as a distribution puts all mass on one token and has infinite loss, so only the
unigram's loss is reported.)

Counts come from the prepared training sequences (arrays in: pipeline.store.baseline_files reads them from
a run's ``pretrain/data/``): real positions only, special tokens never counted (they are never masked,
so never a label). Add-one (Laplace) smoothing gives every non-special id a count of at least one, so
a label never seen in training costs a finite ``log(N + K)`` nats rather than infinity. Scored
positions are the first ``eval_sequences`` sequences of the evaluation set, the ones
:func:`helpers.pretrain.evaluate` scores.

The unigram ignores what the model sees at a scored position. Under the 80/10/10 rule, 10 % of them
show their own token, so a rule that **copies the visible token** (and guesses the most frequent token
at ``[MASK]``) is right there without any context: :func:`copy_aware_scores` is that floor. A model is
judged at the ``[MASK]`` positions, where only context can help (:func:`position_kinds`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

SMOOTHING = 1.0  # add-one (Laplace)
POSITION_KINDS = ("mask", "random", "unchanged")  # what the model saw at a scored position
# Of the scored positions that show a token (not [MASK]), the share showing their own token: 0.1 / (0.1 + 0.1).
KEEP_SHARE_OF_VISIBLE = (1 - 0.8 - 0.1) / (1 - 0.8)


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
    from helpers.masking import IGNORE_INDEX  # here: masking loads torch, which reading baselines does not need

    targets = labels[labels != IGNORE_INDEX].astype(np.int64)
    if targets.size == 0:
        raise ValueError("the evaluation labels hold no masked position; prepare more evaluation documents")
    loss = float(-log_probs[targets].mean())
    accuracy = float((targets == int(np.argmax(log_probs))).mean())
    return loss, accuracy, int(targets.size)


def unigram_baseline(train_ids: Any, train_lengths: Any, eval_labels: np.ndarray, vocab_size: int,
                     special: list[int], eval_sequences: int | None = None) -> Baseline:
    """Unigram and most-frequent-token baselines: counted on the training rows, scored on the evaluation labels."""
    counts = unigram_counts(train_ids, train_lengths, vocab_size, special)
    log_probs = unigram_log_probs(counts, special)
    n = len(eval_labels) if eval_sequences is None else min(int(eval_sequences), len(eval_labels))
    loss, accuracy, n_positions = score_labels(log_probs, eval_labels[:n])
    nonzero = counts > 0
    train_loss = float(-(counts[nonzero] * log_probs[nonzero]).sum() / counts.sum())
    return Baseline(unigram_loss=loss, unigram_train_loss=train_loss, unigram_accuracy=accuracy,
                    most_frequent_accuracy=accuracy, most_frequent_id=int(np.argmax(log_probs)),
                    n_positions=n_positions, n_train_tokens=int(counts.sum()))


def position_kinds(visible: np.ndarray, label: np.ndarray, mask_id: int) -> np.ndarray:
    """Index into POSITION_KINDS per scored position: 0 saw [MASK], 1 a random token, 2 its own token.

    A random draw that happened to pick the token itself counts as unchanged: the model cannot tell.
    """
    return np.where(visible == mask_id, 0, np.where(visible == label, 2, 1))


def copy_aware_scores(label: np.ndarray, visible: np.ndarray, mask_id: int, log_probs: np.ndarray,
                      keep_share: float = KEEP_SHARE_OF_VISIBLE) -> tuple[np.ndarray, np.ndarray]:
    """Per-position loss and correctness of the context-free rule "copy the visible token, else unigram".

    At ``[MASK]`` it is the unigram. At a visible token v it puts ``keep_share`` on v (how often a visible
    scored token is its own) and the rest on the unigram, so its loss is finite whichever way v turns out.
    """
    label, visible = label.astype(np.int64), visible.astype(np.int64)
    p_label = np.exp(log_probs[label])
    masked = visible == mask_id
    p = np.where(masked, p_label, keep_share * (visible == label) + (1 - keep_share) * p_label)
    guess = np.where(masked, int(np.argmax(log_probs)), visible)
    return -np.log(p), guess == label
