"""How sure a number of ours is (95 % intervals), and when a claim of the paper can be tested on our runs.

A difference measured on one, two or three seeds needs an interval before it can support a claim:
a t-interval over seeds when there are at least 3, else a bootstrap over the evaluation positions
(the estimate's ``interval`` names the method). A claim is only testable once BERT_TINY has left the
unigram floor (:mod:`helpers.baselines`); crossings use the one rule of :mod:`helpers.crossing`.
Everything here takes plain numbers and arrays; notebook 06 applies it to the run folders.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from scipy import stats

from helpers.crossing import fraction_of, under_fraction
from helpers.stats import bootstrap_draws, percentile_interval

CONFIDENCE = 0.95
MIN_SEEDS_FOR_T = 3  # fewer seeds: bootstrap over evaluation positions instead
BOOTSTRAP_DRAWS = 2000
TESTABLE_MARGIN = 0.5  # nats: BERT_TINY must end this far below the unigram loss for a claim to mean anything


@dataclass(frozen=True)
class Estimate:
    """A mean over seeds with its 95 % interval; ``draws`` (when known) let claims combine languages."""

    mean: float
    low: float = math.nan
    high: float = math.nan
    interval: str = "none"
    note: str = ""
    draws: np.ndarray | None = None


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """Mean of per-seed values and its t interval: each seed is one independent repeat of the whole run."""
    x = np.asarray(values, dtype=float)
    mean = float(x.mean())
    # The spread between seeds, shrunk by sqrt(n), widened by Student's t for the few seeds we have.
    half = stats.t.ppf((1 + confidence) / 2, df=len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return mean, mean - half, mean + half


def bootstrap_interval(per_position: np.ndarray, confidence: float = CONFIDENCE, draws: int = BOOTSTRAP_DRAWS,
                       seed: int = 0) -> tuple[float, float, float, np.ndarray]:
    """Mean of a per-position difference and its percentile bootstrap interval over evaluation positions.

    With one or two seeds, the only variation we can measure is which tokens happened to be masked:
    resample the positions with replacement and see how far the mean moves. It says nothing about
    another seed, so the interval is labelled as such.
    """
    means = bootstrap_draws(per_position, draws=draws, seed=seed)
    low, high = percentile_interval(means, confidence)
    return float(np.mean(per_position)), low, high, means


def is_testable(tiny_final_loss: float, unigram_loss: float, margin: float = TESTABLE_MARGIN) -> bool:
    """A claim about BERT_FT vs BERT_TINY means something only once BERT_TINY has left the unigram plateau."""
    return tiny_final_loss < unigram_loss - margin


def seed_estimate(values: Sequence[float], per_position: Callable[[], np.ndarray | str], seed: int = 0) -> Estimate:
    """Mean over seeds; its interval over seeds (>= 3 of them) or else over evaluation positions.

    ``per_position`` gives the per-position differences (or why there are none) only when needed.
    ``seed`` drives the draws kept for combining languages: give each language its own, so that
    independent languages get independent draws.
    """
    values = [v for v in values if v is not None and math.isfinite(v)]
    if not values:
        return Estimate(math.nan, note="no value to average")
    mean = float(np.mean(values))
    if len(values) >= MIN_SEEDS_FOR_T:
        _, low, high = t_interval(values)
        se = float(np.std(values, ddof=1) / math.sqrt(len(values)))
        draws = mean + se * np.random.default_rng(seed).standard_t(len(values) - 1, BOOTSTRAP_DRAWS)
        return Estimate(mean, low, high, f"t over {len(values)} seeds", draws=draws)
    diffs = per_position()
    if isinstance(diffs, str):
        return Estimate(mean, note=f"no interval: {diffs}")
    _, low, high, draws = bootstrap_interval(diffs, seed=seed)
    seeds = f"{len(values)} seed{'s' if len(values) > 1 else ''}"
    return Estimate(mean, low, high, f"bootstrap over {len(diffs):,} evaluation positions ({seeds})", draws=draws)


def includes_zero(est: Estimate) -> str:
    """A verdict read from the mean alone is not shown when its interval also allows no effect: say so."""
    return "the interval includes 0" if math.isfinite(est.low) and est.low <= 0 <= est.high else ""


def gain_holds(est: Estimate, lower_is_better: bool) -> bool | None:
    """Whether BERT_FT's mean difference points the paper's way (None without a value)."""
    return None if math.isnan(est.mean) else bool(est.mean < 0 if lower_is_better else est.mean > 0)


def crossing_estimate(steps: Sequence[int | None], total_steps: int | None, limit: float,
                      inclusive: bool = False) -> tuple[Estimate, float, bool | None]:
    """Mean crossing step over seeds, its fraction of training, and whether that fraction is within ``limit``.

    ``steps`` holds each seed's crossing step (:func:`helpers.crossing.crossing_step`), None where a
    seed never crossed: then the claim does not hold, and the note says in how many seeds.
    """
    never = sum(s is None for s in steps)
    if never:
        note = f"never crossed within the run in {never} of {len(steps)} seeds"
        return Estimate(math.nan, note=note), math.nan, False
    est = seed_estimate([float(s) for s in steps], lambda: "crossing steps are known only per seed (>= 3 needed)")
    fraction = fraction_of(est.mean, total_steps)
    holds = (fraction is not None and fraction <= limit) if inclusive else under_fraction(fraction, limit)
    return est, math.nan if fraction is None else fraction, holds


def combined(ests: Mapping[str, Estimate], statistic: Callable[[dict[str, Any]], Any]) -> Estimate:
    """A statistic of several languages' gains; its interval from their draws (languages are independent)."""
    mean = float(statistic({lang: e.mean for lang, e in ests.items()}))
    lacking = [lang for lang, e in ests.items() if e.draws is None]
    if lacking:
        return Estimate(mean, note=f"no interval: no interval for {', '.join(lacking)}")
    draws = np.asarray(statistic({lang: e.draws for lang, e in ests.items()}), dtype=float)
    low, high = percentile_interval(draws, CONFIDENCE)
    return Estimate(mean, low, high, "percentile of the languages' interval draws", draws=draws)


def average_gain(gains: Mapping[str, Estimate]) -> Estimate:
    """The languages' mean gain (the paper: "around six percent" over its seven languages)."""
    return combined(gains, lambda g: sum(g.values()) / len(g))


def english_margin(gains: Mapping[str, Estimate]) -> Estimate:
    """The smallest other language's gain minus English's: above 0, English gains least."""
    others = [lang for lang in gains if lang != "en"]
    return combined(gains, lambda g: np.min([g[lang] for lang in others], axis=0) - g["en"])
