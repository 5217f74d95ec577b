"""Speed of each GPU option on the CPU, as a ratio to the CPU default (fp32, SDPA, not compiled).

One demo-size training step (batch 32 x 128 positions, the Table 4 model with its 30,000-token
vocabulary, the project's train_step) per option: bf16 autocast, torch.compile, padded SDPA, eager
attention, the fixed masked-row count, all GPU options together, and the 2-D attention mask the CPU
used before every device got the ready 4-D one. Options are timed in interleaved rounds (each round
runs every option in turn), so load from other work on a shared machine falls on all of them alike;
the report gives medians and speed ratios (> 1: faster than the default), not absolute times.

    .venv/bin/python benchmarks/cpu_options.py            # writes benchmarks/results/cpu_options.json

Batches are synthetic: random token ids with lengths like the embedded English text (a third of the
rows full, the rest uniform from 20 to 127 positions), masked afresh each step as in training.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from helpers import presets
from helpers import pretrain as P
from helpers.model import TABLE4, build_model, use_attention
from helpers.presets import TrainConfig

OUT = Path(__file__).resolve().parent / "results" / "cpu_options.json"
OPTIONS: dict[str, dict[str, Any]] = {
    "default (fp32, sdpa, eager mode)": {},
    "bf16 autocast": {"precision": "bf16"},
    "torch.compile": {"compile": True},
    "sdpa_padded": {"attention": "sdpa_padded"},
    "eager attention": {"attention": "eager"},
    "static cap": {"cap_masked": True},
    "all GPU options (bf16, compile, sdpa_padded, static cap)": {"precision": "bf16", "compile": True,
                                                                "attention": "sdpa_padded", "cap_masked": True},
    "2-D attention mask (the CPU path before)": {},
}


class VocabularyStub:
    """What MLMCollator needs of a tokenizer: 30,000 ids, the first five special ([PAD] [UNK] [CLS] [SEP] [MASK])."""

    pad_token_id, cls_token_id, sep_token_id, mask_token_id = 0, 2, 3, 4
    all_special_ids = [0, 1, 2, 3, 4]

    def __len__(self) -> int:
        return TABLE4["vocab_size"]


def make_batches(n: int, batch: int, seq_len: int, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(n):
        lengths = np.where(rng.random(batch) < 1 / 3, seq_len, rng.integers(20, seq_len, batch))
        ids = rng.integers(5, TABLE4["vocab_size"], (batch, seq_len))
        ids[:, 0] = VocabularyStub.cls_token_id
        ids[np.arange(batch), lengths - 1] = VocabularyStub.sep_token_id
        ids[np.arange(seq_len)[None, :] >= lengths[:, None]] = VocabularyStub.pad_token_id
        batches.append((torch.from_numpy(ids), torch.from_numpy(lengths.astype(np.int64))))
    return batches


def make_step(name: str, changes: dict[str, Any], cfg: TrainConfig) -> Callable[[torch.Tensor, torch.Tensor], None]:
    cfg = cfg.replace(**changes)
    device = torch.device("cpu")
    model = build_model("random", seed=0)
    use_attention(model, P.step_options(cfg, device).attention)
    model.train()
    ctx = P.make_step_context(model, cfg, VocabularyStub(), "cpu", seed=0)
    if name.startswith("2-D"):
        ctx.encoder_mask = lambda attention: attention  # transformers builds the 4-D mask itself

    def step(ids: torch.Tensor, lengths: torch.Tensor) -> None:
        loss, _ = P.train_step(ctx, ids, lengths)
        float(loss)

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=2, help="timed steps per option per round")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    started = time.perf_counter()
    cfg = presets.get("demo").train
    batches = make_batches(8, cfg.batch_size, cfg.seq_len)
    steps, warmup = {}, {}
    for name, changes in OPTIONS.items():  # build and warm up (compilation happens here)
        t = time.perf_counter()
        steps[name] = make_step(name, changes, cfg)
        for ids, lengths in batches[:2]:
            steps[name](ids, lengths)
        warmup[name] = round(time.perf_counter() - t, 1)
        print(f"warmed up {name} in {warmup[name]} s", flush=True)
    times: dict[str, list[float]] = {name: [] for name in OPTIONS}
    for r in range(args.rounds):
        for name, step in steps.items():
            for k in range(args.steps):
                ids, lengths = batches[(r * args.steps + k) % len(batches)]
                t = time.perf_counter()
                step(ids, lengths)
                times[name].append(time.perf_counter() - t)
        print(f"round {r + 1}/{args.rounds} done", flush=True)
    base_name = next(iter(OPTIONS))
    base = statistics.median(times[base_name])
    results = {name: {"median_step_s": round(statistics.median(t), 4),
                      "speed_vs_default": round(base / statistics.median(t), 3),
                      "warmup_s": warmup[name], "changes": OPTIONS[name]} for name, t in times.items()}
    report = {"what": "one demo-size training step (batch 32 x 128, Table 4 model, vocabulary 30,000) on the CPU; "
                      "speed_vs_default > 1 means faster than fp32 / sdpa / not compiled",
              "rounds": args.rounds, "steps_per_round": args.steps, "threads": torch.get_num_threads(),
              "torch": torch.__version__, "machine": platform.machine(), "processor": platform.processor(),
              "note": "shared machine: compare the ratios, not the absolute times",
              "results": results, "total_seconds": round(time.perf_counter() - started, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
