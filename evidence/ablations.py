"""The ablation table: each variant of BERT_FT's initialisation (pipeline.train.ablations trains them) against the paper
recipe, paired by seed and evaluation position, with notebook 06's intervals (helpers.claims.seed_estimate).

``python -m evidence.ablations`` draws the table and figure from trained variants or their records alone.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
from pathlib import Path
from typing import Any, NamedTuple, Sequence

import numpy as np
import pandas as pd

from evidence.figure_plots import FIGURE_FORMATS, save_figure
from evidence.figures import to_markdown
from evidence.position_scores import seed_differences
from evidence.results import ModelRun, Run, load_run, metrics_frame, read_positions
from helpers.claims import seed_estimate
from pipeline.store.layout import AblationLayout, display_path
from pipeline.store.runinfo import environment
from pipeline.store.staging import move_into, staged
from pipeline.train.ablations import TRAINED, VARIANTS

TABLE_NAME = "ablations"


def ablated_runs(run_records: str | Path, ablation_records: str | Path) -> list[Path]:
    """The run records whose ablations were recorded: the table is redrawn over exactly those runs."""
    run_records, ablation_records = Path(run_records), Path(ablation_records)
    names = sorted(p.name for p in ablation_records.iterdir() if p.is_dir()) if ablation_records.is_dir() else []
    if not names:
        raise FileNotFoundError(f"no ablation records under {ablation_records}: train the variants first "
                                "(python -m pipeline.train.ablations --runs RUN_DIR ... --records DIR)")
    if missing := [n for n in names if not (run_records / n).is_dir()]:
        raise FileNotFoundError(f"{run_records} has no record of the ablated run(s) {', '.join(missing)}: save them "
                                "with python -m pipeline.job --figures-from RUN_DIR ... --records DIR")
    return [run_records / n for n in names]


class VariantResult(NamedTuple):
    """One variant's final evaluation in one run (seed)."""

    run: Run
    model: ModelRun  # for 'paper' and 'random init', the run's own BERT_FT and BERT_TINY
    manifest: dict[str, Any]


def _results(run: Run, ablation_dir: Path) -> dict[str, VariantResult]:
    found = {"random init": VariantResult(run, run.model("bert_tiny"), {}),
             "paper": VariantResult(run, run.model("bert_ft"), run.manifest or {})}
    for name in TRAINED:
        files = AblationLayout(ablation_dir).variant(run.run_dir.name, name)
        if files.model.metrics.is_file():
            model = ModelRun(name, metrics_frame(files.model.metrics), files=files.model)
            if model.last_step == run.last_step:  # unfinished variants are left out
                found[name] = VariantResult(run, model, json.loads(files.static.manifest.read_text(encoding="utf-8")))
    return found


def _paired_columns(results: list[VariantResult], papers: list[VariantResult], column: str) -> dict[str, Any]:
    """A variant's difference to the paper recipe in ``column``: mean over seeds, interval, each seed's own."""
    key, short = ("loss", "loss") if column == "eval_loss" else ("correct", "accuracy")
    values = [res.model.final(column) - base.model.final(column) for res, base in zip(results, papers)]

    def differences() -> tuple[list[np.ndarray], bool]:  # the position files are read only if an interval is drawn
        return seed_differences([(read_positions(base.model.files), read_positions(res.model.files))
                                 for res, base in zip(results, papers)], key)
    est = seed_estimate(values, differences)
    # with under three seeds the interval is over positions only: each seed's own shows whether they agree in sign
    return {f"{short}_vs_paper": est.mean, f"{short}_ci_low": est.low, f"{short}_ci_high": est.high,
            f"{short}_per_seed": " / ".join(f"{v:+.3f}" for v in values), "interval": est.interval}


def _variant_row(name: str, results: list[VariantResult], papers: list[VariantResult]) -> dict[str, Any]:
    row: dict[str, Any] = {"variant": name, "changes": VARIANTS[name].changes if name in VARIANTS else
                           "BERT_TINY: every row drawn from N(0, 0.02)", "n_seeds": len(results),
                           "seeds": ",".join(str(res.run.seed) for res in results)}
    for column in ("eval_loss", "eval_accuracy"):
        row[column] = float(np.mean([res.model.final(column) for res in results]))
        if name != "paper":
            row.update(_paired_columns(results, papers, column))
    if manifests := [res.manifest for res in results if res.manifest]:
        row["n_found"] = int(np.mean([m.get("n_found", 0) for m in manifests]))
        row["found_element_std"] = float(np.mean([m.get("found_element_std") or np.nan for m in manifests]))
    return row


def seed_spread(runs: Sequence[Run], column: str) -> float:
    """BERT_FT's final ``column`` over the seeds, max minus min: the noise floor of a one-seed variant (another seed
    moves the paper recipe itself that much; paper_retrained's zero only checks determinism)."""
    values = [run.model("bert_ft").final(column) for run in runs]
    return float(max(values) - min(values)) if len(values) > 1 else math.nan


def ablation_verdict(mean: float, low: float, high: float, spread: float) -> str:
    """One rule for every variant: 'not shown' when the interval includes 0, 'within seed noise' when the difference
    is no larger than the seeds' spread of the paper recipe, else 'shown'."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "no interval"
    if low <= 0 <= high:
        return "not shown"
    return "within seed noise" if math.isfinite(spread) and abs(mean) <= spread else "shown"


def ablation_table(run_dirs: Sequence[str | Path], ablation_dir: str | Path,
                   floor_dirs: Sequence[str | Path] = ()) -> pd.DataFrame:
    """One row per variant: final loss and accuracy (mean over seeds), the paired difference to 'paper' and its
    verdict against the noise floor, the spread of BERT_FT over the seeds of ``floor_dirs`` (default: the runs)."""
    runs = [load_run(d) for d in run_dirs]
    for run in runs:
        if run.missing or run.last_step is None:
            raise ValueError(f"{run.run_dir} is not a finished run: {'; '.join(run.missing) or 'no metrics'}")
    if len({(r.lang, r.preset, r.steps) for r in runs}) != 1:
        raise ValueError("the ablation runs must share language, preset and steps (they differ only in seed)")
    per_run = [_results(run, Path(ablation_dir)) for run in runs]
    table = pd.DataFrame([_variant_row(name, [r[name] for r in found], [r["paper"] for r in found])
                          for name in ("random init", *VARIANTS) if (found := [r for r in per_run if name in r])])
    if "n_found" in table:
        table["n_found"] = table["n_found"].astype("Int64")  # a count, blank for the random-init row
    floor_runs = [r for r in map(load_run, floor_dirs) if (r.lang, r.preset, r.steps) == (runs[0].lang, runs[0].preset,
                                                                                          runs[0].steps)] or runs
    for short, column in (("loss", "eval_loss"), ("accuracy", "eval_accuracy")):
        spread = seed_spread(floor_runs, column)
        table[f"{short}_noise_floor"] = spread
        table[f"{short}_verdict"] = [ablation_verdict(*bounds, spread) if name not in ("paper", "random init") else ""
                                     for name, *bounds in zip(table["variant"], *_bounds(table, short))]
    table.insert(0, "lang", runs[0].lang)
    table.insert(1, "setting", f"{runs[0].preset}, {runs[0].steps:,} steps")
    return table


def _bounds(table: pd.DataFrame, short: str) -> list[np.ndarray]:
    """The mean difference to the paper recipe in ``short`` ('loss' or 'accuracy') and its interval's ends."""
    return [table[f"{short}{suffix}"].to_numpy(float) for suffix in ("_vs_paper", "_ci_low", "_ci_high")]


def intervals_missing_mean(table: pd.DataFrame) -> list[str]:
    """Rows whose interval does not hold its mean ('variant (loss)'): possible only in rounded or edited records."""
    return [f"{name} ({short})" for short in ("loss", "accuracy")
            for name, mean, low, high in zip(table["variant"], *_bounds(table, short)) if low > mean or high < mean]


def plot_ablations(table: pd.DataFrame) -> Any:
    """Each variant's paired difference to the paper's BERT_FT, loss and accuracy side by side, with intervals."""
    from matplotlib.figure import Figure

    rows = table[table["variant"] != "paper"].iloc[::-1]
    fig = Figure(figsize=(10, 0.6 * len(rows) + 1.6), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, short, label in ((axes[0], "loss", "final eval loss minus the paper recipe's\n(lower is better)"),
                             (axes[1], "accuracy", "final eval accuracy minus the paper recipe's\n(higher is better)")):
        mean, low, high = _bounds(rows, short)
        # matplotlib refuses negative error bars: an interval missing its mean stops at it (the title names it)
        err = np.clip(np.vstack([mean - low, high - mean]), 0, None)
        ax.errorbar(mean, np.arange(len(rows)), xerr=np.where(np.isfinite(err), err, 0), fmt="o", color="tab:orange",
                    capsize=3, label="mean over seeds, 95 % interval")
        seeds = [[float(v) for v in str(text).split(" / ")] for text in rows[f"{short}_per_seed"]]
        ax.plot([v for vs in seeds for v in vs], [i for i, vs in enumerate(seeds) for _ in vs], "x", color="0.3",
                markersize=5, label="each seed")
        ax.axvline(0, color="0.4", linewidth=1)
        ax.set_xlabel(label, fontsize=8)
        ax.grid(axis="x", alpha=0.3)
    # a variant unfinished for one seed is left out of its mean, so each label names its own seeds
    labels = [f"{r.variant}\nseeds {r.seeds} · {r.interval}" for r in rows.itertuples()]
    axes[0].set_yticks(np.arange(len(rows)), labels, fontsize=7)
    fig.legend(*axes[1].get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize=7)
    first = table.iloc[0]
    missing = intervals_missing_mean(rows)
    note = "\n" + textwrap.fill(f"intervals that miss their mean, drawn only up to it: {', '.join(missing)}",
                                 150) if missing else ""
    fig.suptitle(f"BERT_FT ablations ({first['lang']}, {first['setting']}): paired differences to the paper "
                 f"recipe's BERT_FT, 95 % intervals{note}", fontsize=9)
    return fig


def write_outputs(table: pd.DataFrame, out_dir: str | Path, sources: dict[str, Any]) -> list[Path]:
    """ablations.csv/.md, the figure and ablations_provenance.json, replaced as one set (pipeline.store.staging), so a
    failure part-way leaves the previous set whole."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if missing := intervals_missing_mean(table):
        print(f"warning: the interval of {', '.join(missing)} does not hold its mean (a record rounded or edited "
              f"by hand?); {TABLE_NAME}.png draws it only up to the mean", file=sys.stderr)
    names = [f"{TABLE_NAME}.{ext}" for ext in ("csv", "md", *FIGURE_FORMATS)] + [f"{TABLE_NAME}_provenance.json"]
    with staged(out_dir, TABLE_NAME) as staging:
        table.to_csv(staging / names[0], index=False)
        (staging / names[1]).write_text(to_markdown(table) + "\n")  # rounded once, by to_markdown
        save_figure(plot_ablations(table), staging, TABLE_NAME, "Ablations of BERT_FT")
        provenance = {**sources, "variants": {n: v.changes for n, v in VARIANTS.items()}, "environment": environment()}
        (staging / names[-1]).write_text(json.dumps(provenance, indent=2, default=str) + "\n")
        move_into(staging, out_dir)
    return [out_dir / name for name in names]


def main(argv: Sequence[str] | None = None) -> int:
    """The table and figure from trained variants (``--records``, or pipeline.train.ablations' ``--out``)."""
    parser = argparse.ArgumentParser(prog="python -m evidence.ablations", description=__doc__.splitlines()[0])
    runs = parser.add_mutually_exclusive_group(required=True)
    runs.add_argument("--runs", nargs="+", type=Path, help="the ablated runs' folders or records (one per seed)")
    runs.add_argument("--run-records", default=None, help="a folder of run records; the table uses those that "
                      "--records holds ablations of")
    parser.add_argument("--records", required=True, type=Path, help="the variants: their records, or the --out "
                        "folder pipeline.train.ablations trained them in")
    parser.add_argument("--figures", required=True, help="folder for ablations.csv/.md/.png/.pdf")
    args = parser.parse_args(argv)
    try:
        run_dirs = ablated_runs(args.run_records, args.records) if args.run_records else args.runs
        run_dirs = [Path(d).resolve() for d in run_dirs]
        sources = {"runs": [display_path(d) for d in run_dirs], "ablations": display_path(args.records)}
        floor_dirs = sorted(p for p in Path(args.run_records).iterdir() if p.is_dir()) if args.run_records else ()
        for path in write_outputs(ablation_table(run_dirs, args.records, floor_dirs), args.figures, sources):
            print(f"wrote {display_path(path)}")
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
