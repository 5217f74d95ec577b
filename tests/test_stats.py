"""The one bootstrap: the same interval as scipy's percentile bootstrap, coverage as the math says, and the
two-level bootstrap (seeds, then positions) with the spread its design implies."""

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


# --------------------------------------------------------------------------- the two-level bootstrap
# The two-level bootstrap (seeds, then positions) has the spread its design implies.
#
# For values a_s + b_p, a mean over k resampled seeds and n resampled positions varies by
# var(a)/k + var(b)/n (population variances of the values resampled), since the two resamples are
# independent and the value is additive. 10,000 draws estimate a standard deviation to about 0.7 %
# (relative standard error 1/sqrt(2 * draws)), so 4 % tolerances fail only on a real error.


def _additive(k: int, n: int, seed_sd: float, position_sd: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    a, b = rng.normal(0, seed_sd, size=k), rng.normal(0, position_sd, size=n)
    return a[:, None] + b[None, :], a, b


def test_shared_positions_spread_is_seed_variance_over_k_plus_position_variance_over_n() -> None:
    values, a, b = _additive(k=3, n=2_000, seed_sd=0.05, position_sd=1.0)
    draws = stats.two_level_draws(list(values), same_positions=True, draws=10_000, seed=1)
    expected = np.sqrt(a.var() / 3 + b.var() / 2_000)
    assert draws.std() == pytest.approx(expected, rel=0.04)
    assert draws.mean() == pytest.approx(values.mean(), abs=4 * expected / np.sqrt(10_000))


def test_seed_variance_widens_the_interval_beyond_positions_alone() -> None:
    b = np.random.default_rng(7).normal(0, 1.0, size=2_000)
    values = np.array([-0.1, 0.0, 0.1])[:, None] + b[None, :]  # seed variance/3 = 0.0022, positions/n = 0.0005
    positions_only = stats.bootstrap_draws(values.mean(axis=0), draws=10_000, seed=1).std()
    both = stats.two_level_draws(list(values), same_positions=True, draws=10_000, seed=1).std()
    assert both > 1.5 * positions_only  # sqrt(0.0027 / 0.0005) = 2.3 expected


def test_one_seed_is_the_bootstrap_over_positions() -> None:
    values = np.random.default_rng(3).normal(size=1_500)
    draws = stats.two_level_draws([values], same_positions=True, draws=10_000, seed=2)
    assert draws.std() == pytest.approx(values.std() / np.sqrt(1_500), rel=0.04)


def test_seeds_on_different_positions_resample_each_seed_on_its_own() -> None:
    rng = np.random.default_rng(5)
    offsets = np.array([0.0, 0.1, -0.1])
    per_seed = [offsets[s] + rng.normal(0, 1.0, size=n) for s, n in enumerate((800, 900, 1_000))]
    draws = stats.two_level_draws(per_seed, same_positions=False, draws=4_000, seed=3)
    seed_means = np.array([p.mean() for p in per_seed])
    within = np.mean([p.var() / len(p) for p in per_seed]) / 3  # k slots, each a seed's own position resample
    expected = np.sqrt(seed_means.var() / 3 + within)
    assert draws.std() == pytest.approx(expected, rel=0.06)  # 4,000 draws: relative SE about 1.1 %


def test_same_positions_with_different_counts_is_refused() -> None:
    with pytest.raises(ValueError, match="same_positions"):
        stats.two_level_draws([np.zeros(3), np.zeros(4)], same_positions=True)


def test_counting_draws_gives_the_mean_of_the_drawn_values_themselves() -> None:
    rng = np.random.default_rng(5)
    values = rng.normal(size=(3, 500))
    seeds, positions = rng.integers(0, 3, size=(40, 3)), rng.integers(0, 500, size=(40, 500))
    gathered = values[seeds[:, :, None], positions[:, None, :]].mean(axis=(1, 2))
    np.testing.assert_allclose(stats._mean_of_drawn(values, seeds, positions), gathered, rtol=0, atol=1e-12)
