"""The paper's Tables 1-3 and Figures 1-3, rebuilt from our run folders with the paper's numbers beside them.

Our numbers come from short runs (smoke/demo presets, a small Wikipedia corpus, fastText vectors
trained locally); the paper's come from 100,000-step runs on C4 with cc.LANG.300 vectors. So every
table row and every curve of ours carries its preset and step count, and the paper's values appear
only in rows labelled "paper" or as dashed grey reference lines, never mixed into our data.
A language without a run stays missing (NaN / "—"), never filled in.

Figures are built on ``matplotlib.figure.Figure`` directly, without pyplot: no global figure state
to leak, and saving uses the non-interactive Agg canvas whether or not a display exists.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from helpers import paper_values as paper
from helpers.runinfo import RECORDED_PACKAGES, REPO_ROOT, git_commit, package_versions

METRIC_COLUMNS = ("step", "train_loss", "eval_loss", "eval_accuracy", "lr", "elapsed_s")
REQUIRED_METRIC_COLUMNS = ("step", "eval_loss", "eval_accuracy")
FIGURE_NAMES = ("fig1a_train_loss", "fig1b_eval_loss", "fig2_eval_accuracy", "fig3_accuracy_by_language")
TABLE_NAMES = ("table1_vectors_found", "table2_loss", "table3_accuracy", "claims_check")
FIGURE_FORMATS = ("png", "pdf")
MISSING_MARK = "—"

PAPER_RUN_LABEL = f"paper ({paper.STEPS:,} steps, batch {paper.BATCH_SIZE}, C4, cc.LANG.300)"
# Our curves: solid, coloured, with markers at each evaluation. Paper references: dashed greys, no markers.
OUR_STYLE: dict[str, dict[str, Any]] = {
    "bert_tiny": {"color": "tab:blue", "marker": "o", "linestyle": "-", "markersize": 4},
    "bert_ft": {"color": "tab:orange", "marker": "s", "linestyle": "-", "markersize": 4},
}
PAPER_STYLE: dict[str, dict[str, Any]] = {
    "bert_tiny": {"color": "0.35", "linestyle": "--", "linewidth": 1.2},
    "bert_ft": {"color": "0.6", "linestyle": "-.", "linewidth": 1.2},
}
KIND_COLUMN = {"train": "train_loss", "eval": "eval_loss"}


# --------------------------------------------------------------------------- loading


@dataclass
class ModelRun:
    """One model's pretraining record: its metrics table (None if missing) and its run.json."""

    name: str
    metrics: pd.DataFrame | None = None
    info: dict[str, Any] | None = None

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
        """The value in the last evaluation row at or before step ``upto`` (NaN if missing).

        What the paper reports 'after training'; :meth:`Run.final` passes the last step both models
        reached, so a model stopped early is never compared with a longer-trained one.
        """
        if self.metrics is None or self.metrics.empty or column not in self.metrics:
            return math.nan
        rows = self.metrics if upto is None else self.metrics[self.metrics["step"] <= upto]
        return float(rows[column].iloc[-1]) if not rows.empty else math.nan


@dataclass
class Run:
    """One run folder ``runs/<preset>-<lang>/`` and what of it could be read."""

    run_dir: Path
    lang: str
    preset: str | None
    manifest: dict[str, Any] | None = None
    models: dict[str, ModelRun] = field(default_factory=dict)
    comparison: dict[str, Any] | None = None
    probe: pd.DataFrame | None = None
    missing: list[str] = field(default_factory=list)

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
        if done:
            return f"stopped at {min(done):,} of {self.steps:,} steps"
        return f"{self.steps:,} steps"

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
        return [r for r in self.runs if r.lang == lang]

    def langs_with_metrics(self) -> list[str]:
        return order_langs({r.lang for r in self.with_metrics()})

    def summary(self) -> pd.DataFrame:
        """One row per run folder: which pieces were found, so a gap is visible before any table."""
        rows = []
        for run in sort_runs(self.runs):
            rows.append({
                "lang": run.lang, "preset": run.preset, "steps": run.steps,
                "static/manifest": run.manifest is not None,
                **{f"{name}/metrics": run.model(name).metrics is not None for name in paper.MODELS},
                "comparison": run.comparison is not None,
                "probe": run.probe is not None,
                "missing": "; ".join(run.missing) or "",
                "run_dir": display_path(run.run_dir),
            })
        return pd.DataFrame(rows).astype({"steps": "Int64"})


def order_langs(langs: Iterable[str]) -> list[str]:
    """Paper languages in Table order, then any others alphabetically."""
    langs = set(langs)
    return [l for l in paper.LANGS if l in langs] + sorted(langs - set(paper.LANGS))


def sort_runs(runs: Iterable[Run]) -> list[Run]:
    order = {lang: i for i, lang in enumerate(paper.LANGS)}
    return sorted(runs, key=lambda r: (order.get(r.lang, len(order)), r.lang, str(r.run_dir)))


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


def read_metrics(path: Path) -> pd.DataFrame:
    """Read a metrics.csv, sorted by step; ValueError when a required column is absent or it has no rows."""
    table = pd.read_csv(path)
    absent = [c for c in REQUIRED_METRIC_COLUMNS if c not in table.columns]
    if absent:
        raise ValueError(f"{path} lacks column(s) {absent}; expected {list(METRIC_COLUMNS)}")
    if "train_loss" not in table.columns:
        table["train_loss"] = np.nan
    for column in table.columns:
        table[column] = pd.to_numeric(table[column], errors="coerce")
    table = table.dropna(subset=["step"]).sort_values("step", kind="stable").reset_index(drop=True)
    if table.empty:
        raise ValueError(f"{path} has no evaluation rows")
    return table


def _split_folder_name(run_dir: Path) -> tuple[str | None, str | None]:
    """'demo-en' -> ('demo', 'en'), following the runs/<preset>-<lang>/ contract."""
    preset, sep, lang = run_dir.name.rpartition("-")
    return (preset, lang) if sep and preset and lang else (None, None)


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
        model = ModelRun(name, info=_read_json(model_dir / "run.json", missing, f"{name} run.json"))
        metrics_path = model_dir / "metrics.csv"
        if metrics_path.is_file():
            try:
                model.metrics = read_metrics(metrics_path)
            except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
                missing.append(f"{name} metrics ({err})")
        else:
            missing.append(f"{name} metrics (metrics.csv not found)")
        models[name] = model
    # comparison.json and the probe are not drawn here: read when present, not reported as gaps.
    comparison_path = run_dir / "pretrain" / "comparison.json"
    comparison = json.loads(comparison_path.read_text()) if comparison_path.is_file() else None
    probe_path = run_dir / "probe" / "results.csv"
    probe = pd.read_csv(probe_path) if probe_path.is_file() else None

    folder_preset, folder_lang = _split_folder_name(run_dir)
    infos = [m.info for m in models.values() if m.info] + ([manifest] if manifest else [])
    lang = next((i["lang"] for i in infos if i.get("lang")), folder_lang)
    preset = next((i["preset"] for i in infos if i.get("preset")), folder_preset)
    if lang is None:
        raise ValueError(f"cannot tell the language of {run_dir}: no run.json/manifest.json with 'lang' "
                         "and the folder is not named <preset>-<lang>")
    langs_seen = {i["lang"] for i in infos if i.get("lang")}
    if len(langs_seen) > 1:
        missing.append(f"inconsistent languages in the run folder: {sorted(langs_seen)}")
    return Run(run_dir, lang, preset, manifest, models, comparison, probe, missing)


def load_runs(run_dirs: Sequence[str | Path] | str | Path) -> RunSet:
    """Load every run folder; FileNotFoundError only when none of them exists (nothing to show at all)."""
    if isinstance(run_dirs, str) and run_dirs.lstrip().startswith("["):
        run_dirs = json.loads(run_dirs)  # a list passed as text, e.g. `papermill -p run_dirs '["runs/demo-en"]'`
    if isinstance(run_dirs, (str, Path)):
        run_dirs = [run_dirs]
    if not run_dirs:
        raise ValueError("run_dirs is empty; pass run folders such as ['runs/demo-en']")
    runs = [load_run(d) for d in run_dirs]
    if not any(r.run_dir.is_dir() for r in runs):
        raise FileNotFoundError(
            f"none of the run folders exist: {[str(r.run_dir) for r in runs]}; run the main job first "
            "(`make figures`, or `python -m helpers.run --preset demo --lang en`) or notebooks 01-05")
    for run in runs:
        if run.missing:
            warnings.warn(f"{run.run_dir}: missing {'; '.join(run.missing)}", stacklevel=2)
    return RunSet(runs)


# --------------------------------------------------------------------------- tables


def _paper_row(lang: str, **values: Any) -> dict[str, Any]:
    return {"lang": lang, "source": "paper", "label": PAPER_RUN_LABEL, "preset": None,
            "steps": paper.STEPS, **values, "status": "published", "run_dir": None}


def _our_row(run: Run | None, lang: str, status: str, **values: Any) -> dict[str, Any]:
    if run is None:
        return {"lang": lang, "source": "ours", "label": "ours (no run)", "preset": None, "steps": None,
                **values, "status": status, "run_dir": None}
    return {"lang": lang, "source": "ours", "label": run.label, "preset": run.preset, "steps": run.last_step,
            **values, "status": status, "run_dir": display_path(run.run_dir)}


def _table(runset: RunSet, paper_values: dict[str, dict[str, Any]], our_values: Callable[[Run], dict[str, Any]],
           usable: Callable[[Run], str | None], nan_values: dict[str, Any]) -> pd.DataFrame:
    """Rows per language: the paper's row (if the paper has the language), then one row per run of ours.

    ``steps`` is the step the numbers were measured at: 100,000 for the paper, our last evaluation for us.
    """
    rows = []
    for lang in order_langs(set(paper.LANGS) | set(runset.langs())):
        if lang in paper_values:
            rows.append(_paper_row(lang, **paper_values[lang]))
        runs = sort_runs(runset.runs_for(lang))
        if not runs:
            rows.append(_our_row(None, lang, "missing: no run for this language", **nan_values))
        for run in runs:
            reason = usable(run)
            values = our_values(run) if reason is None else nan_values
            rows.append(_our_row(run, lang, "ok" if reason is None else f"missing: {reason}", **values))
    return pd.DataFrame(rows).astype({"steps": "Int64"})


def _pretrain_gap(run: Run) -> str | None:
    absent = [paper.MODEL_LABELS[n] for n in paper.MODELS if run.model(n).metrics is None]
    if len(absent) == len(paper.MODELS):
        return "no pretrain/ metrics"
    return f"no {', '.join(absent)} metrics" if absent else None


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
    """Table 1: tokens of the vocabulary that got a static vector. Ours: local fastText on our corpus."""
    def ours(run: Run) -> dict[str, Any]:
        m = run.manifest or {}
        n_found, vocab = m.get("n_found"), m.get("vocab_size")
        return {"vectors_found": n_found, "vocab_size": vocab,
                "fraction_found": n_found / vocab if n_found is not None and vocab else math.nan,
                "vector_source": vector_source_text(m), "top_n": m.get("top_n")}

    nan = {"vectors_found": None, "vocab_size": None, "fraction_found": math.nan, "vector_source": None, "top_n": None}
    published = {lang: {"vectors_found": n, "vocab_size": paper.VOCAB_SIZE, "fraction_found": n / paper.VOCAB_SIZE,
                        "vector_source": paper.VECTOR_SOURCE, "top_n": paper.TOP_N_WORDS}
                 for lang, n in paper.VECTORS_FOUND.items()}
    table = _table(runset, published, ours, lambda r: None if r.manifest else "no static/manifest.json", nan)
    # Table 1 is about vectors, not training steps: our rows name the preset and the vectors' source.
    table = table.drop(columns=["steps"])
    ours_rows = (table["source"] == "ours") & table["preset"].notna()
    table.loc[ours_rows, "label"] = "ours (" + table.loc[ours_rows, "preset"].astype(str) + ")"
    table.loc[table["source"] == "paper", "label"] = f"paper (cc.LANG.300, top {paper.TOP_N_WORDS:,} words)"
    return table.astype({"vectors_found": "Int64", "vocab_size": "Int64", "top_n": "Int64"})


def table2_loss(runset: RunSet) -> pd.DataFrame:
    """Table 2: final training loss (the last interval's average) and final evaluation loss, both models."""
    def values(get) -> dict[str, Any]:
        return {f"{kind}_loss {paper.MODEL_LABELS[n]}": get(kind, n) for kind in ("train", "eval") for n in paper.MODELS}

    published = {lang: values(lambda kind, n, lang=lang: (paper.TRAIN_LOSS if kind == "train" else paper.EVAL_LOSS)[lang][n])
                 for lang in paper.LANGS}
    ours = lambda run: values(lambda kind, n: run.final(n, KIND_COLUMN[kind]))  # noqa: E731
    nan = values(lambda kind, n: math.nan)
    return _table(runset, published, ours, _pretrain_gap, nan)


def table3_accuracy(runset: RunSet) -> pd.DataFrame:
    """Table 3: final evaluation accuracy of masked-token prediction, both models, and FT's gain."""
    def values(tiny: float, ft: float) -> dict[str, Any]:
        return {"BERT_TINY": tiny, "BERT_FT": ft, "FT - TINY": ft - tiny}

    published = {lang: values(acc["bert_tiny"], acc["bert_ft"]) for lang, acc in paper.EVAL_ACCURACY.items()}
    ours = lambda run: values(run.final("bert_tiny", "eval_accuracy"), run.final("bert_ft", "eval_accuracy"))  # noqa: E731
    return _table(runset, published, ours, _pretrain_gap, values(math.nan, math.nan))


def _text(value: Any, fmt: str = "{}") -> str:
    missing = value is None or (isinstance(value, float) and math.isnan(value))
    return MISSING_MARK if missing else fmt.format(value)


def setting_comparison(runset: RunSet) -> pd.DataFrame:
    """The settings behind the numbers, ours beside the paper's: why our values are not the paper's."""
    rows = {"preset": "—", "training steps": f"{paper.STEPS:,}", "batch size": str(paper.BATCH_SIZE),
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
        columns[f"{run.lang}: {run.label}"] = {
            "preset": _text(run.preset), "training steps": _text(run.steps, "{:,}"),
            "batch size": _text(info.get("batch_size")), "sequence length": _text(info.get("seq_len")),
            "evaluated every": _text(every, "{:,.0f} steps"), "vocabulary": _text(manifest.get("vocab_size"), "{:,}"),
            "static vectors": _text(vector_source_text(manifest)),
            "vectors looked up among": _text(manifest.get("top_n"), "top {:,} words"),
            "corpus": _text(info.get("corpus") or (f"{manifest['corpus']} (the vectors' corpus)"
                                                    if manifest.get("corpus") else None)),
        }
    return pd.DataFrame(columns)


# --------------------------------------------------------------------------- claims


def crossing_step(steps: Sequence[float], values: Sequence[float], threshold: float, below: bool = True) -> float:
    """First evaluated step whose value is strictly below (or above) ``threshold``; NaN if never.

    Evaluations are discrete, so the true crossing lies between the previous evaluation and this step:
    this is the step a reader of the paper's plots would name ("after 20,000 steps").
    """
    if math.isnan(threshold):
        return math.nan
    for step, value in zip(steps, values):
        if not math.isnan(value) and (value < threshold if below else value > threshold):
            return float(step)
    return math.nan


def _claim(run: Run, claim_id: str, claim: str, ours: float, fraction: float, paper_text: str,
           holds: bool | None, note: str = "") -> dict[str, Any]:
    return {"lang": run.lang, "preset": run.preset, "steps": run.steps, "claim_id": claim_id, "claim": claim,
            "ours": ours, "fraction_of_training": fraction, "paper": paper_text, "holds_on_ours": holds, "note": note}


def _crossing_claim(run: Run, column: str, below: bool, claim_id: str, claim: str, paper_text: str,
                    max_fraction: float) -> dict[str, Any]:
    tiny, ft = run.model("bert_tiny"), run.model("bert_ft")
    if tiny.metrics is None or ft.metrics is None:
        return _claim(run, claim_id, claim, math.nan, math.nan, paper_text, None, "needs both models' metrics")
    target = run.final("bert_tiny", column)
    total = run.last_step  # BERT_TINY's "final" value is taken here, so the fraction is of these steps
    shared = ft.metrics[ft.metrics["step"] <= total]
    step = crossing_step(shared["step"].tolist(), shared[column].tolist(), target, below)
    fraction = step / total if total and not math.isnan(step) else math.nan
    holds = None if math.isnan(target) else bool(fraction <= max_fraction)
    note = "never crossed within our run" if math.isnan(step) and holds is not None else ""
    return _claim(run, claim_id, claim, step, fraction, paper_text, holds, note)


def _difference_claim(run: Run, column: str, claim_id: str, claim: str, paper_values: dict[str, dict[str, float]],
                      lower_is_better: bool) -> dict[str, Any]:
    diff = run.final("bert_ft", column) - run.final("bert_tiny", column)
    published = paper_values.get(run.lang)
    paper_text = (f"{published['bert_ft'] - published['bert_tiny']:+.3f}" if published else "language not in the paper")
    holds = None if math.isnan(diff) else bool(diff < 0 if lower_is_better else diff > 0)
    return _claim(run, claim_id, claim, diff, math.nan, paper_text, holds)


def verify_claims(runset: RunSet) -> pd.DataFrame:
    """The paper's Section 5 claims, measured on each of our runs; ``holds_on_ours`` reports, never asserts.

    Paper criteria: a crossing counts if it happens within a third of training (loss, Figure 1) or
    within 20% of training (accuracy, Figure 2: 20,000 of 100,000 steps, stated for Czech).
    """
    acc_fraction = paper.CLAIM_ACCURACY_CROSSING_STEP / paper.STEPS
    rows = []
    for run in runset.with_metrics():
        rows += [
            _difference_claim(run, "eval_loss", "final_eval_loss_ft_minus_tiny",
                              "final eval loss, BERT_FT minus BERT_TINY (< 0: FT lower)", paper.EVAL_LOSS, True),
            _crossing_claim(run, "train_loss", True, "train_loss_crossing_step",
                            "first step where BERT_FT's training loss is below BERT_TINY's final",
                            "under 1/3 of training (Czech, Figure 1a)", paper.CLAIM_LOSS_CROSSING_FRACTION),
            _crossing_claim(run, "eval_loss", True, "eval_loss_crossing_step",
                            "first step where BERT_FT's eval loss is below BERT_TINY's final",
                            "under 1/3 of training (Czech, Figure 1b and Section 5)", paper.CLAIM_LOSS_CROSSING_FRACTION),
            _crossing_claim(run, "eval_accuracy", False, "accuracy_crossing_step",
                            "first step where BERT_FT's accuracy passes BERT_TINY's final",
                            f"{paper.CLAIM_ACCURACY_CROSSING_STEP:,} of {paper.STEPS:,} steps (Czech, Figure 2)",
                            acc_fraction),
            _difference_claim(run, "eval_accuracy", "final_accuracy_gain",
                              "final eval accuracy, BERT_FT minus BERT_TINY (> 0: FT better)",
                              paper.EVAL_ACCURACY, False),
        ]
    columns = ["lang", "preset", "steps", "claim_id", "claim", "ours", "fraction_of_training", "paper",
               "holds_on_ours", "note"]
    return pd.DataFrame(rows, columns=columns).astype({"steps": "Int64"})


# --------------------------------------------------------------------------- figures


def _lang_name(lang: str) -> str:
    return paper.LANG_NAMES.get(lang, lang.upper())


def _run_for(runset: RunSet, lang: str) -> Run:
    runs = [r for r in runset.with_metrics() if r.lang == lang]
    if not runs:
        raise ValueError(f"no run with pretraining metrics for language {lang!r}; "
                         f"languages with metrics: {runset.langs_with_metrics() or 'none'}")
    return runs[0]


def _plot_models(ax: Axes, run: Run, column: str, short: bool = False) -> list[str]:
    """Our two curves; returns the models that had nothing to draw."""
    absent = []
    for name in paper.MODELS:
        metrics = run.model(name).metrics
        if metrics is None or metrics[column].isna().all():
            absent.append(paper.MODEL_LABELS[name])
            continue
        points = metrics[["step", column]].dropna()
        label = f"{paper.MODEL_LABELS[name]}, " + ("ours" if short else run.label)
        ax.plot(points["step"], points[column], label=label, **OUR_STYLE[name])
    return absent


def _paper_lines(ax: Axes, published: dict[str, dict[str, float]], lang: str, table: str) -> None:
    """The paper's final values for ``lang`` as horizontal references, styled apart from our curves."""
    if lang not in published:
        return
    for name in paper.MODELS:
        ax.axhline(published[lang][name], **PAPER_STYLE[name],
                   label=f"paper {lang.upper()} {paper.MODEL_LABELS[name]}, {table} ({paper.STEPS // 1000}k steps)")


def _finish(ax: Axes, ylabel: str, absent: list[str], fontsize: float = 8) -> None:
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if absent:
        ax.text(0.5, 0.5, f"missing: {', '.join(absent)}", transform=ax.transAxes, ha="center", color="tab:red")
    if ax.get_lines():
        ax.legend(fontsize=fontsize)


def _run_title(run: Run) -> str:
    return f"{_lang_name(run.lang)}, {run.preset or '?'} preset, {run.steps_text}"


def figure1_loss(runset: RunSet, lang: str, kind: str = "train", paper_refs: bool = True) -> Figure:
    """Figure 1a (kind='train') or 1b (kind='eval'): loss over steps for both models of one language."""
    if kind not in KIND_COLUMN:
        raise ValueError(f"kind must be 'train' or 'eval', not {kind!r}")
    run = _run_for(runset, lang)
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot()
    absent = _plot_models(ax, run, KIND_COLUMN[kind])
    if paper_refs:
        _paper_lines(ax, paper.TRAIN_LOSS if kind == "train" else paper.EVAL_LOSS, lang, "Table 2")
    what = "training loss" if kind == "train" else "evaluation loss"
    _finish(ax, f"{what} (cross-entropy{', interval mean' if kind == 'train' else ''})", absent)
    panel = "1a" if kind == "train" else "1b"
    ax.set_title(f"Figure {panel} (ours): {what}, {_run_title(run)}\n"
                 f"grey lines: the paper's final values for this language (its own Figure {panel} shows Czech)",
                 fontsize=10)
    return fig


def figure2_accuracy(runset: RunSet, lang: str, paper_refs: bool = True) -> Figure:
    """Figure 2: masked-token accuracy on the evaluation set over steps, both models of one language."""
    run = _run_for(runset, lang)
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot()
    absent = _plot_models(ax, run, "eval_accuracy")
    if paper_refs:
        _paper_lines(ax, paper.EVAL_ACCURACY, lang, "Table 3")
    _finish(ax, "evaluation accuracy (masked tokens)", absent)
    ax.set_title(f"Figure 2 (ours): evaluation accuracy, {_run_title(run)}\n"
                 "grey lines: the paper's final values for this language (its own Figure 2 shows Czech)", fontsize=10)
    return fig


def figure3_accuracy_by_language(runset: RunSet, paper_refs: bool = True, ncols: int = 3) -> Figure:
    """Figure 3: one accuracy panel per run with metrics; languages without a run are named, not drawn."""
    runs = runset.with_metrics()
    without = [l.upper() for l in paper.LANGS if l not in runset.langs_with_metrics()]
    ncols = max(1, min(ncols, len(runs)))
    nrows = max(1, math.ceil(len(runs) / ncols))
    fig = Figure(figsize=(4.6 * ncols, 3.6 * nrows + 0.6), layout="constrained")
    if not runs:
        ax = fig.add_subplot()
        ax.set_axis_off()
        ax.text(0.5, 0.5, "no run with pretraining metrics", ha="center", va="center")
    for i, run in enumerate(runs):
        ax = fig.add_subplot(nrows, ncols, i + 1)
        absent = _plot_models(ax, run, "eval_accuracy", short=True)
        if paper_refs:
            _paper_lines(ax, paper.EVAL_ACCURACY, run.lang, "Table 3")
        _finish(ax, "evaluation accuracy", absent, fontsize=7)
        ax.set_title(_run_title(run), fontsize=10)
    note = (f"no pretraining run of ours for: {', '.join(without)}" if without
            else "every paper language has a run")
    fig.suptitle(f"Figure 3 (ours): evaluation accuracy over training steps by language\n{note}; "
                 "grey lines = the paper's final values per language (Table 3, 100k steps)", fontsize=11)
    return fig


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
        return f"{value:+.3f}" if column in ("FT - TINY",) else f"{value:.3f}"
    return str(value)


def format_table(table: pd.DataFrame) -> pd.DataFrame:
    """All cells as text, missing values as '—': for display and Markdown, not for further computing."""
    return pd.DataFrame({c: [_format_cell(v, c) for v in table[c].tolist()] for c in table.columns}, index=table.index)


def to_markdown(table: pd.DataFrame) -> str:
    """A GitHub-style Markdown table.

    Own writer because DataFrame.to_markdown needs the optional `tabulate` package, which this
    environment lacks; ten lines here avoid a dependency for plain pipe tables.
    """
    text = format_table(table)
    escape = lambda s: str(s).replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(escape(c) for c in text.columns) + " |",
             "| " + " | ".join("---" for _ in text.columns) + " |"]
    lines += ["| " + " | ".join(escape(v) for v in row) + " |" for row in text.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def featured_lang(runset: RunSet) -> str | None:
    """The paper features Czech in Figures 1-2; we use it if we have it, else our first language."""
    langs = runset.langs_with_metrics()
    if not langs:
        return None
    return paper.FEATURED_LANG if paper.FEATURED_LANG in langs else langs[0]


def _save_figure(fig: Figure, out_dir: Path, name: str, metadata_title: str) -> list[Path]:
    paths = []
    for fmt in FIGURE_FORMATS:
        path = out_dir / f"{name}.{fmt}"
        fig.savefig(path, dpi=150, metadata={"Title": metadata_title})
        paths.append(path)
    return paths


def provenance(runset: RunSet, files: Sequence[Path], lang: str | None) -> dict[str, Any]:
    """Which runs (paths, presets, steps, commits, devices, dates) and which code produced the outputs."""
    runs = []
    for run in sort_runs(runset.runs):
        models = {}
        for name in paper.MODELS:
            model = run.model(name)
            info = model.info or {}
            env = info.get("environment") or {}
            models[name] = {"steps": model.steps, "last_evaluated_step": model.last_step,
                            "batch_size": info.get("batch_size"), "seq_len": info.get("seq_len"),
                            "seed": info.get("seed"), "git_commit": env.get("git_commit"),
                            "device": env.get("device"), "device_name": env.get("device_name"),
                            "date": env.get("date")}
        static = {k: (run.manifest or {}).get(k) for k in ("source", "top_n", "n_found", "vocab_size")}
        runs.append({"run_dir": display_path(run.run_dir), "lang": run.lang, "preset": run.preset, "steps": run.steps,
                     "models": models, "static": static, "missing": run.missing})
    return {
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "generated_by": "helpers.figures.write_outputs (notebooks/06_figures.ipynb)",
        "git_commit": git_commit(),
        "packages": package_versions((*RECORDED_PACKAGES, "pandas")),
        "paper": paper.CITATION,
        "paper_setting": {"steps": paper.STEPS, "batch_size": paper.BATCH_SIZE, "eval_every": paper.EVAL_EVERY,
                          "corpus": paper.CORPUS, "vectors": paper.VECTOR_SOURCE},
        "figures_1_2_language": lang,
        "paper_languages_without_run": [l for l in paper.LANGS if l not in runset.langs_with_metrics()],
        "runs": runs,
        "files": [p.name for p in files],
    }


def write_outputs(runset: RunSet, out_dir: str | Path) -> list[Path]:
    """Write every figure (PNG + PDF), table (CSV + Markdown) and provenance.json; return their paths.

    File names are fixed (fig1a_train_loss.png, ...); the language of Figures 1-2 is in their titles
    and in provenance.json. Figures 1-2 are skipped when no run has metrics.
    """
    out_dir = resolve_path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    lang = featured_lang(runset)
    figures: dict[str, Figure] = {}
    if lang is not None:
        figures["fig1a_train_loss"] = figure1_loss(runset, lang, "train")
        figures["fig1b_eval_loss"] = figure1_loss(runset, lang, "eval")
        figures["fig2_eval_accuracy"] = figure2_accuracy(runset, lang)
    figures["fig3_accuracy_by_language"] = figure3_accuracy_by_language(runset)
    written: list[Path] = []
    for name, fig in figures.items():
        written += _save_figure(fig, out_dir, name, f"{name} ({lang or 'no runs'}) - ours vs {paper.CITATION}")
    tables = {"table1_vectors_found": table1_vectors_found(runset), "table2_loss": table2_loss(runset),
              "table3_accuracy": table3_accuracy(runset), "claims_check": verify_claims(runset)}
    for name, table in tables.items():
        table.to_csv(out_dir / f"{name}.csv", index=False)
        (out_dir / f"{name}.md").write_text(to_markdown(table))
        written += [out_dir / f"{name}.csv", out_dir / f"{name}.md"]
    prov_path = out_dir / "provenance.json"
    prov_path.write_text(json.dumps(provenance(runset, written, lang), indent=2, default=str))
    written.append(prov_path)
    return written
