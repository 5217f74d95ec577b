"""The seed-level interval beside the two-level bootstrap: Student's t over the seeds, and verdicts that need both."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers.claims import OTHER_WAY, Estimate, average_gain, english_margin, seed_t_interval, verdict


def test_the_seed_interval_is_students_t_with_k_minus_1_degrees_of_freedom() -> None:
    low, high = seed_t_interval([0.01, 0.02, 0.06])
    # mean 0.03, sd 0.02646, se 0.01528; t(0.975, df=2) = 4.3027
    assert (low + high) / 2 == pytest.approx(0.03)
    assert (high - low) / 2 == pytest.approx(4.3027 * 0.0264575 / math.sqrt(3), rel=1e-4)


def test_the_seed_interval_covers_the_true_mean_95_percent_of_the_time_with_three_seeds() -> None:
    rng = np.random.default_rng(0)
    trials = 4_000
    covered = sum(low <= 0 <= high for low, high in (seed_t_interval(rng.normal(0, 1, 3)) for _ in range(trials)))
    # binomial standard error of a 0.95 rate over 4,000 trials: 0.0034; four of them
    assert covered / trials == pytest.approx(0.95, abs=4 * 0.0034)


def test_one_seed_has_no_seed_interval_and_the_positions_decide() -> None:
    assert all(math.isnan(x) for x in seed_t_interval([0.2]))
    assert verdict(Estimate(0.02, 0.01, 0.03), lower_is_better=False) == "holds"


def test_a_claim_holds_only_when_both_intervals_exclude_zero() -> None:
    both = Estimate(0.02, 0.01, 0.03, seed_low=0.005, seed_high=0.035)
    seeds_wide = Estimate(0.02, 0.01, 0.03, seed_low=-0.01, seed_high=0.05)
    neither = Estimate(0.02, -0.01, 0.05, seed_low=-0.01, seed_high=0.05)
    assert verdict(both, lower_is_better=False) == "holds"
    assert verdict(seeds_wide, lower_is_better=False) == "not shown (seeds disagree)"
    assert verdict(neither, lower_is_better=False) == "not shown"
    assert verdict(Estimate(0.02, 0.01, 0.03, seed_low=0.01, seed_high=0.03), lower_is_better=True) == OTHER_WAY


def test_languages_combine_seed_by_seed() -> None:
    draws = np.zeros(10)
    gains = {lang: Estimate(float(np.mean(v)), 0, 1, draws=draws, seed_values=tuple(v))
             for lang, v in {"en": (0.01, 0.02, 0.00), "fr": (0.06, 0.08, 0.05), "es": (0.02, 0.03, 0.01)}.items()}
    average = average_gain(gains)
    assert average.seed_values == pytest.approx(((0.01 + 0.06 + 0.02) / 3, (0.02 + 0.08 + 0.03) / 3, 0.02))
    assert (average.seed_low, average.seed_high) == pytest.approx(seed_t_interval(average.seed_values))
    margin = english_margin(gains)
    assert margin.seed_values == pytest.approx((0.01, 0.01, 0.01))
    uneven = {**gains, "es": Estimate(0.02, 0, 1, draws=draws, seed_values=(0.02,))}
    assert math.isnan(average_gain(uneven).seed_low)  # no pairing of seeds when the counts differ
