"""The paper's Figures 1-3 drawn from our runs: ours solid with markers, the paper's final values dashed grey, the
floors dotted. Built on ``matplotlib.figure.Figure`` without pyplot: no global state, no display needed."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from evidence.position_scores import kind_mean
from evidence.results import RunSet, SeedGroup, main_groups
from helpers import paper_values as paper

FIGURE_FORMATS = ("png", "pdf")  # every figure is saved in each: PNG for slides and the README, PDF for print
OUR_STYLE: dict[str, dict[str, Any]] = {
    "bert_tiny": {"color": "tab:blue", "marker": "o", "linestyle": "-", "markersize": 4},
    "bert_ft": {"color": "tab:orange", "marker": "s", "linestyle": "-", "markersize": 4}}
PAPER_STYLE: dict[str, dict[str, Any]] = {"bert_tiny": {"color": "0.35", "linestyle": "--", "linewidth": 1.2},
                                          "bert_ft": {"color": "0.6", "linestyle": "-.", "linewidth": 1.2}}


def lang_name(lang: str) -> str:
    return paper.LANG_NAMES.get(lang, lang.upper())


def plot_panel(ax: Axes, group: SeedGroup, column: str, ylabel: str, published: dict[str, dict[str, float]] | None,
               floor_keys: tuple[str, str] | None = None, short: bool = False, fontsize: float = 8) -> None:
    """Our two curves (one thin line per further seed), the floors without context on the same positions
    (``floor_keys``: the unigram's key and the copy-aware's), the paper's final values, and what had nothing to draw."""
    absent = []
    for name in paper.MODELS:
        curves = [metrics[["step", column]].dropna() for metrics in (run.model(name).metrics for run in group.runs)
                  if metrics is not None and not metrics[column].isna().all()]
        if not curves:
            absent.append(paper.MODEL_LABELS[name])
            continue
        label = f"{paper.MODEL_LABELS[name]}, " + ("ours" if short else group.label)
        ax.plot(curves[0]["step"], curves[0][column], label=label, **OUR_STYLE[name])
        for points in curves[1:]:
            ax.plot(points["step"], points[column], color=OUR_STYLE[name]["color"], linewidth=0.8, alpha=0.45)
    if floor_keys is not None:
        unigram_key, key = floor_keys
        if group.baseline is not None:
            ax.axhline(group.baseline[unigram_key], color="black", linestyle=":", linewidth=1.4,
                       label="unigram baseline (no context, same positions)")
        copy_aware = kind_mean(group, "copy_aware", key, "all")
        if math.isfinite(copy_aware):
            ax.axhline(copy_aware, color="tab:purple", linestyle=(0, (3, 1, 1, 1, 1, 1)), linewidth=1.2,
                       label="copy-aware floor (copy the visible token, else unigram; no context)")
    table, lang = "Table 3" if column == "eval_accuracy" else "Table 2", group.lang
    for name in paper.MODELS if published is not None and lang in published else ():
        ax.axhline(published[lang][name], **PAPER_STYLE[name],
                   label=f"paper {lang.upper()} {paper.MODEL_LABELS[name]}, {table} ({paper.STEPS // 1000}k steps)")
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if absent:
        ax.text(0.5, 0.5, f"missing: {', '.join(absent)}", transform=ax.transAxes, ha="center", color="tab:red")
    if ax.get_lines():
        ax.legend(fontsize=fontsize)


def group_title(group: SeedGroup) -> str:
    """'English, demo preset, 300 steps' (+ the max_steps cap and the seeds when there are several)."""
    seeds = f", seeds {', '.join(map(str, group.seeds))}" if len(group.runs) > 1 else ""
    return f"{lang_name(group.lang)}, {group.first.preset or '?'} preset, {group.first.steps_text}{seeds}"


CURVES = {  # figure: the column drawn, what it is, its unit, the floors' keys (unigram, copy-aware), the paper's finals
    "1a": ("train_loss", "training loss", "cross-entropy, interval mean", None, paper.TRAIN_LOSS),
    "1b": ("eval_loss", "evaluation loss", "cross-entropy", ("unigram_loss", "loss"), paper.EVAL_LOSS),
    "2": ("eval_accuracy", "evaluation accuracy", "masked tokens", ("unigram_accuracy", "correct"),
          paper.EVAL_ACCURACY)}


def curves_figure(runset: RunSet, lang: str, panel: str, paper_refs: bool = True) -> Figure:
    """Figure ``panel`` of ours (:data:`CURVES`): both models' curve over steps (:func:`plot_panel`), one language."""
    group = main_groups(runset).get(lang)  # the group of comparable runs with the most seeds
    if group is None:
        raise ValueError(f"no run with pretraining metrics for language {lang!r} that can be compared; "
                         f"languages with metrics: {runset.langs_with_metrics() or 'none'}")
    column, what, unit, floor_keys, published = CURVES[panel]
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot()
    plot_panel(ax, group, column, f"{what} ({unit})", published if paper_refs else None, floor_keys)
    ax.set_title(f"Figure {panel} (ours): {what}, {group_title(group)}\ngrey lines: the paper's final values for "
                 f"this language (its own Figure {panel} shows Czech)", fontsize=10)
    return fig


def figure1_loss(runset: RunSet, lang: str, kind: str = "train", paper_refs: bool = True) -> Figure:
    """Figure 1a (kind='train') or 1b (kind='eval', with the floors): loss over steps, both models."""
    if kind not in ("train", "eval"):
        raise ValueError(f"kind must be 'train' or 'eval', not {kind!r}")
    return curves_figure(runset, lang, "1a" if kind == "train" else "1b", paper_refs)


def figure2_accuracy(runset: RunSet, lang: str, paper_refs: bool = True) -> Figure:
    """Figure 2: masked-token accuracy over steps, both models of one language, with the floors."""
    return curves_figure(runset, lang, "2", paper_refs)


def figure3_accuracy_by_language(runset: RunSet) -> Figure:
    """Figure 3: one accuracy panel per language with comparable runs; the others are named, not drawn."""
    groups = list(main_groups(runset).values())
    without = [x.upper() for x in paper.LANGS if x not in {g.lang for g in groups}]
    ncols = max(1, min(3, len(groups)))  # at most three panels a row
    nrows = max(1, math.ceil(len(groups) / ncols))
    fig = Figure(figsize=(4.6 * ncols, 3.6 * nrows + 0.6), layout="constrained")
    if not groups:
        ax = fig.add_subplot()
        ax.set_axis_off()
        ax.text(0.5, 0.5, "no run with pretraining metrics", ha="center", va="center")
    for i, group in enumerate(groups):
        ax = fig.add_subplot(nrows, ncols, i + 1)
        plot_panel(ax, group, "eval_accuracy", "evaluation accuracy", paper.EVAL_ACCURACY, short=True, fontsize=7)
        ax.set_title(group_title(group), fontsize=10)
    note = (f"no comparable run of ours for: {', '.join(without)}" if without else "every paper language has a run")
    fig.suptitle(f"Figure 3 (ours): evaluation accuracy over training steps by language\n{note}; "
                 "grey lines = the paper's final values per language (Table 3, 100k steps)", fontsize=11)
    return fig


def save_figure(fig: Figure, out_dir: Path, name: str, metadata_title: str) -> list[Path]:
    """``name``.png and .pdf; the PDF without a creation date, so the same figure gives the same bytes every time."""
    paths = [out_dir / f"{name}.{fmt}" for fmt in FIGURE_FORMATS]
    for path in paths:
        pdf = {"CreationDate": None} if path.suffix == ".pdf" else {}
        fig.savefig(path, dpi=150, metadata={"Title": metadata_title, **pdf})
    return paths
