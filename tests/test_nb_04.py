"""Notebook 04 under the smoke preset: both runs' files, their contents and the comparison."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from helpers import presets
from pipeline.store.layout import CONTROL_MODEL, METRIC_COLUMNS, MODEL_NAMES, ModelFiles, read_metrics
from pipeline.train import prepare, training

pytestmark = pytest.mark.notebook


@pytest.fixture(scope="module")
def pretrain_dir(smoke_step):
    return smoke_step("04_pretraining")


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_metrics_have_the_contract_columns_and_finite_values(pretrain_dir, name):
    path = pretrain_dir / name / "metrics.csv"
    header = path.read_text().splitlines()[0].split(",")
    assert header == list(METRIC_COLUMNS)
    rows = read_metrics(path)
    cfg = presets.get("smoke").train
    assert [r["step"] for r in rows] == list(range(0, cfg.steps + 1, cfg.eval_every))
    assert math.isnan(rows[0]["train_loss"])  # nothing trained at step 0
    for row in rows:
        assert math.isfinite(row["eval_loss"]) and 0.0 < row["eval_loss"] < 20.0
        assert 0.0 <= row["eval_accuracy"] <= 1.0
        assert row["lr"] >= 0.0 and row["elapsed_s"] >= 0.0
    assert all(math.isfinite(r["train_loss"]) for r in rows[1:])
    assert rows[-1]["lr"] == 0.0  # linear decay ends at zero


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_run_json_and_saved_model(pretrain_dir, name):
    from transformers import BertForMaskedLM

    run = json.loads((pretrain_dir / name / "run.json").read_text())
    assert run["model_name"] == name and run["preset"] == "smoke" and run["lang"] == "en"
    assert run["steps"] == presets.get("smoke").train.steps and run["finished"]
    assert run["seq_len"] == 64 and run["batch_size"] == 4 and run["seed"] == 0
    assert run["environment"]["packages"]["torch"]
    model = BertForMaskedLM.from_pretrained(pretrain_dir / name / "model")
    config = model.config
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads,
            config.intermediate_size) == (300, 2, 4, 512)
    assert config.vocab_size == run["model_config"]["vocab_size"]


def test_bert_ft_names_its_static_init_and_tiny_is_random(pretrain_dir):
    ft = json.loads((pretrain_dir / "bert_ft" / "run.json").read_text())
    tiny = json.loads((pretrain_dir / "bert_tiny" / "run.json").read_text())
    assert tiny["init"]["kind"] == "random" and tiny["init_manifest"] is None
    assert ft["init"]["kind"] == "static" and ft["init"]["source"].rstrip("/").endswith("static")
    assert len(ft["init"]["manifest_sha256"]) == 64
    assert ft["init_manifest"]["fallback"] == "zero" and ft["init_manifest"]["n_found"] > 0
    # One experiment: identical identity and settings, apart from the initialisation.
    assert ft["identity"] == tiny["identity"]
    assert (ft["identity"]["lang"], ft["identity"]["corpus"], ft["identity"]["preset"]) == ("en", "embedded", "smoke")
    assert ft["train_config"] == tiny["train_config"]


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_final_evaluation_positions_match_the_last_metrics_row(pretrain_dir, name):
    import numpy as np

    saved = np.load(ModelFiles(pretrain_dir / name).positions)
    final = read_metrics(pretrain_dir / name / "metrics.csv")[-1]
    assert saved["loss"].astype(np.float64).mean() == pytest.approx(final["eval_loss"], rel=1e-5)
    assert saved["correct"].mean() == pytest.approx(final["eval_accuracy"], abs=1e-12)


def test_comparison_matches_the_metrics(pretrain_dir):
    comparison = json.loads((pretrain_dir / "comparison.json").read_text())
    recomputed = training.compare_runs(pretrain_dir / "bert_tiny" / "metrics.csv",
                                       pretrain_dir / "bert_ft" / "metrics.csv")
    assert comparison == json.loads(json.dumps(recomputed))
    assert (pretrain_dir / "pretrain_loss.png").stat().st_size > 0
    assert (pretrain_dir / "pretrain_accuracy.png").stat().st_size > 0


def test_prepared_data_and_fixed_eval_mask(pretrain_dir):
    data = prepare.load_data(pretrain_dir)
    assert data.meta["lang"] == "en" and data.seq_len == 64 and not data.meta["packing"]
    assert data.meta["eval"]["masked_positions"] == int((data.eval_labels != -100).sum()) > 0


def test_the_copying_sentence_states_the_accuracies_of_the_saved_positions(pretrain_dir):
    import re

    import numpy as np

    from helpers.baselines import position_kinds

    executed = json.loads((pretrain_dir.parent / "04_pretraining.ipynb").read_text())
    text = "".join("".join(o.get("data", {}).get("text/markdown", "")) for c in executed["cells"]
                   for o in c.get("outputs", []))
    sentence = text[text.index("At the unchanged positions"):]
    stated = [float(x) for x in re.findall(r"(\d+(?:\.\d+)?)%", sentence)[:6]]
    tokenizer = json.loads((pretrain_dir / "data" / "tokenizer" / "tokenizer.json").read_text())
    mask_id = next(t["id"] for t in tokenizer["added_tokens"] if t["content"] == "[MASK]")
    measured = {}
    for name in MODEL_NAMES:
        saved = np.load(ModelFiles(pretrain_dir / name).positions)
        kinds = position_kinds(saved["visible"], saved["label"], mask_id)
        measured[name] = {"unchanged": saved["correct"][kinds == 2].mean(), "mask": saved["correct"][kinds == 0].mean(),
                          "all": saved["correct"].mean()}
    expected = [measured["bert_tiny"]["unchanged"], measured["bert_ft"]["unchanged"], measured["bert_tiny"]["mask"],
                measured["bert_ft"]["mask"], measured["bert_tiny"]["all"], measured["bert_ft"]["all"]]
    decimals = [0, 0, 1, 1, 1, 1]  # as the sentence rounds them
    for value, want, places in zip(stated, expected, decimals):
        assert value == pytest.approx(round(100 * want, places), abs=10 ** -places / 2 + 1e-9)


# --------------------------------------------------------------------------- sentences built from the run's values


def _printed(pretrain_dir) -> str:
    """Everything the executed notebook printed or displayed as text (streams and Markdown)."""
    executed = json.loads((pretrain_dir.parent / "04_pretraining.ipynb").read_text())
    parts = []
    for cell in executed["cells"]:
        for output in cell.get("outputs", []):
            parts.append("".join(output.get("text", "")))
            parts.append("".join(output.get("data", {}).get("text/markdown", "")))
    return "\n".join(parts)


def _numbers(text: str) -> list[float]:
    import re

    return [float(x.replace(",", "")) for x in re.findall(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?", text)]


def test_the_hand_written_attention_matches_transformers_and_a_missing_scale_does_not(pretrain_dir):
    check = json.loads((pretrain_dir / "attention_check.json").read_text())
    tolerance = check["tolerance"]
    assert tolerance == 1e-5
    for what in ("attention weights", "attention output", "layer 0 output"):
        assert 0.0 <= check[what] <= tolerance, what
    assert check["weights without the sqrt(d) scale"] > 100 * tolerance


def test_the_segment_sentence_states_the_counts_and_two_rows_fit_table_4(pretrain_dir):
    from helpers.model import TABLE4_PARAMETERS, build_model, count_parameters

    saved = json.loads((pretrain_dir / "model_structure.json").read_text())
    counts = {int(rows): count for rows, count in saved["segment_rows_to_parameters"].items()}
    assert counts[2] == count_parameters(build_model("random")) == TABLE4_PARAMETERS
    assert counts[2] - counts[1] == counts[1] - counts[0] == 300
    printed = _printed(pretrain_dir)
    sentence = printed[printed.index("With two token-type rows"):]
    sentence = sentence[:sentence.index("\n") if "\n" in sentence else None]
    numbers = _numbers(sentence)  # the three counts, then Table 4 (the 4 of its name) and its count
    assert numbers[:3] + numbers[4:5] == [counts[2], counts[1], counts[0], TABLE4_PARAMETERS]
    assert "Only 2 row(s) fit it" in sentence


def test_the_perplexities_printed_are_exp_of_the_final_losses(pretrain_dir):
    import re

    from helpers import paper_values as paper

    comparison = json.loads((pretrain_dir / "comparison.json").read_text())
    printed = _printed(pretrain_dir)
    line = printed[printed.index("perplexity = exp(final evaluation loss):"):].splitlines()[0]
    stated = [float(x) for x in re.findall(r"BERT_(?:TINY|FT) (\d+\.\d)", line)]
    expected = [math.exp(comparison[f"{m}_final"]["eval_loss"]) for m in paper.MODELS]
    expected += [math.exp(paper.EVAL_LOSS["en"][m]) for m in paper.MODELS]
    assert stated == pytest.approx([round(x, 1) for x in expected], abs=0.05 + 1e-9)


def test_the_verdict_follows_the_testability_rule_at_the_mask_positions(pretrain_dir):
    import numpy as np

    from helpers.baselines import position_kinds, unigram_counts, unigram_log_probs
    from helpers.claims import is_testable

    data = prepare.load_data(pretrain_dir)
    tokenizer = json.loads((pretrain_dir / "data" / "tokenizer" / "tokenizer.json").read_text())
    special = sorted(t["id"] for t in tokenizer["added_tokens"] if t["special"])
    mask_id = next(t["id"] for t in tokenizer["added_tokens"] if t["content"] == "[MASK]")
    tiny = np.load(ModelFiles(pretrain_dir / "bert_tiny").positions)
    at_mask = position_kinds(tiny["visible"], tiny["label"], mask_id) == 0
    log_probs = unigram_log_probs(unigram_counts(data.train_ids, data.train_lengths, int(data.meta["vocab_size"]),
                                                 special), special)
    unigram_loss = float(-log_probs[tiny["label"][at_mask]].mean())
    tiny_loss = float(tiny["loss"][at_mask].mean())
    printed = _printed(pretrain_dir)
    paragraph = printed[printed.index("After "):]
    paragraph = paragraph[:paragraph.index("\n")] if "\n" in paragraph else paragraph
    if not is_testable(tiny_loss, unigram_loss):
        assert "**Not testable on this run**" in paragraph
        assert f"ends at {tiny_loss:.3f}, not 0.5 nat below the unigram's {unigram_loss:.3f}" in paragraph
    else:
        assert "Not testable" not in paragraph and "so the claim is testable" in paragraph
        assert "*holds* only when its whole interval lies on the paper's side of 0" in paragraph


def test_exercise_3_quotes_the_step_0_losses_and_its_explanation_the_measured_excess(pretrain_dir):
    rows = {name: read_metrics(pretrain_dir / name / "metrics.csv")[0] for name in MODEL_NAMES}
    vocab_size = json.loads((pretrain_dir / "bert_tiny" / "run.json").read_text())["model_config"]["vocab_size"]
    printed = _printed(pretrain_dir)
    premise = printed[printed.index("log V = "):].splitlines()[0]
    control = read_metrics(pretrain_dir / CONTROL_MODEL / "metrics.csv")[0]  # the smoke run trains it
    assert premise == (f"log V = {math.log(vocab_size):.3f}; evaluation loss at step 0: "
                       f"BERT_TINY {rows['bert_tiny']['eval_loss']:.3f}, BERT_FT {rows['bert_ft']['eval_loss']:.3f}, "
                       f"BERT_FT_PERM {control['eval_loss']:.3f}")
    why = printed[printed.index("Why: (a)"):]
    excess = {name: rows[name]["eval_loss"] - math.log(vocab_size) for name in MODEL_NAMES}
    assert (f"losses above log V: BERT_TINY {excess['bert_tiny']:.3f} and BERT_FT {excess['bert_ft']:.3f}"
            in why)


def test_exercise_2_asks_a_count_the_structure_printout_does_not_show(pretrain_dir):
    from exercises import nb04
    from helpers.model import bert_tiny_config

    answer = nb04.exercise_2(bert_tiny_config(**nb04.STARTING_MODEL).to_dict())
    assert nb04.counts_agree(answer, nb04.parameter_counts(nb04.STARTING_MODEL))
    assert str(f"{answer['tied']:,}") not in _printed(pretrain_dir).split("Exercise 2")[0]
    assert f"{answer['tied']:,}".replace(",", "") not in _printed(pretrain_dir).split("Exercise 2")[0]


def test_the_tied_decoder_is_shown_to_be_the_embedding_matrix(pretrain_dir):
    printed = _printed(pretrain_dir)
    assert "the same tensor: True; the same memory: True" in printed
    assert "BERT_FT's decoder row of token 1000 equals its copied vector: True" in printed


def test_the_floors_drawn_on_the_loss_curve_are_the_unigram_and_copy_aware_losses_of_the_scored_positions(
        pretrain_dir):
    from helpers.baselines import copy_aware_scores, unigram_counts, unigram_log_probs
    from pipeline.train.prepare import load_data, load_data_tokenizer

    data, tokenizer = load_data(pretrain_dir / "data"), load_data_tokenizer(pretrain_dir / "data")
    scored = np.load(ModelFiles(pretrain_dir / "bert_tiny").positions)
    specials = tokenizer.all_special_ids
    log_probs = unigram_log_probs(unigram_counts(data.train_ids, data.train_lengths, len(tokenizer), specials),
                                  specials)
    copy_loss, _ = copy_aware_scores(scored["label"], scored["visible"], tokenizer.mask_token_id, log_probs)
    assert (f"unigram (no context): {-log_probs[scored['label']].mean():.3f}, copy-aware (no context): "
            f"{copy_loss.mean():.3f} nats over all scored positions") in _printed(pretrain_dir)


def _images_after(pretrain_dir, source_start: str) -> int:
    """PNG outputs of the executed cell whose source starts with ``source_start``."""
    executed = json.loads((pretrain_dir.parent / "04_pretraining.ipynb").read_text())
    [cell] = [c for c in executed["cells"] if "".join(c["source"]).startswith(source_start)]
    return sum("image/png" in o.get("data", {}) for o in cell.get("outputs", []))


def test_the_explaining_pictures_are_drawn_and_the_embedding_sum_equals_the_models_own_layer(pretrain_dir):
    """Equation 2 (token + position + segment, then LayerNorm) is checked against bert.embeddings before drawing;
    the output layer's masked rows are drawn from the same eight evaluation sequences as the loss check."""
    assert "sum then LayerNorm equals bert_ft.bert.embeddings(input_ids): checked" in _printed(pretrain_dir)
    assert _images_after(pretrain_dir, "example = tokenizer(eval_corpus.texts[0]") == 1
    assert _images_after(pretrain_dir, "fig = pretrain_plots.plot_projected_rows") == 1


def test_the_gpu_machinery_sits_in_an_appendix_after_the_lesson():
    from pipeline.run.notebook_sync import notebook_cells
    from pipeline.run.steps import STEP_BY_NAME

    cells = notebook_cells(STEP_BY_NAME["04_pretraining"].notebook)
    markdown = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    appendix = next(i for i, text in enumerate(markdown) if text.startswith("## Appendix · The same loop on a GPU"))
    lesson = "\n".join(markdown[:next(i for i, text in enumerate(markdown) if text.startswith("## Exercises"))])
    for jargon in ("max_masked", "RunFiles", "ctx.world", "host sync", "bfloat16"):
        assert jargon not in lesson and jargon in markdown[appendix], jargon
