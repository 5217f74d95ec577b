"""Ablations of BERT_FT's initialisation: one choice of notebook 03 changed at a time, BERT_FT trained again.

Each variant trains on the **same prepared data, tokenizer, seed and schedule** as a finished run of notebooks
01-05, whose BERT_FT is the ``paper`` row and BERT_TINY the random-init row: every difference is paired by seed
and evaluation position, with notebook 06's intervals (helpers.claims.seed_estimate).
``--table-only`` redraws the table and figure from the records alone.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import sys
import textwrap
from dataclasses import asdict, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd

from helpers import presets
from helpers import static_vectors as sv
from helpers.claims import seed_estimate
from helpers.presets import VectorsConfig
from helpers.pretrain import cap_steps
from pipeline.data import CorpusSpec
from pipeline.fasttext_training import FastTextSettings
from pipeline.figure_plots import FIGURE_FORMATS, save_figure
from pipeline.figures import to_markdown
from pipeline.layout import AblationLayout, RunLayout, VariantFiles
from pipeline.position_scores import seed_differences
from pipeline.records import copy_into, model_record_files, read_info
from pipeline.results import ModelRun, Run, display_path, load_run, metrics_frame, pair_mismatch, read_positions
from pipeline.runinfo import device_argument, environment
from pipeline.staging import move_into, staged, written_whole
from pipeline.static_files import load_aligned, save_aligned

TABLE_NAME = "ablations"


class Variant(NamedTuple):
    """One change to the paper's alignment recipe: the VectorsConfig fields of notebook 03 it changes."""

    name: str
    changes: str  # what differs from the paper's recipe, for the table
    settings: Mapping[str, Any] = MappingProxyType({})  # read-only: a NamedTuple's default is shared by every variant


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("paper", "none: zero fallback, unit length + centre, ## pieces skipped, scale as is"),
    # Another CPU or thread count reorders sums, which training amplifies: a determinism check of the pairing, not
    # the noise floor of a variant (that is BERT_FT's spread over seeds, ablation_table's *_noise_floor).
    Variant("paper_retrained", "none: the paper recipe trained again, so only floating-point rounding differs "
            "(a determinism check of the pairing)"),
    Variant("fallback_random", "tokens without a vector start from N(0, 0.02) instead of zeros (Section 4.2)",
            {"fallback": "random"}),
    Variant("normalise_none", "raw fastText vectors, neither unit length nor centred", {"normalisation": ()}),
    Variant("normalise_unit", "unit length only, not centred", {"normalisation": ("unit",)}),
    Variant("pieces_strip", "## pieces take the vector of the word they spell (##ing -> ing)", {"pieces": "strip"}),
    Variant("scale_bert", "copied rows rescaled to a per-element std of 0.02, BERT's initialiser", {"scale": "bert"}),
    # "do better vectors help?" (benchmarks/results/fasttext_settings.csv)
    Variant("vectors_old", "the old demo's vectors: skip-gram, 3 epochs, n-grams 3-6 (WordSim-353 0.240, "
            "not 0.536)", {"fasttext": FastTextSettings(model="skipgram", epochs=3)}),
)}
TRAINED = tuple(name for name in VARIANTS if name != "paper")


def check_variants(names: Sequence[str]) -> list[str]:
    if unknown := [n for n in names if n not in TRAINED]:
        raise ValueError(f"unknown ablation variant(s) {', '.join(unknown)}; choose from {', '.join(TRAINED)}")
    return list(names)


def _run_settings(run_dir: Path) -> tuple[dict[str, Any], VectorsConfig]:
    """The run's manifest and notebook 03's settings, checked against what the manifest says it used."""
    path = RunLayout(run_dir).static.manifest
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: the ablations start from a finished run of notebooks 01-05 "
                                "(python -m pipeline.job --preset reference --lang en)")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    config = presets.get(manifest["preset"]).vectors
    if config.source != "train" or manifest.get("source") != "train":
        raise ValueError("the ablations retrain fastText as notebook 03 did, so they need a run whose vectors "
                         f"were trained here (preset smoke, demo or reference), not source={manifest.get('source')!r}")
    return manifest, config


def _raw_vectors(manifest: dict[str, Any], config: VectorsConfig, cache_dir: Path) -> sv.WordVectors:
    """fastText vectors trained as notebook 03 trains them with ``config`` (one thread: identical reruns), cached."""
    from pipeline import vector_files as vf

    key = hashlib.sha256(json.dumps([asdict(config.fasttext), manifest["lang"], manifest["seed"],
                                     manifest["corpus_source"], config.max_docs, config.top_n],
                                    sort_keys=True).encode()).hexdigest()[:16]
    cached = cache_dir / f"vectors-{key}.npz"
    if cached.is_file():
        with np.load(cached, allow_pickle=False) as data:
            return sv.WordVectors([str(w) for w in data["words"]], data["matrix"])
    source = vf.obtain_vectors(config, manifest["lang"], CorpusSpec.parse(manifest["corpus_source"]), manifest["seed"],
                               progress=False)
    cache_dir.mkdir(parents=True, exist_ok=True)
    # Written whole, then renamed: two processes ablating one run never read each other's half-written file.
    with written_whole(cached, tmp=cached.with_name(f".{cached.stem}.{os.getpid()}.npz"),
                       rerun="the vectors are made again") as partial:
        np.savez(partial, words=np.array(source.vectors.words), matrix=source.vectors.matrix)
    return source.vectors


def build_alignment(run_dir: Path, variant: Variant, cache_dir: Path) -> tuple[sv.Alignment, dict[str, Any]]:
    """The run's alignment with ``variant``'s one change (the 'paper' variant must reproduce the run's own), and its
    manifest: the run's, with what the variant changed and without what described the run's own vectors."""
    from helpers.tokenizer import load_tokenizer

    manifest, run_config = _run_settings(run_dir)
    config = replace(run_config, **variant.settings)
    raw = _raw_vectors(manifest, config, cache_dir)
    vectors = sv.normalise_vectors(raw, config.normalisation) if config.normalisation else raw
    alignment = sv.align(load_tokenizer(RunLayout(run_dir).step("tokenizer")), vectors, seed=int(manifest["seed"]),
                         top_n=config.top_n, fallback=config.fallback, pieces=config.pieces, case=config.case,
                         scale=config.scale)
    retrained = {"fasttext": asdict(config.fasttext)} if "fasttext" in variant.settings else {}
    dropped = {"normalisation", "fallback", "pieces", "scale", "n_found", "found_element_std", "text_coverage",
               *(("word_similarity", "train_seconds", "train_cpu_seconds", "n_model_words") if retrained else ())}
    return alignment, {**{k: v for k, v in manifest.items() if k not in dropped}, "ablation": variant.name,
                       "changes": variant.changes, "normalisation": list(config.normalisation), **retrained}


def check_reproduces_run(run_dir: Path, cache_dir: Path) -> None:
    """The rebuilt paper variant must equal the run's saved embeddings, or the ablations compare unlike things."""
    rebuilt, _ = build_alignment(run_dir, VARIANTS["paper"], cache_dir)
    static = RunLayout(run_dir).step("static")
    saved = load_aligned(static)
    if not (np.array_equal(rebuilt.found, saved.found) and np.array_equal(rebuilt.matrix, saved.matrix)):
        raise ValueError(f"retraining fastText did not reproduce {static}: the run's vectors came from "
                         "other settings or code; rerun notebook 03 for the run before ablating it")


def train_variant(run_dir: Path, name: str, out_dir: Path, device: str = "auto") -> VariantFiles:
    """Align with the variant's change and train BERT_FT as the run's BERT_FT was trained; returns its files."""
    from helpers.tokenizer import load_tokenizer
    from pipeline.training import train

    variant = VARIANTS[check_variants([name])[0]]
    ablations, run = AblationLayout(out_dir), RunLayout(run_dir)
    files = ablations.variant(run_dir.name, name)
    if not files.static.manifest.is_file():
        save_aligned(files.static.folder, *build_alignment(run_dir, variant, ablations.vectors_cache))
    tiny_info = read_info(run, "bert_tiny")
    # the TrainConfig the run's BERT_TINY was trained with: its preset's, capped as run.json records
    cfg, max_steps = presets.get(tiny_info["preset"]).train, (tiny_info.get("train_config") or {}).get("max_steps")
    train("bert_ft", files.static.folder, cap_steps(cfg, max_steps) if max_steps is not None else cfg,
          run.step("pretrain"), files.folder, tokenizer=load_tokenizer(run.step("tokenizer")), device=device,
          seed=int(tiny_info["seed"]))
    if problem := pair_mismatch(tiny_info, json.loads(files.model.run_json.read_text(encoding="utf-8"))):
        raise ValueError(f"{files.folder}: the variant's BERT_FT is not comparable with the run's BERT_TINY "
                         f"({problem})")
    return files


def save_variant_record(files: VariantFiles, records_dir: Path) -> Path:
    """Copy a trained variant's small files into ``records_dir``, laid out as an ablations folder."""
    record = AblationLayout(records_dir).variant(files.folder.parent.name, files.folder.name).folder
    paths = [files.static.manifest, *model_record_files(files.model)]
    for absent in (path for path in paths if not path.is_file()):
        raise FileNotFoundError(f"{absent} not found: train the variant first")
    copy_into(paths, files.folder, record)
    return record


def ablated_runs(run_records: str | Path, ablation_records: str | Path) -> list[Path]:
    """The run records whose ablations were recorded: the table is redrawn over exactly those runs."""
    run_records, ablation_records = Path(run_records), Path(ablation_records)
    names = sorted(p.name for p in ablation_records.iterdir() if p.is_dir()) if ablation_records.is_dir() else []
    if not names:
        raise FileNotFoundError(f"no ablation records under {ablation_records}: train the variants first "
                                "(python -m pipeline.ablations --runs RUN_DIR ... --records DIR)")
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
    """ablations.csv/.md, the figure and ablations_provenance.json, replaced as one set (pipeline.staging), so a
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
    """Train every variant for every run (a stopped one resumes; each saved as a record with ``--records``),
    then write the table from the records (else from ``--out``)."""
    parser = argparse.ArgumentParser(prog="python -m pipeline.ablations", description=__doc__.splitlines()[0])
    add = parser.add_argument
    runs = parser.add_mutually_exclusive_group(required=True)
    runs.add_argument("--runs", nargs="+", type=Path, help="finished run folders (one per seed), or their records "
                      "with --table-only")
    runs.add_argument("--run-records", default=None, help="with --table-only: a folder of run records; the table "
                      "uses those that --records holds ablations of")
    add("--out", default="runs/ablations", type=Path, help="where variants are trained (resumable)")
    add("--figures", required=True, help="folder for ablations.csv/.md/.png/.pdf")
    add("--records", default=None, type=Path, help="save each variant's small files here and make the table from "
        "them (with --table-only: read them from here)")
    add("--variants", default=",".join(TRAINED), help=f"comma-separated, from {', '.join(TRAINED)}")
    add("--device", default="auto", type=device_argument, help="auto, cpu, cuda or cuda:N")
    add("--table-only", action="store_true", help="train nothing; the table from --records or --out")
    args = parser.parse_args(argv)
    try:
        names = check_variants([n.strip() for n in args.variants.split(",") if n.strip()])
        if args.run_records is not None:
            if not args.table_only or args.records is None:
                raise ValueError("--run-records redraws recorded ablations: give it with --table-only and --records")
            args.runs = ablated_runs(args.run_records, args.records)
        run_dirs, out = [d.resolve() for d in args.runs], args.out.resolve()
        to_train = () if args.table_only else run_dirs
        for run_dir in to_train:
            check_reproduces_run(run_dir, AblationLayout(out).vectors_cache)
        for run_dir, name in itertools.product(to_train, names):
            print(f"== {run_dir.name} · {name}", flush=True)
            files = train_variant(run_dir, name, out, args.device)
            if args.records is not None:
                save_variant_record(files, args.records)
        ablation_dir = args.records or out
        sources = {"runs": [display_path(d) for d in run_dirs], "ablations": display_path(ablation_dir)}
        floor_dirs = sorted(p for p in Path(args.run_records).iterdir() if p.is_dir()) if args.run_records else ()
        for path in write_outputs(ablation_table(run_dirs, ablation_dir, floor_dirs), args.figures, sources):
            print(f"wrote {display_path(path)}")
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
