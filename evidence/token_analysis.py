"""Beyond the paper, at the ``[MASK]`` positions of the final evaluation (where a model must use context): which
tokens BERT_FT's head start helps (by the true token's training-text frequency, word or ``##`` piece, and whether its
row started from a fastText vector), what each model predicts, and whether the head start is knowledge or scale.

Knowledge or scale: the control BERT_FT_PERM starts from BERT_FT's vector rows permuted among themselves (the same
norms and spread, each on another token): BERT_FT minus the control is what knowing *which* word a row belongs to
adds, the control minus BERT_TINY what rows of that scale add without it.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from evidence.position_scores import (
    RunPositions,
    estimate_columns,
    group_table,
    paired_difference,
    share_estimate,
    share_text,
)
from evidence.results import RunSet, SeedGroup, cached_per_runset, comparison_groups
from helpers.claims import OTHER_WAY, verdict
from pipeline.store.layout import CONTROL_MODEL, RunLayout

# Training-text count of the true token: rare (< 10) to very frequent (>= 10,000); log-spaced, so a bucket
# holds tokens of one order of magnitude.
FREQUENCY_EDGES = (0, 10, 100, 1_000, 10_000)
FREQUENT_WORDS = 50  # the most frequent whole-word tokens of the training text: mostly function words


def frequency_bucket(counts: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.asarray(FREQUENCY_EDGES[1:]), counts, side="right")


def bucket_names() -> list[str]:
    edges = [*FREQUENCY_EDGES, None]
    return [f"{low:,}-{high - 1:,}" if high else f">= {low:,}" for low, high in zip(edges[:-1], edges[1:])]


def groupings(run: RunPositions) -> dict[str, tuple[np.ndarray, list[str]]]:
    """Per grouping, each position's group index (by its true token) and the groups' names."""
    facts, label = run.facts, run.label
    found = {"training-text frequency": (frequency_bucket(facts["train_count"][label]), bucket_names()),
             "word or piece": (facts["is_piece"][label].astype(int), ["whole word", "## piece"])}
    if bool(facts.get("has_vector_known", True)):  # else the static step's found.npy was not there to read
        found["BERT_FT's initial row"] = (facts["has_vector"][label].astype(int),
                                          ["zero (no fastText vector)", "fastText vector"])
    return found


def token_splits(runs: list[RunPositions]) -> list[tuple[str, str, list[np.ndarray]]]:
    """(grouping, group, each run's [MASK] positions of that group) for every group that holds some in every run:
    a group one seed lacks is left out whole, lest a mean over the others sit beside an interval over all."""
    splits, found = [], [groupings(r) for r in runs]
    for grouping, (_, names) in found[0].items():
        for index, name in enumerate(names):
            chosen = [r.select("mask") & (f[grouping][0] == index) for r, f in zip(runs, found)]
            if all(c.any() for c in chosen):
                splits.append((grouping, name, chosen))
    return splits


def difference_columns(runs: list[RunPositions], chosen: list[np.ndarray], same: bool, first: str, second: str,
                       salt: str, suffix: str = "") -> dict[str, Any]:
    """``first`` minus ``second`` in loss and in accuracy at each seed's ``chosen`` positions (the draws seeded by
    ``salt`` and the key): per metric its mean (column: the metric's name and ``suffix``), both intervals and its
    verdict ('shown' when both exclude 0 with ``first`` better), and how the interval was made."""
    row: dict[str, Any] = {}
    for key, short, lower in (("loss", "loss", True), ("correct", "accuracy", False)):
        est = paired_difference(runs, chosen, same, first, second, key, f"{salt}{key}")
        row.update(estimate_columns(est, f"{short}{suffix}", f"{short} "))
        shown = verdict(est, lower).replace("holds", "shown").replace(OTHER_WAY, "shown, the other way")
        row[f"{short} verdict"] = shown
    return row


def _group_rows(group: SeedGroup, runs: list[RunPositions], same: bool) -> list[dict[str, Any]]:
    rows = []
    for grouping, name, chosen in token_splits(runs):
        row: dict[str, Any] = {"lang": group.lang, "label": group.label, "grouping": grouping, "group": name,
                               "positions": int(chosen[0].sum())}
        for key, short in (("correct", "accuracy"), ("loss", "loss")):
            for model, label in (("bert_tiny", "TINY"), ("bert_ft", "FT")):
                row[f"{short} {label}"] = float(np.mean([r.scores[model][key][c].mean() for r, c in zip(runs, chosen)]))
        row.update(difference_columns(runs, chosen, same, "bert_ft", "bert_tiny", f"{group.lang}{grouping}{name}",
                                      " FT - TINY"))
        rows.append(row)
    return rows


@cached_per_runset
def token_groups_table(runset: RunSet) -> pd.DataFrame:
    """BERT_FT minus BERT_TINY at [MASK] positions, by frequency, word or piece, and initial row, with both intervals
    and the verdict of the two-interval rule ('shown' only when both exclude 0)."""
    return group_table(comparison_groups(runset), _group_rows, "group",
                       ["lang", "label", "grouping", "group", "positions", "accuracy TINY", "accuracy FT",
                        "accuracy FT - TINY", "accuracy ci_low", "accuracy ci_high", "accuracy seed_ci_low",
                        "accuracy seed_ci_high", "accuracy verdict", "loss TINY", "loss FT", "loss FT - TINY",
                        "loss ci_low", "loss ci_high", "loss seed_ci_low", "loss seed_ci_high", "loss verdict",
                        "interval"])


def _prediction_rows(group: SeedGroup, runs: list[RunPositions], same: bool) -> list[dict[str, Any]]:
    # the first seed's predictions only (the shares vary little between seeds): the label names that seed
    first, facts = runs[0], runs[0].facts
    words = np.where(~facts["is_piece"] & ~facts["is_punctuation"], facts["train_count"], -1)
    frequent = np.isin(np.arange(len(words)), np.argsort(words)[::-1][:FREQUENT_WORDS])
    chosen = first.select("mask")
    return [{"lang": group.lang, "label": group.first_seed_label, "who": who, "positions": int(chosen.sum()),
             "punctuation": float(facts["is_punctuation"][ids[chosen]].mean()),
             f"top {FREQUENT_WORDS} words": float(frequent[ids[chosen]].mean()),
             "distinct tokens": int(len(np.unique(ids[chosen])))}
            for who, ids in (("true token", first.label), ("BERT_TINY", first.top1["bert_tiny"]),
                             ("BERT_FT", first.top1["bert_ft"]))]


@cached_per_runset
def prediction_kinds_table(runset: RunSet) -> pd.DataFrame:
    """At [MASK] positions: the share of each model's top-1 predictions (and of the true tokens) that are
    punctuation, or one of the FREQUENT_WORDS most frequent whole words; from the group's first seed, named."""
    return group_table(comparison_groups(runset), _prediction_rows)


def cloze_table(runset: RunSet) -> pd.DataFrame:
    """Notebook 04's fill-mask answers in each group's first seed (named in the label): each model's five most
    probable tokens per masked word; none from records made before 04 kept them."""
    rows = []
    for group in (g for g in comparison_groups(runset) if g.runs):
        path = RunLayout(group.first.run_dir).pretrain.cloze
        if path.is_file():
            rows += [{"lang": group.lang, "label": group.first_seed_label, **row}
                     for row in json.loads(path.read_text(encoding="utf-8"))["rows"]]
    return pd.DataFrame(rows)


def token_groups_figure(table: pd.DataFrame) -> plt.Figure:
    """Accuracy gain at [MASK] positions per training-text frequency bucket, one line per language."""
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    rows = table[table["grouping"] == "training-text frequency"]
    for lang, part in rows.groupby("lang", sort=False):
        x = np.arange(len(part))
        gain = part["accuracy FT - TINY"]
        err = [gain - part["accuracy ci_low"], part["accuracy ci_high"] - gain]
        ax.errorbar(x, gain, yerr=err, marker="o", capsize=3, label=f"{lang} ({part['label'].iloc[0]})")
        ax.set_xticks(x, part["group"], fontsize=8)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlabel("count of the true token in the training text")
    ax.set_ylabel("accuracy gain at [MASK] (FT - TINY)")
    ax.set_title("Where BERT_FT's gain comes from (ours, 95 % intervals)", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


COMPARISONS = (("bert_ft", CONTROL_MODEL, "FT - PERM (which word: knowledge)"),
               (CONTROL_MODEL, "bert_tiny", "PERM - TINY (rows of that scale, no knowledge)"),
               ("bert_ft", "bert_tiny", "FT - TINY (the whole head start)"))
CONTROL_COLUMNS = ["lang", "label", "comparison", "grouping", "group", "positions", "n_seeds", "loss", "loss ci_low",
                   "loss ci_high", "loss seed_ci_low", "loss seed_ci_high", "loss verdict", "accuracy",
                   "accuracy ci_low", "accuracy ci_high", "accuracy seed_ci_low", "accuracy seed_ci_high",
                   "accuracy verdict", "interval"]


def comparison_rows(comparisons: Sequence[tuple[str, str, str]], every_position: bool = False) -> Callable[..., list]:
    """A group_table builder: every comparison, overall at [MASK] (and over all positions with ``every_position``)
    and in each token group that holds [MASK] positions."""
    def rows(group: SeedGroup, runs: list[RunPositions], same: bool) -> list[dict[str, Any]]:
        every = [("all", "all positions", [r.select("all") for r in runs])] if every_position else []
        splits = [*every, ("all", "[MASK] positions", [r.select("mask") for r in runs]), *token_splits(runs)]
        return [{"lang": group.lang, "label": group.label, "comparison": comparison, "grouping": grouping,
                 "group": name, "positions": int(chosen[0].sum()), "n_seeds": len(runs),
                 **difference_columns(runs, chosen, same, first, second, f"{group.lang}{comparison}{name}")}
                for first, second, comparison in comparisons for grouping, name, chosen in splits]
    return rows


@cached_per_runset
def control_table(runset: RunSet) -> pd.DataFrame:
    """The comparisons in every language group, over the seeds that trained the control (empty when none did; the
    label says how many). A verdict 'shown': both intervals exclude 0 with the first model better."""
    groups = (g.with_models(CONTROL_MODEL) for g in comparison_groups(runset))
    return group_table(groups, comparison_rows(COMPARISONS), "group", CONTROL_COLUMNS)


def interval_text(row: pd.Series, key: str) -> str:
    """'+0.123 [+0.100, +0.150; seeds +0.090 to +0.160]': a table row's value with both of its intervals."""
    seeds = (f"; seeds {row[f'{key} seed_ci_low']:+.3f} to {row[f'{key} seed_ci_high']:+.3f}"
             if np.isfinite(row[f"{key} seed_ci_low"]) else "")
    return f"{row[key]:+.3f} [{row[f'{key} ci_low']:+.3f}, {row[f'{key} ci_high']:+.3f}{seeds}]"


def _control_share_rows(group: SeedGroup, runs: list[RunPositions], same: bool) -> list[dict[str, Any]]:
    return [{"lang": group.lang, "label": group.label, **share_estimate(runs, same, "loss", f"{group.lang}knowledge",
                                                                        ("bert_ft", CONTROL_MODEL))}]


@cached_per_runset
def knowledge_share_table(runset: RunSet) -> pd.DataFrame:
    """Per language group with the control: the share of the loss head start at [MASK] that knowledge makes,
    (FT - PERM) / (FT - TINY), with its intervals."""
    groups = (g.with_models(CONTROL_MODEL) for g in comparison_groups(runset))
    return group_table(groups, _control_share_rows)


def knowledge_or_scale(table: pd.DataFrame, shares: pd.DataFrame) -> list[str]:
    """One sentence per language, built from the tables' overall [MASK] rows, whichever way the numbers fall."""
    sentences = []
    for (lang, label), part in table[table["grouping"] == "all"].groupby(["lang", "label"], sort=False):
        rows = part.set_index("comparison")
        knowledge, scale, whole = (rows.loc[c] for _, _, c in COMPARISONS)
        found = shares[(shares["lang"] == lang) & (shares["label"] == label)]
        share = share_text(found.iloc[0]) if not found.empty else "an unknown share"
        sentences.append(
            f"{lang.upper()} ({label}), at the [MASK] positions: of BERT_FT's loss difference to BERT_TINY, "
            f"{interval_text(whole, 'loss')} nat, the vectors' knowledge (BERT_FT − BERT_FT_PERM) is "
            f"{interval_text(knowledge, 'loss')} ({knowledge['loss verdict']}) and the rows' scale (BERT_FT_PERM − "
            f"BERT_TINY) {interval_text(scale, 'loss')} ({scale['loss verdict']}): knowledge makes {share} of it. "
            f"Accuracy: knowledge {interval_text(knowledge, 'accuracy')}, scale {interval_text(scale, 'accuracy')}.")
    return sentences
