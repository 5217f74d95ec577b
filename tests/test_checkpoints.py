"""Issue 12 for pretraining: bad numbers, broken checkpoints, mismatched runs each end in one clear error."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers import presets
from helpers import pretrain as P
from pipeline.store import checkpoints as ck
from pipeline.store.layout import ModelFiles, read_metrics
from pipeline.train import prepare, training
from pipeline.train import train_cli as cli

SMALL_MODEL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48)
CFG = presets.TrainConfig(name="test", steps=4, batch_size=4, seq_len=32, eval_every=2, checkpoint_every=2,
                    eval_batch_size=16, lr=2e-3)


@pytest.fixture(scope="module")
def tokenizer(small_tokenizer):
    return small_tokenizer


@pytest.fixture(scope="module")
def data_dir(small_prepared):
    return small_prepared(CFG.seq_len)


def _static(tmp_path, tokenizer, seed=0, name="static"):
    from helpers.static_vectors import Alignment
    from pipeline.vectors.static_files import save_aligned

    matrix = np.random.default_rng(seed).normal(size=(len(tokenizer), 32)).astype(np.float32)
    return save_aligned(tmp_path / name, Alignment(matrix, np.ones(len(tokenizer), dtype=bool), {"seed": seed}),
                        {"fallback": "zero"})


def _train(tokenizer, data_dir, out, model="bert_tiny", init="random", cfg=CFG, **kw):
    return training.train(model, init, cfg, data_dir, out, tokenizer=tokenizer, device="cpu", progress=False,
                   model_overrides=SMALL_MODEL, **kw)


# ---------------------------------------------------------------- settings checked before training

BAD_SETTINGS = [("lr", math.inf), ("lr", 1e6), ("lr", 0.0), ("lr", math.nan), ("weight_decay", math.nan),
                ("weight_decay", -0.1), ("grad_clip", -1.0), ("grad_clip", 0.0), ("eps", 0.0),
                ("betas", (0.9, 1.0)), ("betas", (math.nan, 0.999)), ("warmup_fraction", 1.0),
                ("eval_sequences", 0), ("steps", 0), ("batch_size", 2.5), ("mlm_probability", 0.0),
                ("batching", "sorted"), ("dropout", "none"), ("attention", "flash")]


@pytest.mark.parametrize("name, value", BAD_SETTINGS)
def test_train_config_refuses_a_bad_value_naming_the_setting(name, value):
    with pytest.raises(ValueError, match=name.rstrip("s")):
        CFG.replace(**{name: value})


CLI_BASE = ["--data", "unused", "--out", "unused", "--model", "bert_tiny"]
BAD_OPTIONS = [["--lr", "inf"], ["--lr", "1e6"], ["--lr", "nan"], ["--weight-decay", "nan"], ["--grad-clip", "-1"],
               ["--eps", "0"], ["--beta1", "1.0"], ["--eval-sequences", "0"], ["--stop-at", "-3"], ["--stop-at", "0"],
               ["--steps", "ten"], ["--seed", "-1"], ["--device", "tpu"], ["--device", "mps"], ["--batching", "sorted"],
               ["--preset", "huge"]]


@pytest.mark.parametrize("option", BAD_OPTIONS, ids=lambda o: " ".join(o))
def test_cli_refuses_a_bad_option_with_one_message(option, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(CLI_BASE + option)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err and option[0] in err and "Traceback" not in err


def test_tpu_names_the_devices_there_are(capsys):
    with pytest.raises(SystemExit):
        cli.main(CLI_BASE + ["--device", "tpu"])
    assert "unknown device 'tpu'" in capsys.readouterr().err


@pytest.mark.parametrize("device", ["auto", "cpu", "cuda", "cuda:1", "mps", "cuda:x"])
def test_the_cli_accepts_exactly_the_devices_training_accepts(device):
    """One device check, made while the options are parsed: pipeline.store.runinfo's (a known name, and a GPU that is
    there), which the main job applies too."""
    import argparse

    from pipeline.store.runinfo import device_argument

    try:
        device_argument(device)
        accepted = True
    except argparse.ArgumentTypeError:
        accepted = False
    if device.startswith("cuda") and not torch.cuda.is_available():
        assert not accepted  # refused at once on a machine without a GPU, not in notebook 04
    argv = CLI_BASE + ["--device", device]
    if accepted:
        assert cli.build_parser().parse_args(argv).device == device
    else:
        with pytest.raises(SystemExit):
            cli.build_parser().parse_args(argv)


def test_stop_at_below_one_is_refused_in_python_too(tokenizer, data_dir, tmp_path):
    with pytest.raises(ValueError, match="stop_at"):
        _train(tokenizer, data_dir, tmp_path, stop_at=-3)


# ---------------------------------------------------------------- the init must match the model's name


def test_bert_ft_needs_static_vectors_and_bert_tiny_refuses_them(tokenizer, data_dir, tmp_path, capsys):
    with pytest.raises(ValueError, match="bert_ft needs static vectors"):
        _train(tokenizer, data_dir, tmp_path, model="bert_ft", init="random")
    static = _static(tmp_path, tokenizer)
    with pytest.raises(ValueError, match="bert_tiny starts from random"):
        _train(tokenizer, data_dir, tmp_path, model="bert_tiny", init=str(static))
    for argv in (["--model", "bert_ft"], ["--model", "bert_tiny", "--init", str(static)]):
        with pytest.raises(SystemExit) as stop:
            cli.main(["--data", str(data_dir), "--out", str(tmp_path), *argv])
        assert stop.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


# ---------------------------------------------------------------- non-finite numbers stop training


def _poison_at(monkeypatch, bad_call: int) -> None:
    """Make the model's embeddings NaN just before the ``bad_call``-th training step."""
    real, calls = P.train_step, []

    def poisoned(ctx, ids, lengths):
        calls.append(1)
        if len(calls) == bad_call:
            with torch.no_grad():
                ctx.model.bert.embeddings.word_embeddings.weight.fill_(math.nan)
        return real(ctx, ids, lengths)

    monkeypatch.setattr(P, "train_step", poisoned)


def test_a_non_finite_loss_stops_training_and_is_recorded(tokenizer, data_dir, tmp_path, monkeypatch):
    _poison_at(monkeypatch, bad_call=3)
    with pytest.raises(P.TrainingDiverged, match="step 3") as err:
        _train(tokenizer, data_dir, tmp_path)
    assert err.value.step == 3
    run = json.loads((tmp_path / "bert_tiny" / "run.json").read_text())
    assert run["finished"] is False and run["steps_done"] == 3 and "diverged" in run["stopped"]
    rows = read_metrics(tmp_path / "bert_tiny" / "metrics.csv")
    assert [r["step"] for r in rows] == [0, 2]  # nothing non-finite was logged
    assert not (tmp_path / "bert_tiny" / "model").exists()
    saved = ck.load_checkpoint(ModelFiles(tmp_path / "bert_tiny").checkpoint)
    assert saved["step"] == 2  # the last good checkpoint, never a NaN one


def test_the_cli_exits_non_zero_when_training_diverges(data_dir, tmp_path, monkeypatch, capsys):
    _poison_at(monkeypatch, bad_call=1)
    monkeypatch.setitem(presets.PRESETS, "smoke", replace(presets.get("smoke"), train=CFG.replace(name="smoke")))
    code = cli.main(["--data", str(data_dir), "--out", str(tmp_path), "--model", "bert_tiny", "--preset", "smoke",
                     "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 1 and "diverged at step 1" in err and "Traceback" not in err


# ---------------------------------------------------------------- broken checkpoints


@pytest.mark.parametrize("content", [b"", b"garbage, not a checkpoint\n" * 10, "truncated"])
def test_an_unreadable_checkpoint_names_its_path_and_no_resume(tokenizer, data_dir, tmp_path, content, capsys):
    _train(tokenizer, data_dir, tmp_path, stop_at=2)
    path = ModelFiles(tmp_path / "bert_tiny").checkpoint
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2] if content == "truncated" else content)
    with pytest.raises(ck.CheckpointError) as err:
        _train(tokenizer, data_dir, tmp_path)
    assert str(path) in str(err.value) and "--no-resume" in str(err.value)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(presets.PRESETS, "smoke", replace(presets.get("smoke"), train=CFG.replace(name="smoke")))
        argv = ["--data", str(data_dir), "--out", str(tmp_path), "--model", "bert_tiny", "--preset", "smoke",
                "--device", "cpu"]
        assert cli.main(argv) == 1
        assert "--no-resume" in capsys.readouterr().err
        assert cli.main([*argv, "--no-resume"]) == 0  # starting again works


# ---------------------------------------------------------------- identity: resume and comparisons


def test_resume_refuses_another_identity_and_says_what_changed(tokenizer, data_dir, tmp_path):
    _train(tokenizer, data_dir, tmp_path, stop_at=2)
    with pytest.raises(ck.CheckpointError, match=r"seed: 0 -> 1"):
        _train(tokenizer, data_dir, tmp_path, seed=1)
    with pytest.raises(ck.CheckpointError, match=r"train_config\.lr: 0\.002 -> 0\.001"):
        _train(tokenizer, data_dir, tmp_path, cfg=CFG.replace(lr=1e-3))


def test_resume_refuses_replaced_static_vectors(tokenizer, data_dir, tmp_path):
    static = _static(tmp_path, tokenizer, seed=0)
    _train(tokenizer, data_dir, tmp_path, model="bert_ft", init=str(static), stop_at=2)
    _static(tmp_path, tokenizer, seed=1)  # the same folder, other vectors
    with pytest.raises(ck.CheckpointError, match="init.manifest_sha256"):
        _train(tokenizer, data_dir, tmp_path, model="bert_ft", init=str(static))


def test_a_run_folder_moved_whole_resumes_bit_for_bit(tokenizer, data_dir, tmp_path):
    """Paths say where a run is, not what it is: the init folder moved with the run does not refuse the resume."""
    import shutil

    straight = tmp_path / "straight"
    _train(tokenizer, data_dir, straight, model="bert_ft", init=str(_static(straight, tokenizer)))
    before = tmp_path / "before"
    _train(tokenizer, data_dir, before, model="bert_ft", init=str(_static(before, tokenizer)), stop_at=3)
    after = tmp_path / "after"
    shutil.move(before, after)
    _train(tokenizer, data_dir, after, model="bert_ft", init=str(after / "static"))
    read = {run: json.loads((run / "bert_ft" / "run.json").read_text()) for run in (straight, after)}
    assert read[after]["finished"] and read[after]["init"]["source"] == str(after / "static")
    metrics = {run: read_metrics(run / "bert_ft" / "metrics.csv") for run in (straight, after)}
    untimed = {run: [{k: (None if v != v else v) for k, v in row.items() if k != "elapsed_s"} for row in rows]
               for run, rows in metrics.items()}  # NaN (step 0's training loss) as None, so == compares it
    assert untimed[straight] == untimed[after]
    from transformers import BertForMaskedLM

    weights = {run: BertForMaskedLM.from_pretrained(run / "bert_ft" / "model").state_dict()
               for run in (straight, after)}
    assert all(torch.equal(weights[straight][k], weights[after][k]) for k in weights[straight])


def test_a_files_corpus_is_named_by_kind_in_the_identity_and_its_path_stays_in_the_record():
    assert ck.input_kind("files:/data/c4") == "files" and ck.input_kind("embedded") == "embedded"
    key = {"identity": {"corpus": "files:/old/c4", "seed": 0}, "init": {"source": "/old/static", "kind": "static"}}
    moved = {"identity": {"corpus": "files:/new/c4", "seed": 0}, "init": {"source": "/new/static", "kind": "static"}}
    assert ck.key_without_paths(key) == ck.key_without_paths(moved) and key["init"]["source"] == "/old/static"
    ck.check_resumable(Path("checkpoint.pt"), key, moved)  # a checkpoint written before the move resumes
    with pytest.raises(ck.CheckpointError, match="identity.seed: 0 -> 1"):
        ck.check_resumable(Path("checkpoint.pt"), key, {**moved, "identity": {"corpus": "files:/x", "seed": 1}})


def test_run_json_records_identity_and_init(tokenizer, data_dir, tmp_path):
    _train(tokenizer, data_dir, tmp_path, cfg=P.cap_steps(CFG, 2))
    run = json.loads((tmp_path / "bert_tiny" / "run.json").read_text())
    identity = run["identity"]
    assert set(identity) == {"lang", "seed", "preset", "corpus", "max_steps", "data_fingerprint",
                             "tokenizer_fingerprint", "train_config_hash"}
    assert (identity["lang"], identity["corpus"], identity["seed"], identity["max_steps"]) == ("en", "embedded", 0, 2)
    assert identity["preset"] == "test (max 2 steps)" and run["max_steps"] == 2
    assert identity["data_fingerprint"] == prepare.load_data(data_dir).fingerprint()
    assert run["init"]["kind"] == "random" and run["init"]["manifest_sha256"] is None
    assert run["train_config"]["batching"] == "random" and run["train_config"]["dropout"] == "torch"


def test_comparisons_refuse_runs_of_different_experiments(tokenizer, data_dir, tmp_path):
    static = _static(tmp_path, tokenizer)
    _train(tokenizer, data_dir, tmp_path, seed=7, cfg=CFG.replace(steps=2))
    _train(tokenizer, data_dir, tmp_path, model="bert_ft", init=str(static), seed=0, cfg=CFG.replace(steps=2))
    with pytest.raises(ValueError, match="seed: 7 -> 0"):
        training.write_comparison(tmp_path)
    assert not (tmp_path / "comparison.json").exists()
    _train(tokenizer, data_dir, tmp_path, seed=0, cfg=CFG.replace(steps=2), resume=False)
    assert training.write_comparison(tmp_path)["bert_tiny_final"]["step"] == 2  # same experiment: compared


def test_compare_runs_checks_given_identities():
    rows = [{"step": 0, "train_loss": math.nan, "eval_loss": 9.0, "eval_accuracy": 0.0},
            {"step": 10, "train_loss": 8.0, "eval_loss": 7.0, "eval_accuracy": 0.1}]
    identity = {"lang": "en", "seed": 0, "data_fingerprint": "a" * 64}
    assert training.compare_runs(rows, rows, identity, dict(identity))["bert_tiny_final"]["step"] == 10
    with pytest.raises(ValueError, match="lang: \"fr\" -> \"en\""):
        training.compare_runs(rows, rows, {**identity, "lang": "fr"}, identity)


# ---------------------------------------------------------------- per-position evaluation results


def test_final_evaluation_saves_per_position_results(tokenizer, data_dir, tmp_path):
    _train(tokenizer, data_dir, tmp_path)
    saved = np.load(ModelFiles(tmp_path / "bert_tiny").positions)
    final = read_metrics(tmp_path / "bert_tiny" / "metrics.csv")[-1]
    data = prepare.load_data(data_dir)
    labels = data.eval_labels
    assert saved["correct"].dtype == bool and saved["loss"].dtype == np.float32
    assert len(saved["loss"]) == int((labels != -100).sum())
    assert (labels[saved["sequence"], saved["position"]] != -100).all()
    order = saved["sequence"].astype(np.int64) * labels.shape[1] + saved["position"]
    assert (np.diff(order) > 0).all()  # reading order, the same for every model of the data
    assert saved["loss"].astype(np.float64).mean() == pytest.approx(final["eval_loss"], rel=1e-5)
    assert saved["correct"].mean() == pytest.approx(final["eval_accuracy"], abs=1e-12)
    # what the model saw and predicted there: correct is exactly top1 == label
    assert (saved["label"] == labels[saved["sequence"], saved["position"]]).all()
    assert (saved["visible"] == data.eval_masked_ids[saved["sequence"], saved["position"]]).all()
    assert ((saved["top1"] == saved["label"]) == saved["correct"]).all()
    mask_id = tokenizer.mask_token_id
    assert 0.5 < (saved["visible"] == mask_id).mean() < 1.0  # most scored positions show [MASK], not all


def test_stopping_early_writes_no_per_position_results(tokenizer, data_dir, tmp_path):
    _train(tokenizer, data_dir, tmp_path, stop_at=2)
    assert not ModelFiles(tmp_path / "bert_tiny").positions.exists()


def test_a_run_json_written_with_a_corpus_path_pairs_with_one_written_with_its_kind():
    """Older code wrote identity.corpus as 'files:/path'; every comparison reads both as the kind 'files'."""
    from evidence import results

    older = {"identity": {"corpus": "files:/data/c4", "seed": 0}, "init": {"kind": "random"}}
    newer = {"identity": {"corpus": "files", "seed": 0}, "init": {"kind": "static"}}
    assert results.pair_mismatch(older, newer) is None
    ck.check_same_experiment(older["identity"], newer["identity"])
    with pytest.raises(ValueError, match="seed: 0 -> 1"):
        ck.check_same_experiment(older["identity"], {**newer["identity"], "seed": 1})
