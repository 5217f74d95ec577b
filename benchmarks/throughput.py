"""Training throughput: the standard Hugging Face MLM recipe vs this project's loop, same model and batches.

(a) standard: ``BertForMaskedLM(..., labels=...)`` (vocabulary logits at every position) fed by
    ``DataCollatorForLanguageModeling`` on a list of tokenised examples, as a Trainer step does it:
    pad + mask on the host, copy to the device, forward, backward, clip, AdamW, schedule.
(b) ours: ``helpers.pretrain.train_step``: sequences already in a padded array, masking by
    ``helpers.masking.MLMCollator`` on the device, the masked-only MLM head, no accuracy argmax.

Same Table 4 model (same seed), same batches in the same order, same optimiser settings
(AdamW fused, the Trainer's default optimiser since torch 2.8; ``--standard-optimizer plain``
gives the tutorial's ``torch.optim.AdamW(...)`` instead), one process. Timed in alternating rounds
so a noisy, shared machine slows both alike. The last line printed is ``ratio: <ours/standard>``.

    python benchmarks/throughput.py                      # CPU, batch 32 x 128
    python benchmarks/throughput.py --device cuda --batch-size 128 --compile
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from helpers import pretrain as P  # noqa: E402
from helpers.model import build_model, use_attention  # noqa: E402
from helpers.runinfo import environment, pick_device  # noqa: E402


def synthetic_tokenizer(vocab_size: int) -> Any:
    """A word-level fast tokenizer with BERT's five specials at ids 0-4 and ``vocab_size`` ids in all.

    Throughput does not depend on which ids a batch holds, only on the shapes; this keeps the
    benchmark free of any trained artefact, so it runs on a bare GPU machine.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {tok: i for i, tok in enumerate(specials)}
    vocab.update({f"w{i}": i for i in range(len(specials), vocab_size)})
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


def synthetic_sequences(n: int, seq_len: int, vocab_size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Padded sequences shaped like the truncated embedded corpus: ~25 % full, the rest shorter."""
    rng = np.random.default_rng(seed)
    lengths = np.where(rng.random(n) < 0.25, seq_len, rng.integers(24, seq_len, n))
    ids = rng.integers(5, vocab_size, (n, seq_len)).astype(np.int64)
    ids[:, 0] = 2
    ids[np.arange(n), lengths - 1] = 3
    ids[np.arange(seq_len)[None, :] >= lengths[:, None]] = 0
    return ids, lengths


def standard_stepper(tokenizer: Any, cfg: P.TrainConfig, device: torch.device, seed: int,
                     optimizer_kind: str) -> tuple[Callable[[np.ndarray, np.ndarray], None], torch.nn.Module]:
    from transformers import DataCollatorForLanguageModeling, get_linear_schedule_with_warmup

    model = build_model("random", seed=seed, vocab_size=len(tokenizer)).to(device).train()
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=cfg.mlm_probability, seed=seed)
    groups = P.decay_groups(model, cfg.weight_decay)
    extra = {"fused": True} if optimizer_kind == "fused" else {}
    optimizer = torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, **extra)
    scheduler = get_linear_schedule_with_warmup(optimizer, cfg.warmup_steps, cfg.steps)
    cuda = device.type == "cuda"

    def step(ids: np.ndarray, lengths: np.ndarray) -> None:
        # What a tokenised dataset hands the Trainer: unpadded lists of ids.
        examples = [{"input_ids": row[:n].tolist()} for row, n in zip(ids, lengths)]
        batch = {k: v.to(device, non_blocking=True) for k, v in collator(examples).items()}
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=cuda):
            loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)

    return step, model


def ours_stepper(tokenizer: Any, cfg: P.TrainConfig, device: torch.device, seed: int,
                 attention: str) -> tuple[Callable[[np.ndarray, np.ndarray], None], torch.nn.Module]:
    model = build_model("random", seed=seed, vocab_size=len(tokenizer))
    use_attention(model, attention if attention != "auto" else P.pick_attention(cfg, device))
    model.to(device).train()
    ctx = P.make_step_context(model, cfg, tokenizer, str(device), seed)

    def step(ids: np.ndarray, lengths: np.ndarray) -> None:
        P.train_step(ctx, *P.batch_to_device(ids, lengths, device))

    return step, model


def timed(step: Callable[[np.ndarray, np.ndarray], None], batches: list[tuple[np.ndarray, np.ndarray]],
          device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for ids, lengths in batches:
        step(ids, lengths)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--vocab-size", type=int, default=30_000)
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per recipe first")
    parser.add_argument("--rounds", type=int, default=3, help="alternating timed rounds")
    parser.add_argument("--steps", type=int, default=3, help="timed steps per recipe per round")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads (CPU)")
    parser.add_argument("--attention", default="auto", choices=("auto", "sdpa", "sdpa_padded", "eager"),
                        help="ours only; the standard recipe keeps transformers' default (sdpa)")
    parser.add_argument("--standard-optimizer", default="fused", choices=("fused", "plain"))
    parser.add_argument("--compile", action="store_true", help="torch.compile our loss (CUDA only)")
    parser.add_argument("--packing", action="store_true", help="full blocks, no attention mask (ours)")
    parser.add_argument("--json", help="also write the numbers to this file")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(pick_device(args.device))
    total = args.warmup + args.rounds * args.steps
    cfg = P.preset_config("paper").replace(name="benchmark", batch_size=args.batch_size, seq_len=args.seq_len,
                                           compile=args.compile, packing=args.packing)
    tokenizer = synthetic_tokenizer(args.vocab_size)
    ids, lengths = synthetic_sequences(total * args.batch_size, args.seq_len, args.vocab_size, args.seed)
    if args.packing:  # every position real: what prepare_data(packing=True) produces
        ids[ids == 0] = 7
        ids[ids == 3] = 7
        lengths[:] = args.seq_len
    batches = [(ids[i * args.batch_size:(i + 1) * args.batch_size], lengths[i * args.batch_size:(i + 1) * args.batch_size])
               for i in range(total)]
    warm, timed_batches = batches[:args.warmup], batches[args.warmup:]

    recipes = {"standard": standard_stepper(tokenizer, cfg, device, args.seed, args.standard_optimizer)[0],
               "ours": ours_stepper(tokenizer, cfg, device, args.seed, args.attention)[0]}
    for name, step in recipes.items():
        timed(step, warm, device)
    seconds = {name: 0.0 for name in recipes}
    per_round: dict[str, list[float]] = {name: [] for name in recipes}
    for r in range(args.rounds):
        chunk = timed_batches[r * args.steps:(r + 1) * args.steps]
        order = list(recipes) if r % 2 == 0 else list(reversed(list(recipes)))  # alternate who goes first
        for name in order:
            took = timed(recipes[name], chunk, device)
            seconds[name] += took
            per_round[name].append(round(took / args.steps, 4))
            print(f"round {r + 1}/{args.rounds} {name:8s} {took / args.steps:.3f} s/step", flush=True)

    positions = args.rounds * args.steps * args.batch_size * args.seq_len
    real = int(sum(l.sum() for _, l in timed_batches))
    tps = {name: positions / s for name, s in seconds.items()}
    ratio = tps["ours"] / tps["standard"]
    result = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": "python benchmarks/throughput.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "device": str(device), "threads": torch.get_num_threads(),
        "batch_size": args.batch_size, "seq_len": args.seq_len, "vocab_size": args.vocab_size,
        "timed_steps_each": args.rounds * args.steps, "standard_optimizer": args.standard_optimizer,
        "ours_attention": P.pick_attention(cfg, device) if args.attention == "auto" else args.attention,
        "compile": args.compile, "packing": args.packing,
        "seconds_per_step": {n: s / (args.rounds * args.steps) for n, s in seconds.items()},
        "seconds_per_step_by_round": per_round,
        "tokens_per_s": tps, "real_tokens_per_s": {n: real / s for n, s in seconds.items()},
        "ratio": ratio, "environment": environment(str(device)),
    }
    for name in recipes:
        print(f"{name:8s} {result['seconds_per_step'][name]:.3f} s/step  {tps[name]:,.0f} tokens/s")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2))
    print(f"ratio: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
