"""Length-bucketed batches: deterministic, one pass per epoch, random batch order, little padding."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers.batching import BucketedBatchSampler, cut_to_longest, padding_share
from helpers.pretrain import BatchSampler


@pytest.fixture(scope="module")
def real_lengths() -> np.ndarray:
    """Lengths of the paper's truncated sequences on 2,000 embedded English articles (small tokenizer)."""
    from helpers.tokenizer import train_wordpiece
    from pipeline.corpora.data import EMBEDDED, load_corpus
    from pipeline.train.shards import tokenize_corpus, truncate_sequences

    corpus = load_corpus(EMBEDDED, "en", "train", max_docs=2_000)
    tokenizer = train_wordpiece(corpus.texts, 3_000, show_progress=False)
    _, lengths = truncate_sequences(tokenize_corpus(tokenizer, corpus.texts), 128, tokenizer.cls_token_id,
                                    tokenizer.sep_token_id, tokenizer.pad_token_id)
    return lengths


def synthetic_lengths(n: int = 1_000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.where(rng.random(n) < 0.25, 128, rng.integers(8, 128, n)).astype(np.int16)


def epoch(sampler: BucketedBatchSampler, e: int) -> np.ndarray:
    return np.stack([sampler.indices(e * sampler.per_epoch + k) for k in range(sampler.per_epoch)])


def test_the_same_lengths_batch_size_and_seed_give_the_same_batches_in_any_call_order() -> None:
    lengths = synthetic_lengths()
    a, b = BucketedBatchSampler(lengths, 32, seed=3), BucketedBatchSampler(lengths.copy(), 32, seed=3)
    steps = [0, 95, 7, 31, 64, 1]  # across three epochs, out of order
    for s in steps:
        assert np.array_equal(a.indices(s), b.indices(s))
    fresh = BucketedBatchSampler(lengths, 32, seed=3)
    assert np.array_equal(fresh.indices(64), a.indices(64))


def test_another_seed_gives_other_batches() -> None:
    lengths = synthetic_lengths()
    a, b = BucketedBatchSampler(lengths, 32, seed=0), BucketedBatchSampler(lengths, 32, seed=1)
    assert not np.array_equal(epoch(a, 0), epoch(b, 0))


def test_every_sequence_is_seen_once_per_epoch_except_the_remainder() -> None:
    lengths = synthetic_lengths(1_000)
    sampler = BucketedBatchSampler(lengths, 32, seed=0)
    for e in range(3):
        seen = epoch(sampler, e).ravel()
        assert len(np.unique(seen)) == len(seen) == sampler.per_epoch * 32
        assert seen.min() >= 0 and seen.max() < len(lengths)
        assert len(lengths) - len(seen) == len(lengths) % 32
    assert not np.array_equal(epoch(sampler, 0), epoch(sampler, 1))


def test_batches_come_in_random_order_not_sorted_by_length() -> None:
    lengths = synthetic_lengths(10_000)
    sampler = BucketedBatchSampler(lengths, 32, seed=0)
    widths = lengths[epoch(sampler, 0)].max(axis=1).astype(float)
    # Spearman's rho of position against width; for a random order its sd is 1/sqrt(m - 1).
    ranks = np.argsort(np.argsort(widths, kind="stable")).astype(float)
    rho = np.corrcoef(np.arange(len(ranks)), ranks)[0, 1]
    assert abs(rho) < 5 / math.sqrt(len(ranks) - 1)


def test_bucketing_cuts_the_padding_of_real_data_below_a_fifth_of_random_batches(real_lengths: np.ndarray) -> None:
    random = BatchSampler(len(real_lengths), 32, seed=0)
    random_batches = np.stack([random.indices(s) for s in range(random.per_epoch)])
    bucketed = epoch(BucketedBatchSampler(real_lengths, 32, seed=0), 0)
    random_share = padding_share(real_lengths, random_batches)
    bucketed_share = padding_share(real_lengths, bucketed)
    assert random_share > 0.10  # the truncated corpus is far from uniform in length
    assert bucketed_share < 0.03
    assert bucketed_share < random_share / 5


def test_the_interface_matches_the_random_batch_sampler() -> None:
    lengths = synthetic_lengths(500)
    ours, theirs = BucketedBatchSampler(lengths, 16, seed=2), BatchSampler(len(lengths), 16, seed=2)
    assert (ours.n, ours.batch_size, ours.seed, ours.per_epoch) == (theirs.n, theirs.batch_size, theirs.seed,
                                                                     theirs.per_epoch)
    batch = ours.indices(40)
    assert isinstance(batch, np.ndarray) and batch.shape == theirs.indices(40).shape
    assert np.issubdtype(batch.dtype, np.integer)
    assert set(theirs.state(40)) <= set(ours.state(40))
    assert {k: ours.state(40)[k] for k in theirs.state(40)} == theirs.state(40)
    with pytest.raises(ValueError, match="smaller batch"):
        BucketedBatchSampler(lengths[:8], 16, seed=0)


def test_a_batch_is_cut_to_its_longest_row() -> None:
    ids = np.arange(3 * 10).reshape(3, 10)
    assert cut_to_longest(ids, np.array([4, 7, 2])).shape == (3, 7)
