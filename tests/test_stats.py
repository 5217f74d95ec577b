"""The one bootstrap: the same interval as scipy's percentile bootstrap, coverage as the math says."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from helpers import stats


def bootstrap_mean(values: np.ndarray, draws: int, seed: int) -> tuple[float, float, float]:
    """The mean and its percentile interval, as the notebooks build it from the draws."""
    return (float(np.mean(values)), *stats.percentile_interval(stats.bootstrap_draws(values, draws=draws, seed=seed)))


def test_the_interval_matches_scipys_percentile_bootstrap_on_the_same_data() -> None:
    values = np.random.default_rng(3).exponential(size=400)
    ours = bootstrap_mean(values, draws=20_000, seed=1)
    theirs = scipy_stats.bootstrap((values,), np.mean, n_resamples=20_000, method="percentile",
                                   confidence_level=0.95, random_state=2).confidence_interval
    # Two independent sets of 20,000 draws: each quantile of the bootstrap distribution is estimated with a
    # standard error of about sqrt(q (1 - q) / B) / density ~ 0.03 standard errors of the mean; allow 0.2.
    standard_error = values.std(ddof=1) / np.sqrt(len(values))
    assert ours[0] == pytest.approx(values.mean())
    assert abs(ours[1] - theirs.low) < 0.2 * standard_error
    assert abs(ours[2] - theirs.high) < 0.2 * standard_error


def test_a_95_percent_interval_covers_the_true_mean_about_95_times_in_100() -> None:
    rng = np.random.default_rng(0)
    trials = 400
    hits = 0
    for trial in range(trials):
        sample = rng.normal(size=60)
        _, low, high = bootstrap_mean(sample, draws=1_000, seed=trial)
        hits += low <= 0.0 <= high
    # Percentile intervals of a mean of 60 normals undercover slightly (about 0.93-0.94); the binomial SD of the
    # hit rate over 400 trials is about 0.012, so [0.89, 0.98] allows the known bias plus 3 SD either way.
    assert 0.89 <= hits / trials <= 0.98


def test_chunking_does_not_change_the_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    values = np.arange(50, dtype=float)
    whole = stats.bootstrap_draws(values, draws=300, seed=4)
    monkeypatch.setattr(stats, "MAX_ELEMENTS", 120)  # two resamples a chunk
    assert np.array_equal(stats.bootstrap_draws(values, draws=300, seed=4), whole)


def test_any_statistic_can_be_bootstrapped_and_nan_draws_are_left_out() -> None:
    pairs = np.column_stack([np.arange(30.0), np.arange(30.0) ** 2])
    rho = lambda resampled: np.array([scipy_stats.spearmanr(r[:, 0], r[:, 1]).statistic for r in resampled])  # noqa: E731
    draws = stats.bootstrap_draws(pairs, rho, draws=50, seed=0)
    assert draws.shape == (50,) and np.nanmin(draws) == pytest.approx(1.0)
    assert stats.percentile_interval(np.array([np.nan, 1.0, 2.0, 3.0]), 0.5) == (1.5, 2.5)


def test_empty_data_and_bad_settings_fail_with_the_setting_named() -> None:
    with pytest.raises(ValueError, match="at least one value"):
        stats.bootstrap_draws(np.array([]))
    with pytest.raises(ValueError, match="draws must be a positive integer"):
        stats.bootstrap_draws(np.ones(3), draws=0)
    with pytest.raises(ValueError, match="confidence"):
        stats.percentile_interval(np.ones(3), confidence=1.5)
