"""Training-step throughput on the demo data: Hugging Face's full-vocabulary MLM head against this project's step.

Recipes (same Table 4 model and seed, same optimiser and schedule, one process, so one allocator):

* ``hf-full-head``: the baseline. Hugging Face ``BertForMaskedLM(..., labels=...)``, which projects
  every position onto the 30,000-word vocabulary, fed by ``DataCollatorForLanguageModeling`` from
  lists of ids, as a ``Trainer`` step does; random batches. (The original BERT code and NVIDIA's
  recipe also project only the masked positions; this baseline is transformers' model class.)
* ``ours``: masking on the device (``helpers.masking.MLMCollator``) and ``helpers.model.mlm_loss``,
  which projects only the ~15 % masked positions; random batches, torch's dropout.
* ``ours+bucketed``: the same with ``helpers.batching.BucketedBatchSampler`` batches cut to their
  longest row.

Method: the machine is shared, so recipes run in interleaved rounds (each round every recipe
takes ``--steps`` steps, the baseline ``--baseline-steps``, the order rotating), after untimed
warm-up steps, until ``--rounds`` or ``--budget-s``; every step is timed alone. The matmul peak
(a 2048 x 2048 fp32 ``torch.matmul``) is measured in every round too.
Reported per recipe: s/step (median, IQR, min-max), real (non-padding) tokens per second, achieved
GFLOP/s and its fraction of the peak; and the speed-ups in real tokens per second with the spread
of the per-round ratios. The timed batches are a stratified sample of an epoch's batches
(evenly spaced by width), so bucketed batches of all widths are represented as in training.

FLOPs per step (multiply-add = 2 FLOPs; B rows, T computed positions per row, hidden H = 300,
intermediate I = 512, vocabulary V, M masked positions, 2 layers):

    encoder  = 2 layers x (8 B T H^2 [Q, K, V, output] + 4 B T H I [feed-forward] + 4 B T^2 H [QK^T, PV])
    head     = 2 R H^2 + 2 R H V, with R = M (ours) or R = B T (full-vocabulary head)
    step     = 3 x (encoder + head)   (backward = twice the forward's matmuls)

Embedding lookups, softmax, LayerNorm, dropout and the optimiser are not counted: the count is the
matmul work, so GFLOP/s over the measured matmul peak says how close the step is to the machine's
limit. The last line printed is ``ratio: <real tokens/s of --ratio-recipe / real tokens/s of hf-full-head>``.

    python benchmarks/throughput.py --json benchmarks/results/cpu-2core-batch32.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from helpers import presets  # noqa: E402
from helpers import pretrain as P  # noqa: E402
from helpers.batching import BucketedBatchSampler, cut_to_longest  # noqa: E402
from helpers.masking import IGNORE_INDEX, MLMCollator  # noqa: E402
from helpers.model import build_model, mlm_loss, use_attention  # noqa: E402
from helpers.presets import TrainConfig  # noqa: E402
from pipeline.store.runinfo import environment, pick_device  # noqa: E402
from pipeline.train.prepare import load_data, load_data_tokenizer  # noqa: E402
from pipeline.train.shards import tokenize_corpus, truncate_sequences  # noqa: E402

BASELINE = "hf-full-head"
RECIPES = {BASELINE: False, "ours": False, "ours+bucketed": True}  # name: bucketed batches?
DESCRIPTIONS = {
    BASELINE: "Hugging Face BertForMaskedLM full-vocabulary head + DataCollatorForLanguageModeling, random batches",
    "ours": "masked-only head (helpers.model.mlm_loss), device masking, random batches, torch dropout",
    "ours+bucketed": "ours with length-bucketed batches cut to their longest row",
}
PEAK_N = 2048


# --------------------------------------------------------------------------------------------
# Data: the demo preset's English training sequences, or prepared files
# --------------------------------------------------------------------------------------------


def demo_data(seq_len: int) -> tuple[np.ndarray, np.ndarray, Any, str]:
    """The demo preset's data: the embedded English training split, a 30,000-token WordPiece, the paper's truncation."""
    from helpers.tokenizer import train_wordpiece
    from pipeline.corpora.data import EMBEDDED, load_corpus

    corpus = load_corpus(EMBEDDED, "en", "train")
    tokenizer = train_wordpiece(corpus.texts, 30_000, show_progress=False)
    tokens = tokenize_corpus(tokenizer, corpus.texts)
    ids, lengths = truncate_sequences(tokens, seq_len, tokenizer.cls_token_id, tokenizer.sep_token_id,
                                        tokenizer.pad_token_id)
    return ids, lengths, tokenizer, f"embedded English training split ({len(lengths)} sequences), demo tokenizer"


def prepared_data(path: str) -> tuple[np.ndarray, np.ndarray, Any, str]:
    data = load_data(path)
    return data.train_ids, data.train_lengths, load_data_tokenizer(path), f"prepared data in {data.directory}"


# --------------------------------------------------------------------------------------------
# The steps
# --------------------------------------------------------------------------------------------

Step = Callable[[np.ndarray, np.ndarray], int]  # (ids, lengths) -> masked positions scored


def optimiser_and_schedule(model: torch.nn.Module, cfg: TrainConfig) -> tuple[torch.optim.Optimizer, Any]:
    from transformers import get_linear_schedule_with_warmup

    optimizer = torch.optim.AdamW(P.decay_groups(model, cfg.weight_decay), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps,
                                  fused=True)
    return optimizer, get_linear_schedule_with_warmup(optimizer, cfg.warmup_steps, cfg.steps)


def finish_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any, loss: torch.Tensor,
                cfg: TrainConfig) -> None:
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)


def baseline_step(tokenizer: Any, cfg: TrainConfig, device: torch.device, seed: int) -> Step:
    """What a Trainer step does with transformers' classes: host collation, logits at every position."""
    from transformers import DataCollatorForLanguageModeling

    model = build_model("random", seed=seed, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id)
    model.to(device).train()
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=cfg.mlm_probability, seed=seed)
    optimizer, scheduler = optimiser_and_schedule(model, cfg)
    cuda = device.type == "cuda"

    def step(ids: np.ndarray, lengths: np.ndarray) -> int:
        examples = [{"input_ids": row[:n].tolist()} for row, n in zip(ids, lengths)]
        batch = {k: v.to(device, non_blocking=True) for k, v in collator(examples).items()}
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=cuda):
            loss = model(**batch).loss
        finish_step(model, optimizer, scheduler, loss, cfg)
        return int((batch["labels"] != IGNORE_INDEX).sum())

    return step


def ours_step(tokenizer: Any, cfg: TrainConfig, device: torch.device, seed: int) -> Step:
    """The project's step from its public pieces: device masking, masked-only loss, the same optimiser."""
    model = build_model("random", seed=seed, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id)
    use_attention(model, "sdpa" if device.type == "cpu" else "sdpa_padded")  # what the loop picks by default
    model.to(device).train()
    collator = MLMCollator(tokenizer, mlm_probability=cfg.mlm_probability, seed=seed)
    optimizer, scheduler = optimiser_and_schedule(model, cfg)
    cuda = device.type == "cuda"

    def step(ids: np.ndarray, lengths: np.ndarray) -> int:
        ids_t, len_t = P.batch_to_device(ids, lengths, device)
        attention = P.lengths_to_mask(len_t, ids_t.shape[1])
        batch = collator.mask(ids_t, attention)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=cuda):
            out = mlm_loss(model, batch["input_ids"], attention, batch["labels"])
        loss = out[0] if isinstance(out, tuple) else out  # (loss, correct, n) in older versions of mlm_loss
        finish_step(model, optimizer, scheduler, loss, cfg)
        return int((batch["labels"] != IGNORE_INDEX).sum())

    return step


def step_flops(batch: int, width: int, masked: int, full_head: bool, hidden: int = 300, inter: int = 512,
               layers: int = 2, vocab: int = 30_000) -> float:
    """Matmul FLOPs of one training step (forward x 3), as derived in the module docstring."""
    positions = batch * width
    encoder = layers * (8 * positions * hidden ** 2 + 4 * positions * hidden * inter + 4 * batch * width ** 2 * hidden)
    rows = positions if full_head else masked
    head = 2 * rows * hidden ** 2 + 2 * rows * hidden * vocab
    return 3.0 * (encoder + head)


def matmul_gflops(device: torch.device, n: int = PEAK_N, repeats: int = 5) -> float:
    """Best of ``repeats`` fp32 n x n matmuls, in GFLOP/s (2 n^3 FLOPs each)."""
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    best = float("inf")
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        torch.matmul(a, b)
        sync(device)
        best = min(best, time.perf_counter() - start)
    return 2 * n ** 3 / best / 1e9


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


# --------------------------------------------------------------------------------------------
# Which batches are timed
# --------------------------------------------------------------------------------------------


def stratified_steps(sampler: Any, lengths: np.ndarray, k: int, seed: int) -> list[int]:
    """k steps of the first epoch whose batch widths spread evenly over the epoch's, in a seeded random order."""
    steps = np.arange(sampler.per_epoch)
    widths = np.array([lengths[sampler.indices(s)].max() for s in steps])
    by_width = steps[np.argsort(widths, kind="stable")]
    picked = by_width[((np.arange(k) + 0.5) * len(steps) / k).astype(int)]
    return [int(s) for s in np.random.default_rng(seed).permutation(picked)]


@dataclass
class Timings:
    seconds: list[float] = field(default_factory=list)
    real_tokens: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    flops: list[float] = field(default_factory=list)
    round_of: list[int] = field(default_factory=list)


def run_step(step: Step, ids: np.ndarray, lengths: np.ndarray, device: torch.device) -> tuple[float, int]:
    sync(device)
    start = time.perf_counter()
    masked = step(ids, lengths)
    sync(device)
    return time.perf_counter() - start, masked


# --------------------------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------------------------


def quartiles(values: list[float]) -> dict[str, float]:
    v = np.asarray(values, dtype=float)
    return {"median": float(np.median(v)), "q25": float(np.percentile(v, 25)), "q75": float(np.percentile(v, 75)),
            "min": float(v.min()), "max": float(v.max()), "n": int(v.size)}


def per_round(t: Timings, what: str) -> dict[int, float]:
    """Per round: real tokens / s ('tokens') or GFLOP/s ('gflops') over that round's steps."""
    rounds: dict[int, list[int]] = {}
    for i, r in enumerate(t.round_of):
        rounds.setdefault(r, []).append(i)
    work = t.real_tokens if what == "tokens" else [f / 1e9 for f in t.flops]
    return {r: sum(work[i] for i in idx) / sum(t.seconds[i] for i in idx) for r, idx in rounds.items()}


def summarise(timings: dict[str, Timings], peaks: list[float]) -> dict[str, Any]:
    peak = float(np.median(peaks))
    out: dict[str, Any] = {"matmul_peak_gflops": {**quartiles(peaks), "size": PEAK_N}, "recipes": {}}
    for name, t in timings.items():
        total = sum(t.seconds)
        gflops = sum(t.flops) / total / 1e9
        out["recipes"][name] = {
            "description": DESCRIPTIONS[name],
            "seconds_per_step": {**quartiles(t.seconds), "mean": total / len(t.seconds)},
            "real_tokens_per_s": sum(t.real_tokens) / total,
            "real_tokens_per_s_by_round": quartiles(list(per_round(t, "tokens").values())),
            "padding_share": 1 - sum(t.real_tokens) / sum(t.positions),
            "gflop_per_step": sum(t.flops) / len(t.flops) / 1e9,
            "gflops": gflops, "fraction_of_peak": gflops / peak,
        }
    base = per_round(timings[BASELINE], "tokens")
    for name, t in timings.items():
        mine = per_round(t, "tokens")
        paired = [mine[r] / base[r] for r in mine if r in base]
        out["recipes"][name]["speedup_vs_baseline"] = {
            "overall": out["recipes"][name]["real_tokens_per_s"] / out["recipes"][BASELINE]["real_tokens_per_s"],
            "by_round": quartiles(paired)}
        ref = per_round(timings["ours"], "tokens")
        out["recipes"][name]["speedup_vs_ours"] = {
            "overall": out["recipes"][name]["real_tokens_per_s"] / out["recipes"]["ours"]["real_tokens_per_s"],
            "by_round": quartiles([mine[r] / ref[r] for r in mine if r in ref])}
    return out


def print_table(summary: dict[str, Any]) -> None:
    peak = summary["matmul_peak_gflops"]
    print(f"\nmatmul peak ({PEAK_N}^2 fp32): median {peak['median']:.0f} GFLOP/s "
          f"(min {peak['min']:.0f}, max {peak['max']:.0f}, {peak['n']} rounds)")
    print(f"{'recipe':18s} {'s/step median [IQR] (min-max)':34s} {'mean':>6s} {'real tok/s':>10s} "
          f"{'pad':>5s} {'GFLOP/s':>8s} {'of peak':>7s} {'vs baseline [round IQR]':>24s} {'vs ours':>8s}")
    for name, r in summary["recipes"].items():
        s, sp, so = r["seconds_per_step"], r["speedup_vs_baseline"], r["speedup_vs_ours"]
        print(f"{name:18s} {s['median']:.3f} [{s['q25']:.3f}-{s['q75']:.3f}] ({s['min']:.3f}-{s['max']:.3f})"
              f"{'':6s} {s['mean']:6.3f} {r['real_tokens_per_s']:10,.0f} {r['padding_share']:5.1%} "
              f"{r['gflops']:8.1f} {r['fraction_of_peak']:7.1%} "
              f"{sp['overall']:8.2f}x [{sp['by_round']['q25']:.2f}-{sp['by_round']['q75']:.2f}] "
              f"{so['overall']:7.2f}x")


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def batch_plan(lengths: np.ndarray, args: argparse.Namespace) -> tuple[dict, dict, dict]:
    """Random and bucketed samplers, the steps each recipe times, and the warm-up steps (never timed ones)."""
    samplers = {False: P.BatchSampler(len(lengths), args.batch_size, args.seed),
                True: BucketedBatchSampler(lengths, args.batch_size, args.seed)}
    k = args.rounds * max(args.steps, args.baseline_steps)
    timed = {b: stratified_steps(samplers[b], lengths, k, args.seed) for b in samplers}
    # Warm-up batches come from the second epoch, so they are never the timed ones.
    warm = {b: [samplers[b].per_epoch + i for i in range(args.warmup)] for b in samplers}
    return samplers, timed, warm


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.add_argument("--data", help="a folder written by pipeline.train.prepare.prepare_data "
                        "(default: the demo data)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per recipe first")
    parser.add_argument("--rounds", type=int, default=40, help="interleaved rounds (at most)")
    parser.add_argument("--steps", type=int, default=2, help="timed steps per recipe per round")
    parser.add_argument("--baseline-steps", type=int, default=1, help="timed steps of the (slow) baseline per round")
    parser.add_argument("--budget-s", type=float, default=330.0, help="start no new round after this many seconds")
    parser.add_argument("--recipes", default=",".join(RECIPES), help="comma-separated subset (hf-full-head and ours "
                        "are always run)")
    parser.add_argument("--ratio-recipe", default="ours+bucketed", help="the recipe whose speed-up is the last line")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads (CPU)")
    parser.add_argument("--json", help="also write the numbers to this file")
    parser.add_argument("--seed", type=int, default=0)
    return parser


def report(args: argparse.Namespace, argv: list[str] | None, summary: dict, source: str, device: torch.device,
           vocab: int, done: int, load_before: tuple[float, float, float], wall: float) -> None:
    """Print the load, write the JSON record if asked, and end with the ratio line the README quotes."""
    print(f"load average (1, 5, 15 min) before {load_before}, after {os.getloadavg()}")
    ratio = summary["recipes"][args.ratio_recipe]["speedup_vs_baseline"]["overall"]
    result = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": "python benchmarks/throughput.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "data": source, "device": str(device), "threads": torch.get_num_threads(),
        "allocator": os.environ.get("LD_PRELOAD") or "default (glibc malloc)",
        "load_average_before_after": [load_before, os.getloadavg()],
        "batch_size": args.batch_size, "seq_len": args.seq_len, "vocab_size": vocab,
        "rounds": done, "steps_per_round": args.steps, "baseline_steps_per_round": args.baseline_steps,
        "warmup_steps": args.warmup,
        "ratio_recipe": args.ratio_recipe, "ratio": ratio, **summary,
        "seconds_total": round(time.perf_counter() - wall, 1), "environment": environment(str(device)),
    }
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2))
    print(f"\nratio = real tokens/s of {args.ratio_recipe} / real tokens/s of {BASELINE} "
          f"({done} rounds of {args.steps} steps, {args.baseline_steps} for the baseline; "
          f"{result['seconds_total']:.0f} s in all)")
    print(f"ratio: {ratio:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)

    wall = time.perf_counter()
    load_before = os.getloadavg()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(pick_device(args.device))
    names = [n for n in RECIPES if n in {BASELINE, "ours", *args.recipes.split(",")}]
    if args.ratio_recipe not in names:
        parser.error(f"--ratio-recipe {args.ratio_recipe} is not among the recipes run: {names}")
    ids, lengths, tokenizer, source = prepared_data(args.data) if args.data else demo_data(args.seq_len)
    lengths = lengths.astype(np.int64)
    cfg = presets.get("demo").train.replace(name="benchmark", batch_size=args.batch_size, seq_len=args.seq_len)
    print(f"data: {source}; mean length {lengths.mean():.1f} of {ids.shape[1]}; "
          f"{torch.get_num_threads()} threads; prepared in {time.perf_counter() - wall:.0f} s", flush=True)

    samplers, timed, warm = batch_plan(lengths, args)

    steps = {n: baseline_step(tokenizer, cfg, device, args.seed) if n == BASELINE
             else ours_step(tokenizer, cfg, device, args.seed) for n in names}

    def batch(bucketed: bool, s: int) -> tuple[np.ndarray, np.ndarray]:
        picked = samplers[bucketed].indices(s)
        return cut_to_longest(ids[picked], lengths[picked]), lengths[picked]

    for n in names:
        for s in warm[RECIPES[n]]:
            run_step(steps[n], *batch(RECIPES[n], s), device)
    timings = {n: Timings() for n in names}
    peaks: list[float] = []
    done = 0
    for r in range(args.rounds):
        if r > 0 and time.perf_counter() - wall > args.budget_s:
            print(f"time budget reached after {r} rounds", flush=True)
            break
        peaks.append(matmul_gflops(device))
        order = names[r % len(names):] + names[:r % len(names)]  # rotate who goes first
        for n in order:
            bucketed, per_round = RECIPES[n], args.baseline_steps if n == BASELINE else args.steps
            for s in timed[bucketed][r * per_round:(r + 1) * per_round]:
                b_ids, b_len = batch(bucketed, s)
                seconds, masked = run_step(steps[n], b_ids, b_len, device)
                t = timings[n]
                t.seconds.append(seconds)
                t.real_tokens.append(int(b_len.sum()))
                t.positions.append(b_ids.size)
                t.flops.append(step_flops(*b_ids.shape, masked, full_head=n == BASELINE, vocab=len(tokenizer)))
                t.round_of.append(r)
        done = r + 1
        line = "  ".join(f"{n} {np.median(timings[n].seconds[-args.steps:]):.2f}" for n in names)
        print(f"round {done}: peak {peaks[-1]:.0f} GFLOP/s  s/step {line}", flush=True)

    summary = summarise(timings, peaks)
    print_table(summary)
    report(args, argv, summary, source=source, device=device, vocab=len(tokenizer), done=done,
           load_before=load_before, wall=wall)
    return 0


if __name__ == "__main__":
    sys.exit(main())
