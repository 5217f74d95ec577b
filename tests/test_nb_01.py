"""Notebook 01: the algorithm cells it shows, and under the smoke preset its statistics file, figures and exercises."""

from __future__ import annotations

import json
import math

import pytest
from notebook_exports import check_notebook, exported_cells

from pipeline.run.notebook_sync import definitions
from pipeline.store.layout import NOTEBOOKS_DIR

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


def _printed(masking_dir) -> str:
    """Everything the executed notebook printed or displayed as text."""
    executed = json.loads((masking_dir.parent / NOTEBOOK.name).read_text(encoding="utf-8"))
    return "".join("".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
                   for cell in executed["cells"] for out in cell.get("outputs", []))


@pytest.mark.notebook
def test_the_special_token_count_of_transformers_rests_on_enough_maskings_and_its_sentence_on_the_record(
        masking_dir, result):
    from scipy.stats import chi2

    from helpers.masking import expected_random_specials

    rec = result["transformers"]["special_insertions"]
    tokenizer = result["tokenizer"]
    assert rec["expected"] >= 20  # enough maskings that the demonstration can show something
    assert rec["expected"] == pytest.approx(
        expected_random_specials(rec["n_selected"], tokenizer["n_special"], tokenizer["vocab_size"]))
    one_masking = result["transformers"]["counts"]["n_selected"]
    assert rec["per_masking"] == pytest.approx(
        expected_random_specials(one_masking, tokenizer["n_special"], tokenizer["vocab_size"]))
    assert rec["maskings"] == math.ceil(20 / rec["per_masking"])  # no more maskings than needed: the cell stays cheap
    observed = rec["observed"]
    low = chi2.ppf(0.025, 2 * observed) / 2 if observed else 0.0
    high = chi2.ppf(0.975, 2 * observed + 2) / 2
    assert rec["interval"] == pytest.approx([low, high])
    assert rec["consistent"] == (low <= rec["expected"] <= high)
    sentence = (f"special tokens among transformers' random replacements in {rec['maskings']} maskings of the batch "
                f"({rec['n_selected']:,} selected tokens): {observed}, 95 % Poisson interval {low:.1f} to {high:.1f}; "
                f"expected {rec['expected']:.1f}, "
                + ("inside the interval: consistent" if rec["consistent"] else "outside the interval: not consistent")
                + f". Ours (section 2): {result['counts']['n_random_special']}.")
    assert sentence in _printed(masking_dir)


@pytest.mark.notebook
def test_the_results_file_sentence_replaces_the_dump_and_follows_the_record(masking_dir, result):
    printed = _printed(masking_dir)
    outside = [k for k, ok in result["within_tolerance"].items() if not ok]
    tail = (f"all {len(result['rates'])} rates lie within {result['z']:g} binomial standard deviations of BERT's recipe"
            if not outside else f"outside {result['z']:g} binomial standard deviations: {', '.join(outside)}")
    assert f"masking_stats.json: {tail}" in printed
    assert '"tolerances"' not in printed  # the JSON dump that repeated the table is gone


def test_exercise_1_shows_the_measured_shares_only_after_an_answer():
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    check = next("".join(c["source"]) for c in cells if 'exercises.check("Exercise 1"' in "".join(c["source"]))
    lines = check.splitlines()
    guard = lines.index("if answer_1 is not None:")
    prints = [i for i, line in enumerate(lines) if "print(" in line]
    assert prints and all(i > guard and lines[i].startswith("    ") for i in prints)
    assert "explanation=" in check  # a prediction exercise with a written reference answer


@pytest.mark.notebook
def test_the_masked_sentence_is_drawn_right_after_its_table(masking_dir):
    executed = json.loads((masking_dir.parent / NOTEBOOK.name).read_text(encoding="utf-8"))
    sources = ["".join(cell["source"]) for cell in executed["cells"]]
    drawn = next(i for i, s in enumerate(sources) if s.startswith("fig = plot_masked_sentence("))
    assert "masked_table(" in sources[drawn - 2]  # the table's cell, then the picture's explanation, then it
    assert any("image/png" in o.get("data", {}) for o in executed["cells"][drawn].get("outputs", []))
