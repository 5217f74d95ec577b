"""Plots of notebook 02: the tokenizer report as bars, vocabulary composition, encoded lengths.

They draw what ``helpers.tokenizer`` computes; matplotlib is imported only when a plot is drawn.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from helpers.tokenizer import MODEL_MAX_LENGTH, share_over_limit


def plot_length_histograms(lengths: Mapping[str, np.ndarray], limit: int = MODEL_MAX_LENGTH, ax: Any = None) -> Any:
    """Overlaid histograms of encoded document lengths with the truncation limit marked."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    top = max(int(np.percentile(v, 99)) for v in lengths.values())
    bins = np.linspace(0, max(top, limit) * 1.05, 40)
    for name, values in lengths.items():
        ax.hist(np.clip(values, 0, bins[-1]), bins=bins, alpha=0.5,
                label=f"{name}: {share_over_limit(values, limit):.0%} over {limit}")
    ax.axvline(limit, color="black", linestyle="--", linewidth=1)
    ax.set_xlabel("tokens per document (incl. [CLS] and [SEP]; last bin holds the longest 1%)")
    ax.set_ylabel("documents")
    ax.set_title("Encoded length of held-out documents vs the 128-token limit")
    ax.legend()
    return ax


def plot_vocab_composition(reports: Mapping[str, Mapping[str, Any]], ax: Any = None) -> Any:
    """Stacked bars: how much of each vocabulary starts a word and how much continues one (##)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(4, 3.2))
    names = list(reports)
    whole = np.array([float(reports[n]["whole_word_share"]) for n in names])
    cont = np.array([float(reports[n]["continuation_share"]) for n in names])
    ax.bar(names, whole, label="word-initial entries", color="tab:blue")
    ax.bar(names, cont, bottom=whole, label="## continuation entries", color="tab:gray")
    for i, (w, c) in enumerate(zip(whole, cont)):
        ax.text(i, w / 2, f"{w:.0%}", ha="center", va="center", color="white")
        ax.text(i, w + c / 2, f"{c:.0%}", ha="center", va="center")
    ax.set_ylim(0, 1.3)  # headroom above the bars for the legend
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_ylabel("share of vocabulary (specials excluded)")
    ax.set_title("vocabulary composition")
    ax.legend(loc="upper center", fontsize="small")
    return ax


def plot_report_bars(reports: Mapping[str, Mapping[str, Any]],
                     metrics: Sequence[str] = ("unk_rate", "fertility", "continuation_share", "share_over_limit"),
                     axes: Any = None) -> Any:
    """One small bar chart per metric, tokenizers side by side."""
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, len(metrics), figsize=(3.2 * len(metrics), 3.2))
    names = list(reports)
    for ax, metric in zip(np.atleast_1d(axes), metrics):
        values = [float(reports[n][metric]) for n in names]
        bars = ax.bar(names, values, color=["tab:blue", "tab:orange", "tab:green", "tab:red"][: len(names)])
        ax.bar_label(bars, fmt="%.3g")
        ax.set_title(metric.replace("_", " "))
        ax.margins(y=0.2)
    return axes
