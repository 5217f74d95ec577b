"""The training-length series records a longer pair beside its base run and tabulates one row per length."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from evidence import series
from evidence.figure_plots import lang_name
from evidence.results import load_runs
from pipeline.store import layout, records
from pipeline.train import train_cli


def _set_commit(pretrain: Path, commit: str) -> None:
    for name in layout.MODEL_NAMES:
        path = layout.PretrainFiles(pretrain).model(name).run_json
        info = json.loads(path.read_text())
        info.setdefault("environment", {})["git_commit"] = commit
        path.write_text(json.dumps(info))


@pytest.fixture(scope="module")
def longer_pair(smoke_step, smoke_run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke run's pair trained again for twice its steps, from the same data and vectors."""
    smoke_step("04_pretraining")
    run = layout.RunLayout(smoke_run_dir)
    steps = json.loads(run.model("bert_tiny").run_json.read_text())["steps"] * 2
    out = tmp_path_factory.mktemp("series") / f"steps{steps}"
    for model, init in (("bert_tiny", "random"), ("bert_ft", str(run.static.folder))):
        assert train_cli.main(["--data", str(run.step("pretrain") / "data"), "--out", str(out), "--model", model,
                               "--init", init, "--preset", "smoke", "--steps", str(steps), "--device", "cpu",
                               "--compare"]) == 0
    return out


def test_a_pair_from_uncommitted_code_is_refused(longer_pair: Path, smoke_run_dir: Path, tmp_path: Path) -> None:
    _set_commit(longer_pair, "f" * 40 + "+dirty")
    with pytest.raises(records.UncommittedRun, match="uncommitted code"):
        records.save_series_record(smoke_run_dir, longer_pair, tmp_path / "records")


def test_a_recorded_pair_gives_one_row_per_length_with_intervals(longer_pair: Path, smoke_run_dir: Path,
                                                                 tmp_path: Path) -> None:
    _set_commit(longer_pair, "e" * 40)
    record = records.save_series_record(smoke_run_dir, longer_pair, tmp_path / "records")
    assert not list(record.rglob("*.pt")) and (record / "pretrain" / "token_facts.npz").is_file()
    paths = series.write_series([smoke_run_dir, record], tmp_path / "figures")
    table = pd.read_csv(tmp_path / "figures" / f"{series.SERIES_TABLE}.csv")
    assert {p.name for p in paths} >= {f"{series.SERIES_TABLE}.{ext}" for ext in ("csv", "md", "png", "pdf")}
    assert len(table) == 2 and table["steps"].iloc[1] == 2 * table["steps"].iloc[0]
    assert table["epochs"].iloc[1] == pytest.approx(2 * table["epochs"].iloc[0])
    for column in ("loss FT - TINY", "[MASK] accuracy FT - TINY", "[MASK] TINY - unigram", "train - eval TINY"):
        assert table[column].map(math.isfinite).all(), column
    for prefix in ("", "[MASK] "):  # interval ends are numbers a reader can compute with, around the mean
        for short in ("loss", "accuracy"):
            low, high = table[f"{prefix}{short} low"].iloc[1], table[f"{prefix}{short} high"].iloc[1]
            assert low <= table[f"{prefix}{short} FT - TINY"].iloc[1] <= high
    run = load_runs([smoke_run_dir]).runs[0]  # the title and note name the runs' language, preset and seed
    assert series.series_title(load_runs([smoke_run_dir, record])) == (f"{lang_name(run.lang)}, {run.preset} preset",
                                                                       f"seed {run.seed}")
    note = (tmp_path / "figures" / f"{series.SERIES_TABLE}.md").read_text()
    assert f"per length and seed (seed {run.seed}), each with its own" in note
    assert f"decay; {run.steps:,} steps is the base run." in note  # the base's own length, whichever it is
    every = json.loads(layout.RunLayout(smoke_run_dir).model("bert_ft").run_json.read_text())["train_config"]
    saved_note = (tmp_path / "figures" / f"{series.SERIES_TABLE}_steps_saved.md").read_text()
    assert f"evaluations every {every['eval_every']:,} steps" in saved_note and "One seed: no interval." in saved_note


def test_a_pair_trained_on_other_data_is_refused(longer_pair: Path, smoke_run_dir: Path, tmp_path: Path) -> None:
    _set_commit(longer_pair, "e" * 40)
    path = layout.PretrainFiles(longer_pair).model("bert_ft").run_json
    info = json.loads(path.read_text())
    info["identity"]["data_fingerprint"] = "0" * 64
    path.write_text(json.dumps(info))
    with pytest.raises(ValueError, match="other data"):
        records.save_series_record(smoke_run_dir, longer_pair, tmp_path / "records")
