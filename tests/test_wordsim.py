"""pipeline.vectors.wordsim: the packaged benchmark files, Spearman with coverage, and the bootstrap interval."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from pipeline.vectors import wordsim


def test_both_benchmarks_load_from_the_installed_gensim_with_their_published_sizes() -> None:
    ws, sl = wordsim.load_pairs("wordsim353"), wordsim.load_pairs("simlex999")
    assert len(ws) == 353 and len(sl) == 999
    assert all(0 <= p.human <= 10 for p in ws + sl)
    assert wordsim.Pair("tiger", "cat", 7.35) in ws and wordsim.Pair("smart", "intelligent", 9.2) in sl


def test_an_unknown_benchmark_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="wordsim353, simlex999"):
        wordsim.load_pairs("men3000")


def test_cosines_that_follow_the_ratings_give_a_spearman_of_one() -> None:
    human = np.array([p.human for p in wordsim.load_pairs("wordsim353")])
    angles = (10 - human) / 10 * np.pi / 2  # a higher rating, a smaller angle, a larger cosine
    matrix = np.concatenate([np.tile([1.0, 0.0], (len(human), 1)), np.stack([np.cos(angles), np.sin(angles)], 1)])
    first, second = np.arange(len(human)), np.arange(len(human)) + len(human)
    sims = wordsim.cosines(matrix, first, second)
    np.testing.assert_allclose(sims, np.cos(angles), atol=1e-12)
    assert wordsim.spearman(human, sims) == pytest.approx(1.0, abs=1e-9)
    assert wordsim.spearman(human, -sims) == pytest.approx(-1.0, abs=1e-9)


def test_spearman_and_coverage_on_a_vocabulary_that_lacks_some_words() -> None:
    pairs = wordsim.load_pairs("simlex999")
    vocab = sorted({p.first for p in pairs} | {p.second for p in pairs})
    keep = vocab[: len(vocab) // 2]
    rng = np.random.default_rng(1)
    matrix = rng.normal(size=(len(keep), 16))
    res = wordsim.evaluate(keep, matrix, "simlex999", n_bootstrap=200, seed=0)
    kept = set(keep)
    expected_found = [p for p in pairs if p.first in kept and p.second in kept]
    assert res["found"] == len(expected_found) and res["pairs"] == 999
    assert res["coverage"] == pytest.approx(len(expected_found) / 999)
    index = {w: i for i, w in enumerate(keep)}
    cos = wordsim.cosines(matrix, np.array([index[p.first] for p in expected_found]),
                          np.array([index[p.second] for p in expected_found]))
    assert res["spearman"] == pytest.approx(spearmanr([p.human for p in expected_found], cos).statistic)
    assert res["ci_low"] <= res["spearman"] <= res["ci_high"]


def test_the_bootstrap_interval_has_the_width_the_sample_size_predicts() -> None:
    # Random vectors: Spearman near 0 with standard error about 1/sqrt(n - 1); the 95 % interval is
    # then about 2 x 1.96 / sqrt(n) wide. Allow a factor of 1.5 either way for the bootstrap's own noise.
    pairs = wordsim.load_pairs("simlex999")
    vocab = sorted({p.first for p in pairs} | {p.second for p in pairs})
    matrix = np.random.default_rng(2).normal(size=(len(vocab), 32))
    res = wordsim.evaluate(vocab, matrix, "simlex999", n_bootstrap=400, seed=0)
    width, predicted = res["ci_high"] - res["ci_low"], 2 * 1.96 / np.sqrt(res["found"])
    assert predicted / 1.5 < width < predicted * 1.5
    assert abs(res["spearman"]) < 4 / np.sqrt(res["found"])  # 4 standard errors
    again = wordsim.evaluate(vocab, matrix, "simlex999", n_bootstrap=400, seed=0)
    assert (again["ci_low"], again["ci_high"]) == (res["ci_low"], res["ci_high"])  # seeded


def test_a_benchmark_word_is_found_through_a_case_variant() -> None:
    index = wordsim.word_index(["The", "Paris", "paris", "Love"])
    assert wordsim.find(index, "Paris") == 1 and wordsim.find(index, "paris") == 2
    assert wordsim.find(index, "love") == 3 and wordsim.find(index, "LOVE") == 3
    assert wordsim.find(index, "hate") is None


def test_too_few_pairs_give_nan_not_an_error() -> None:
    res = wordsim.evaluate(["tiger", "cat"], np.eye(2), "wordsim353", n_bootstrap=10)
    assert res["found"] == 2 and np.isnan(res["spearman"])  # tiger-cat and tiger-tiger


def test_the_table_has_one_row_per_vectors_and_benchmark() -> None:
    pairs = wordsim.load_pairs("wordsim353")
    vocab = sorted({p.first for p in pairs} | {p.second for p in pairs})
    matrix = np.random.default_rng(0).normal(size=(len(vocab), 8))
    results = {"a": wordsim.word_similarity(vocab, matrix, n_bootstrap=20)}
    rows = wordsim.word_similarity_rows(results)
    assert [(r["vectors"], r["benchmark"]) for r in rows] == [("a", "WordSim-353"), ("a", "SimLex-999")]
    assert rows[0]["pairs found"] == "353 of 353"
