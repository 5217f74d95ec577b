"""Run folders read back (a missing or unreadable piece is recorded in ``Run.missing``, not raised), and which of
their runs may be compared: runs of one language and setting that differ only in their seed form one
:class:`SeedGroup`; BERT_TINY and BERT_FT are paired only when they agree in everything but the initialisation."""

from __future__ import annotations

import functools
import json
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from helpers import paper_values as paper
from helpers.baselines import Baseline
from pipeline.store.baseline_files import load_baseline
from pipeline.store.fingerprints import input_kind, pair_mismatch
from pipeline.store.layout import (
    EXTRA_MODELS,
    METRIC_COLUMNS,
    ModelFiles,
    RunLayout,
    display_path,
    read_metrics,
    repo_path,
    split_run_folder_name,
)

# How BERT_FT's rows were made, less the seed (fastText's seed gives each seed its own vectors, as it should).
INIT_RECIPE = ("source", "vectors_sha256", "url", "dim", "normalisation", "fallback", "random_std", "pieces", "case",
               "scale", "top_n")  # not scale_factor: measured from each seed's rows, so it differs by seed


def metrics_frame(path: str | Path) -> pd.DataFrame:
    try:
        table = pd.DataFrame(read_metrics(path))
    except (TypeError, KeyError) as err:
        raise ValueError(f"{path} is not a metrics table ({err}); expected columns {list(METRIC_COLUMNS)}") from None
    if absent := [c for c in ("step", "eval_loss", "eval_accuracy") if c not in table.columns]:
        raise ValueError(f"{path} lacks column(s) {absent}; expected {list(METRIC_COLUMNS)}")
    if "train_loss" not in table.columns:
        table["train_loss"] = np.nan
    return table.sort_values("step", kind="stable").reset_index(drop=True)


def read_positions(model: ModelFiles) -> dict[str, np.ndarray]:
    """Per masked position of a model's final evaluation: 'correct' (0 or 1) and 'loss' as floats, and the ids
    kept beside them ('sequence', 'position', and in newer records 'label', 'visible', 'top1') as integers."""
    with np.load(model.positions) as data:
        found = {key: data[key].astype(np.int64) for key in data.files if key not in ("correct", "loss")}
        return {**found, "correct": data["correct"].astype(float), "loss": data["loss"].astype(float)}


@dataclass
class ModelRun:
    name: str
    metrics: pd.DataFrame | None = None
    info: dict[str, Any] | None = None
    files: ModelFiles | None = None

    @property
    def last_step(self) -> int | None:
        return None if self.metrics is None or self.metrics.empty else int(self.metrics["step"].iloc[-1])

    @property
    def steps(self) -> int | None:
        planned = (self.info or {}).get("steps")
        return self.last_step if planned is None else int(planned)

    @property
    def unfinished(self) -> bool:
        """A time-boxed or interrupted run: its last row is not the end of training."""
        steps, last = self.steps, self.last_step
        return (self.info or {}).get("finished") is False or (steps is not None and last is not None and last < steps)

    def passes(self, steps: int | None) -> float:
        """How many times ``steps`` of this model's batches go over its training sequences (NaN when unknown)."""
        info = self.info or {}
        sequences, batch = ((info.get("data") or {}).get("train") or {}).get("sequences"), info.get("batch_size")
        return steps * batch / sequences if steps and sequences and batch else math.nan

    def _rows(self, column: str, upto: int | None) -> pd.DataFrame:
        if self.metrics is None or column not in self.metrics:
            return pd.DataFrame(columns=["step", column])
        return self.metrics if upto is None else self.metrics[self.metrics["step"] <= upto]

    def final(self, column: str, upto: int | None = None) -> float:
        rows = self._rows(column, upto)
        return float(rows[column].iloc[-1]) if not rows.empty else math.nan

    def run_mean(self, column: str, upto: int | None = None) -> float:
        """Whole-run average of an interval mean such as train_loss, each row weighted by its interval's steps."""
        rows = self._rows(column, upto)
        weights, values = rows["step"].diff().to_numpy(dtype=float), rows[column].to_numpy(dtype=float)
        keep = np.isfinite(values) & np.isfinite(weights) & (weights > 0)
        return float(np.average(values[keep], weights=weights[keep])) if keep.any() else math.nan


@dataclass
class Run:
    """One run folder ``runs/<preset>-<lang>[-seed<N>]/`` and what of it could be read."""

    run_dir: Path
    lang: str
    preset: str | None
    seed: int = 0
    manifest: dict[str, Any] | None = None
    models: dict[str, ModelRun] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    baseline: Baseline | None = None
    baseline_problem: str | None = None
    # position_scores.run_positions' result once per run (a RunPositions or why none; Any: that module imports this)
    positions: Any = field(default=None, repr=False, compare=False)

    @property
    def has_metrics(self) -> bool:
        return any(m.metrics is not None for m in self.models.values())

    @property
    def steps(self) -> int | None:
        return next((s for name in paper.MODELS if (s := self.model(name).steps) is not None), None)

    @property
    def max_steps(self) -> int | None:
        caps = ((m.info or {}).get("max_steps", ((m.info or {}).get("identity") or {}).get("max_steps"))
                for m in self.models.values())
        return next((int(cap) for cap in caps if cap is not None), None)

    @property
    def last_step(self) -> int | None:
        """The step our final numbers were measured at (the earlier model's last evaluation)."""
        return min((m.last_step for m in self.models.values() if m.last_step is not None), default=None)

    @property
    def steps_text(self) -> str:
        """'250 steps', or 'stopped at 120 of 250 steps': never let a cut-short run pass for a finished one."""
        if self.steps is None:
            return "not pretrained"
        done = [m.last_step for m in self.models.values() if m.unfinished and m.last_step is not None]
        text = f"stopped at {min(done):,} of {self.steps:,} steps" if done else f"{self.steps:,} steps"
        cap = self.max_steps
        return text + (f", capped by max_steps={cap:,}" if cap is not None and "max" not in str(self.preset) else "")

    @property
    def label(self) -> str:
        """'ours (demo, 250 steps)': the tag every number of ours carries."""
        return f"ours ({self.preset or '?'}, {self.steps_text})"

    def model(self, name: str) -> ModelRun:
        return self.models.get(name) or ModelRun(name)

    def run_json(self, name: str) -> dict[str, Any]:
        return self.model(name).info or {}

    def final(self, name: str, column: str) -> float:
        """Model ``name``'s value at :attr:`last_step`, the step both models' final numbers share."""
        return self.model(name).final(column, self.last_step)


@dataclass
class RunSet:
    """All run folders given to notebook 06, in the paper's language order."""

    runs: list[Run]
    built: dict[tuple, tuple] = field(default_factory=dict, repr=False, compare=False)  # see cached_per_runset

    def langs(self) -> list[str]:
        return order_langs({r.lang for r in self.runs})

    def runs_for(self, lang: str) -> list[Run]:
        return [r for r in sort_runs(self.runs) if r.lang == lang]

    def langs_with_metrics(self) -> list[str]:
        return order_langs({r.lang for r in self.runs if r.has_metrics})

    def summary(self) -> pd.DataFrame:
        """One row per run folder: which pieces were found, so a gap is visible before any table."""
        return pd.DataFrame([{
            "lang": run.lang, "preset": run.preset, "seed": run.seed, "steps": run.steps,
            "static/manifest": run.manifest is not None,
            **{f"{name}/metrics": run.model(name).metrics is not None for name in paper.MODELS},
            "pair": pair_problem(run) or "ok", "unigram baseline": run.baseline is not None,
            "missing": "; ".join(run.missing) or "", "run_dir": display_path(run.run_dir),
        } for run in sort_runs(self.runs)]).astype({"steps": "Int64"})


def cached_per_runset(build: Callable[[RunSet], pd.DataFrame]) -> Callable[[RunSet], pd.DataFrame]:
    """``build`` run once per RunSet and its runs, then copies (06 shows each table, then writes them all; bootstraps
    are slow). Other runs, even at reused addresses, build it again; to see a run edited in place, load it again."""
    @functools.wraps(build)
    def table(runset: RunSet) -> pd.DataFrame:
        key = (build.__module__, build.__qualname__)
        runs, built = runset.built.get(key, ((), None))
        if built is None or len(runs) != len(runset.runs) or any(a is not b for a, b in zip(runs, runset.runs)):
            runset.built[key] = tuple(runset.runs), build(runset)
        return runset.built[key][1].copy()
    return table


def order_langs(langs: Iterable[str]) -> list[str]:
    langs = set(langs)
    return [lang for lang in paper.LANGS if lang in langs] + sorted(langs - set(paper.LANGS))


def sort_runs(runs: Iterable[Run]) -> list[Run]:
    order = {lang: i for i, lang in enumerate(paper.LANGS)}
    return sorted(runs, key=lambda r: (order.get(r.lang, len(order)), r.lang, r.seed, str(r.run_dir)))




def _read_json(path: Path, missing: list[str], what: str) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        missing.append(f"{what} ({path.name} not found)")
    except json.JSONDecodeError as err:
        missing.append(f"{what} (unreadable {path.name}: {err})")
    return None


def load_run(run_dir: str | Path) -> Run:
    """Read one run folder; every absent or unreadable piece is recorded in ``Run.missing``, not raised."""
    run_dir = repo_path(run_dir)
    layout = RunLayout(run_dir)
    missing = [] if run_dir.is_dir() else ["run folder not found"]
    manifest = _read_json(layout.static.manifest, missing, "static vectors")
    models: dict[str, ModelRun] = {}
    for name in [*paper.MODELS, *(extra for extra in EXTRA_MODELS if layout.model(extra).run_json.is_file())]:
        files = layout.model(name)
        models[name] = ModelRun(name, info=_read_json(files.run_json, missing, f"{name} run.json"), files=files)
        try:
            models[name].metrics = metrics_frame(files.metrics)
        except FileNotFoundError:
            missing.append(f"{name} metrics ({files.metrics.name} not found)")
        except ValueError as err:
            missing.append(f"{name} metrics ({err})")

    folder_preset, folder_lang, folder_seed = split_run_folder_name(run_dir.name)
    infos = [m.info for m in models.values() if m.info] + ([manifest] if manifest else [])
    lang = next((i["lang"] for i in infos if i.get("lang")), folder_lang)
    preset = next((i["preset"] for i in infos if i.get("preset")), folder_preset)
    seed = next((int(i["seed"]) for i in infos if i.get("seed") is not None), folder_seed or 0)
    if lang is None:
        raise ValueError(f"cannot tell the language of {run_dir}: no run.json/manifest.json with 'lang' "
                         "and the folder is not named <preset>-<lang>[-seed<N>]")
    if len(langs_seen := {i["lang"] for i in infos if i.get("lang")}) > 1:
        missing.append(f"inconsistent languages in the run folder: {sorted(langs_seen)}")
    run = Run(run_dir, lang, preset, seed, manifest, models, missing)
    try:
        if run.has_metrics:
            config = (run.run_json("bert_tiny") or run.run_json("bert_ft")).get("train_config") or {}
            run.baseline = load_baseline(layout.step("pretrain"), config.get("eval_sequences"))
    except (FileNotFoundError, ValueError, KeyError, OSError) as err:
        run.baseline_problem = f"no unigram baseline: {err}"
    return run


def load_runs(run_dirs: Sequence[str | Path] | str | Path) -> RunSet:
    """Load every run folder; FileNotFoundError only when none of them exists (nothing to show at all)."""
    if isinstance(run_dirs, str) and run_dirs.lstrip().startswith("["):
        run_dirs = json.loads(run_dirs)  # a list passed as text, e.g. `papermill -p run_dirs '["runs/demo-en"]'`
    if isinstance(run_dirs, (str, Path)):
        run_dirs = [run_dirs]
    if not run_dirs:
        raise ValueError("run_dirs is empty; pass run folders such as ['runs/demo-en']")
    resolved = dict.fromkeys(repo_path(d) for d in run_dirs)  # one folder given twice counts once
    runs = [load_run(d) for d in resolved]
    if not any(r.run_dir.is_dir() for r in runs):
        raise FileNotFoundError(
            f"none of the run folders exist: {[str(r.run_dir) for r in runs]}; run the main job first "
            "(`make figures`, or `python -m pipeline.job --preset demo --lang en`) or notebooks 01-05")
    for run in runs:
        if run.missing:
            warnings.warn(f"{run.run_dir}: missing {'; '.join(run.missing)}", stacklevel=2)
    return RunSet(runs)




def pair_problem(run: Run) -> str | None:
    """Why the run's two models cannot be compared ('missing: ...' or 'mismatch: ...'); None when they can."""
    if absent := [paper.MODEL_LABELS[n] for n in paper.MODELS if run.model(n).metrics is None]:
        return "missing: " + ("no pretrain/ metrics" if len(absent) == len(paper.MODELS)
                              else f"no {', '.join(absent)} metrics")
    mismatch = pair_mismatch(run.run_json("bert_tiny"), run.run_json("bert_ft"))
    return None if mismatch is None else f"mismatch: {mismatch}"


def setting_key(run: Run) -> tuple[Any, ...]:
    """Everything but the seed: runs with equal keys are repeats of one experiment. The text and the tokenizer
    count by content (two files corpora are both 'files'). BERT_FT's vectors differ by seed, but their recipe (source
    file by content, fastText settings, alignment options) must not: other vectors are another experiment."""
    identity = run.run_json("bert_tiny")["identity"]  # present: only a fair pair (pair_problem) is keyed
    manifest = run.run_json("bert_ft").get("init_manifest") or run.manifest or {}
    recipe = {**{key: manifest.get(key) for key in INIT_RECIPE},
              "fasttext": {k: v for k, v in (manifest.get("fasttext") or {}).items() if k != "seed"}}
    return (run.lang, run.preset, run.steps, input_kind(identity.get("corpus")), identity.get("data_fingerprint"),
            identity.get("tokenizer_fingerprint"), run.max_steps, identity.get("train_config_hash"),
            json.dumps(recipe, sort_keys=True, default=str))


@dataclass
class SeedGroup:
    """The comparable runs of one language and setting, one per seed, and the runs left out (with why)."""

    lang: str
    runs: list[Run]
    excluded: dict[str, str] = field(default_factory=dict)  # run folder -> reason

    @property
    def seeds(self) -> list[int]:
        return [r.seed for r in self.runs]

    @property
    def first(self) -> Run:
        return self.runs[0]

    @property
    def label(self) -> str:
        """'ours (demo, 300 steps)' for one seed, 'ours (demo, 300 steps, 3 seeds)' for several."""
        return self.first.label if len(self.runs) == 1 else f"{self.first.label[:-1]}, {len(self.runs)} seeds)"

    @property
    def first_seed_label(self) -> str:
        """'ours (demo, 300 steps, seed 1)': for a table that shows the first seed alone, never the seed count."""
        return f"{self.first.label[:-1]}, seed {self.first.seed})"

    @property
    def total_steps(self) -> int | None:
        return min((r.last_step for r in self.runs if r.last_step is not None), default=None)

    def mean(self, value: Callable[[Run], float]) -> float:
        return float(np.mean([value(run) for run in self.runs])) if self.runs else math.nan

    def with_models(self, *names: str) -> SeedGroup:
        """The seeds that also trained every model of ``names`` (an extra arm is trained on some seeds only)."""
        return SeedGroup(self.lang, [r for r in self.runs if all(name in r.models for name in names)])

    @property
    def baseline(self) -> dict[str, float] | None:
        """The unigram baseline averaged over the seeds' data folders (equal when their data are equal)."""
        found = [r.baseline for r in self.runs if r.baseline is not None]
        keys = ("unigram_loss", "unigram_train_loss", "unigram_accuracy", "most_frequent_accuracy")
        return {k: float(np.mean([getattr(b, k) for b in found])) for k in keys} if found else None

    @property
    def note(self) -> str:
        return "; ".join(f"left out {path} ({why})" for path, why in self.excluded.items())


def comparison_groups(runset: RunSet) -> list[SeedGroup]:
    """Every language's fair pairs grouped by setting; mismatched or incomplete runs are listed, never pooled."""
    groups: list[SeedGroup] = []
    for lang in runset.langs():
        by_key: dict[tuple[Any, ...], SeedGroup] = {}
        excluded: dict[str, str] = {}
        for run in runset.runs_for(lang):
            if (problem := pair_problem(run)) is not None:
                excluded[display_path(run.run_dir)] = problem
                continue
            group = by_key.setdefault(setting_key(run), SeedGroup(lang, []))
            if run.seed in group.seeds:
                excluded[display_path(run.run_dir)] = f"duplicate: seed {run.seed} is already counted"
                continue
            group.runs.append(run)
        by_size = sorted(by_key.values(), key=lambda g: -len(g.runs)) or ([SeedGroup(lang, [])] if excluded else [])
        groups += [SeedGroup(lang, g.runs, dict(excluded)) for g in by_size]
    return groups


def main_groups(runset: RunSet) -> dict[str, SeedGroup]:
    """Per language, in table order, the comparable group with the most seeds: the one figures and claims show."""
    groups = [g for g in comparison_groups(runset) if g.runs]
    return {lang: next(g for g in groups if g.lang == lang) for lang in dict.fromkeys(g.lang for g in groups)}
