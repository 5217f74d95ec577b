"""Length-bucketed batches: sequences of similar length share a batch, so little of it is padding.

The paper's format puts one document per sequence, ``[CLS] doc[:126] [SEP]``, padded to 128. On
the embedded English data the mean length is 92, and a random batch of 32 almost always holds a
full 128-token row, so about 28 % of every batch is padding the model still computes. Grouping
sequences of similar length and cutting each batch to its longest row removes most of it.

What changes and what does not:

* every sequence is still seen once per epoch (the ``n mod batch_size`` left over are skipped, a
  different random few each epoch, as :class:`helpers.pretrain.BatchSampler` does);
* the order of the batches is random, so the model does not see short documents first;
* a batch is no longer a uniform random sample: it holds documents of similar length, and the
  step's loss is a mean over fewer, or more, masked tokens than a random batch's. That is why
  bucketing is an option and ``random`` stays the paper's choice;
* like ``BatchSampler``, the batch of step ``s`` depends only on (lengths, batch size, seed, s),
  so BERT_TINY and BERT_FT see identical batches in identical order, and a resumed run continues
  exactly.
"""

from __future__ import annotations

import numpy as np

# Sequences are sorted by length within pools of this many batches (BUCKET_POOL * batch_size
# sequences). A bigger pool pads less but makes each epoch's batches more alike; 32 batches of 32
# leave about 2 % padding on the embedded English corpus against 28 % for random batches
# (tests/test_batching.py measures it).
BUCKET_POOL = 32


class BucketedBatchSampler:
    """Shuffled epochs of length-bucketed batches; the batch of step s depends only on (lengths, batch_size, seed, s).

    Each epoch: a seeded permutation drops ``n mod batch_size`` sequences, the rest is cut into
    pools of ``pool`` batches, each pool is sorted by length (ties in random order) and cut into
    batches, and the batches of all pools are shuffled. Slice a batch to its longest row with
    :func:`cut_to_longest` to save the padding's compute.
    """

    def __init__(self, lengths: np.ndarray, batch_size: int, seed: int, pool: int = BUCKET_POOL) -> None:
        lengths = np.asarray(lengths)
        if lengths.ndim != 1:
            raise ValueError(f"lengths must be one length per sequence (1-D), got shape {lengths.shape}")
        n = len(lengths)
        if n < batch_size:
            raise ValueError(f"only {n} training sequences for a batch of {batch_size}; use more documents "
                             "or a smaller batch")
        if pool < 1:
            raise ValueError(f"pool must be a positive number of batches, got {pool}")
        self.lengths = lengths.astype(np.int64)
        self.n, self.batch_size, self.seed, self.pool = n, batch_size, seed, pool
        self.per_epoch = n // batch_size
        self._cached: tuple[int, np.ndarray] | None = None

    def epoch_batches(self, epoch: int) -> np.ndarray:
        """All batches of one epoch as a (per_epoch, batch_size) index array, in the order they are used."""
        if self._cached is not None and self._cached[0] == epoch:
            return self._cached[1]
        rng = np.random.default_rng([self.seed, epoch])
        order = rng.permutation(self.n)[:self.per_epoch * self.batch_size]
        span = self.pool * self.batch_size
        pools = [order[start:start + span] for start in range(0, len(order), span)]
        # A stable sort keeps the permutation's random order among equal lengths.
        sorted_pools = [p[np.argsort(self.lengths[p], kind="stable")] for p in pools]
        batches = np.concatenate(sorted_pools).reshape(self.per_epoch, self.batch_size)
        batches = batches[rng.permutation(self.per_epoch)]
        self._cached = (epoch, batches)
        return batches

    def indices(self, step: int) -> np.ndarray:
        epoch, k = divmod(step, self.per_epoch)
        return self.epoch_batches(epoch)[k]

    def state(self, step: int) -> dict[str, int | str]:
        return {"seed": self.seed, "step": step, "epoch": step // self.per_epoch, "batching": "bucketed",
                "pool": self.pool}


def cut_to_longest(ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The batch without the padding columns every row has: positions past the longest row carry no token."""
    return ids[:, :int(np.max(lengths))]


def padding_share(lengths: np.ndarray, batches: np.ndarray, width: int | None = None) -> float:
    """Share of computed positions that are padding, over ``batches`` (rows of indices into ``lengths``).

    ``width=None``: each batch is cut to its longest row; an int: every batch padded to ``width``.
    """
    picked = np.asarray(lengths, dtype=np.int64)[batches]
    widths = picked.max(axis=1) if width is None else np.full(len(batches), width)
    return float(1.0 - picked.sum() / (widths * batches.shape[1]).sum())
