"""Notebook 05 under the smoke preset: the probe table, its metadata and its figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest

from exercises import nb05
from helpers import presets
from helpers.claims import Estimate, verdict
from helpers.probe import FEATURES, MODEL_ORDER, TABLE_COLUMNS, pooling_verdict
from pipeline.corpora.data import partition_record
from pipeline.store.layout import RunLayout

pytestmark = pytest.mark.notebook

ENCODERS = ("random init", "BERT_TINY", "BERT_FT")
NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "05_probing.ipynb"


@pytest.fixture(scope="module")
def out_dir(smoke_step: Callable[[str], Path]) -> Path:
    return smoke_step("05_probing")


@pytest.fixture(scope="module")
def results(out_dir: Path) -> pd.DataFrame:
    return pd.read_csv(RunLayout(out_dir.parent).probe_table)


def test_table_has_every_model_and_feature(results: pd.DataFrame) -> None:
    assert list(results.columns) == list(TABLE_COLUMNS)
    assert set(results["model"]) == set(MODEL_ORDER)
    pairs = set(zip(results["model"], results["feature"]))
    expected = {("majority", "-"), ("static vectors (mean)", "-")} | {(m, f) for m in ENCODERS for f in FEATURES}
    assert pairs == expected and len(results) == len(expected)


def test_accuracies_and_intervals_are_consistent(results: pd.DataFrame) -> None:
    smoke = presets.get("smoke").probe
    assert results["accuracy"].between(0, 1).all()
    assert (results["ci_low"] <= results["accuracy"] + 1e-12).all()
    assert (results["accuracy"] <= results["ci_high"] + 1e-12).all()
    assert (results["n_train"] == smoke.max_train).all() and (results["n_test"] == smoke.max_test).all()
    probes = results[results["model"] != "majority"]
    assert probes["best_C"].isin(smoke.Cs).all()
    assert results.loc[results["model"] == "majority", "best_C"].isna().all()
    # accuracy is a count over the test set, so it lies on the 1/n_test grid
    assert ((results["accuracy"] * smoke.max_test).round(6) % 1 == 0).all()


def test_json_records_the_run(out_dir: Path, results: pd.DataFrame) -> None:
    meta = json.loads(RunLayout(out_dir.parent).probe_record.read_text())
    assert meta["preset"] == "smoke" and meta["lang"] == "en"
    smoke = presets.get("smoke").probe
    assert meta["n_train"] == smoke.max_train and meta["n_test"] == smoke.max_test
    assert {"date", "packages", "device"} <= set(meta["environment"])
    assert len(meta["results"]) == len(results)
    assert set(meta["feature_seconds"]) == set(ENCODERS)
    assert [r["accuracy"] for r in meta["results"]] == pytest.approx(results["accuracy"].tolist())


def test_the_probe_test_set_is_text_no_model_saw(out_dir: Path) -> None:
    meta = json.loads(RunLayout(out_dir.parent).probe_record.read_text())
    assert meta["test_overlap"] == 0
    assert meta["partition"] == partition_record("en")  # the one recorded partition of the embedded articles
    assert meta["partition"]["parts"]["probe_test"]["articles"] >= meta["n_test"]


def test_figures_exist(out_dir: Path) -> None:
    for name in ("probe_accuracy.png", "probe_pca.png"):
        png = out_dir / name
        assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_paired_differences_agree_with_the_table(out_dir: Path, results: pd.DataFrame) -> None:
    paired = pd.read_csv(RunLayout(out_dir.parent).probe_differences)
    assert ("BERT_FT / mean", "BERT_TINY / mean") in set(zip(paired["a"], paired["b"]))
    accuracy = {f"{m} / {f}".removesuffix(" / -"): a for m, f, a in
                zip(results["model"], results["feature"], results["accuracy"])}
    for row in paired.itertuples():
        # the mean paired difference is exactly the difference of the two accuracies
        assert row.difference == pytest.approx(accuracy[row.a] - accuracy[row.b], abs=1e-9)
        assert row.ci_low <= row.difference + 1e-12 <= row.ci_high + 2e-12
        assert row.clear == (row.ci_low > 0 or row.ci_high < 0)


@pytest.fixture(scope="module")
def paired(out_dir: Path) -> pd.DataFrame:
    return pd.read_csv(RunLayout(out_dir.parent).probe_differences)


@pytest.fixture(scope="module")
def shown(out_dir: Path) -> str:
    """Everything the executed notebook printed or displayed as text or Markdown."""
    executed = json.loads((out_dir.parent / NOTEBOOK.name).read_text(encoding="utf-8"))
    return "\n".join("".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/markdown", ""))
                     for cell in executed["cells"] for out in cell.get("outputs", []))


def _source_cells() -> list[str]:
    return ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]]


def test_the_pooling_verdict_shown_is_the_one_rule_applied_to_the_saved_tables(
        results: pd.DataFrame, paired: pd.DataFrame, shown: str) -> None:
    text = pooling_verdict(results, paired)
    assert text in shown
    clear_mean = 0
    for model in ENCODERS:
        row = paired[(paired["a"] == f"{model} / mean") & (paired["b"] == f"{model} / cls")].iloc[0]
        line = next(line for line in text.splitlines() if line.startswith(f"- **{model}**"))
        excludes_zero = row.ci_low > 0 or row.ci_high < 0
        assert f"[{row.ci_low:+.3f}, {row.ci_high:+.3f}]" in line
        assert ("a clear difference" in line) == excludes_zero and ("not shown" in line) == (not excludes_zero)
        clear_mean += model != "random init" and row.ci_low > 0
    assert f"Mean pooling shown better for {clear_mean} of 2 pretrained encoders (BERT_TINY, BERT_FT)" in text


def test_the_paired_table_tests_bert_tiny_against_its_untrained_control_and_says_so_by_the_one_rule(
        paired: pd.DataFrame, shown: str) -> None:
    for feature in FEATURES:
        row = paired[(paired["a"] == f"BERT_TINY / {feature}") & (paired["b"] == f"random init / {feature}")]
        assert len(row) == 1, feature
        row = row.iloc[0]
        said = verdict(Estimate(row.difference, row.ci_low, row.ci_high), lower_is_better=False)
        assert (said == "not shown") == (row.ci_low <= 0 <= row.ci_high)
        assert (f"- BERT_TINY − random init, {feature}: {row.difference:+.3f}, paired 95 % interval "
                f"[{row.ci_low:+.3f}, {row.ci_high:+.3f}]. \"MLM pretraining made the {feature} vector more "
                f"readable\": **{said}**.") in shown


def test_the_untrained_encoders_pooling_gain_is_stated_as_the_control_by_the_one_rule(
        paired: pd.DataFrame, shown: str) -> None:
    row = paired[(paired["a"] == "random init / mean") & (paired["b"] == "random init / cls")].iloc[0]
    said = verdict(Estimate(row.difference, row.ci_low, row.ci_high), lower_is_better=False)
    assert (f"The control: random init, which no loss has trained, has mean − cls {row.difference:+.3f}, paired "
            f"95 % interval [{row.ci_low:+.3f}, {row.ci_high:+.3f}]. \"The mean reads better without any "
            f"training\": **{said}**.") in shown
    assert ("not by itself something MLM did" in shown) == (said == "holds")
    assert "Expected for encoders pretrained with MLM only" not in shown


def test_the_note_on_the_C_grid_names_every_probe_whose_C_is_an_end_of_the_grid(
        results: pd.DataFrame, shown: str) -> None:
    Cs = presets.get("smoke").probe.Cs
    probes = results[results["best_C"].notna()]
    at_edge = probes[probes["best_C"].isin((min(Cs), max(Cs)))]
    names = "; ".join(f"{m} / {f}".removesuffix(" / -") + f" (C = {c:g})"
                      for m, f, c in zip(at_edge["model"], at_edge["feature"], at_edge["best_C"]))
    grid = f"({min(Cs):g} to {max(Cs):g})"
    expected = (f"No probe chose an end of the grid {grid}" if at_edge.empty else
                f"{len(at_edge)} of {len(probes)} probes chose an end of the grid {grid}: {names}.")
    assert expected in shown


def test_the_wider_grid_reaches_far_below_the_old_edge_in_the_demo_and_paper_presets() -> None:
    # The reference preset keeps the grid its committed records were probed on; 05's edge note covers it.
    for name in ("demo", "paper"):
        assert min(presets.get(name).probe.Cs) <= 1e-4 and max(presets.get(name).probe.Cs) >= 10, name


def test_exercise_1_compares_the_guessing_floor_with_the_majority_row(
        out_dir: Path, results: pd.DataFrame, shown: str) -> None:
    meta = json.loads(RunLayout(out_dir.parent).probe_record.read_text())
    counts = meta["class_counts"]
    names = meta["label_names"]
    train_y = np.repeat(np.arange(len(names)), [counts["train"][n] for n in names])
    test_y = np.repeat(np.arange(len(names)), [counts["test"][n] for n in names])
    assert len(train_y) == meta["n_train"] and len(test_y) == meta["n_test"]
    majority = results.loc[results["model"] == "majority", "accuracy"].iloc[0]
    assert (f"guessing with the training shares: {nb05.exercise_1(train_y, test_y):.3f} expected; always the largest "
            f"class (majority row): {majority:.3f}; uniform guessing over {len(names)} classes: "
            f"{1 / len(names):.3f}") in shown


def test_every_exercise_passed_and_the_pooling_reason_was_explained_after_its_check(shown: str) -> None:
    for n in (1, 2, 3, 4):
        assert f"Exercise {n}: ✓ right" in shown, n
    assert shown.index("Exercise 4: ✓ right") < shown.index(nb05.POOLING_EXPLANATION)


def test_no_answer_stands_on_screen_before_its_exercise_asks_for_it() -> None:
    cells = _source_cells()
    check_1 = next(c for c in cells if 'exercises.check("Exercise 1"' in c).splitlines()
    guard = check_1.index("if answer_1 is not None:")
    assert all(i > guard for i, line in enumerate(check_1) if "print(" in line)
    exercise_4 = next(i for i, c in enumerate(cells) if c.startswith("### Exercise 4"))
    before = "\n".join(cells[:exercise_4]).lower()
    for reason in ("next-sentence", "never read", "no training signal"):
        assert reason not in before, reason  # section 7 asks; the reason is the exercise's reference answer


def test_the_notebook_cites_nothing_outside_the_repository() -> None:
    text = "\n".join(_source_cells())
    assert "shared/" not in text and "tutorial" not in text.lower()
    assert "a few hundred test documents" not in text
