"""Notebook 04 under the smoke preset: both runs' files, their contents and the comparison."""

from __future__ import annotations

import json
import math

import pytest

from helpers import presets
from pipeline import prepare, training
from pipeline.layout import MODEL_NAMES, ModelFiles

pytestmark = pytest.mark.notebook


@pytest.fixture(scope="module")
def pretrain_dir(smoke_step):
    return smoke_step("04_pretraining")


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_metrics_have_the_contract_columns_and_finite_values(pretrain_dir, name):
    path = pretrain_dir / name / "metrics.csv"
    header = path.read_text().splitlines()[0].split(",")
    assert header == list(training.METRIC_COLUMNS)
    rows = training.read_metrics(path)
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
    final = training.read_metrics(pretrain_dir / name / "metrics.csv")[-1]
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
