"""Notebook 05 under the smoke preset: the probe table, its metadata and its figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pandas as pd
import pytest

from helpers import presets
from helpers.probe import FEATURES, MODEL_ORDER, TABLE_COLUMNS
from pipeline.data import partition_record
from pipeline.layout import RunLayout

pytestmark = pytest.mark.notebook

ENCODERS = ("random init", "BERT_TINY", "BERT_FT")


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
