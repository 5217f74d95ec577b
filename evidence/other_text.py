"""Does knowledge from other text transfer? BERT_FT_WEB (vectors pretrained on web-scale text) against BERT_TINY,
against BERT_FT (vectors trained here on the very text the model reads) and against its own control (its rows
permuted), paired by seed and evaluation position, at the ``[MASK]`` positions and over all of them.

The share of the same-text head start that the other-text vectors give, (WEB - TINY) / (FT - TINY), comes with two
intervals: the two-level bootstrap's (numerator and denominator drawn with the same seeds and positions, so the
ratio is paired) and a t-interval over the per-seed ratios.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from evidence.position_scores import RunPositions, group_table, share_estimate, share_text
from evidence.results import RunSet, SeedGroup, cached_per_runset, comparison_groups, main_groups
from evidence.token_analysis import CONTROL_COLUMNS, comparison_rows, interval_text
from helpers.claims import BOOTSTRAP_DRAWS
from pipeline.store.layout import WEB_CONTROL, WEB_MODEL
from pipeline.vectors.pretrained_vectors import NO_TABLE, TABLES

WEB_COMPARISONS = (("bert_ft_web", "bert_tiny", "WEB - TINY (other-text vectors' head start)"),
                   ("bert_ft", "bert_tiny", "FT - TINY (same-text vectors' head start)"),
                   ("bert_ft_web", "bert_ft", "WEB - FT (other text against the same text)"))
WEB_CONTROL_COMPARISONS = (("bert_ft_web", "bert_ft_web_perm", "WEB - WEB_PERM (which word: knowledge)"),
                           ("bert_ft_web_perm", "bert_tiny", "WEB_PERM - TINY (rows of that scale, no knowledge)"))
SHARE_COLUMNS = ["lang", "label", "positions", "n_seeds", "metric", "share", "share ci_low", "share ci_high",
                 "share seed_ci_low", "share seed_ci_high", "share_per_seed", "interval"]
NOTE = ("BERT_FT_WEB starts from vectors pretrained on web-scale text (spaCy's CC0 tables: English OSCAR, Wikipedia, "
        "OpenSubtitles and news; French OSCAR Common Crawl and Wikipedia), aligned with the paper's recipe; it trains "
        "on the same prepared data, seed and schedule as the pair. Each row: the first model minus the second, over "
        "the seeds that trained every model of the row (n_seeds). Intervals: 95 %, the two-level bootstrap over "
        f"seeds, then positions ({BOOTSTRAP_DRAWS:,} draws), and a t-interval over the seeds; 'shown' needs both on "
        "one side of 0. Beyond the paper.")


@cached_per_runset
def web_table(runset: RunSet) -> pd.DataFrame:
    """Every comparison of the other-text arm in each language group, over all positions, at [MASK] and by token
    group; the control's comparisons over the seeds that trained it too. Empty where no run trained the arm."""
    groups = [g for g in comparison_groups(runset) if g.runs]
    arm = group_table((g.with_models(WEB_MODEL) for g in groups), comparison_rows(WEB_COMPARISONS, True), "group",
                      CONTROL_COLUMNS)
    control = group_table((g.with_models(WEB_MODEL, WEB_CONTROL) for g in groups),
                          comparison_rows(WEB_CONTROL_COMPARISONS, True), "group", CONTROL_COLUMNS)
    return pd.concat([t for t in (arm, control) if not t.empty] or [arm], ignore_index=True)


def _share_rows(group: SeedGroup, runs: list[RunPositions], same: bool) -> list[dict[str, Any]]:
    return [{"lang": group.lang, "label": group.label, "positions": int(runs[0].select("mask").sum()),
             "n_seeds": len(runs), "metric": metric,
             **share_estimate(runs, same, key, f"{group.lang}share{key}", (WEB_MODEL, "bert_tiny"))}
            for key, metric in (("loss", "loss"), ("correct", "accuracy"))]


@cached_per_runset
def share_table(runset: RunSet) -> pd.DataFrame:
    """Per language group with the arm: the share of BERT_FT's head start over BERT_TINY at [MASK] that BERT_FT_WEB
    gives, in loss and in accuracy."""
    groups = (g.with_models(WEB_MODEL) for g in comparison_groups(runset) if g.runs)
    return group_table(groups, _share_rows, None, SHARE_COLUMNS)


def _said(row: pd.Series, key: str) -> str:
    return f"{interval_text(row, key)}{' nat' if key == 'loss' else ''} ({row[f'{key} verdict']})"


def other_text_answer(table: pd.DataFrame, shares: pd.DataFrame) -> list[str]:
    """One sentence per language group, from the tables' overall [MASK] rows, whichever way the numbers fall."""
    sentences = []
    mask = table[(table["grouping"] == "all") & (table["group"] == "[MASK] positions")]
    for (lang, label), part in mask.groupby(["lang", "label"], sort=False):
        rows = part.set_index("comparison")
        web, ft, against = (rows.loc[c] for _, _, c in WEB_COMPARISONS)
        share = shares[(shares["lang"] == lang) & (shares["label"] == label) & (shares["metric"] == "loss")]
        said = "" if share.empty else (f" The other-text vectors give {share_text(share.iloc[0])} of the same-text "
                                        "vectors' loss head start.")
        sentences.append(
            f"{lang.upper()} ({label}), at the [MASK] positions, loss: BERT_FT_WEB − BERT_TINY {_said(web, 'loss')}; "
            f"BERT_FT − BERT_TINY {_said(ft, 'loss')}; BERT_FT_WEB − BERT_FT {_said(against, 'loss')}. "
            f"Accuracy: BERT_FT_WEB − BERT_TINY {_said(web, 'accuracy')}.{said}")
    return sentences


def _source_row(lang: str, source: str, manifest: dict[str, Any]) -> dict[str, Any]:
    if "n_found" not in manifest or "vocab_size" not in manifest:
        return {"lang": lang, "source": source, "note": "no static-vector manifest in this run's record"}
    found = manifest["n_found"]
    # vectors trained here give every word its own row; a pruned table's manifest counts the rows tokens share by
    # content. The first records (f673e42) counted them by table row under "coverage", which overstates a table
    # holding duplicate rows (English: 10,112 distinct among 20,000): left blank, notebook 03 shows them by content.
    old = "coverage" in manifest
    own, distinct = (None, None) if old else (manifest.get("own_row", found), manifest.get("distinct_rows", found))
    return {"lang": lang, "source": source, "vectors": manifest.get("trained_on") or manifest.get("corpus"),
            "vocab_size": manifest["vocab_size"], "n_found": found, "share": found / manifest["vocab_size"],
            "distinct_rows": distinct, "own_row": own, "shared_row": None if old else found - own,
            "found_element_std": manifest.get("found_element_std"),
            "note": "rows shared: see notebook 03 (this record counted table rows, not contents)" if old else ""}


def missing_web_vectors(lang: str) -> str:
    """Why a language's table has no other-text row: no such vectors offline, or none trained in these runs."""
    if lang in NO_TABLE or lang not in TABLES:
        return "none offline: no registry package ships such vectors"
    return "not trained in these runs (make reference-web trains BERT_FT_WEB)"


@cached_per_runset
def vector_sources_table(runset: RunSet) -> pd.DataFrame:
    """Table 1 for both sources, from each language's first seed: vocabulary tokens with a vector, with a row of their
    own and with a shared one, and the copied rows' size; a row says where no other-text vectors exist or were used."""
    rows = []
    for lang, group in main_groups(runset).items():
        run = group.first
        rows.append(_source_row(lang, "trained here (same text)", run.run_json("bert_ft").get("init_manifest") or {}))
        web = next((r.run_json(WEB_MODEL)["init_manifest"] for r in group.runs if WEB_MODEL in r.models), None)
        rows.append(_source_row(lang, "pretrained on other text", web) if web else
                    {"lang": lang, "source": "pretrained on other text", "note": missing_web_vectors(lang)})
    counts = ["vocab_size", "n_found", "distinct_rows", "own_row", "shared_row"]
    columns = ["lang", "source", "vectors", *counts[:2], "share", *counts[2:], "found_element_std", "note"]
    return pd.DataFrame(rows, columns=columns).astype(dict.fromkeys(counts, "Int64"))  # blank where a source is absent
