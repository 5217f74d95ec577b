"""The GPU configuration (bf16 autocast, torch.compile, padded SDPA, a fixed masked-row count) run on the CPU.

No machine of this project has a GPU, so these options are proven on the CPU, where the same code runs:
the only CUDA-specific lines left in the training step are device placement and pinned memory.

Tolerances:

* bf16 keeps 8 significant bits, so each rounding is off by at most 2**-9 relative (half a unit in the
  last place) and a value built from a few roundings by about 2**-8 ~ 0.4 %. The loss is a mean of
  cross-entropies over all masked tokens, whose rounding errors partly cancel, so 2**-8 relative is a
  safe bound per step; after 20 steps the runs have drifted apart only by rounding (measured: at most
  0.01 % per step on this model). A disabled option would give bit-equal losses, which the test refuses.
* The fixed row count scores the same rows as the exact one plus padded rows that add exact zeros, so
  the two losses differ only in the order of float32 sums: 1e-6 relative is ~17 float32 rounding units
  (2**-24); over 10 steps 1e-5 (measured: 1e-7).
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from helpers import presets
from helpers import pretrain as P
from helpers.masking import IGNORE_INDEX
from helpers.model import MaskedLMLoss, build_model, mlm_loss, use_attention
from pipeline.store.layout import read_metrics
from pipeline.train import prepare, training
from pipeline.train import train_cli as cli

# Hidden 60 over 4 heads: head dim 15, which sdpa_padded pads to 16 (a real padding, as 75 -> 80 on a GPU).
# Dropout off: with it, compiled and eager runs draw different random masks and nothing would compare.
SMALL_MODEL = dict(hidden_size=60, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
                   hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
CFG = presets.TrainConfig(name="test", steps=20, batch_size=8, seq_len=32, eval_every=1, checkpoint_every=20,
                    eval_batch_size=16, eval_sequences=16, lr=2e-3, cpu_threads=1)
GPU_OPTIONS = dict(precision="bf16", compile=True, attention="sdpa_padded", cap_masked=True)
BF16_STEP = 2.0 ** -8
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def tokenizer(small_tokenizer):
    return small_tokenizer


@pytest.fixture(scope="module")
def data_dir(small_prepared):
    return small_prepared(CFG.seq_len)


def _run(tokenizer, data_dir, out, cfg):
    info = training.train("bert_tiny", "random", cfg, data_dir, out, tokenizer=tokenizer, device="cpu", progress=False,
                   model_overrides=SMALL_MODEL)
    return info, read_metrics(out / "bert_tiny" / "metrics.csv")


def _batch(tokenizer, data_dir, rows=8):
    data = prepare.load_data(data_dir)
    ids, lengths = P.batch_to_device(*data.train_batch(list(range(rows))), CPU)
    attention = P.lengths_to_mask(lengths, ids.shape[1])
    from helpers.masking import MLMCollator

    batch = MLMCollator(tokenizer, seed=3).mask(ids, attention)
    return batch["input_ids"], attention, batch["labels"]


def test_all_gpu_options_train_within_bf16_rounding_of_plain_fp32(tokenizer, data_dir, tmp_path):
    plain_info, plain = _run(tokenizer, data_dir, tmp_path / "fp32", CFG)
    gpu_info, gpu = _run(tokenizer, data_dir, tmp_path / "gpu", CFG.replace(**GPU_OPTIONS))
    assert plain_info["step_options"] == {"precision": "fp32", "compile": False, "attention": "sdpa",
                                          "max_masked": None}
    assert gpu_info["step_options"] == {"precision": "bf16", "compile": True, "attention": "sdpa_padded",
                                        "max_masked": P.static_cap(CFG)}
    recorded = json.loads((tmp_path / "gpu" / "bert_tiny" / "run.json").read_text())
    assert recorded["step_options"]["precision"] == "bf16" and recorded["attention"] == "sdpa_padded"
    losses = [(a["train_loss"], b["train_loss"]) for a, b in zip(plain[1:], gpu[1:])]  # row 0: no training yet
    assert len(losses) == CFG.steps
    for step, (a, b) in enumerate(losses, 1):
        assert math.isfinite(b) and abs(b - a) <= BF16_STEP * a, (step, a, b)
    assert any(a != b for a, b in losses), "bf16 and compile changed no bit: were they applied at all?"
    for a, b in zip(plain, gpu):  # the evaluation runs in bf16 too
        assert abs(b["eval_loss"] - a["eval_loss"]) <= BF16_STEP * a["eval_loss"]
    assert gpu[-1]["eval_loss"] < gpu[0]["eval_loss"]  # and it learns


def test_the_fixed_row_count_gives_the_loss_and_gradients_of_the_exact_one(tokenizer, data_dir):
    ids, attention, labels = _batch(tokenizer, data_dir)
    n = int((labels != IGNORE_INDEX).sum())
    model = build_model("random", vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, **SMALL_MODEL)
    grads = []
    for cap in (None, P.static_cap(CFG)):
        model.zero_grad()
        total, count = MaskedLMLoss(model, cap)(ids, attention, labels)
        (total / count).backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        assert int(count) == n
        if cap is None:
            exact = total / count
        else:
            assert cap > n and (total / count).item() == pytest.approx(exact.item(), rel=1e-6)
    for a, b in zip(*grads):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-7)
    assert exact.item() == pytest.approx(mlm_loss(model, ids, attention, labels).item(), rel=1e-6)


def test_a_capped_run_matches_the_exact_run_step_by_step(tokenizer, data_dir, tmp_path):
    cfg = CFG.replace(steps=10, eval_every=5)
    _, exact = _run(tokenizer, data_dir, tmp_path / "exact", cfg)
    _, capped = _run(tokenizer, data_dir, tmp_path / "capped", cfg.replace(cap_masked=True))
    for a, b in zip(exact[1:], capped[1:]):
        assert b["train_loss"] == pytest.approx(a["train_loss"], rel=1e-5)


def test_a_capped_batch_that_overflows_counts_only_the_rows_it_scores(tokenizer, data_dir):
    ids, attention, labels = _batch(tokenizer, data_dir)
    n = int((labels != IGNORE_INDEX).sum())
    model = build_model("random", vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, **SMALL_MODEL)
    _, count = MaskedLMLoss(model, n - 3)(ids, attention, labels)
    assert int(count) == n - 3


def test_the_compiled_loss_has_no_graph_breaks(tokenizer, data_dir):
    """What torch.compile sees on CUDA: bf16 autocast, padded SDPA, a fixed row count; one graph, no breaks."""
    ids, attention, labels = _batch(tokenizer, data_dir)
    model = use_attention(build_model("random", vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                      **SMALL_MODEL), "sdpa_padded")
    mask = P.encoder_mask(model, attention, packed=False)
    assert mask.dim() == 4  # the ready mask transformers passes through (no mask.all() to ask)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        capped = torch._dynamo.explain(MaskedLMLoss(model, P.static_cap(CFG)))(ids, mask, labels)
        exact = torch._dynamo.explain(MaskedLMLoss(model, None))(ids, mask, labels)
    assert capped.graph_break_count == 0 and capped.graph_count == 1, capped.break_reasons
    # The check can fail: without the cap, nonzero()'s data-dependent length breaks the graph.
    assert exact.graph_break_count > 0


def test_step_options_default_to_the_gpu_configuration_on_cuda_only():
    cfg = presets.get("demo").train
    assert P.step_options(cfg, CPU) == P.StepOptions("fp32", False, "sdpa", None)
    assert P.step_options(cfg, torch.device("cuda")) == P.StepOptions("bf16", False, "sdpa_padded",
                                                                      P.static_cap(cfg))
    chosen = cfg.replace(precision="fp32", attention="eager", cap_masked=False, compile=True)
    assert P.step_options(chosen, torch.device("cuda")) == P.StepOptions("fp32", True, "eager", None)


def test_the_command_line_turns_on_every_gpu_option():
    args = cli.build_parser().parse_args(["--data", "d", "--out", "o", "--model", "bert_tiny", "--preset", "demo",
                                          "--precision", "bf16", "--compile", "--attention", "sdpa_padded",
                                          "--static-cap", "--model-dropout", "0"])
    cfg = cli.config_from_args(args)
    assert (cfg.precision, cfg.compile, cfg.attention, cfg.cap_masked) == ("bf16", True, "sdpa_padded", True)
    assert cli.model_overrides(args) == {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    plain = cli.config_from_args(cli.build_parser().parse_args(["--data", "d", "--out", "o", "--model", "bert_tiny"]))
    assert (plain.precision, plain.compile, plain.cap_masked) == ("auto", False, None)


@pytest.mark.parametrize("name, value", [("precision", "fp16"), ("cap_masked", "yes"), ("compile", 1)])
def test_a_bad_step_option_is_refused_naming_it(name, value):
    with pytest.raises(ValueError, match=name):
        CFG.replace(**{name: value})
