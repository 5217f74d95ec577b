"""How sure a number of ours is (95 % intervals), and when a claim of the paper can be tested on our runs.

A difference measured on one, two or three seeds needs an interval before it can support a claim: a
two-level bootstrap that resamples the seeds and then the evaluation positions, so it holds both kinds
of variation (with one seed, positions only; the estimate's ``interval`` names which). A claim is only
testable once BERT_TINY has left the unigram floor at the ``[MASK]`` positions (:mod:`helpers.baselines`);
crossings use the one rule of :mod:`helpers.crossing`.
Everything here takes plain numbers and arrays; notebook 06 applies it to the run folders.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from scipy import stats

from helpers.crossing import fraction_of, under_fraction
from helpers.stats import percentile_interval, two_level_draws

CONFIDENCE = 0.95
BOOTSTRAP_DRAWS = 10_000  # the third decimal of an interval no longer moves with the draw
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
    seed_low: float = math.nan  # the seed-level interval beside it (:func:`seed_t_interval`): NaN with one seed
    seed_high: float = math.nan
    seed_values: tuple[float, ...] | None = None  # each seed's value, in seed order, so languages can be combined


def seed_t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """A t-interval over the per-seed values (df = k - 1); (NaN, NaN) with fewer than two seeds.

    Resampling 3 seeds narrows their spread by about (k - 1) / k, with normal quantiles; Student's t does not.
    It ignores the positions, which the two-level interval holds, so a claim needs both.
    """
    values = np.asarray([v for v in values if math.isfinite(v)], dtype=float)
    if len(values) < 2:
        return math.nan, math.nan
    half = float(stats.t.ppf(0.5 + confidence / 2, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values)))
    return float(values.mean()) - half, float(values.mean()) + half


def two_level_estimate(per_seed: Sequence[np.ndarray], same_positions: bool, seed: int = 0) -> Estimate:
    """Mean of per-position differences over seeds and positions, with the two-level bootstrap's interval.

    Seeds are resampled, then positions (:func:`helpers.stats.two_level_draws`), so the interval holds
    both another seed and other masked tokens. With one seed only positions vary, and the label says so.
    """
    draws = two_level_draws(list(per_seed), same_positions=same_positions, draws=BOOTSTRAP_DRAWS, seed=seed)
    low, high = percentile_interval(draws, CONFIDENCE)
    n = len(per_seed[0])
    what = (f"two-level bootstrap over {len(per_seed)} seeds, then {n:,} positions" if len(per_seed) > 1
            else f"bootstrap over {n:,} positions (1 seed)")
    mean = float(np.mean([np.mean(values) for values in per_seed]))
    return Estimate(mean, low, high, f"{what}; {BOOTSTRAP_DRAWS:,} draws", draws=draws)


def is_testable(tiny_final_loss: float, unigram_loss: float, margin: float = TESTABLE_MARGIN) -> bool:
    """A claim about BERT_FT vs BERT_TINY means something only once BERT_TINY has left the unigram plateau.

    Pass the losses at the ``[MASK]`` positions: at the others, copying the visible token beats the
    unigram without any context, so all-position losses clear the margin too easily.
    """
    return tiny_final_loss < unigram_loss - margin


def seed_estimate(values: Sequence[float], per_position: Callable[[], tuple[list[np.ndarray], bool] | str],
                  seed: int = 0) -> Estimate:
    """Mean over seeds of a final difference, with the two-level interval of :func:`two_level_estimate`.

    ``per_position`` gives each seed's per-position differences and whether the seeds share positions
    (or why there are none) only when needed. ``seed`` drives the draws kept for combining languages: give
    each language its own, so that independent languages get independent draws.
    """
    values = [v for v in values if v is not None and math.isfinite(v)]
    if not values:
        return Estimate(math.nan, note="no value to average")
    found = per_position()
    if isinstance(found, str):
        return Estimate(float(np.mean(values)), note=f"no interval: {found}")
    est = two_level_estimate(*found, seed=seed)
    seed_low, seed_high = seed_t_interval(values)
    return Estimate(float(np.mean(values)), est.low, est.high, est.interval, draws=est.draws, seed_low=seed_low,
                    seed_high=seed_high, seed_values=tuple(values))


def includes_zero(est: Estimate) -> str:
    """A verdict read from the mean alone is not shown when its interval also allows no effect: say so."""
    return "the interval includes 0" if math.isfinite(est.low) and est.low <= 0 <= est.high else ""


OTHER_WAY = "the other way: not reproduced at this scale"  # another setting than the paper's never refutes it


def _side(low: float, high: float, lower_is_better: bool) -> str:
    if low <= 0 <= high:
        return "not shown"
    return "holds" if (high < 0 if lower_is_better else low > 0) else OTHER_WAY


def verdict(est: Estimate, lower_is_better: bool) -> str:
    """'holds' only when the whole interval lies on the paper's side of 0; one that includes 0 is 'not shown'.

    With several seeds the seed-level interval must agree: both on one side of 0, or 'not shown (seeds
    disagree)'. With one seed there is no seed-level interval and the two-level one (positions only) decides.
    """
    if math.isnan(est.mean):
        return "no value"
    if not (math.isfinite(est.low) and math.isfinite(est.high)):
        return "not shown (no interval)"
    by_positions = _side(est.low, est.high, lower_is_better)
    if not (math.isfinite(est.seed_low) and math.isfinite(est.seed_high)):
        return by_positions
    by_seeds = _side(est.seed_low, est.seed_high, lower_is_better)
    return by_positions if by_positions == by_seeds else "not shown (seeds disagree)"


def crossing_estimate(steps: Sequence[int | None], total_steps: int | None, limit: float,
                      inclusive: bool = False) -> tuple[Estimate, float, bool | None]:
    """Mean crossing step over seeds, its fraction of training, and whether that fraction is within ``limit``.

    ``steps`` holds each seed's crossing step (:func:`helpers.crossing.crossing_step`), None where a
    seed never crossed: then the claim is not reproduced here, and the note says in how many seeds. A crossing
    has no per-position values, so its spread is the seeds' range, labelled as such.
    """
    never = sum(s is None for s in steps)
    if never:
        note = f"never crossed within the run in {never} of {len(steps)} seeds"
        return Estimate(math.nan, note=note), math.nan, False
    values = [float(s) for s in steps]
    est = (Estimate(float(np.mean(values)), min(values), max(values), f"range of {len(values)} seeds")
           if len(values) > 1 else Estimate(values[0], note="one seed: no spread to show"))
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
    # Seed-level: the statistic of the k-th seed of every language, then a t-interval over k (seeds pair by order,
    # as the languages share no seed); only where every language has the same number of seeds.
    counts = {len(e.seed_values or ()) for e in ests.values()}
    per_seed = (tuple(float(v) for v in statistic({lang: np.asarray(e.seed_values) for lang, e in ests.items()}))
                if len(counts) == 1 and min(counts) >= 2 else None)
    seed_low, seed_high = seed_t_interval(per_seed or ())
    return Estimate(mean, low, high, "percentile of the languages' interval draws", draws=draws, seed_low=seed_low,
                    seed_high=seed_high, seed_values=per_seed)


def average_gain(gains: Mapping[str, Estimate]) -> Estimate:
    """The languages' mean gain (the paper: "around six percent" over its seven languages)."""
    return combined(gains, lambda g: sum(g.values()) / len(g))


def english_margin(gains: Mapping[str, Estimate]) -> Estimate:
    """The smallest other language's gain minus English's: above 0, English gains least."""
    others = [lang for lang in gains if lang != "en"]
    return combined(gains, lambda g: np.min([g[lang] for lang in others], axis=0) - g["en"])
