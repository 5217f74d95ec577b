"""Figures of notebook 04 (pretraining): they draw the metrics.csv files helpers.pretrain wrote, nothing more.

matplotlib is imported inside the function: the GPU machines may train without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.pretrain import MODEL_NAMES, read_metrics

LABELS = {"bert_tiny": "BERT_TINY (random embeddings)", "bert_ft": "BERT_FT (fastText embeddings)"}


def plot_runs(out_dir: str | Path, save: bool = True) -> list[Any]:
    """Figures 1-2 style: training loss, evaluation loss, evaluation accuracy of both models over steps.

    Saves pretrain_loss.png and pretrain_accuracy.png into ``out_dir``; returns the figures.
    """
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    runs = {name: read_metrics(out_dir / name / "metrics.csv") for name in MODEL_NAMES
            if (out_dir / name / "metrics.csv").exists()}
    if not runs:
        raise FileNotFoundError(f"no metrics.csv under {out_dir}/bert_tiny or {out_dir}/bert_ft; train first")
    loss_fig, (ax_train, ax_eval) = plt.subplots(1, 2, figsize=(11, 4))
    acc_fig, ax_acc = plt.subplots(figsize=(5.5, 4))
    for name, rows in runs.items():
        steps = [r["step"] for r in rows]
        ax_train.plot(steps[1:], [r["train_loss"] for r in rows][1:], marker=".", label=LABELS[name])
        ax_eval.plot(steps, [r["eval_loss"] for r in rows], marker=".", label=LABELS[name])
        ax_acc.plot(steps, [r["eval_accuracy"] for r in rows], marker=".", label=LABELS[name])
    for ax, title, ylabel in ((ax_train, "(a) training loss (mean over each interval)", "cross-entropy"),
                              (ax_eval, "(b) evaluation loss (fixed masked set)", "cross-entropy"),
                              (ax_acc, "evaluation accuracy of masked tokens", "accuracy")):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("training step")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    loss_fig.tight_layout()
    acc_fig.tight_layout()
    if save:
        loss_fig.savefig(out_dir / "pretrain_loss.png", dpi=120)
        acc_fig.savefig(out_dir / "pretrain_accuracy.png", dpi=120)
    return [loss_fig, acc_fig]
