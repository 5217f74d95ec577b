"""Plots for notebook 03: which tokens start from a fastText vector, and at what scale."""

from __future__ import annotations

from typing import Any

import numpy as np

from helpers.static_vectors import BERT_INIT_STD


def plot_scale(found_rows: np.ndarray, std: float = BERT_INIT_STD, ax: Any = None, seed: int = 0) -> Any:
    """Histogram of the copied vectors' elements beside BERT's N(0, 0.02) initialisation."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.8))
    values = np.asarray(found_rows, dtype=np.float32).ravel()
    bert = np.random.default_rng(seed).normal(0.0, std, size=min(values.size, 1_000_000))
    top = float(np.percentile(np.abs(np.concatenate([values, bert])), 99.9))
    bins = np.linspace(-top, top, 120)
    ax.hist(values, bins=bins, density=True, alpha=0.6, label=f"copied fastText rows (std {values.std():.4f})")
    ax.hist(bert, bins=bins, density=True, alpha=0.6, label=f"BERT init N(0, {std}) (std {bert.std():.4f})")
    ax.set_xlabel("embedding element value")
    ax.set_ylabel("density")
    ax.set_title("Scale of the initial token embeddings")
    ax.legend()
    return ax


def plot_coverage_by_rank(starts: np.ndarray, shares: np.ndarray, bucket: int, ax: Any = None,
                  label: str | None = None) -> Any:
    """Share of tokens with a fastText vector per frequency-rank bucket."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.8))
    ax.bar(starts, shares, width=bucket * 0.9, align="edge", label=label)
    ax.set_xlabel(f"token frequency rank in the corpus (buckets of {bucket:,})")
    ax.set_ylabel("share with a fastText vector")
    ax.set_ylim(0, 1)
    ax.set_title("Which tokens start from a pretrained vector")
    if label:
        ax.legend(loc="lower left")
    return ax
