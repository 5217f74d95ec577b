"""The training-length series: does BERT_FT's head start last, fade or grow as training goes on?

Each length is a pair trained by ``pipeline.train.train_cli --steps N`` from a base run's prepared data and vectors,
with its
own schedule, recorded like a run folder (``<records>/reference-en-steps2400/``) so notebook 06's readers apply
unchanged; one table row per length, no trend fitted. ``python -m evidence.series`` draws from the records alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

import matplotlib.pyplot as plt
import pandas as pd

from evidence.claims_table import gain_estimate, run_crossing, steps_saved_note, steps_saved_table
from evidence.figure_plots import lang_name, save_figure
from evidence.figures import write_table
from evidence.position_scores import kind_mean
from evidence.results import RunSet, SeedGroup, comparison_groups, load_runs
from pipeline.store.layout import SERIES_TABLE

NOTE = ("One pair of models per length and seed ({seeds}), each with its own warm-up and decay; {base:,} steps is "
        "the base run. Intervals (columns low, high): 95 %, bootstrap over the evaluation positions ({seeds}; 10,000 "
        "draws){spread}. [MASK] TINY - unigram: BERT_TINY's loss at the [MASK] positions minus the unigram's there "
        "(testable below -0.5). No trend is fitted; nothing here extrapolates beyond the longest run.")




def series_row(group: SeedGroup) -> dict[str, Any]:
    """One length: the final differences (all and [MASK] positions), crossings, overfitting and epochs."""
    run, steps = group.first, group.total_steps
    row: dict[str, Any] = {"steps": steps, "epochs": run.model("bert_tiny").passes(steps), "n_seeds": len(group.runs)}
    for column, short in (("eval_loss", "loss"), ("eval_accuracy", "accuracy")):
        for kind, prefix in (("all", ""), ("mask", "[MASK] ")):
            est = gain_estimate(group, column, kind)
            row[f"{prefix}{short} FT - TINY"] = est.mean
            row[f"{prefix}{short} low"], row[f"{prefix}{short} high"] = est.low, est.high  # numbers, not text
    row["[MASK] TINY - unigram"] = kind_mean(group, "bert_tiny", "loss", "mask") - kind_mean(group, "unigram", "loss",
                                                                                                "mask")
    for column in ("eval_loss", "eval_accuracy"):
        crossing = run_crossing(run, column)
        row[f"{column} crossing (fraction)"] = None if crossing is None else crossing / steps
    for name, label in (("bert_tiny", "TINY"), ("bert_ft", "FT")):
        row[f"train - eval {label}"] = run.final(name, "train_loss") - run.final(name, "eval_loss")
    return row


def series_figure(table: pd.DataFrame, title: str) -> plt.Figure:
    """BERT_FT minus BERT_TINY against training length, at all and at [MASK] positions, with 95 % intervals."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    ylabels = {"accuracy": "accuracy gain (FT - TINY)", "loss": "eval loss (FT - TINY), nats"}
    for ax, (short, ylabel) in zip(axes, ylabels.items()):
        for prefix, marker in (("", "o"), ("[MASK] ", "s")):
            means = table[f"{prefix}{short} FT - TINY"].to_numpy(float)
            low, high = (table[f"{prefix}{short} {end}"].to_numpy(float) for end in ("low", "high"))
            ax.errorbar(table["steps"], means, yerr=[means - low, high - means], marker=marker, capsize=3,
                        label="all scored positions" if not prefix else "[MASK] positions")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xticks(table["steps"], [f"{s:,}" for s in table["steps"]])
        ax.set_xlabel("training steps (each run its own schedule)")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=8)
    fig.suptitle(f"{title}: BERT_FT's advantage by training length (ours; no trend fitted)", fontsize=10)
    fig.tight_layout()
    return fig


def series_title(runset: RunSet) -> tuple[str, str]:
    """('English, reference preset', 'seed 0'): what the series is, named from its runs, never assumed."""
    langs = sorted({lang_name(run.lang) for run in runset.runs})
    presets = sorted({run.preset or "?" for run in runset.runs})
    seeds = sorted({run.seed for run in runset.runs})
    seed_text = f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"
    return f"{' and '.join(langs)}, {' and '.join(presets)} preset", seed_text


def write_series(run_dirs: Sequence[Path], figures_dir: Path) -> list[Path]:
    runset = load_runs(list(run_dirs))
    groups = sorted((g for g in comparison_groups(runset) if g.runs), key=lambda g: g.total_steps or 0)
    table = pd.DataFrame([series_row(g) for g in groups])  # one row per training length, shortest first
    what, seeds = series_title(runset)
    spread = ", so they hold no seed variance" if seeds.startswith("seed ") else ", seeds resampled with positions"
    figures_dir.mkdir(parents=True, exist_ok=True)
    note = NOTE.format(seeds=seeds, spread=spread, base=runset.runs[0].steps)  # the base comes first
    paths = write_table(table, figures_dir, SERIES_TABLE, note, table.round(3))
    saved = steps_saved_table(runset)  # one group per length: each its own schedule
    paths += write_table(saved, figures_dir, f"{SERIES_TABLE}_steps_saved", steps_saved_note(runset, saved),
                         saved.round(1))
    figure = series_figure(table, f"{what}, {seeds}")
    return paths + save_figure(figure, figures_dir, SERIES_TABLE, "training-length series (ours)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evidence.series", description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, type=Path, help="the base run (folder or record) the pairs came from")
    parser.add_argument("--records", required=True, type=Path, help="the series' records "
                        "(pipeline.store.records --series)")
    parser.add_argument("--figures", required=True, type=Path, help="where the table and figure go")
    args = parser.parse_args(argv)
    try:
        if not (recorded := sorted(p for p in args.records.glob(f"{args.base.name}-steps*") if p.is_dir())):
            raise FileNotFoundError(f"no series records {args.base.name}-steps* in {args.records}: record the pairs "
                                    "with python -m pipeline.store.records --series BASE TRAINED RECORDS")
        for path in write_series([args.base, *recorded], args.figures):
            print(path)
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
