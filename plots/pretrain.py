"""Figures of notebook 04 (pretraining): they draw both models' metrics rows (read by pipeline.train.training),
nothing more.

matplotlib is imported inside the function: the GPU machines may train without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

LABELS = {"bert_tiny": "BERT_TINY (random embeddings)", "bert_ft": "BERT_FT (fastText embeddings)",
          "bert_ft_perm": "BERT_FT_PERM (the control: BERT_FT's rows permuted)",
          "bert_ft_web": "BERT_FT_WEB (vectors pretrained on web text)",
          "bert_ft_web_perm": "BERT_FT_WEB_PERM (BERT_FT_WEB's rows permuted)"}


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


def plot_embedding_sum(parts: Mapping[str, Any], tokens: Sequence[str], dims: int = 40) -> Any:
    """Equation 2 as a picture: the token, position and segment rows of each token (rows) over the first ``dims``
    dimensions (columns), their sum, and the sum after LayerNorm (what the first encoder layer receives)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(parts), figsize=(2.6 * len(parts), 0.32 * len(tokens) + 1.6), sharey=True)
    signs = ["+"] * (len(parts) - 3) + ["=", "LayerNorm", ""]
    for index, (ax, (name, matrix)) in enumerate(zip(axes, parts.items())):
        shown = matrix[:, :dims]
        limit = float(abs(shown).max()) or 1.0
        ax.imshow(shown, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
        ax.set_title(f"{name}\n(|values| up to {limit:.2f})", fontsize=8)
        ax.set_xlabel(f"first {dims} dimensions", fontsize=7)
        ax.set_xticks([])
        if signs[index]:
            ax.annotate(signs[index], xy=(1.06, 0.5), xycoords="axes fraction", ha="left", va="center",
                        fontsize=11 if len(signs[index]) == 1 else 7, weight="bold")
    axes[0].set_yticks(range(len(tokens)), tokens, fontsize=7)
    fig.tight_layout(w_pad=2.2)
    return fig


def plot_projected_rows(labels: Any, lengths: Sequence[int], hidden: int, vocab: int, ignore_index: int) -> Any:
    """Left: which positions of a batch reach the output layer (the masked ones), beside padding and the rest.
    Right: the output layer's multiply-adds when every position is projected and when only the masked are."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import ListedColormap

    labels = np.asarray(labels)
    kinds = np.zeros(labels.shape, dtype=int)  # 0 padding, 1 real but not scored, 2 masked: projected
    for row, length in enumerate(lengths):
        kinds[row, :length] = 1
    kinds[labels != ignore_index] = 2
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 2.9), gridspec_kw={"width_ratios": [3, 1]})
    left.imshow(kinds, cmap=ListedColormap(["#d9d9d9", "#f2f2f2", "#f4a259"]), vmin=0, vmax=2, aspect="auto",
                interpolation="nearest")
    left.set_xlabel("position")
    left.set_ylabel("sequence")
    projected = int((kinds == 2).sum())
    left.set_title(f"orange: the {projected} masked positions projected onto the vocabulary; light: real tokens "
                   "(encoded, not scored); grey: padding", fontsize=8)
    costs = {"every position\n(BertForMaskedLM)": labels.size * hidden * vocab,
             "masked rows only\n(masked_logits)": projected * hidden * vocab}
    right.bar(range(2), [c / 1e9 for c in costs.values()], color=["#8c8c8c", "#f4a259"])
    right.set_xticks(range(2), list(costs), fontsize=7)
    right.set_ylabel(f"output layer, GMACs\n({hidden} x {vocab:,} per row)", fontsize=8)
    for x, cost in enumerate(costs.values()):
        right.annotate(f"{cost / 1e9:.2f}", (x, cost / 1e9), textcoords="offset points", xytext=(0, 3), ha="center",
                       fontsize=8)
    fig.tight_layout()
    return fig
