"""The unigram and most-frequent-token baselines on a prepared-data folder small enough to count by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from helpers import baselines
from pipeline.store import baseline_files

# ids 0-4 are [PAD] [UNK] [CLS] [SEP] [MASK]; 5-9 are words. [UNK] (1) sits in a real position and must not count.
TRAIN_IDS = [[2, 5, 5, 6, 1, 3], [2, 5, 7, 3, 0, 0]]
TRAIN_LENGTHS = [6, 4]
EVAL_LABELS = [[-100, 5, -100, 8, -100, -100], [-100, 6, -100, -100, -100, -100]]


def write_prepared_data(pretrain_dir: Path, train_ids=TRAIN_IDS, train_lengths=TRAIN_LENGTHS,
                        eval_labels=EVAL_LABELS, vocab_size: int = 10) -> Path:
    """The files pipeline.train.prepare.load_data reads, with a tokenizer.json that names the five specials."""
    data = pretrain_dir / "data"
    (data / "tokenizer").mkdir(parents=True)
    labels = np.asarray(eval_labels, dtype=np.int32)
    np.save(data / "train_ids.npy", np.asarray(train_ids, dtype=np.uint16))
    np.save(data / "train_lengths.npy", np.asarray(train_lengths, dtype=np.int16))
    np.save(data / "eval_masked_ids.npy", np.where(labels == -100, 5, 4).astype(np.uint16))
    np.save(data / "eval_lengths.npy", np.full(len(labels), labels.shape[1], dtype=np.int16))
    np.save(data / "eval_labels.npy", labels)
    (data / "meta.json").write_text(json.dumps({"vocab_size": vocab_size, "seq_len": labels.shape[1]}))
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    added = [{"id": i, "content": t, "special": True} for i, t in enumerate(specials)]
    (data / "tokenizer" / "tokenizer.json").write_text(json.dumps({"added_tokens": added}))
    return data


def test_add_one_unigram_scores_the_labels_as_counted_by_hand(tmp_path: Path) -> None:
    write_prepared_data(tmp_path)
    base = baseline_files.compute_baseline(tmp_path)
    # words counted: 5 x3, 6 x1, 7 x1 (N = 5); add one to each of the 5 word ids: 4, 2, 2, 1, 1 of 10
    p = {5: 0.4, 6: 0.2, 7: 0.2, 8: 0.1, 9: 0.1}
    assert base.unigram_loss == pytest.approx(-(math.log(p[5]) + math.log(p[8]) + math.log(p[6])) / 3)
    assert base.unigram_accuracy == pytest.approx(1 / 3) and base.most_frequent_accuracy == base.unigram_accuracy
    assert base.most_frequent_id == 5 and base.n_positions == 3 and base.n_train_tokens == 5
    assert base.unigram_train_loss == pytest.approx(-(3 * math.log(0.4) + 2 * math.log(0.2)) / 5)


def test_the_baseline_is_computed_from_arrays_alone() -> None:
    """helpers.baselines needs no files: the arrays in memory give the numbers the prepared folder gives."""
    base = baselines.unigram_baseline(np.asarray(TRAIN_IDS, dtype=np.uint16), np.asarray(TRAIN_LENGTHS),
                                      np.asarray(EVAL_LABELS), 10, [0, 1, 2, 3, 4])
    assert base.most_frequent_id == 5 and base.n_positions == 3 and base.n_train_tokens == 5
    assert base.unigram_accuracy == pytest.approx(1 / 3)


def test_only_the_evaluated_sequences_are_scored(tmp_path: Path) -> None:
    write_prepared_data(tmp_path)
    base = baseline_files.compute_baseline(tmp_path, eval_sequences=1)
    assert base.n_positions == 2
    assert base.unigram_loss == pytest.approx(-(math.log(0.4) + math.log(0.1)) / 2)
    assert base.unigram_accuracy == pytest.approx(0.5)


def test_special_tokens_are_never_counted_nor_predicted() -> None:
    counts = baselines.unigram_counts(np.asarray(TRAIN_IDS), np.asarray(TRAIN_LENGTHS), 10, [0, 1, 2, 3, 4])
    assert counts[:5].sum() == 0 and counts[5] == 3
    log_probs = baselines.unigram_log_probs(counts, [0, 1, 2, 3, 4])
    assert np.isneginf(log_probs[:5]).all()
    assert np.exp(log_probs[5:]).sum() == pytest.approx(1.0)


def test_a_word_never_seen_in_training_costs_a_finite_loss() -> None:
    counts = np.zeros(10)
    counts[5] = 10
    log_probs = baselines.unigram_log_probs(counts, [0, 1, 2, 3, 4])
    assert math.isfinite(log_probs[9]) and log_probs[9] == pytest.approx(math.log(1 / 15))


def test_missing_prepared_data_names_what_to_run(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="prepare_data"):
        baseline_files.compute_baseline(tmp_path)


def test_no_masked_position_is_a_clear_error(tmp_path: Path) -> None:
    write_prepared_data(tmp_path, eval_labels=[[-100] * 6])
    with pytest.raises(ValueError, match="no masked position"):
        baseline_files.compute_baseline(tmp_path)


def test_a_saved_baseline_stands_in_for_the_prepared_data(tmp_path: Path) -> None:
    write_prepared_data(tmp_path)
    computed = baseline_files.compute_baseline(tmp_path, eval_sequences=1)
    record = tmp_path / "record"
    record.mkdir()
    baseline_files.save_baseline(computed, record, eval_sequences=1)
    assert baseline_files.load_baseline(record, eval_sequences=1) == computed
    assert baseline_files.load_baseline(tmp_path, eval_sequences=1) == computed  # the data win when present


def test_a_saved_baseline_for_other_evaluation_sequences_is_refused(tmp_path: Path) -> None:
    write_prepared_data(tmp_path)
    record = tmp_path / "record"
    record.mkdir()
    baseline_files.save_baseline(baseline_files.compute_baseline(tmp_path), record, eval_sequences=None)
    with pytest.raises(ValueError, match="another number of evaluation sequences"):
        baseline_files.load_baseline(record, eval_sequences=1)


def test_no_data_and_no_saved_baseline_names_what_to_run(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="prepare_data"):
        baseline_files.load_baseline(tmp_path)


# ------------------------------------------------------------- the copy-aware floor and position kinds


def test_position_kinds_tell_mask_random_and_unchanged_apart():
    from helpers.baselines import POSITION_KINDS, position_kinds

    kinds = position_kinds(np.array([4, 7, 9, 4]), np.array([5, 7, 8, 6]), mask_id=4)
    assert [POSITION_KINDS[k] for k in kinds] == ["mask", "unchanged", "random", "mask"]


def test_copy_aware_rule_copies_a_visible_token_and_guesses_the_most_frequent_at_mask():
    from helpers.baselines import copy_aware_scores

    log_probs = np.log(np.array([0.0, 0.5, 0.3, 0.2]) + 1e-300)
    label, visible = np.array([2, 3, 3]), np.array([0, 3, 2])  # 0 is [MASK]: mask, unchanged, random
    loss, correct = copy_aware_scores(label, visible, mask_id=0, log_probs=log_probs, keep_share=0.5)
    assert correct.tolist() == [False, True, False]  # [MASK] -> id 1, the most frequent; else the visible id
    assert loss == pytest.approx([-np.log(0.3), -np.log(0.5 + 0.5 * 0.2), -np.log(0.5 * 0.2)])


def test_the_keep_share_follows_from_the_80_10_10_rule():
    from helpers.baselines import KEEP_SHARE_OF_VISIBLE

    assert KEEP_SHARE_OF_VISIBLE == pytest.approx(0.1 / (0.1 + 0.1))
