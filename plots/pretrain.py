"""Figures of notebook 04 (pretraining): they draw both models' metrics rows (read by pipeline.training), nothing more.

matplotlib is imported inside the function: the GPU machines may train without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

LABELS = {"bert_tiny": "BERT_TINY (random embeddings)", "bert_ft": "BERT_FT (fastText embeddings)",
          "bert_ft_perm": "BERT_FT_PERM (the control: BERT_FT's rows permuted)"}


def plot_runs(runs: Mapping[str, Sequence[Mapping[str, float]]], out_dir: str | Path | None = None,
              floors: Mapping[str, float] | None = None) -> list[Any]:
    """Figures 1-2 style: training loss, evaluation loss, evaluation accuracy of both models over steps.

    ``runs`` maps 'bert_tiny' / 'bert_ft' (and the control) to their metrics rows; ``floors`` (name -> loss) are
    drawn as dashed lines on the evaluation loss. Saves pretrain_loss.png and pretrain_accuracy.png into
    ``out_dir`` when one is given; returns the figures.
    """
    import matplotlib.pyplot as plt

    if not runs:
        raise ValueError("no metrics rows to plot; train a model first")
    loss_fig, (ax_train, ax_eval) = plt.subplots(1, 2, figsize=(11, 4))
    acc_fig, ax_acc = plt.subplots(figsize=(5.5, 4))
    for name, rows in runs.items():
        steps = [r["step"] for r in rows]
        ax_train.plot(steps[1:], [r["train_loss"] for r in rows][1:], marker=".", label=LABELS[name])
        ax_eval.plot(steps, [r["eval_loss"] for r in rows], marker=".", label=LABELS[name])
        ax_acc.plot(steps, [r["eval_accuracy"] for r in rows], marker=".", label=LABELS[name])
    for (name, loss), style in zip((floors or {}).items(), (":", "--")):
        ax_eval.axhline(loss, color="black", linestyle=style, linewidth=1, label=name)
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
    if out_dir is not None:
        loss_fig.savefig(Path(out_dir) / "pretrain_loss.png", dpi=120)
        acc_fig.savefig(Path(out_dir) / "pretrain_accuracy.png", dpi=120)
    return [loss_fig, acc_fig]


def plot_attention(weights: Mapping[str, Any], tokens: Sequence[str], title: str,
                   out_path: str | Path | None = None) -> Any:
    """One head's attention weights on one sentence, one panel per model: row = the token that looks,
    column = the token looked at; each row sums to 1. Saved to ``out_path`` when one is given."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(weights), figsize=(5.2 * len(weights), 4.6), squeeze=False)
    for ax, (name, matrix) in zip(axes[0], weights.items()):
        image = ax.imshow(matrix, cmap="viridis", vmin=0.0)
        ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=7)
        ax.set_yticks(range(len(tokens)), tokens, fontsize=7)
        ax.set_title(LABELS.get(name, name), fontsize=9)
        ax.set_xlabel("looked at (key)")
        ax.set_ylabel("looking (query)")
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    if out_path is not None:
        fig.savefig(out_path, dpi=120)
    return fig
