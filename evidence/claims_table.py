"""The paper's Section 5 claims checked on our run folders (one row per claim and language, with intervals; the
statistics are :mod:`helpers.claims`'), and the speed behind them in steps. It reports, it never asserts.

Speed in steps: a final-step gap can shrink while the head start in steps grows. Per seed and level of
:data:`LOSS_LEVELS`, steps saved is BERT_TINY's first evaluation step with its evaluation loss (all scored positions:
metrics.csv holds no per-step [MASK]-only loss) at or below the level, minus the other model's (BERT_FT, the control).
"""

from __future__ import annotations

import math
import zlib
from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from evidence.position_scores import estimate_columns, group_positions, kind_mean, model_differences, paired_difference
from evidence.results import Run, RunSet, SeedGroup, cached_per_runset, comparison_groups, main_groups
from helpers import paper_values as paper
from helpers.claims import (
    CONFIDENCE,
    TESTABLE_MARGIN,
    Estimate,
    average_gain,
    crossing_estimate,
    english_margin,
    includes_zero,
    is_testable,
    seed_estimate,
    seed_t_interval,
    verdict,
)
from helpers.crossing import crossing_step
from pipeline.store.layout import EXTRA_MODELS

# A crossing later than the paper's, in runs of another length and data, says the claim was not reproduced here (the
# crossing fraction moves with the run's length), never that it is false.
NOT_REPRODUCED = "not reproduced at this scale"
PAPER_GAINS = {lang: acc["bert_ft"] - acc["bert_tiny"] for lang, acc in paper.EVAL_ACCURACY.items()}  # Table 3
CLAIM_COLUMNS = ["lang", "preset", "steps", "claim_id", "claim", "n_seeds", "ours", "ci_low", "ci_high", "interval",
                 "seed_ci_low", "seed_ci_high", "fraction_of_training", "testable", "holds_on_ours", "paper", "note"]


def lower_is_better(column: str) -> bool:
    """The one rule of direction: a loss falls as a model learns, accuracy rises."""
    return column != "eval_accuracy"


def gain_estimate(group: SeedGroup, column: str, kind: str = "all") -> Estimate:
    """Final BERT_FT minus BERT_TINY in ``column`` at one kind of position: mean over seeds, two-level interval."""
    key, salt = "loss" if lower_is_better(column) else "correct", f"{group.lang}-{kind}"
    if kind == "all":
        values = [r.final("bert_ft", column) - r.final("bert_tiny", column) for r in group.runs]
        return seed_estimate(values, lambda: model_differences(group, key), seed=zlib.crc32(salt.encode()))
    found = group_positions(group)
    if isinstance(found, str):
        return Estimate(math.nan, note=f"no value: {found}")
    runs, same = found
    return paired_difference(runs, [r.select(kind) for r in runs], same, "bert_ft", "bert_tiny", key, salt)


def testability(group: SeedGroup) -> tuple[bool | None, str]:
    """Whether BERT_TINY ended TESTABLE_MARGIN below the unigram at [MASK] (elsewhere copying needs no context)."""
    tiny, unigram = (kind_mean(group, scorer, "loss", "mask") for scorer in ("bert_tiny", "unigram"))
    if math.isnan(tiny) or math.isnan(unigram):
        found = group_positions(group)
        return None, f"testability unknown: {found if isinstance(found, str) else 'no [MASK] positions'}"
    if is_testable(tiny, unigram):
        return True, ""
    return False, (f"not testable at this scale: at the [MASK] positions BERT_TINY ends at {tiny:.3f}, within "
                   f"{TESTABLE_MARGIN} nat of the unigram's {unigram:.3f}")


def run_crossing(run: Run, column: str) -> int | None:
    """The step BERT_FT first beat BERT_TINY's final ``column`` (helpers.crossing), within the shared steps."""
    ft = run.model("bert_ft").metrics
    shared = ft[ft["step"] <= run.last_step]
    return crossing_step(shared["step"].tolist(), shared[column].tolist(), run.final("bert_tiny", column),
                         lower_is_better(column))


def qualified(holds: str, testable: bool | None) -> str:
    """The one rule of notebook 06: below the margin a verdict says nothing about the paper, so it says so."""
    if testable is True:
        return holds
    return f"{'not testable' if testable is False else 'testability unknown'} (on our runs: {holds})"


def _claim_row(group: SeedGroup, claim_id: str, claim: str, est: Estimate, paper_text: str, holds: str,
               fraction: float = math.nan, notes: Sequence[str] = ()) -> dict[str, Any]:
    testable, why = testability(group)
    return {"lang": group.lang, "preset": group.first.preset, "steps": group.total_steps, "claim_id": claim_id,
            "claim": claim, "n_seeds": len(group.runs), **estimate_columns(est), "fraction_of_training": fraction,
            "testable": testable, "holds_on_ours": qualified(holds, testable), "paper": paper_text,
            "note": "; ".join(n for n in (why, est.note, *notes, group.note) if n)}


def crossing_claim(group: SeedGroup, column: str, claim_id: str, claim: str, paper_text: str, limit: float,
                   inclusive: bool = False) -> dict[str, Any]:
    """Mean crossing step over seeds and its fraction of training; a seed that never crossed is reported."""
    steps = [run_crossing(r, column) for r in group.runs]
    est, fraction, holds = crossing_estimate(steps, group.total_steps, limit, inclusive)
    return _claim_row(group, claim_id, claim, est, paper_text, {True: "holds", False: NOT_REPRODUCED}.get(holds,
                      "no value"), fraction)


def gain_claim(group: SeedGroup, column: str, claim_id: str, claim: str, kind: str = "all") -> dict[str, Any]:
    est, lower = gain_estimate(group, column, kind), lower_is_better(column)
    pub = (paper.EVAL_LOSS if lower else paper.EVAL_ACCURACY).get(group.lang)
    paper_text = f"{pub['bert_ft'] - pub['bert_tiny']:+.3f}" if pub else "language not in the paper"
    if kind != "all":
        paper_text += " (the paper's is over all masked positions)"
    return _claim_row(group, claim_id, claim, est, paper_text, verdict(est, lower), notes=[includes_zero(est)])


def group_claims(group: SeedGroup) -> list[dict[str, Any]]:
    """Final differences and crossings. Loss "after less than a third" of training is strictly < 1/3; accuracy
    "after only 20,000 of 100,000 steps" is <= 0.2, inclusive because the paper's own crossing is at 20,000."""
    third = paper.CLAIM_LOSS_CROSSING_FRACTION
    at_mask = "the same at the [MASK] positions only, where context is needed"
    return [
        gain_claim(group, "eval_loss", "final_eval_loss_ft_minus_tiny",
                   "final eval loss, BERT_FT minus BERT_TINY (< 0: FT lower)"),
        gain_claim(group, "eval_loss", "final_eval_loss_ft_minus_tiny_at_mask", at_mask, "mask"),
        crossing_claim(group, "train_loss", "train_loss_crossing_step",
                       "first step where BERT_FT's training loss is below BERT_TINY's final",
                       "under 1/3 of training (Czech, Figure 1a)", third),
        crossing_claim(group, "eval_loss", "eval_loss_crossing_step",
                       "first step where BERT_FT's eval loss is below BERT_TINY's final",
                       "under 1/3 of training (Czech, Figure 1b and Section 5)", third),
        crossing_claim(group, "eval_accuracy", "accuracy_crossing_step",
                       "first step where BERT_FT's accuracy passes BERT_TINY's final",
                       f"{paper.CLAIM_ACCURACY_CROSSING_STEP:,} of {paper.STEPS:,} steps (Czech, Figure 2)",
                       paper.CLAIM_ACCURACY_CROSSING_STEP / paper.STEPS, inclusive=True),
        gain_claim(group, "eval_accuracy", "final_accuracy_gain",
                   "final eval accuracy, BERT_FT minus BERT_TINY (> 0: FT better)"),
        gain_claim(group, "eval_accuracy", "final_accuracy_gain_at_mask", at_mask, "mask"),
    ]


def _average_row(gains: dict[str, Estimate], seeds: str) -> dict[str, Any]:
    average = average_gain(gains)
    in_paper = [lang for lang in gains if lang in PAPER_GAINS]
    paper_same = float(np.mean([PAPER_GAINS[lang] for lang in in_paper])) if in_paper else math.nan
    paper_all = float(np.mean([PAPER_GAINS[lang] for lang in paper.LANGS]))
    holds = ("no interval" if not math.isfinite(average.low) or not in_paper
             else "holds" if average.low <= paper_same <= average.high
             else "smaller here" if average.high < paper_same else "larger here")
    return {"claim_id": "average_accuracy_gain",
            "claim": "final accuracy gain averaged over the languages run (paper: 'around six percent')",
            **estimate_columns(average), "holds_on_ours": holds,
            "paper": f"{paper_same:+.3f} over {','.join(in_paper) or 'none'}; {paper_all:+.3f} over its 7 languages",
            "note": "holds_on_ours asks whether the paper's average over the same languages lies inside our interval; "
                    + "; ".join(n for n in (seeds, average.note) if n)}


def _english_row(gains: dict[str, Estimate], seeds: str) -> dict[str, Any]:
    margin = english_margin(gains)
    paper_others = [lang for lang in gains if lang != "en" and lang in PAPER_GAINS]
    paper_margin = min(PAPER_GAINS[lang] for lang in paper_others) - PAPER_GAINS["en"] if paper_others else math.nan
    return {"claim_id": "english_gains_least",
            "claim": "English gains least: smallest other language's gain minus English's (> 0: holds)",
            **estimate_columns(margin), "holds_on_ours": verdict(margin, lower_is_better=False),
            "paper": f"{paper_margin:+.3f} over the same languages",
            "note": "; ".join(n for n in (seeds, includes_zero(margin), margin.note) if n)}


def language_claims(chosen: dict[str, SeedGroup]) -> list[dict[str, Any]]:
    """The claims about languages together (``chosen``: per language, the group with the most seeds): English gains
    least, and the average gain (paper: ~6 %)."""
    if not chosen:
        return []
    gains = {lang: gain_estimate(g, "eval_accuracy") for lang, g in chosen.items()}
    testable = {lang: testability(g)[0] for lang, g in chosen.items()}
    untestable = [lang for lang, found in testable.items() if found is False]
    why = f"not testable at this scale in {', '.join(untestable)}; " if untestable else ""
    # n_seeds is the fewest any language has; the note names each language's count.
    seeds = "seeds per language: " + ", ".join(f"{lang} {len(g.runs)}" for lang, g in chosen.items())
    overall = False if untestable else None if None in testable.values() else True
    common = {"lang": ",".join(chosen), "preset": "/".join(sorted({str(g.first.preset) for g in chosen.values()})),
              "steps": None, "n_seeds": min(len(g.runs) for g in chosen.values()), "fraction_of_training": math.nan,
              "testable": overall}
    rows = [_average_row(gains, seeds)] + ([_english_row(gains, seeds)] if "en" in chosen and len(chosen) > 1 else [])
    return [{**common, **row, "holds_on_ours": qualified(row["holds_on_ours"], overall), "note": why + row["note"]}
            for row in rows]


@cached_per_runset
def verify_claims(runset: RunSet) -> pd.DataFrame:
    """The claims per language group and over the languages; runs that cannot be paired fairly get no row."""
    rows = [row for group in comparison_groups(runset) if group.runs for row in group_claims(group)]
    rows += language_claims(main_groups(runset))
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS).astype({"steps": "Int64", "n_seeds": "Int64"})


LOSS_LEVELS = (7.0, 6.5, 6.0, 5.5, 5.0, 4.5, 4.0)  # nats; the unigram floor of the embedded text lies near 7.2
STEPS_SAVED_COLUMNS = ["lang", "label", "model", "level", "n_seeds", "reached", "tiny_step", "model_step",
                       "steps_saved", "seed_ci_low", "seed_ci_high", "steps_saved_per_seed"]


def first_step_at_or_below(run: Run, name: str, level: float) -> int | None:
    metrics = run.model(name).metrics
    steps = () if metrics is None else metrics["step"][(metrics["step"] > 0) & (metrics["eval_loss"] <= level)]
    return next((int(step) for step in steps), None)


def _steps_saved_row(group: SeedGroup, name: str, level: float) -> dict[str, Any] | None:
    steps = [(first_step_at_or_below(r, "bert_tiny", level), first_step_at_or_below(r, name, level))
             for r in group.runs]
    tiny, other = ([s for s in found if s is not None] for found in zip(*steps))
    if not other:
        return None  # a level the model never reaches says nothing about speed
    saved = [t - o for t, o in steps if t is not None and o is not None]
    every = len(saved) == len(group.runs)
    low, high = seed_t_interval(saved) if every else (math.nan, math.nan)
    return {"lang": group.lang, "label": group.label, "model": paper.MODEL_LABELS[name], "level": level,
            "n_seeds": len(group.runs), "reached": len(saved), "tiny_step": float(np.mean(tiny)) if tiny else math.nan,
            "model_step": float(np.mean(other)), "steps_saved": float(np.mean(saved)) if every else math.nan,
            "seed_ci_low": low, "seed_ci_high": high, "steps_saved_per_seed": " / ".join(f"{s:,}" for s in saved)}


@cached_per_runset
def steps_saved_table(runset: RunSet) -> pd.DataFrame:
    """Per language group, model (BERT_FT, each extra arm over its seeds) and level; ``steps_saved`` is NaN unless both
    models reach the level in every seed, and ``reached`` counts the seeds where both did."""
    rows = []
    for group in (g for g in comparison_groups(runset) if g.runs):
        for name, seeds in (("bert_ft", group), *((m, group.with_models(m)) for m in EXTRA_MODELS)):
            rows += [row for level in LOSS_LEVELS if seeds.runs and (row := _steps_saved_row(seeds, name, level))]
    return pd.DataFrame(rows, columns=STEPS_SAVED_COLUMNS)


def steps_saved_note(runset: RunSet, table: pd.DataFrame) -> str:
    """:func:`steps_saved_table`'s note (06 and the series): how finely the runs' evaluations place a step, and that
    only a row with more than one seed has a t-interval."""
    every = {(r.run_json(name).get("train_config") or {}).get("eval_every") for r in runset.runs for name in r.models}
    n = every.pop() if len(every) == 1 else None
    resolution = (f"evaluations every {n:,} steps, so steps are known to {n:,}." if n
                  else "the evaluation interval differs between runs or is not recorded.")
    counts = set(table["n_seeds"])
    one_seed = "; a row with one seed (n_seeds 1) has none." if 1 in counts else "."
    seeds = (f"Interval: {CONFIDENCE * 100:g} %, a t-interval over the seeds{one_seed}" if counts - {1}
             else "One seed: no interval.")
    return ("The first evaluation step at which each model's evaluation loss (all scored positions) is at or below the "
            "level, mean over seeds; steps_saved: BERT_TINY's step minus the model's (NaN unless both reach the level "
            f"in every seed); {resolution} {seeds}")


def steps_saved_figure(table: pd.DataFrame) -> plt.Figure:
    """Steps saved against the loss level, one panel per language, with the seed-level interval."""
    langs = list(dict.fromkeys(table.dropna(subset=["steps_saved"])["lang"]))
    if not langs:  # short runs: no model reaches a level in every seed; say so instead of drawing empty axes
        fig, ax = plt.subplots(figsize=(6, 1.5))
        ax.axis("off")
        ax.text(0.5, 0.5, "steps saved: no loss level of " + ", ".join(map(str, LOSS_LEVELS)) + " is reached by "
                "both models in every seed of any language", ha="center", va="center", fontsize=8, wrap=True)
        return fig
    fig, axes = plt.subplots(1, len(langs), figsize=(4 * len(langs), 3.6), squeeze=False, sharey=True)
    for ax, lang in zip(axes[0], langs):
        for model, marker in zip((paper.MODEL_LABELS[m] for m in ("bert_ft", *EXTRA_MODELS)), "s^Dv"):
            part = table[(table["lang"] == lang) & (table["model"] == model)].dropna(subset=["steps_saved"])
            if part.empty:
                continue
            low, high, mean = (part[c].to_numpy(float) for c in ("seed_ci_low", "seed_ci_high", "steps_saved"))
            err = None if np.isnan(low).all() else [mean - low, high - mean]
            ax.errorbar(part["level"], mean, yerr=err, marker=marker, capsize=3, label=model)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.invert_xaxis()  # training goes from high loss to low
        ax.set_title(lang.upper(), fontsize=10)
        ax.set_xlabel("evaluation loss level (nats, all scored positions)")
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("steps saved against BERT_TINY")
    fig.suptitle("Steps BERT_TINY needs minus steps the other model needs to reach each loss (ours; "
                 f"{CONFIDENCE * 100:g} % t-interval over seeds)", fontsize=9)
    fig.tight_layout()
    return fig
