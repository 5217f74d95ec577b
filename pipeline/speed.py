"""Speed in steps: how many steps earlier BERT_FT (and the control) reach a fixed evaluation loss than BERT_TINY.

The paper's claims are about speed, and a final-step gap can shrink while the head start in steps grows. For each
run and each of :data:`LOSS_LEVELS`, the first evaluation step at which a model's evaluation loss (all scored
positions; metrics.csv holds no per-step [MASK]-only loss) is at or below the level; steps saved is BERT_TINY's
step minus the other model's, per seed, with a t-interval over the seeds beside the mean.
"""

from __future__ import annotations

import math
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from helpers import paper_values as paper
from helpers.claims import seed_t_interval
from pipeline.layout import CONTROL_MODEL
from pipeline.results import Run, RunSet, SeedGroup, built_once, comparison_groups

LOSS_LEVELS = (7.0, 6.5, 6.0, 5.5, 5.0, 4.5, 4.0)  # nats; the unigram floor of the embedded text lies near 7.2
COLUMNS = ["lang", "label", "model", "level", "n_seeds", "reached", "tiny_step", "model_step", "steps_saved",
           "seed_ci_low", "seed_ci_high", "steps_saved_per_seed"]


def first_step_at_or_below(run: Run, name: str, level: float) -> int | None:
    """The first evaluation step (after step 0) at which ``name``'s evaluation loss is at most ``level``."""
    metrics = run.model(name).metrics
    if metrics is None:
        return None
    reached = metrics[(metrics["step"] > 0) & (metrics["eval_loss"] <= level)]
    return None if reached.empty else int(reached["step"].iloc[0])


def _row(group: SeedGroup, name: str, level: float) -> dict[str, Any] | None:
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
            "seed_ci_low": low, "seed_ci_high": high, "steps_saved_per_seed": " ".join(str(s) for s in saved)}


@built_once
def steps_saved_table(runset: RunSet) -> pd.DataFrame:
    """One row per language group, model (BERT_FT, and the control over the seeds that trained it) and level.

    ``steps_saved`` is NaN unless both models reach the level in every seed; ``reached`` counts the seeds where
    both did, so a level BERT_TINY never reaches within the run reads as not reached, not as no saving.
    """
    rows = []
    for group in (g for g in comparison_groups(runset) if g.runs):
        for name, seeds in (("bert_ft", group), (CONTROL_MODEL, group.with_control())):
            rows += [row for level in LOSS_LEVELS if seeds.runs and (row := _row(seeds, name, level))]
    return pd.DataFrame(rows, columns=COLUMNS)


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
        for model, marker in (("BERT_FT", "s"), (paper.MODEL_LABELS[CONTROL_MODEL], "^")):
            part = table[(table["lang"] == lang) & (table["model"] == model)].dropna(subset=["steps_saved"])
            if part.empty:
                continue
            low, high = part["seed_ci_low"].to_numpy(float), part["seed_ci_high"].to_numpy(float)
            mean = part["steps_saved"].to_numpy(float)
            err = None if np.isnan(low).all() else [mean - low, high - mean]
            ax.errorbar(part["level"], mean, yerr=err, marker=marker, capsize=3, label=model)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.invert_xaxis()  # training goes from high loss to low
        ax.set_title(lang.upper(), fontsize=10)
        ax.set_xlabel("evaluation loss level (nats, all scored positions)")
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("steps saved against BERT_TINY")
    fig.suptitle("Steps BERT_TINY needs minus steps the other model needs to reach each loss (ours; 95 % t-interval "
                 "over seeds)", fontsize=9)
    fig.tight_layout()
    return fig
