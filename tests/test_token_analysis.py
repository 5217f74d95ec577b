"""Where the gain comes from: positions grouped by their true token, from the smoke run's records."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from evidence import position_scores, results, token_analysis
from pipeline.store import layout


def test_frequency_buckets_hold_one_order_of_magnitude_each() -> None:
    counts = np.array([0, 9, 10, 99, 100, 9_999, 10_000, 1_000_000])
    assert token_analysis.frequency_bucket(counts).tolist() == [0, 0, 1, 1, 2, 3, 4, 4]
    assert token_analysis.bucket_names() == ["0-9", "10-99", "100-999", "1,000-9,999", ">= 10,000"]


@pytest.fixture(scope="module")
def smoke_runset(smoke_figures: Path, smoke_run_dir: Path) -> results.RunSet:
    return results.load_runs([smoke_run_dir])


def test_each_grouping_splits_the_mask_positions_without_loss(smoke_runset: results.RunSet) -> None:
    table = token_analysis.token_groups_table(smoke_runset)
    group = [g for g in results.comparison_groups(smoke_runset) if g.runs][0]
    runs, _ = position_scores.group_positions(group)
    n_mask = int(runs[0].select("mask").sum())
    assert n_mask > 0 and set(table["grouping"]) == {"training-text frequency", "word or piece",
                                                     "BERT_FT's initial row"}
    for _, part in table.groupby("grouping"):
        assert part["positions"].sum() == n_mask
        # the groups' accuracies, weighted by their positions, give back the [MASK]-only accuracy
        weighted = (part["accuracy FT"] * part["positions"]).sum() / n_mask
        assert weighted == pytest.approx(runs[0].mean("bert_ft", "correct", "mask"))
    assert ((table["accuracy ci_low"] <= table["accuracy FT - TINY"])
            & (table["accuracy FT - TINY"] <= table["accuracy ci_high"])).all()


def test_prediction_shares_compare_each_model_with_the_true_tokens(smoke_runset: results.RunSet) -> None:
    table = token_analysis.prediction_kinds_table(smoke_runset)
    assert table["who"].tolist() == ["true token", "BERT_TINY", "BERT_FT"]
    shares = table[["punctuation", f"top {token_analysis.FREQUENT_WORDS} words"]].to_numpy()
    assert ((0 <= shares) & (shares <= 1)).all()
    assert (table["distinct tokens"] >= 1).all() and table["positions"].nunique() == 1
    # the shares come from one seed, and the label says which one rather than the group's seed count
    seed = [g for g in results.comparison_groups(smoke_runset) if g.runs][0].first.seed
    assert (table["label"].str.endswith(f", seed {seed})") & ~table["label"].str.contains("seeds")).all()


def _run_with_counts(train_count: list[int]) -> position_scores.RunPositions:
    """Four [MASK] positions whose true tokens occur ``train_count`` times in the training text."""
    n = len(train_count)
    label = np.arange(n)
    facts = {"train_count": np.array(train_count), "is_piece": np.zeros(n, bool), "has_vector": np.ones(n, bool)}
    scores = {m: {"loss": np.ones(n), "correct": np.zeros(n)} for m in ("bert_tiny", "bert_ft")}
    return position_scores.RunPositions(np.zeros(n, int), np.arange(n), label, facts, scores, {})


def test_a_token_group_that_one_seed_lacks_is_left_out_not_averaged_over_the_others() -> None:
    both = [_run_with_counts([5, 50, 500, 5]), _run_with_counts([5, 50, 5, 5])]  # seed 1 has no 100-999 token
    groups = {name for grouping, name, _ in token_analysis.token_splits(both) if grouping == "training-text frequency"}
    assert groups == {"0-9", "10-99"}
    assert "100-999" in {name for _, name, _ in token_analysis.token_splits(both[:1])}


def test_the_first_seeds_problem_is_returned_before_a_later_seeds_positions_are_read(monkeypatch) -> None:
    first, later = object(), object()

    def positions_of(run: object, name: str) -> str:
        if run is first and name == "bert_tiny":
            return "positions.npz not found"
        raise ValueError("a later seed's corrupt positions.npz was read")  # what np.load says of a broken file
    monkeypatch.setattr(position_scores, "positions_of", positions_of)
    group = SimpleNamespace(runs=[first, later])
    assert position_scores.model_differences(group, "loss") == "positions.npz not found"


def test_the_fill_mask_answers_are_each_models_five_guesses_at_each_recorded_sentence(
        smoke_runset: results.RunSet, smoke_run_dir: Path, tmp_path: Path) -> None:
    recorded = json.loads(layout.RunLayout(smoke_run_dir).pretrain.cloze.read_text(encoding="utf-8"))
    table = token_analysis.cloze_table(smoke_runset)
    truths = [example["truth"] for example in recorded["examples"]]
    assert truths and table["masked word"].drop_duplicates().tolist() == truths
    assert set(table["model"]) >= {"BERT_TINY", "BERT_FT"} and table[[f"#{k}" for k in range(1, 6)]].notna().all().all()
    # a record from before notebook 04 kept the answers gives no rows, not an error
    older = tmp_path / smoke_run_dir.name
    shutil.copytree(smoke_run_dir / "pretrain", older / "pretrain", ignore=shutil.ignore_patterns(
        "data", "model", "checkpoint.pt", layout.RunLayout(smoke_run_dir).pretrain.cloze.name))
    shutil.copytree(smoke_run_dir / "static", older / "static")
    assert token_analysis.cloze_table(results.load_runs([older])).empty
