"""Notebook 01: the algorithm cells it shows, and under the smoke preset its statistics file, figures and exercises."""

from __future__ import annotations

import json
import math

import pytest

from pipeline.notebook_sync import NOTEBOOKS_DIR, check_notebook, definitions, exported_cells

NOMINAL = {"selection": 0.15, "mask": 0.8, "random": 0.1, "unchanged": 0.1}
NOTEBOOK = NOTEBOOKS_DIR / "01_masking.ipynb"
ALGORITHM = {"IGNORE_INDEX", "eligible_positions", "select_positions", "random_tokens", "replace_selected"}


@pytest.fixture(scope="module")
def masking_dir(smoke_step):
    return smoke_step("01_masking")


@pytest.fixture(scope="module")
def result(masking_dir):
    path = masking_dir / "masking_stats.json"
    assert path.is_file(), f"notebook 01 wrote no {path.name}"
    return json.loads(path.read_text())


@pytest.mark.notebook
def test_rates_within_binomial_tolerance_of_bert_recipe(result):
    z = result["z"]
    assert z <= 5.0
    for key, p in NOMINAL.items():
        n = result["n"][key]
        tolerance = z * math.sqrt(p * (1 - p) / n)
        assert result["tolerances"][key] == pytest.approx(tolerance, rel=1e-6)
        assert abs(result["rates"][key] - p) <= tolerance, (key, result["rates"][key], tolerance)
    assert result["n"]["selection"] > 10_000 and result["n"]["mask"] > 1_000  # enough tokens to mean something
    assert all(result["within_tolerance"].values())


@pytest.mark.notebook
def test_counts_are_consistent_and_invariants_hold(result):
    c = result["counts"]
    assert c["n_mask"] + c["n_random"] + c["n_unchanged"] == c["n_selected"] == result["n"]["mask"]
    assert c["n_eligible"] == result["n"]["selection"] <= c["n_tokens"]
    assert c["n_selected_ineligible"] == c["n_unselected_changed"] == c["n_label_mismatch"] == 0
    assert c["n_random_special"] == 0
    assert result["rates"]["mask"] == pytest.approx(c["n_mask"] / c["n_selected"])


@pytest.mark.notebook
def test_transformers_comparison_and_silent_failure_recorded(result):
    for key in NOMINAL:
        assert 0.0 < result["transformers"]["rates"][key] < 1.0
    broken = result["silent_failure"]["BertTokenizerFast(vocab_file=...)"]
    good = result["silent_failure"]["trained tokenizer (tokenizer.json)"]
    assert good["n_selected"] > 0 and math.isfinite(good["loss_uniform_model"])
    if broken["vocab_size"] <= 5:  # the transformers 5.x behaviour the notebook demonstrates
        assert broken["n_selected"] == 0 and broken["unk_rate"] > 0.9 and math.isnan(broken["loss_uniform_model"])
    assert all(result["silent_failure_caught"].values())


@pytest.mark.notebook
def test_timings_and_coverage_recorded(result):
    timing = result["timing"]
    assert set(timing["median_s"]) == {"loop style", "transformers", "ours (MLMCollator)"}
    assert all(s > 0 for s in timing["median_s"].values())
    cov = result["coverage_final"]
    epochs = result["coverage_epochs"]
    dynamic = cov["dynamic (new mask per epoch)"]
    p = 1 - 0.85 ** epochs  # a token escapes a fresh 15% draw each epoch with probability 0.85
    assert abs(dynamic - p) <= 5 * math.sqrt(p * (1 - p) / result["coverage_n_eligible"])
    assert cov["static, 1 copy"] < cov["static, 10 copies (original BERT)"] < dynamic


@pytest.mark.notebook
def test_figures_written(masking_dir, result):
    for name in ("masking_split.png", "masking_coverage.png"):
        png = masking_dir / name
        assert png.is_file() and png.stat().st_size > 5_000, name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert name in result["figures"]


@pytest.mark.notebook
def test_every_exercise_passed_its_self_check(masking_dir):
    executed = json.loads((masking_dir.parent / NOTEBOOK.name).read_text(encoding="utf-8"))
    printed = "".join("".join(out.get("text", "")) for cell in executed["cells"] for out in cell.get("outputs", []))
    for n in (1, 2, 3):
        assert f"Exercise {n}: ✓ right" in printed, f"exercise {n} was not solved and checked"


def test_notebook_shows_the_whole_algorithm_as_the_package_runs_it():
    shown = {name for _, module, source in exported_cells(NOTEBOOK) if module == "helpers.masking"
             for name in definitions(source)}
    assert ALGORITHM <= shown
    assert check_notebook(NOTEBOOK) == []


def test_notebook_is_committed_without_outputs():
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)
