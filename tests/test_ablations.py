"""Ablations: BERT_FT retrained with one alignment choice changed, paired with the run's own models."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evidence import ablations as E
from helpers import static_vectors as sv
from pipeline.store.layout import StaticFiles
from pipeline.train import ablations as A
from pipeline.vectors.static_files import load_aligned

VARIANTS = ("fallback_random", "scale_bert", "normalise_none")
# '+0.024' is text; without this pandas reads a one-seed column as a number.
PER_SEED_AS_TEXT = {"loss_per_seed": str, "accuracy_per_seed": str}


@pytest.fixture(scope="module")
def ablated(smoke_figures: Path, smoke_run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ablations")
    code = A.main(["--runs", str(smoke_run_dir), "--out", str(out / "train"), "--records", str(out / "records"),
                   "--variants", ",".join(VARIANTS), "--device", "cpu"])
    assert code == 0  # the machinery trains and records; the evidence draws the table from what it trained
    assert E.main(["--runs", str(smoke_run_dir), "--records", str(out / "train"), "--figures",
                       str(out / "figures")]) == 0
    return out


def variant_static(ablated: Path, smoke_run_dir: Path, name: str) -> sv.Alignment:
    return load_aligned(ablated / "train" / smoke_run_dir.name / name / "static")


def test_the_paper_variant_rebuilt_equals_the_runs_embeddings_and_a_changed_run_is_caught(
        ablated: Path, smoke_run_dir: Path, tmp_path: Path) -> None:
    A.check_reproduces_run(smoke_run_dir, ablated / "train" / "vectors")  # passes: fastText reruns identically
    altered = tmp_path / smoke_run_dir.name
    shutil.copytree(smoke_run_dir / "tokenizer", altered / "tokenizer")
    shutil.copytree(smoke_run_dir / "static", altered / "static")
    static = StaticFiles(altered / "static")
    matrix = np.load(static.embeddings)
    matrix[np.load(static.found).argmax()] += 1e-3
    np.save(static.embeddings, matrix)
    with pytest.raises(ValueError, match="did not reproduce"):
        A.check_reproduces_run(altered, ablated / "train" / "vectors")


def test_each_variant_changes_only_its_own_choice(ablated: Path, smoke_run_dir: Path) -> None:
    paper = load_aligned(smoke_run_dir / "static")
    random_fallback = variant_static(ablated, smoke_run_dir, "fallback_random")
    assert np.array_equal(random_fallback.found, paper.found)
    assert np.array_equal(random_fallback.matrix[paper.found], paper.matrix[paper.found])
    missing = random_fallback.matrix[~paper.found]
    # N(0, 0.02) over n elements: the sample std is within 5 standard errors (0.02 / sqrt(2n)) of 0.02
    assert abs(missing.std() - sv.BERT_INIT_STD) < 5 * sv.BERT_INIT_STD / np.sqrt(2 * missing.size)
    assert not paper.matrix[~paper.found].any()

    scaled = variant_static(ablated, smoke_run_dir, "scale_bert")
    ratio = scaled.matrix[paper.found] / np.where(paper.matrix[paper.found] == 0, np.nan, paper.matrix[paper.found])
    factor = np.nanmedian(ratio)
    assert np.nanmax(np.abs(ratio - factor)) < 1e-4 * factor  # one factor for every copied row
    assert scaled.matrix[paper.found].std() == pytest.approx(sv.BERT_INIT_STD, rel=1e-3)

    raw = variant_static(ablated, smoke_run_dir, "normalise_none")
    assert np.array_equal(raw.found, paper.found)
    norms = np.linalg.norm(raw.matrix[raw.found], axis=1)
    assert norms.std() > 0.01 * norms.mean()  # not unit length: the raw vectors' own norms
    assert json.loads((ablated / "train" / smoke_run_dir.name / "normalise_none" / "static" / "manifest.json")
                      .read_text())["normalisation"] == []


def test_a_variant_trains_exactly_as_the_runs_bert_ft(ablated: Path, smoke_run_dir: Path) -> None:
    run_ft = json.loads((smoke_run_dir / "pretrain" / "bert_ft" / "run.json").read_text())
    for name in VARIANTS:
        info = json.loads((ablated / "train" / smoke_run_dir.name / name / "bert_ft" / "run.json").read_text())
        assert info["identity"] == run_ft["identity"]
        assert info["init"] != run_ft["init"]


def test_the_table_pairs_every_variant_with_the_runs_own_models(ablated: Path, smoke_run_dir: Path) -> None:
    table = pd.read_csv(ablated / "figures" / "ablations.csv", dtype=PER_SEED_AS_TEXT).set_index("variant")
    assert list(table.index) == ["random init", *(n for n in A.VARIANTS if n == "paper" or n in VARIANTS)]
    final = {m: pd.read_csv(smoke_run_dir / "pretrain" / m / "metrics.csv").iloc[-1] for m in ("bert_tiny", "bert_ft")}
    assert table.loc["paper", "eval_loss"] == pytest.approx(final["bert_ft"]["eval_loss"])
    assert table.loc["random init", "loss_vs_paper"] == pytest.approx(
        final["bert_tiny"]["eval_loss"] - final["bert_ft"]["eval_loss"])
    for name in VARIANTS:
        metrics = pd.read_csv(ablated / "train" / smoke_run_dir.name / name / "bert_ft" / "metrics.csv").iloc[-1]
        row = table.loc[name]
        assert row["loss_vs_paper"] == pytest.approx(metrics["eval_loss"] - final["bert_ft"]["eval_loss"])
        assert row["accuracy_vs_paper"] == pytest.approx(metrics["eval_accuracy"] - final["bert_ft"]["eval_accuracy"])
        assert row["loss_ci_low"] <= row["loss_vs_paper"] <= row["loss_ci_high"]
        assert row["loss_per_seed"] == f"{metrics['eval_loss'] - final['bert_ft']['eval_loss']:+.3f}"
        assert row["n_seeds"] == 1 and row["interval"].startswith("bootstrap over")
    assert (ablated / "figures" / "ablations.png").stat().st_size > 10_000


def test_the_table_regenerates_from_the_records_alone(ablated: Path, smoke_run_dir: Path, tmp_path: Path) -> None:
    code = E.main(["--runs", str(smoke_run_dir), "--figures", str(tmp_path), "--records", str(ablated / "records")])
    assert code == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "ablations.csv"),
                                  pd.read_csv(ablated / "figures" / "ablations.csv"))
    sizes = [p.stat().st_size for p in (ablated / "records").rglob("*") if p.is_file()]
    assert sizes and sum(sizes) < 1_000_000


def test_an_unknown_variant_names_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown ablation variant.*fallback_random"):
        A.check_variants(["paper_plus"])


def test_the_ablated_runs_are_the_run_records_that_have_ablation_records(tmp_path: Path) -> None:
    for name in ("reference-en", "reference-en-seed1", "reference-fr"):
        (tmp_path / "runs" / name).mkdir(parents=True)
    for name in ("reference-en-seed1", "reference-en"):
        (tmp_path / "ablations" / name / "fallback_random").mkdir(parents=True)
    found = E.ablated_runs(tmp_path / "runs", tmp_path / "ablations")
    assert found == [tmp_path / "runs" / "reference-en", tmp_path / "runs" / "reference-en-seed1"]
    (tmp_path / "ablations" / "reference-es").mkdir()
    with pytest.raises(FileNotFoundError, match="no record of the ablated run.*reference-es"):
        E.ablated_runs(tmp_path / "runs", tmp_path / "ablations")
    with pytest.raises(FileNotFoundError, match="no ablation records"):
        E.ablated_runs(tmp_path / "runs", tmp_path / "nothing")


def test_the_table_without_ablation_records_says_how_to_train_them(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture) -> None:
    code = E.main(["--run-records", str(tmp_path), "--records", str(tmp_path), "--figures", str(tmp_path)])
    assert code == 1 and "python -m pipeline.train.ablations" in capsys.readouterr().err


def test_the_figure_marks_each_seeds_own_difference(ablated: Path) -> None:
    table = pd.read_csv(ablated / "figures" / "ablations.csv", dtype=PER_SEED_AS_TEXT)
    fig = E.plot_ablations(table)
    rows = table[table["variant"] != "paper"]
    for ax, column in zip(fig.axes, ("loss_per_seed", "accuracy_per_seed")):
        seeds = next(line for line in ax.get_lines() if line.get_label() == "each seed")
        assert list(seeds.get_xdata()) == pytest.approx([float(v) for v in rows[column].iloc[::-1]])


def test_an_interval_that_misses_its_mean_draws_instead_of_failing_half_way(ablated: Path) -> None:
    """Issue 21: after a record edit the table's mean lay outside its interval and matplotlib refused the
    negative error bar after the .csv and .md were already written."""
    table = pd.read_csv(ablated / "figures" / "ablations.csv", dtype=PER_SEED_AS_TEXT)
    moved = table.copy()
    moved.loc[moved["variant"] != "paper", "accuracy_vs_paper"] += 1.0  # far above every interval
    fig = E.plot_ablations(moved)
    assert len(fig.axes) == 2


def test_the_markdown_table_rounds_each_number_once(ablated: Path, tmp_path: Path) -> None:
    """Issue 22: rounding to 4 decimals and then to 3 printed -0.00146 as -0.002 and 0.05649 as 0.057."""
    table = pd.read_csv(ablated / "figures" / "ablations.csv", dtype=PER_SEED_AS_TEXT)
    row = table.index[table["variant"] != "paper"][0]
    table.loc[row, ["loss_vs_paper", "accuracy_vs_paper"]] = [-0.00146, 0.05649]
    E.write_outputs(table, tmp_path, {})
    lines = (tmp_path / "ablations.md").read_text().splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    cells = [c.strip() for c in lines[2 + int(row)].strip("|").split("|")]
    assert cells[header.index("loss_vs_paper")] == "-0.001"
    assert cells[header.index("accuracy_vs_paper")] == "0.056"


def test_one_verdict_rule_judges_every_variant_against_bert_fts_seed_spread() -> None:
    spread = 0.042  # English reference BERT_FT final loss 3.814 / 3.825 / 3.783 across seeds
    assert E.ablation_verdict(-0.009, -0.027, 0.009, spread) == "not shown"  # includes 0
    assert E.ablation_verdict(0.027, 0.0002, 0.054, spread) == "within seed noise"  # excludes 0, small
    assert E.ablation_verdict(-0.020, -0.038, -0.002, spread) == "within seed noise"
    assert E.ablation_verdict(0.206, 0.172, 0.241, spread) == "shown"
    assert E.ablation_verdict(0.027, 0.0002, 0.054, float("nan")) == "shown"  # one seed: no floor to use
    assert E.ablation_verdict(0.1, float("nan"), float("nan"), spread) == "no interval"
