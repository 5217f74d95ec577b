"""Knowledge or scale: is BERT_FT's head start the vectors' knowledge of words, or the scale of its first rows?

The control BERT_FT_PERM starts from BERT_FT's vector rows permuted among themselves
(:func:`helpers.model.permute_vector_rows`): the same norms and spread, each on another token. At the
``[MASK]`` positions, BERT_FT minus the control is what knowing *which* word a row belongs to adds; the control
minus BERT_TINY is what rows of that scale and spread add without it. Both come overall and by the true token's
group (:func:`pipeline.token_analysis.groupings`), each with the two-level interval and a seed-level t-interval.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from helpers.claims import verdict
from pipeline.layout import CONTROL_MODEL
from pipeline.position_scores import RunPositions, paired_difference, rows_by_group
from pipeline.results import RunSet, SeedGroup, built_once, comparison_groups
from pipeline.token_analysis import token_splits

COMPARISONS = (("bert_ft", CONTROL_MODEL, "FT - PERM (which word: knowledge)"),
               (CONTROL_MODEL, "bert_tiny", "PERM - TINY (rows of that scale, no knowledge)"),
               ("bert_ft", "bert_tiny", "FT - TINY (the whole head start)"))
COLUMNS = ["lang", "label", "comparison", "grouping", "group", "positions", "n_seeds", "loss", "loss ci_low",
           "loss ci_high", "loss seed_ci_low", "loss seed_ci_high", "loss verdict", "accuracy", "accuracy ci_low",
           "accuracy ci_high", "accuracy seed_ci_low", "accuracy seed_ci_high", "accuracy verdict", "interval"]


def _rows(group: SeedGroup, runs: list[RunPositions], same: bool) -> list[dict[str, Any]]:
    """Every comparison, overall at [MASK] and in each token group that holds [MASK] positions."""
    splits = [("all", "[MASK] positions", [r.select("mask") for r in runs]), *token_splits(runs)]
    rows = []
    for first, second, comparison in COMPARISONS:
        for grouping, name, chosen in splits:
            row: dict[str, Any] = {"lang": group.lang, "label": group.label, "comparison": comparison,
                                   "grouping": grouping, "group": name, "positions": int(chosen[0].sum()),
                                   "n_seeds": len(runs)}
            for key, short, lower in (("loss", "loss", True), ("correct", "accuracy", False)):
                est = paired_difference(runs, chosen, same, first, second, key, f"{group.lang}{comparison}{name}{key}")
                row.update({short: est.mean, f"{short} ci_low": est.low, f"{short} ci_high": est.high,
                            f"{short} seed_ci_low": est.seed_low, f"{short} seed_ci_high": est.seed_high,
                            f"{short} verdict": verdict(est, lower).replace("holds", "shown").replace(
                                "does not hold", "shown, the other way")})
                row["interval"] = est.interval
            rows.append(row)
    return rows


@built_once
def control_table(runset: RunSet) -> pd.DataFrame:
    """The comparisons in every language group, over the seeds that trained the control (empty when none did).

    The label says how many seeds that is. A verdict 'shown' means both intervals exclude 0 with the first
    model better (lower loss, higher accuracy).
    """
    groups = (g.with_control() for g in comparison_groups(runset))
    return pd.DataFrame(rows_by_group(groups, _rows, lambda why: {"comparison": None, "group": why}), columns=COLUMNS)


def _interval(row: pd.Series, key: str) -> str:
    seeds = (f"; seeds {row[f'{key} seed_ci_low']:+.3f} to {row[f'{key} seed_ci_high']:+.3f}"
             if np.isfinite(row[f"{key} seed_ci_low"]) else "")
    return f"{row[key]:+.3f} [{row[f'{key} ci_low']:+.3f}, {row[f'{key} ci_high']:+.3f}{seeds}]"


def knowledge_or_scale(table: pd.DataFrame) -> list[str]:
    """One sentence per language, built from the table's overall [MASK] rows, whichever way the numbers fall."""
    sentences = []
    for (lang, label), part in table[table["grouping"] == "all"].groupby(["lang", "label"], sort=False):
        rows = part.set_index("comparison")
        knowledge, scale, whole = (rows.loc[c] for _, _, c in COMPARISONS)
        share = knowledge["loss"] / whole["loss"] if whole["loss"] else float("nan")
        sentences.append(
            f"{lang.upper()} ({label}), at the [MASK] positions: of BERT_FT's loss difference to BERT_TINY, "
            f"{_interval(whole, 'loss')} nat, the vectors' knowledge (BERT_FT − BERT_FT_PERM) is "
            f"{_interval(knowledge, 'loss')} ({knowledge['loss verdict']}) and the rows' scale (BERT_FT_PERM − "
            f"BERT_TINY) {_interval(scale, 'loss')} ({scale['loss verdict']}): knowledge makes {share:.0%} of it. "
            f"Accuracy: knowledge {_interval(knowledge, 'accuracy')}, scale {_interval(scale, 'accuracy')}.")
    return sentences
