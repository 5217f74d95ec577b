"""The figures of notebook 05 (linear probing): probe accuracies with their intervals, and a PCA map.

They draw what :mod:`helpers.probe` computes; nothing here changes a number.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


def plot_accuracies(df: "pd.DataFrame", chance: float | None = None, title: str = "") -> "Figure":
    """Horizontal bars of test accuracy with their 95% bootstrap intervals."""
    import matplotlib.pyplot as plt

    labels = [m if f == "-" else f"{m} ({f})" for m, f in zip(df["model"], df["feature"])]
    colours = {"cls": "tab:orange", "mean": "tab:blue"}
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(df) + 1.2))
    y = np.arange(len(df))[::-1]
    err = np.vstack([df["accuracy"] - df["ci_low"], df["ci_high"] - df["accuracy"]])
    colour = [colours.get(f, "tab:gray" if m == "majority" else "tab:green")
              for m, f in zip(df["model"], df["feature"])]
    ax.barh(y, df["accuracy"], xerr=err, color=colour, capsize=3)
    ax.set_yticks(y, labels)
    ax.set_xlim(0, 1)
    ax.set_xlabel("test accuracy (bars: 95% bootstrap interval)")
    if chance is not None:
        ax.axvline(chance, color="black", linestyle=":", label="majority class")
        ax.legend(loc="lower right")
    ax.set_title(title or "Linear probe accuracy")
    fig.tight_layout()
    return fig


def plot_pca(features: Mapping[str, np.ndarray], labels: np.ndarray, label_names: Sequence[str],
             seed: int = 0) -> "Figure":
    """Side-by-side 2-D PCA maps of test features, coloured by class.

    Each panel is standardised first, like the probe's input, so one large dimension does not
    decide the picture on its own.
    """
    import matplotlib.pyplot as plt
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import StandardScaler

    labels = np.asarray(labels)
    fig, axes = plt.subplots(1, len(features), figsize=(5.5 * len(features), 4.8), squeeze=False)
    cmap = plt.get_cmap("tab20" if len(label_names) > 10 else "tab10")
    for ax, (name, X) in zip(axes[0], features.items()):
        pca = PCA(n_components=2, random_state=seed)
        points = pca.fit_transform(StandardScaler().fit_transform(X))
        for k, class_name in enumerate(label_names):
            sel = labels == k
            if sel.any():
                ax.scatter(points[sel, 0], points[sel, 1], s=6, alpha=0.6, color=cmap(k % cmap.N), label=class_name)
        share = pca.explained_variance_ratio_.sum()
        ax.set_title(f"{name}: first 2 PCs, {share:.0%} of variance")
        ax.set_xlabel("PC 1")
        ax.set_ylabel("PC 2")
    axes[0][-1].legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, markerscale=2, frameon=False)
    fig.tight_layout()
    return fig
