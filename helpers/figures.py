"""The paper's Tables 1-3 and its claims, rebuilt from our run folders with the paper's numbers beside them.

Our numbers come from short runs (smoke/demo presets, a small Wikipedia corpus, fastText vectors
trained locally); the paper's come from 100,000-step runs on C4 with cc.LANG.300 vectors. So every
row of ours carries its preset, steps and seeds, the paper's values appear only in rows labelled
"paper", and a context-free **unigram** row (:mod:`helpers.baselines`) shows the floor a run must
clear before any claim about it means something. A language without a run stays missing.

Runs of one language that differ only in their seed (folders ``<preset>-<lang>`` for seed 0,
``<preset>-<lang>-seed<N>`` otherwise) are pooled: tables and claims give the mean over seeds and a
95 % interval (a t-interval over seeds when there are at least 3, else a bootstrap over the
evaluation positions), and the column ``interval`` names the method. BERT_TINY and BERT_FT are
paired only when their runs agree in everything but the initialisation. The figures are drawn by
:mod:`helpers.plots.figures`.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from helpers import paper_values as paper
from helpers.baselines import Baseline, load_baseline
from helpers.crossing import crossing_step, fraction_of, under_fraction
from helpers.pretrain import METRIC_COLUMNS, read_metrics
from helpers.runinfo import RECORDED_PACKAGES, REPO_ROOT, git_commit, package_versions

REQUIRED_METRIC_COLUMNS = ("step", "eval_loss", "eval_accuracy")
FIGURE_NAMES = ("fig1a_train_loss", "fig1b_eval_loss", "fig2_eval_accuracy", "fig3_accuracy_by_language")
TABLE_NAMES = ("table1_vectors_found", "table2_loss", "table3_accuracy", "claims_check")
FIGURE_FORMATS = ("png", "pdf")
MISSING_MARK = "—"
PAPER_RUN_LABEL = f"paper ({paper.STEPS:,} steps, batch {paper.BATCH_SIZE}, C4, cc.LANG.300)"
KIND_COLUMN = {"train": "train_loss", "eval": "eval_loss"}
POSITIONS_FILE = "eval_positions.npz"  # per masked position of the final evaluation: correct (bool), loss
CONFIDENCE = 0.95
MIN_SEEDS_FOR_T = 3  # fewer seeds: bootstrap over evaluation positions instead
BOOTSTRAP_DRAWS = 2000
TESTABLE_MARGIN = 0.5  # nats: BERT_TINY must end this far below the unigram loss for a claim to mean anything
# What must agree between the two runs of one comparison (run.json "identity"), and the older fallback.
IDENTITY_FIELDS = ("lang", "seed", "preset", "corpus", "max_steps", "data_fingerprint", "tokenizer_fingerprint",
                   "train_config_hash")
FALLBACK_IDENTITY_FIELDS = ("lang", "seed", "preset", "train_config")
TRAIN_LOSS_NOTE = (
    "train_loss is the mean over the last interval between two evaluations (what Figure 1a ends on and what "
    "the comparison with the paper uses); train_loss (run mean) averages the whole run. The paper's training "
    "losses lie 0.22-0.43 above its evaluation losses, which a whole-run average fits better; it does not say "
    "which it reports.")


# --------------------------------------------------------------------------- loading


def metrics_frame(path: str | Path) -> pd.DataFrame:
    """A metrics.csv (read by the canonical :func:`helpers.pretrain.read_metrics`) as a DataFrame sorted by step."""
    try:
        table = pd.DataFrame(read_metrics(path))
    except (TypeError, KeyError) as err:
        raise ValueError(f"{path} is not a metrics table ({err}); expected columns {list(METRIC_COLUMNS)}") from None
    absent = [c for c in REQUIRED_METRIC_COLUMNS if c not in table.columns]
    if absent:
        raise ValueError(f"{path} lacks column(s) {absent}; expected {list(METRIC_COLUMNS)}")
    if "train_loss" not in table.columns:
        table["train_loss"] = np.nan
    return table.sort_values("step", kind="stable").reset_index(drop=True)


@dataclass
class ModelRun:
    """One model's pretraining record: its metrics table (None if missing), its run.json and its folder."""

    name: str
    metrics: pd.DataFrame | None = None
    info: dict[str, Any] | None = None
    folder: Path | None = None

    @property
    def last_step(self) -> int | None:
        if self.metrics is None or self.metrics.empty:
            return None
        return int(self.metrics["step"].iloc[-1])

    @property
    def steps(self) -> int | None:
        """Planned steps from run.json, else the last evaluated step."""
        if self.info and self.info.get("steps") is not None:
            return int(self.info["steps"])
        return self.last_step

    @property
    def unfinished(self) -> bool:
        """A time-boxed or interrupted run: its last row is not the end of training."""
        steps, last = self.steps, self.last_step
        return bool(self.info and self.info.get("finished") is False) or (
            steps is not None and last is not None and last < steps)

    def final(self, column: str, upto: int | None = None) -> float:
        """The value in the last evaluation row at or before step ``upto`` (NaN if missing)."""
        if self.metrics is None or self.metrics.empty or column not in self.metrics:
            return math.nan
        rows = self.metrics if upto is None else self.metrics[self.metrics["step"] <= upto]
        return float(rows[column].iloc[-1]) if not rows.empty else math.nan

    def run_mean(self, column: str, upto: int | None = None) -> float:
        """Whole-run average of an interval mean such as train_loss, each row weighted by its interval's steps."""
        if self.metrics is None or column not in self.metrics:
            return math.nan
        rows = self.metrics if upto is None else self.metrics[self.metrics["step"] <= upto]
        weights = rows["step"].diff().to_numpy()
        values = rows[column].to_numpy(dtype=float)
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
    comparison: dict[str, Any] | None = None
    probe: pd.DataFrame | None = None
    missing: list[str] = field(default_factory=list)
    baseline: Baseline | None = None
    baseline_problem: str | None = None

    @property
    def has_metrics(self) -> bool:
        return any(m.metrics is not None for m in self.models.values())

    @property
    def steps(self) -> int | None:
        for name in paper.MODELS:
            model = self.models.get(name)
            if model is not None and model.steps is not None:
                return model.steps
        return None

    @property
    def max_steps(self) -> int | None:
        """The --max-steps cap a run was trained under, when run.json records one."""
        for model in self.models.values():
            info = model.info or {}
            cap = info.get("max_steps", (info.get("identity") or {}).get("max_steps"))
            if cap is not None:
                return int(cap)
        return None

    @property
    def last_step(self) -> int | None:
        """The step our final numbers were measured at (the earlier model's last evaluation)."""
        steps = [m.last_step for m in self.models.values() if m.last_step is not None]
        return min(steps) if steps else None

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

    def final(self, name: str, column: str) -> float:
        """Model ``name``'s value at :attr:`last_step`, the step both models' final numbers share."""
        return self.model(name).final(column, self.last_step)


@dataclass
class RunSet:
    """All run folders given to notebook 06, in the paper's language order."""

    runs: list[Run]

    def langs(self) -> list[str]:
        """Languages of all runs (with or without metrics), paper order first."""
        return order_langs({r.lang for r in self.runs})

    def with_metrics(self) -> list[Run]:
        return [r for r in sort_runs(self.runs) if r.has_metrics]

    def runs_for(self, lang: str) -> list[Run]:
        return [r for r in sort_runs(self.runs) if r.lang == lang]

    def langs_with_metrics(self) -> list[str]:
        return order_langs({r.lang for r in self.with_metrics()})

    def summary(self) -> pd.DataFrame:
        """One row per run folder: which pieces were found, so a gap is visible before any table."""
        rows = []
        for run in sort_runs(self.runs):
            rows.append({
                "lang": run.lang, "preset": run.preset, "seed": run.seed, "steps": run.steps,
                "static/manifest": run.manifest is not None,
                **{f"{name}/metrics": run.model(name).metrics is not None for name in paper.MODELS},
                "pair": pair_problem(run) or "ok",
                "unigram baseline": run.baseline is not None,
                "missing": "; ".join(run.missing) or "",
                "run_dir": display_path(run.run_dir),
            })
        return pd.DataFrame(rows).astype({"steps": "Int64"})


def order_langs(langs: Iterable[str]) -> list[str]:
    """Paper languages in Table order, then any others alphabetically."""
    langs = set(langs)
    return [lang for lang in paper.LANGS if lang in langs] + sorted(langs - set(paper.LANGS))


def sort_runs(runs: Iterable[Run]) -> list[Run]:
    order = {lang: i for i, lang in enumerate(paper.LANGS)}
    return sorted(runs, key=lambda r: (order.get(r.lang, len(order)), r.lang, r.seed, str(r.run_dir)))


def display_path(path: str | Path) -> str:
    """A path inside the repository as ``runs/demo-en``, so committed tables name no one's home folder."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def resolve_path(path: str | Path) -> Path:
    """Relative paths are relative to the repository root, so the notebook works from notebooks/ too."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else REPO_ROOT / path


def _read_json(path: Path, missing: list[str], what: str) -> dict[str, Any] | None:
    if not path.is_file():
        missing.append(f"{what} ({path.name} not found)")
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as err:
        missing.append(f"{what} (unreadable {path.name}: {err})")
        return None


FOLDER_NAME = re.compile(r"^(?P<preset>.+?)-(?P<lang>[^-]+?)(?:-seed(?P<seed>\d+))?$")


def split_folder_name(run_dir: Path) -> tuple[str | None, str | None, int | None]:
    """'demo-en' -> ('demo', 'en', None); 'demo-en-seed2' -> ('demo', 'en', 2): the runs/ naming contract."""
    match = FOLDER_NAME.match(run_dir.name)
    if not match:
        return None, None, None
    return match["preset"], match["lang"], int(match["seed"]) if match["seed"] else None


def _load_baseline(run: Run) -> None:
    info = run.model("bert_tiny").info or run.model("bert_ft").info or {}
    eval_sequences = (info.get("train_config") or {}).get("eval_sequences")
    try:
        run.baseline = load_baseline(run.run_dir / "pretrain", eval_sequences)
    except (FileNotFoundError, ValueError, KeyError, OSError) as err:
        run.baseline_problem = f"no unigram baseline: {err}"


def load_run(run_dir: str | Path) -> Run:
    """Read one run folder; every absent or unreadable piece is recorded in ``Run.missing``, not raised."""
    run_dir = resolve_path(run_dir)
    missing: list[str] = []
    if not run_dir.is_dir():
        missing.append("run folder not found")
    manifest = _read_json(run_dir / "static" / "manifest.json", missing, "static vectors")
    models: dict[str, ModelRun] = {}
    for name in paper.MODELS:
        model_dir = run_dir / "pretrain" / name
        model = ModelRun(name, info=_read_json(model_dir / "run.json", missing, f"{name} run.json"), folder=model_dir)
        try:
            model.metrics = metrics_frame(model_dir / "metrics.csv")
        except FileNotFoundError:
            missing.append(f"{name} metrics (metrics.csv not found)")
        except ValueError as err:
            missing.append(f"{name} metrics ({err})")
        models[name] = model
    comparison_path = run_dir / "pretrain" / "comparison.json"
    comparison = json.loads(comparison_path.read_text()) if comparison_path.is_file() else None
    probe_path = run_dir / "probe" / "results.csv"
    probe = pd.read_csv(probe_path) if probe_path.is_file() else None

    folder_preset, folder_lang, folder_seed = split_folder_name(run_dir)
    infos = [m.info for m in models.values() if m.info] + ([manifest] if manifest else [])
    lang = next((i["lang"] for i in infos if i.get("lang")), folder_lang)
    preset = next((i["preset"] for i in infos if i.get("preset")), folder_preset)
    seed = next((int(i["seed"]) for i in infos if i.get("seed") is not None), folder_seed or 0)
    if lang is None:
        raise ValueError(f"cannot tell the language of {run_dir}: no run.json/manifest.json with 'lang' "
                         "and the folder is not named <preset>-<lang>[-seed<N>]")
    langs_seen = {i["lang"] for i in infos if i.get("lang")}
    if len(langs_seen) > 1:
        missing.append(f"inconsistent languages in the run folder: {sorted(langs_seen)}")
    run = Run(run_dir, lang, preset, seed, manifest, models, comparison, probe, missing)
    if run.has_metrics:
        _load_baseline(run)
    return run


def load_runs(run_dirs: Sequence[str | Path] | str | Path) -> RunSet:
    """Load every run folder; FileNotFoundError only when none of them exists (nothing to show at all)."""
    if isinstance(run_dirs, str) and run_dirs.lstrip().startswith("["):
        run_dirs = json.loads(run_dirs)  # a list passed as text, e.g. `papermill -p run_dirs '["runs/demo-en"]'`
    if isinstance(run_dirs, (str, Path)):
        run_dirs = [run_dirs]
    if not run_dirs:
        raise ValueError("run_dirs is empty; pass run folders such as ['runs/demo-en']")
    resolved = list(dict.fromkeys(resolve_path(d).resolve() for d in run_dirs))  # one folder given twice counts once
    runs = [load_run(d) for d in resolved]
    if not any(r.run_dir.is_dir() for r in runs):
        raise FileNotFoundError(
            f"none of the run folders exist: {[str(r.run_dir) for r in runs]}; run the main job first "
            "(`make figures`, or `python -m helpers.run --preset demo --lang en`) or notebooks 01-05")
    for run in runs:
        if run.missing:
            warnings.warn(f"{run.run_dir}: missing {'; '.join(run.missing)}", stacklevel=2)
    return RunSet(runs)


# --------------------------------------------------------------------------- which runs may be compared


def identity_of(info: dict[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    """The fields of a run.json that say which experiment it belongs to (its "identity" block when present)."""
    source = info.get("identity") if isinstance(info.get("identity"), dict) else info
    return {name: source.get(name) for name in fields}


def init_kind(info: dict[str, Any]) -> str | None:
    """'random' or the kind of static initialisation ("init": {"kind": ...}, or the older "init": "random"|path)."""
    init = info.get("init")
    if isinstance(init, dict):
        return init.get("kind")
    if isinstance(init, str):
        return "random" if init == "random" else "static"
    return None


def _differences(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> list[str]:
    found = []
    for key in sorted(set(a) | set(b)):
        left, right = a.get(key), b.get(key)
        if isinstance(left, dict) and isinstance(right, dict):
            found += _differences(left, right, f"{prefix}{key}.")
        elif left != right:
            found.append(f"{prefix}{key} {left!r} vs {right!r}")
    return found


def pair_mismatch(tiny_info: dict[str, Any], ft_info: dict[str, Any]) -> str | None:
    """What differs between BERT_TINY's and BERT_FT's run.json beyond the initialisation; None for a fair pair."""
    both_new = isinstance(tiny_info.get("identity"), dict) and isinstance(ft_info.get("identity"), dict)
    fields = IDENTITY_FIELDS if both_new else FALLBACK_IDENTITY_FIELDS
    found = _differences(identity_of(tiny_info, fields), identity_of(ft_info, fields))
    if init_kind(tiny_info) not in (None, "random"):
        found.append(f"BERT_TINY was initialised from {init_kind(tiny_info)!r}, not at random")
    if init_kind(ft_info) == "random":
        found.append("BERT_FT was initialised at random, not from static vectors")
    return "; ".join(found) or None


def pair_problem(run: Run) -> str | None:
    """Why the run's two models cannot be compared ('missing: ...' or 'mismatch: ...'); None when they can."""
    absent = [paper.MODEL_LABELS[n] for n in paper.MODELS if run.model(n).metrics is None]
    if absent:
        return "missing: " + ("no pretrain/ metrics" if len(absent) == len(paper.MODELS)
                              else f"no {', '.join(absent)} metrics")
    mismatch = pair_mismatch(run.model("bert_tiny").info or {}, run.model("bert_ft").info or {})
    return None if mismatch is None else f"mismatch: {mismatch}"


def setting_key(run: Run) -> tuple[Any, ...]:
    """Everything but the seed and the initialisation: runs with equal keys are repeats of one experiment."""
    info = run.model("bert_tiny").info or {}
    identity = info.get("identity") if isinstance(info.get("identity"), dict) else {}
    config = identity.get("train_config_hash") or json.dumps(info.get("train_config"), sort_keys=True, default=str)
    return (run.lang, run.preset, run.steps, identity.get("corpus"), run.max_steps, config)


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
        text = self.first.label
        return text if len(self.runs) == 1 else f"{text[:-1]}, {len(self.runs)} seeds)"

    @property
    def total_steps(self) -> int | None:
        return min((r.last_step for r in self.runs if r.last_step is not None), default=None)

    def per_seed(self, value: Callable[[Run], float]) -> list[float]:
        return [value(run) for run in self.runs]

    def mean(self, value: Callable[[Run], float]) -> float:
        values = self.per_seed(value)
        return float(np.mean(values)) if values else math.nan

    @property
    def baseline(self) -> dict[str, float] | None:
        """The unigram baseline averaged over the seeds' data folders (equal when their data are equal)."""
        found = [r.baseline for r in self.runs if r.baseline is not None]
        if not found:
            return None
        keys = ("unigram_loss", "unigram_train_loss", "unigram_accuracy", "most_frequent_accuracy")
        return {k: float(np.mean([getattr(b, k) for b in found])) for k in keys}

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
            problem = pair_problem(run)
            if problem is not None:
                excluded[display_path(run.run_dir)] = problem
                continue
            group = by_key.setdefault(setting_key(run), SeedGroup(lang, []))
            if run.seed in group.seeds:
                excluded[display_path(run.run_dir)] = f"duplicate: seed {run.seed} is already counted"
                continue
            group.runs.append(run)
        lang_groups = sorted(by_key.values(), key=lambda g: -len(g.runs))
        for group in lang_groups:
            group.excluded = dict(excluded)
        groups += lang_groups or ([SeedGroup(lang, [], excluded)] if excluded else [])
    return groups


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


# --------------------------------------------------------------------------- tables


def _paper_row(lang: str, **values: Any) -> dict[str, Any]:
    return {"lang": lang, "source": "paper", "label": PAPER_RUN_LABEL, "preset": None, "steps": paper.STEPS,
            "n_seeds": None, "seeds": None, **values, "status": "published", "run_dir": None}


def _group_row(group: SeedGroup, status: str, **values: Any) -> dict[str, Any]:
    return {"lang": group.lang, "source": "ours", "label": group.label, "preset": group.first.preset,
            "steps": group.total_steps, "n_seeds": len(group.runs), "seeds": ",".join(map(str, group.seeds)),
            **values, "status": status, "run_dir": ", ".join(display_path(r.run_dir) for r in group.runs)}


def _unigram_row(group: SeedGroup, **values: Any) -> dict[str, Any]:
    label = "unigram (training-text token frequencies, no context; same evaluation positions)"
    return {**_group_row(group, "baseline", **values), "source": "unigram", "label": label}


def _empty_row(lang: str, status: str, run_dir: str | None, **values: Any) -> dict[str, Any]:
    return {"lang": lang, "source": "ours", "label": "ours (no comparable run)", "preset": None, "steps": None,
            "n_seeds": 0, "seeds": None, **values, "status": status, "run_dir": run_dir}


def _table(runset: RunSet, paper_values: dict[str, dict[str, Any]], our_values: Callable[[SeedGroup], dict[str, Any]],
           unigram_values: Callable[[dict[str, float]], dict[str, Any]], nan_values: dict[str, Any]) -> pd.DataFrame:
    """Rows per language: the paper's, ours (mean over seeds), the unigram baseline, then runs that cannot count.

    ``steps`` is the step the numbers were measured at: 100,000 for the paper, our last shared evaluation for us.
    """
    groups = comparison_groups(runset)
    rows = []
    for lang in order_langs(set(paper.LANGS) | set(runset.langs())):
        if lang in paper_values:
            rows.append(_paper_row(lang, **paper_values[lang]))
        lang_groups = [g for g in groups if g.lang == lang]
        if not lang_groups:
            rows.append(_empty_row(lang, "missing: no run for this language", None, **nan_values))
        for group in (g for g in lang_groups if g.runs):
            rows.append(_group_row(group, "ok" + (f"; {group.note}" if group.note else ""), **our_values(group)))
            if group.baseline is not None:
                rows.append(_unigram_row(group, **unigram_values(group.baseline)))
        for path, why in (lang_groups[0].excluded.items() if lang_groups else ()):
            rows.append(_empty_row(lang, why, path, **nan_values))
    return pd.DataFrame(rows).astype({"steps": "Int64", "n_seeds": "Int64"})


def vector_source_text(manifest: dict[str, Any] | None) -> str | None:
    """Readable origin of a run's static vectors from its manifest ('train', 'published' or 'file')."""
    if not manifest:
        return None
    source = manifest.get("source")
    if source == "train":
        corpus = manifest.get("corpus")
        return "fastText trained here" + (f" on {corpus}" if corpus else "")
    if source == "published":
        return f"fastText cc.{manifest.get('lang', 'LANG')}.300 (published)"
    if source == "file":
        return f"vectors from {Path(str(manifest.get('vectors_path', '?'))).name}"
    return None if source is None else str(source)


def table1_vectors_found(runset: RunSet) -> pd.DataFrame:
    """Table 1: tokens of the vocabulary that got a static vector; one row per run folder of ours."""
    rows = []
    for lang in order_langs(set(paper.LANGS) | set(runset.langs())):
        if lang in paper.VECTORS_FOUND:
            n = paper.VECTORS_FOUND[lang]
            label = f"paper (cc.LANG.300, top {paper.TOP_N_WORDS:,} words)"
            rows.append({"lang": lang, "source": "paper", "label": label, "preset": None, "seed": None,
                         "vectors_found": n, "vocab_size": paper.VOCAB_SIZE, "fraction_found": n / paper.VOCAB_SIZE,
                         "vector_source": paper.VECTOR_SOURCE, "top_n": paper.TOP_N_WORDS, "status": "published",
                         "run_dir": None})
        runs = runset.runs_for(lang)
        for run in runs or [None]:
            m = (run.manifest if run else None) or {}
            n_found, vocab = m.get("n_found"), m.get("vocab_size")
            status = "ok" if m else ("missing: no static/manifest.json" if run else "missing: no run for this language")
            rows.append({"lang": lang, "source": "ours", "label": f"ours ({run.preset})" if run else "ours (no run)",
                         "preset": run.preset if run else None, "seed": run.seed if run else None,
                         "vectors_found": n_found, "vocab_size": vocab,
                         "fraction_found": n_found / vocab if n_found is not None and vocab else math.nan,
                         "vector_source": vector_source_text(m), "top_n": m.get("top_n"), "status": status,
                         "run_dir": display_path(run.run_dir) if run else None})
    return pd.DataFrame(rows).astype({"vectors_found": "Int64", "vocab_size": "Int64", "top_n": "Int64",
                                      "seed": "Int64"})


def _interval_columns(estimate: Estimate | None) -> dict[str, Any]:
    if estimate is None:
        return {"ci_low": math.nan, "ci_high": math.nan, "interval": None}
    interval = estimate.interval if estimate.interval != "none" else estimate.note or "none"
    return {"ci_low": estimate.low, "ci_high": estimate.high, "interval": interval}


def table2_loss(runset: RunSet) -> pd.DataFrame:
    """Table 2: final training and evaluation loss of both models (means over seeds), FT's difference, unigram.

    Two readings of the training loss (see ``TRAIN_LOSS_NOTE``); the comparison uses ``train_loss``.
    """
    names = [(n, paper.MODEL_LABELS[n]) for n in paper.MODELS]

    def columns(train: Callable, run_mean: Callable, evaluation: Callable, diff: float, est: Estimate | None):
        return {**{f"train_loss {label}": train(n) for n, label in names},
                **{f"train_loss (run mean) {label}": run_mean(n) for n, label in names},
                **{f"eval_loss {label}": evaluation(n) for n, label in names},
                "eval FT - TINY": diff, **_interval_columns(est)}

    published = {lang: columns(lambda n, lang=lang: paper.TRAIN_LOSS[lang][n], lambda n: math.nan,
                               lambda n, lang=lang: paper.EVAL_LOSS[lang][n],
                               paper.EVAL_LOSS[lang]["bert_ft"] - paper.EVAL_LOSS[lang]["bert_tiny"], None)
                 for lang in paper.LANGS}

    def ours(group: SeedGroup) -> dict[str, Any]:
        est = gain_estimate(group, "eval_loss")
        return columns(lambda n: group.mean(lambda r: r.final(n, "train_loss")),
                       lambda n: group.mean(lambda r: r.model(n).run_mean("train_loss", r.last_step)),
                       lambda n: group.mean(lambda r: r.final(n, "eval_loss")), est.mean, est)

    def unigram(base: dict[str, float]) -> dict[str, Any]:
        return columns(lambda n: base["unigram_train_loss"], lambda n: math.nan, lambda n: base["unigram_loss"],
                       math.nan, None)

    nan = columns(lambda n: math.nan, lambda n: math.nan, lambda n: math.nan, math.nan, None)
    return _table(runset, published, ours, unigram, nan)


def table3_accuracy(runset: RunSet) -> pd.DataFrame:
    """Table 3: final masked-token accuracy of both models (means over seeds), FT's gain with its interval."""
    def columns(tiny: float, ft: float, gain: float, est: Estimate | None) -> dict[str, Any]:
        return {"BERT_TINY": tiny, "BERT_FT": ft, "FT - TINY": gain, **_interval_columns(est)}

    published = {lang: columns(acc["bert_tiny"], acc["bert_ft"], acc["bert_ft"] - acc["bert_tiny"], None)
                 for lang, acc in paper.EVAL_ACCURACY.items()}

    def ours(group: SeedGroup) -> dict[str, Any]:
        est = gain_estimate(group, "eval_accuracy")
        return columns(group.mean(lambda r: r.final("bert_tiny", "eval_accuracy")),
                       group.mean(lambda r: r.final("bert_ft", "eval_accuracy")), est.mean, est)

    unigram = lambda base: columns(base["unigram_accuracy"], base["unigram_accuracy"], math.nan, None)  # noqa: E731
    return _table(runset, published, ours, unigram, columns(math.nan, math.nan, math.nan, None))


def _text(value: Any, fmt: str = "{}") -> str:
    missing = value is None or (isinstance(value, float) and math.isnan(value))
    return MISSING_MARK if missing else fmt.format(value)


def setting_comparison(runset: RunSet) -> pd.DataFrame:
    """The settings behind the numbers, ours beside the paper's: why our values are not the paper's."""
    rows = {"preset": "—", "seed": "—", "training steps": f"{paper.STEPS:,}", "batch size": str(paper.BATCH_SIZE),
            "sequence length": str(paper.SEQ_LEN), "evaluated every": f"{paper.EVAL_EVERY:,} steps",
            "vocabulary": f"{paper.VOCAB_SIZE:,}", "static vectors": paper.VECTOR_SOURCE,
            "vectors looked up among": f"top {paper.TOP_N_WORDS:,} words", "corpus": paper.CORPUS}
    columns = {"paper": rows}
    for run in sort_runs(runset.runs):
        info = run.model("bert_tiny").info or run.model("bert_ft").info or {}
        metrics = run.model("bert_tiny").metrics
        if metrics is None:
            metrics = run.model("bert_ft").metrics
        every = metrics["step"].diff().median() if metrics is not None and len(metrics) > 1 else math.nan
        manifest = run.manifest or {}
        seed = f" seed {run.seed}" if run.seed else ""
        columns[f"{run.lang}{seed}: {run.label}"] = {
            "preset": _text(run.preset), "seed": str(run.seed), "training steps": _text(run.steps, "{:,}"),
            "batch size": _text(info.get("batch_size")), "sequence length": _text(info.get("seq_len")),
            "evaluated every": _text(every, "{:,.0f} steps"), "vocabulary": _text(manifest.get("vocab_size"), "{:,}"),
            "static vectors": _text(vector_source_text(manifest)),
            "vectors looked up among": _text(manifest.get("top_n"), "top {:,} words"),
            "corpus": _text(info.get("corpus") or (f"{manifest['corpus']} (the vectors' corpus)"
                                                    if manifest.get("corpus") else None)),
        }
    return pd.DataFrame(columns)


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
    notes = []
    if math.isfinite(est.low) and est.low <= 0 <= est.high:
        notes.append("the interval includes 0")
    return _claim_row(group, claim_id, claim, est, paper_text, holds, notes=notes)


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
                 "note": why + "holds: the paper's average over the same languages lies inside our interval; "
                         + average.note})
    if "en" in chosen and len(chosen) > 1:
        others = [lang for lang in langs if lang != "en"]
        margin = _combined(ests, lambda g: np.min([g[lang] for lang in others], axis=0) - g["en"])
        paper_others = [lang for lang in others if lang in paper.EVAL_ACCURACY]
        paper_margin = min(paper_gain(lang) for lang in paper_others) - paper_gain("en") if paper_others else math.nan
        rows.append({**common, "claim_id": "english_gains_least",
                     "claim": "English gains least: smallest other language's gain minus English's (> 0: holds)",
                     "ours": margin.mean, "ci_low": margin.low, "ci_high": margin.high, "interval": margin.interval,
                     "holds_on_ours": bool(margin.mean > 0), "paper": f"{paper_margin:+.3f} over the same languages",
                     "note": why + margin.note})
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


# --------------------------------------------------------------------------- outputs


def _format_cell(value: Any, column: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return MISSING_MARK
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}" if column != "lang" else str(value)
    if isinstance(value, (float, np.floating)):
        if column in ("steps", "ours") and float(value).is_integer():
            return f"{int(value):,}"
        return f"{value:+.3f}" if column in ("FT - TINY", "eval FT - TINY") else f"{value:.3f}"
    return str(value)


def format_table(table: pd.DataFrame) -> pd.DataFrame:
    """All cells as text, missing values as '—': for display and Markdown, not for further computing."""
    return pd.DataFrame({c: [_format_cell(v, c) for v in table[c].tolist()] for c in table.columns}, index=table.index)


def to_markdown(table: pd.DataFrame) -> str:
    """A GitHub-style Markdown table (own writer: DataFrame.to_markdown needs the optional `tabulate`)."""
    text = format_table(table)
    escape = lambda s: str(s).replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(escape(c) for c in text.columns) + " |",
             "| " + " | ".join("---" for _ in text.columns) + " |"]
    lines += ["| " + " | ".join(escape(v) for v in row) + " |" for row in text.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def featured_lang(runset: RunSet) -> str | None:
    """The paper features Czech in Figures 1-2; we use it if we have a comparable run, else our first language."""
    langs = order_langs({g.lang for g in comparison_groups(runset) if g.runs})
    if not langs:
        return None
    return paper.FEATURED_LANG if paper.FEATURED_LANG in langs else langs[0]


def provenance(runset: RunSet, files: Sequence[Path], lang: str | None) -> dict[str, Any]:
    """Which runs (paths, presets, seeds, steps, commits, devices, dates) and which code produced the outputs."""
    runs = []
    for run in sort_runs(runset.runs):
        models = {}
        for name in paper.MODELS:
            model = run.model(name)
            info = model.info or {}
            env = info.get("environment") or {}
            models[name] = {"steps": model.steps, "last_evaluated_step": model.last_step,
                            "batch_size": info.get("batch_size"), "seq_len": info.get("seq_len"),
                            "seed": info.get("seed"), "corpus": info.get("corpus"),
                            "max_steps": info.get("max_steps"), "git_commit": env.get("git_commit"),
                            "device": env.get("device"), "device_name": env.get("device_name"),
                            "date": env.get("date")}
        static = {k: (run.manifest or {}).get(k) for k in ("source", "vectors_path", "top_n", "n_found", "vocab_size")}
        runs.append({"run_dir": display_path(run.run_dir), "lang": run.lang, "preset": run.preset, "seed": run.seed,
                     "steps": run.steps, "pair": pair_problem(run) or "ok", "models": models, "static": static,
                     "unigram_baseline": run.baseline.as_dict() if run.baseline else run.baseline_problem,
                     "missing": run.missing})
    return {
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "generated_by": "helpers.figures.write_outputs (notebooks/06_figures.ipynb)",
        "git_commit": git_commit(),
        "packages": package_versions((*RECORDED_PACKAGES, "pandas")),
        "paper": paper.CITATION,
        "paper_setting": {"steps": paper.STEPS, "batch_size": paper.BATCH_SIZE, "eval_every": paper.EVAL_EVERY,
                          "corpus": paper.CORPUS, "vectors": paper.VECTOR_SOURCE},
        "figures_1_2_language": lang,
        "paper_languages_without_run": [x for x in paper.LANGS if x not in runset.langs_with_metrics()],
        "runs": runs,
        "files": [p.name for p in files],
    }


TABLE_NOTES = {
    "table2_loss": TRAIN_LOSS_NOTE,
    "claims_check": (f"testable: BERT_TINY's final eval loss is more than {TESTABLE_MARGIN} nat below the unigram "
                     f"loss; interval: 95 %, t over seeds when there are at least {MIN_SEEDS_FOR_T}, else a bootstrap "
                     "over evaluation positions (it measures which tokens were masked, not another seed)."),
}


def write_outputs(runset: RunSet, out_dir: str | Path) -> list[Path]:
    """Write every figure (PNG + PDF), table (CSV + Markdown) and provenance.json into ``out_dir`` only.

    File names are fixed (fig1a_train_loss.png, ...); the language of Figures 1-2 is in their titles
    and in provenance.json. Figures 1-2 are skipped when no run has metrics.
    """
    from helpers.plots.figures import draw_figures, save_figure

    out_dir = resolve_path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    lang = featured_lang(runset)
    written: list[Path] = []
    for name, fig in draw_figures(runset, lang).items():
        written += save_figure(fig, out_dir, name, f"{name} ({lang or 'no runs'}) - ours vs {paper.CITATION}")
    tables = {"table1_vectors_found": table1_vectors_found(runset), "table2_loss": table2_loss(runset),
              "table3_accuracy": table3_accuracy(runset), "claims_check": verify_claims(runset)}
    for name, table in tables.items():
        table.to_csv(out_dir / f"{name}.csv", index=False)
        note = f"\n{TABLE_NOTES[name]}\n" if name in TABLE_NOTES else ""
        (out_dir / f"{name}.md").write_text(to_markdown(table) + note)
        written += [out_dir / f"{name}.csv", out_dir / f"{name}.md"]
    prov_path = out_dir / "provenance.json"
    prov_path.write_text(json.dumps(provenance(runset, written, lang), indent=2, default=str))
    written.append(prov_path)
    return written
