"""Figures and tables of notebook 01 (masking): they draw what ``helpers.masking`` measured, nothing more."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch

from helpers.masking import IGNORE_INDEX


def masked_table(tokenizer: Any, input_ids: torch.Tensor, output: Mapping[str, torch.Tensor],
                 row: int = 0) -> list[dict[str, Any]]:
    """One row per real token of a masked sequence: token, selected?, action, label (for display)."""
    before = input_ids[row].tolist()
    after = output["input_ids"][row].tolist()
    labels = output["labels"][row].tolist()
    real = output["attention_mask"][row].tolist()
    rows = []
    for b, a, lab, r in zip(before, after, labels, real):
        if not r:
            continue
        selected = lab != IGNORE_INDEX
        if not selected:
            action = ""
        elif a == tokenizer.mask_token_id:
            action = "[MASK]"
        elif a != b:
            action = f"random -> {tokenizer.convert_ids_to_tokens(a)}"
        else:
            action = "kept"
        rows.append({"token": tokenizer.convert_ids_to_tokens(b), "selected": selected, "action": action,
                     "model_sees": tokenizer.convert_ids_to_tokens(a),
                     "label": tokenizer.convert_ids_to_tokens(lab) if selected else "-100"})
    return rows


def plot_split(report: Mapping[str, Mapping[str, Any]], nominal: Mapping[str, float], title: str = "") -> Any:
    """Left: observed rates against BERT's targets. Right: the deviations, zoomed, inside the tolerance band.

    At full scale a 5-s.d. error bar is thinner than the bar's outline, so the right panel is the
    one that shows whether the collator is on target.
    """
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), gridspec_kw={"width_ratios": [1.2, 1]})
    keys = list(report)
    names = {"selection": "selected\n(of eligible)", "mask": "[MASK]\n(of selected)",
             "random": "random\n(of selected)", "unchanged": "kept\n(of selected)"}
    ticks = [names.get(k, k) for k in keys]
    x = list(range(len(keys)))
    observed = [report[k]["observed"] for k in keys]
    tolerance = [report[k]["tolerance"] for k in keys]
    left.bar(x, observed, yerr=tolerance, capsize=6, color="#4c72b0", alpha=0.8, label="observed")
    left.scatter(x, [nominal[k] for k in keys], marker="_", s=900, color="#c44e52", zorder=3, label="BERT target")
    for i, value in zip(x, observed):
        left.annotate(f"{value:.3f}", (i, value), textcoords="offset points", xytext=(0, 4), ha="center", fontsize=8)
    left.set_xticks(x, ticks)
    left.set_ylabel("rate")
    left.set_ylim(0, 1)
    left.legend(loc="upper right", fontsize=8)
    left.set_title("observed vs target")

    deviation = [o - nominal[k] for o, k in zip(observed, keys)]
    right.bar(x, [2 * t for t in tolerance], bottom=[-t for t in tolerance], color="0.85", width=0.6,
              label="tolerance (±5 binomial s.d.)")
    right.errorbar(x, deviation, yerr=[t / 5 for t in tolerance], fmt="o", color="#4c72b0", capsize=4,
                   label="observed − target (±1 s.d.)")
    right.axhline(0, color="#c44e52", lw=1)
    right.set_xticks(x, ticks)
    right.set_ylabel("observed − target")
    span = 1.7 * max(max(tolerance), *(abs(d) for d in deviation))
    right.set_ylim(-span, span)  # headroom above the bands for the legend
    right.legend(loc="upper center", fontsize=8, ncol=2)
    right.set_title("deviation, zoomed")
    fig.suptitle(title or "Masking split")
    fig.tight_layout()
    return fig


def plot_coverage(curves: Mapping[str, Sequence[float]], ax: Any = None) -> Any:
    """Share of eligible tokens that have been a prediction target at least once, per epoch."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 3.8))
    for name, values in curves.items():
        ax.plot(range(1, len(values) + 1), values, marker=".", label=name)
    ax.set_xlabel("epoch (passes over the same sequences)")
    ax.set_ylabel("share of tokens ever selected")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Dynamic vs static masking")
    return ax.figure


ACTION_COLOURS = {"": "#f2f2f2", "[MASK]": "#f4a259", "random": "#c44e52", "kept": "#4c72b0"}
ACTION_NAMES = {"": "not selected (label -100)", "[MASK]": "selected: [MASK] (80 %)",
                "random": "selected: a random token (10 %)", "kept": "selected: kept as it is (10 %)"}


def plot_masked_sentence(rows: Sequence[Mapping[str, Any]], per_line: int = 10, title: str = "") -> Any:
    """The sentence before (top of each pair) and after masking (below), one box per word piece, coloured by
    what happened to it; the label a selected box must predict is its top token."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    lines = (len(rows) + per_line - 1) // per_line
    fig, ax = plt.subplots(figsize=(1.15 * per_line, 1.25 * lines + 0.9))
    for index, row in enumerate(rows):
        x, y = index % per_line, -(index // per_line) * 2.5
        action = "random" if str(row["action"]).startswith("random") else row["action"]
        for dy, text in ((0.0, row["token"]), (-1.1, row["model_sees"])):
            ax.add_patch(Rectangle((x * 1.1, y + dy), 1.0, 0.9, facecolor=ACTION_COLOURS[action], edgecolor="grey"))
            ax.text(x * 1.1 + 0.5, y + dy + 0.45, text, ha="center", va="center", fontsize=7,
                    color="white" if action in ("random", "kept") else "black")
    ax.set_xlim(-0.1, per_line * 1.1)
    ax.set_ylim(-(lines - 1) * 2.5 - 1.3, 1.0)
    ax.axis("off")
    ax.legend(handles=[Patch(facecolor=c, edgecolor="grey", label=ACTION_NAMES[a]) for a, c in ACTION_COLOURS.items()],
              loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=8, frameon=False)
    ax.set_title(title or "each pair of rows: the text (top), what the model sees (below)", fontsize=9)
    return fig
