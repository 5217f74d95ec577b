"""How sure a number of ours is (95 % intervals), and the paper's Section 5 claims checked on our runs.

A difference measured on one, two or three seeds needs an interval before it can support a claim:
a t-interval over seeds when there are at least 3, else a bootstrap over the evaluation positions
(the column ``interval`` names the method). A claim is only testable once BERT_TINY has left the
unigram floor (:mod:`helpers.baselines`); crossings use the one rule of :mod:`helpers.crossing`.
The claim check reports, it never asserts.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from helpers import paper_values as paper
from helpers.crossing import crossing_step, fraction_of, under_fraction
from pipeline.results import POSITIONS_FILE, Run, RunSet, SeedGroup, comparison_groups, display_path, order_langs

CONFIDENCE = 0.95
MIN_SEEDS_FOR_T = 3  # fewer seeds: bootstrap over evaluation positions instead
BOOTSTRAP_DRAWS = 2000
TESTABLE_MARGIN = 0.5  # nats: BERT_TINY must end this far below the unigram loss for a claim to mean anything


# --------------------------------------------------------------------------- intervals


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
    rng = np.random.default_rng(seed)
    n = len(per_position)
    means = np.array([per_position[rng.integers(0, n, n)].mean() for _ in range(draws)])
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(per_position.mean()), float(low), float(high), means


def is_testable(tiny_final_loss: float, unigram_loss: float, margin: float = TESTABLE_MARGIN) -> bool:
    """A claim about BERT_FT vs BERT_TINY means something only once BERT_TINY has left the unigram plateau."""
    return tiny_final_loss < unigram_loss - margin


def seed_estimate(values: Sequence[float], per_position: Callable[[], np.ndarray | str], seed: int = 0) -> Estimate:
    """Mean over seeds; its interval over seeds (>= 3 of them) or else over evaluation positions.

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


def positions_of(run: Run, name: str) -> dict[str, np.ndarray] | str:
    """One model's per-position results of its final evaluation, or why they cannot be used."""
    model = run.model(name)
    path = (model.folder or run.run_dir / "pretrain" / name) / POSITIONS_FILE
    if not path.is_file():
        return f"{display_path(path)} not found (needs per-position results of the final evaluation)"
    if model.last_step != run.last_step:
        return f"{paper.MODEL_LABELS[name]} evaluated past the step both models share, so its positions do not match"
    with np.load(path) as data:
        found = {"correct": data["correct"].astype(float), "loss": data["loss"].astype(float)}
    if abs(found["correct"].mean() - run.final(name, "eval_accuracy")) > 1e-6:
        return f"{display_path(path)} disagrees with metrics.csv's final accuracy"
    return found


def position_differences(group: SeedGroup, key: str) -> np.ndarray | str:
    """BERT_FT minus BERT_TINY at each evaluation position, averaged over the group's seeds."""
    diffs = []
    for run in group.runs:
        tiny, ft = positions_of(run, "bert_tiny"), positions_of(run, "bert_ft")
        for found in (tiny, ft):
            if isinstance(found, str):
                return found
        diffs.append(ft[key] - tiny[key])
    if len({len(d) for d in diffs}) != 1:
        return "the seeds were evaluated on different numbers of positions"
    return np.mean(diffs, axis=0)


def gain_estimate(group: SeedGroup, column: str) -> Estimate:
    """Final BERT_FT minus BERT_TINY in ``column`` ('eval_loss' or 'eval_accuracy'), mean and interval."""
    key = "loss" if column == "eval_loss" else "correct"
    values = group.per_seed(lambda r: r.final("bert_ft", column) - r.final("bert_tiny", column))
    return seed_estimate(values, lambda: position_differences(group, key), seed=zlib.crc32(group.lang.encode()))


# --------------------------------------------------------------------------- claims

CLAIM_COLUMNS = ["lang", "preset", "steps", "claim_id", "claim", "n_seeds", "ours", "ci_low", "ci_high", "interval",
                 "fraction_of_training", "testable", "holds_on_ours", "paper", "note"]


def testability(group: SeedGroup) -> tuple[bool | None, str]:
    """Whether BERT_TINY (mean over seeds) ended at least TESTABLE_MARGIN below the unigram loss, and why."""
    base = group.baseline
    if base is None:
        return None, group.first.baseline_problem or "no unigram baseline"
    tiny = group.mean(lambda r: r.final("bert_tiny", "eval_loss"))
    if is_testable(tiny, base["unigram_loss"]):
        return True, ""
    return False, (f"not testable at this scale: BERT_TINY ends at {tiny:.3f}, within {TESTABLE_MARGIN} nat of the "
                   f"unigram loss {base['unigram_loss']:.3f}")


def _claim_row(group: SeedGroup, claim_id: str, claim: str, est: Estimate, paper_text: str, holds: bool | None,
               fraction: float = math.nan, notes: Sequence[str] = ()) -> dict[str, Any]:
    testable, why = testability(group)
    note = "; ".join(n for n in (why, est.note, *notes, group.note) if n)
    return {"lang": group.lang, "preset": group.first.preset, "steps": group.total_steps, "claim_id": claim_id,
            "claim": claim, "n_seeds": len(group.runs), "ours": est.mean, "ci_low": est.low, "ci_high": est.high,
            "interval": est.interval, "fraction_of_training": fraction, "testable": testable,
            "holds_on_ours": holds, "paper": paper_text, "note": note}


def run_crossing(run: Run, column: str, lower_is_better: bool) -> int | None:
    """The step BERT_FT first beat BERT_TINY's final ``column`` (helpers.crossing), within the shared steps."""
    ft = run.model("bert_ft").metrics
    shared = ft[ft["step"] <= run.last_step]
    return crossing_step(shared["step"].tolist(), shared[column].tolist(), run.final("bert_tiny", column),
                         lower_is_better)


def crossing_claim(group: SeedGroup, column: str, lower_is_better: bool, claim_id: str, claim: str,
                   paper_text: str, limit: float, inclusive: bool = False) -> dict[str, Any]:
    """Mean crossing step over seeds and its fraction of training; a seed that never crossed is reported."""
    steps = group.per_seed(lambda r: run_crossing(r, column, lower_is_better))
    never = sum(s is None for s in steps)
    if never:
        est = Estimate(math.nan, note=f"never crossed within the run in {never} of {len(steps)} seeds")
        return _claim_row(group, claim_id, claim, est, paper_text, False)
    est = seed_estimate([float(s) for s in steps], lambda: "crossing steps are known only per seed (>= 3 needed)")
    fraction = fraction_of(est.mean, group.total_steps)
    holds = (fraction is not None and fraction <= limit) if inclusive else under_fraction(fraction, limit)
    return _claim_row(group, claim_id, claim, est, paper_text, holds, math.nan if fraction is None else fraction)


def gain_claim(group: SeedGroup, column: str, claim_id: str, claim: str, published: dict[str, dict[str, float]],
               lower_is_better: bool) -> dict[str, Any]:
    est = gain_estimate(group, column)
    pub = published.get(group.lang)
    paper_text = f"{pub['bert_ft'] - pub['bert_tiny']:+.3f}" if pub else "language not in the paper"
    holds = None if math.isnan(est.mean) else bool(est.mean < 0 if lower_is_better else est.mean > 0)
    return _claim_row(group, claim_id, claim, est, paper_text, holds, notes=[includes_zero(est)])


def includes_zero(est: Estimate) -> str:
    """A verdict read from the mean alone is not shown when its interval also allows no effect: say so."""
    return "the interval includes 0" if math.isfinite(est.low) and est.low <= 0 <= est.high else ""


def paper_gain(lang: str) -> float:
    return paper.EVAL_ACCURACY[lang]["bert_ft"] - paper.EVAL_ACCURACY[lang]["bert_tiny"]


def _combined(ests: dict[str, Estimate], statistic: Callable[[dict[str, Any]], Any]) -> Estimate:
    """A statistic of several languages' gains; its interval from their draws (languages are independent)."""
    mean = float(statistic({lang: e.mean for lang, e in ests.items()}))
    lacking = [lang for lang, e in ests.items() if e.draws is None]
    if lacking:
        return Estimate(mean, note=f"no interval: no interval for {', '.join(lacking)}")
    draws = np.asarray(statistic({lang: e.draws for lang, e in ests.items()}), dtype=float)
    low, high = np.quantile(draws, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    return Estimate(mean, float(low), float(high), "percentile of the languages' interval draws", draws=draws)


def language_claims(groups: Sequence[SeedGroup]) -> list[dict[str, Any]]:
    """The claims about languages together: English gains least, and the average gain (paper: ~6 %)."""
    chosen = {}
    for group in groups:  # per language, the group with the most seeds (comparison_groups sorts them so)
        if group.runs and group.lang not in chosen:
            chosen[group.lang] = group
    if not chosen:
        return []
    ests = {lang: gain_estimate(g, "eval_accuracy") for lang, g in chosen.items()}
    langs = order_langs(chosen)
    testable = [testability(g)[0] for g in chosen.values()]
    untestable = [lang for lang, g in chosen.items() if testability(g)[0] is False]
    why = f"not testable at this scale in {', '.join(untestable)}; " if untestable else ""
    # n_seeds is the fewest any language has; the note names each language's count.
    seeds = "seeds per language: " + ", ".join(f"{lang} {len(chosen[lang].runs)}" for lang in langs)
    common = {"lang": ",".join(langs), "preset": "/".join(sorted({str(g.first.preset) for g in chosen.values()})),
              "steps": None, "n_seeds": min(len(g.runs) for g in chosen.values()), "fraction_of_training": math.nan,
              "testable": None if None in testable else all(testable)}
    rows = []
    in_paper = [lang for lang in langs if lang in paper.EVAL_ACCURACY]
    average = _combined(ests, lambda gains: sum(gains.values()) / len(gains))
    paper_same = float(np.mean([paper_gain(lang) for lang in in_paper])) if in_paper else math.nan
    paper_all = float(np.mean([paper_gain(lang) for lang in paper.LANGS]))
    holds = None if not math.isfinite(average.low) or not in_paper else bool(average.low <= paper_same <= average.high)
    rows.append({**common, "claim_id": "average_accuracy_gain",
                 "claim": "final accuracy gain averaged over the languages run (paper: 'around six percent')",
                 "ours": average.mean, "ci_low": average.low, "ci_high": average.high, "interval": average.interval,
                 "holds_on_ours": holds, "paper": f"{paper_same:+.3f} over {','.join(in_paper) or 'none'}; "
                                                  f"{paper_all:+.3f} over its 7 languages",
                 "note": why + "holds_on_ours asks whether the paper's average over the same languages lies inside "
                         "our interval; " + "; ".join(n for n in (seeds, average.note) if n)})
    if "en" in chosen and len(chosen) > 1:
        others = [lang for lang in langs if lang != "en"]
        margin = _combined(ests, lambda g: np.min([g[lang] for lang in others], axis=0) - g["en"])
        paper_others = [lang for lang in others if lang in paper.EVAL_ACCURACY]
        paper_margin = min(paper_gain(lang) for lang in paper_others) - paper_gain("en") if paper_others else math.nan
        rows.append({**common, "claim_id": "english_gains_least",
                     "claim": "English gains least: smallest other language's gain minus English's (> 0: holds)",
                     "ours": margin.mean, "ci_low": margin.low, "ci_high": margin.high, "interval": margin.interval,
                     "holds_on_ours": bool(margin.mean > 0), "paper": f"{paper_margin:+.3f} over the same languages",
                     "note": why + "; ".join(n for n in (seeds, includes_zero(margin), margin.note) if n)})
    return rows


def verify_claims(runset: RunSet) -> pd.DataFrame:
    """The paper's Section 5 claims, measured on our runs (mean over seeds, with intervals); reports, never asserts.

    Crossings (helpers.crossing): loss "after less than a third" of training is strictly < 1/3; accuracy
    "after only 20,000 of 100,000 steps" is <= 0.2, inclusive because the paper's own crossing is at 20,000.
    Runs that cannot be paired fairly get no row (the tables show them with their status).
    """
    acc_fraction = paper.CLAIM_ACCURACY_CROSSING_STEP / paper.STEPS
    groups = [g for g in comparison_groups(runset) if g.runs]
    rows = []
    for group in groups:
        rows += [
            gain_claim(group, "eval_loss", "final_eval_loss_ft_minus_tiny",
                       "final eval loss, BERT_FT minus BERT_TINY (< 0: FT lower)", paper.EVAL_LOSS, True),
            crossing_claim(group, "train_loss", True, "train_loss_crossing_step",
                           "first step where BERT_FT's training loss is below BERT_TINY's final",
                           "under 1/3 of training (Czech, Figure 1a)", paper.CLAIM_LOSS_CROSSING_FRACTION),
            crossing_claim(group, "eval_loss", True, "eval_loss_crossing_step",
                           "first step where BERT_FT's eval loss is below BERT_TINY's final",
                           "under 1/3 of training (Czech, Figure 1b and Section 5)",
                           paper.CLAIM_LOSS_CROSSING_FRACTION),
            crossing_claim(group, "eval_accuracy", False, "accuracy_crossing_step",
                           "first step where BERT_FT's accuracy passes BERT_TINY's final",
                           f"{paper.CLAIM_ACCURACY_CROSSING_STEP:,} of {paper.STEPS:,} steps (Czech, Figure 2)",
                           acc_fraction, inclusive=True),
            gain_claim(group, "eval_accuracy", "final_accuracy_gain",
                       "final eval accuracy, BERT_FT minus BERT_TINY (> 0: FT better)", paper.EVAL_ACCURACY, False),
        ]
    rows += language_claims(groups)
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS).astype({"steps": "Int64", "n_seeds": "Int64"})
