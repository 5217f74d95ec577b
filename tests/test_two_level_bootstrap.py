"""The two-level bootstrap (seeds, then positions) has the spread its design implies.

For values a_s + b_p, a mean over k resampled seeds and n resampled positions varies by
var(a)/k + var(b)/n (population variances of the values resampled), since the two resamples are
independent and the value is additive. 10,000 draws estimate a standard deviation to about 0.7 %
(relative standard error 1/sqrt(2 * draws)), so 4 % tolerances fail only on a real error.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import stats
from helpers.stats import bootstrap_draws, two_level_draws


def _additive(k: int, n: int, seed_sd: float, position_sd: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    a, b = rng.normal(0, seed_sd, size=k), rng.normal(0, position_sd, size=n)
    return a[:, None] + b[None, :], a, b


def test_shared_positions_spread_is_seed_variance_over_k_plus_position_variance_over_n() -> None:
    values, a, b = _additive(k=3, n=2_000, seed_sd=0.05, position_sd=1.0)
    draws = two_level_draws(list(values), same_positions=True, draws=10_000, seed=1)
    expected = np.sqrt(a.var() / 3 + b.var() / 2_000)
    assert draws.std() == pytest.approx(expected, rel=0.04)
    assert draws.mean() == pytest.approx(values.mean(), abs=4 * expected / np.sqrt(10_000))


def test_seed_variance_widens_the_interval_beyond_positions_alone() -> None:
    b = np.random.default_rng(7).normal(0, 1.0, size=2_000)
    values = np.array([-0.1, 0.0, 0.1])[:, None] + b[None, :]  # seed variance/3 = 0.0022, positions/n = 0.0005
    positions_only = bootstrap_draws(values.mean(axis=0), draws=10_000, seed=1).std()
    both = two_level_draws(list(values), same_positions=True, draws=10_000, seed=1).std()
    assert both > 1.5 * positions_only  # sqrt(0.0027 / 0.0005) = 2.3 expected


def test_one_seed_is_the_bootstrap_over_positions() -> None:
    values = np.random.default_rng(3).normal(size=1_500)
    draws = two_level_draws([values], same_positions=True, draws=10_000, seed=2)
    assert draws.std() == pytest.approx(values.std() / np.sqrt(1_500), rel=0.04)


def test_seeds_on_different_positions_resample_each_seed_on_its_own() -> None:
    rng = np.random.default_rng(5)
    offsets = np.array([0.0, 0.1, -0.1])
    per_seed = [offsets[s] + rng.normal(0, 1.0, size=n) for s, n in enumerate((800, 900, 1_000))]
    draws = two_level_draws(per_seed, same_positions=False, draws=4_000, seed=3)
    seed_means = np.array([p.mean() for p in per_seed])
    within = np.mean([p.var() / len(p) for p in per_seed]) / 3  # k slots, each a seed's own position resample
    expected = np.sqrt(seed_means.var() / 3 + within)
    assert draws.std() == pytest.approx(expected, rel=0.06)  # 4,000 draws: relative SE about 1.1 %


def test_same_positions_with_different_counts_is_refused() -> None:
    with pytest.raises(ValueError, match="same_positions"):
        two_level_draws([np.zeros(3), np.zeros(4)], same_positions=True)


def test_counting_draws_gives_the_mean_of_the_drawn_values_themselves() -> None:
    rng = np.random.default_rng(5)
    values = rng.normal(size=(3, 500))
    seeds, positions = rng.integers(0, 3, size=(40, 3)), rng.integers(0, 500, size=(40, 500))
    gathered = values[seeds[:, :, None], positions[:, None, :]].mean(axis=(1, 2))
    np.testing.assert_allclose(stats._mean_of_drawn(values, seeds, positions), gathered, rtol=0, atol=1e-12)
