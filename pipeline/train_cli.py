"""The command line of pipeline.training: train one model from prepared files (for example on a GPU machine).

``python -m pipeline.train_cli --data runs/demo-en/pretrain --out runs/demo-en/pretrain --model bert_tiny``;
``torchrun --nproc_per_node=N -m pipeline.train_cli ...`` splits every batch over N processes (pipeline.distributed).
Every number is checked while the arguments are parsed (finite, in range), with the same rules as
TrainConfig, and the device with pipeline.runinfo's check, the one the training itself uses; every user
error ends in one ``error:`` line and exit status 2 (bad arguments) or 1 (a problem found while training,
such as a non-finite loss), never in a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from helpers import presets
from helpers.presets import PRESET_HELP, PRESET_NAMES, TrainConfig
from helpers.pretrain import TrainingDiverged, cap_steps
from pipeline import training
from pipeline.layout import MODEL_NAMES, TRAINABLE_MODELS, PretrainFiles
from pipeline.run_identity import hold_step
from pipeline.runinfo import device_argument


def _number(kind: str) -> Callable[[str], float]:
    """An argparse type: a float that presets.check_number accepts for ``kind``."""

    def parse(text: str) -> float:
        try:
            return presets.check_number(kind, float(text))
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    parse.__name__ = kind  # argparse names the option's type in its messages
    return parse


def _count(name: str, low: int = 1) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``low``."""

    def parse(text: str) -> int:
        try:
            return presets.check_count(name, int(text), low)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err) if "must" in str(err) else f"{name} must be an integer, "
                                             f"got {text!r}") from None

    parse.__name__ = name
    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pipeline.train_cli",
                                     description=training.__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder written by prepare_data (or the out_dir holding data/)")
    parser.add_argument("--out", required=True, help="folder for bert_tiny/, bert_ft/ and bert_ft_perm/")
    parser.add_argument("--model", required=True, choices=TRAINABLE_MODELS,
                        help="bert_tiny (random embeddings), bert_ft (static vectors) or bert_ft_perm (the control: "
                             "BERT_FT's vector rows permuted among themselves, a fixed permutation per seed)")
    parser.add_argument("--init", default="random",
                        help="'random' for bert_tiny; the static-vector folder of notebook 03 for bert_ft and "
                             "bert_ft_perm (required)")
    parser.add_argument("--preset", default="paper", choices=PRESET_NAMES, help=PRESET_HELP)
    parser.add_argument("--device", default="auto", type=device_argument, help="auto, cpu, cuda or cuda:N")
    parser.add_argument("--seed", type=_count("seed", low=0), default=0)
    parser.add_argument("--steps", type=_count("steps"))
    parser.add_argument("--max-steps", type=_count("max_steps"), help="cap the preset's steps (schedule rescaled)")
    parser.add_argument("--batch-size", type=_count("batch_size"))
    parser.add_argument("--lr", type=_number("lr"))
    parser.add_argument("--weight-decay", type=_number("weight_decay"))
    parser.add_argument("--grad-clip", type=_number("grad_clip"))
    parser.add_argument("--eps", type=_number("eps"))
    parser.add_argument("--beta1", type=_number("beta"))
    parser.add_argument("--beta2", type=_number("beta"))
    parser.add_argument("--warmup-fraction", type=_number("warmup_fraction"))
    parser.add_argument("--eval-every", type=_count("eval_every"))
    parser.add_argument("--checkpoint-every", type=_count("checkpoint_every"))
    parser.add_argument("--eval-sequences", type=_count("eval_sequences"))
    parser.add_argument("--eval-batch-size", type=_count("eval_batch_size"))
    parser.add_argument("--attention", choices=presets.ATTENTION, help="attention kernel (auto: sdpa_padded on CUDA, "
                        "sdpa elsewhere)")
    parser.add_argument("--precision", choices=presets.PRECISION,
                        help="bf16 autocast or fp32 (auto: bf16 on CUDA only)")
    parser.add_argument("--batching", choices=presets.BATCHING)
    parser.add_argument("--dropout", choices=presets.DROPOUT)
    parser.add_argument("--compile", action="store_true", help="torch.compile the loss (any device)")
    parser.add_argument("--static-cap", action="store_true",
                        help="score a fixed number of masked rows per batch, for static shapes (default on CUDA)")
    parser.add_argument("--model-dropout", type=_number("dropout_probability"),
                        help="the model's dropout probability (Table 4: 0.1); 0 makes runs with different "
                             "numbers of processes give the same losses")
    parser.add_argument("--stop-at", type=_count("stop_at"), help="stop after this step with a checkpoint")
    parser.add_argument("--no-resume", action="store_true", help="ignore an existing checkpoint and start again")
    parser.add_argument("--compare", action="store_true", help="afterwards, write comparison.json if both runs exist")
    return parser


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The preset's TrainConfig with the options given on the command line applied (and checked again)."""
    cfg = presets.get(args.preset).train
    names = ("steps", "batch_size", "lr", "weight_decay", "grad_clip", "eps", "warmup_fraction", "eval_every",
             "checkpoint_every", "eval_sequences", "eval_batch_size", "attention", "batching", "dropout",
             "precision")
    changes: dict[str, Any] = {k: getattr(args, k) for k in names if getattr(args, k) is not None}
    if args.beta1 is not None or args.beta2 is not None:
        changes["betas"] = (args.beta1 if args.beta1 is not None else cfg.betas[0],
                            args.beta2 if args.beta2 is not None else cfg.betas[1])
    if args.compile:
        changes["compile"] = True
    if args.static_cap:
        changes["cap_masked"] = True
    cfg = cfg.replace(**changes)
    return cap_steps(cfg, args.max_steps) if args.max_steps is not None else cfg


def model_overrides(args: argparse.Namespace) -> dict[str, float] | None:
    """Changes to the Table 4 model asked for on the command line (None: none)."""
    if args.model_dropout is None:
        return None
    return {"hidden_dropout_prob": args.model_dropout, "attention_probs_dropout_prob": args.model_dropout}


def is_main_process() -> bool:
    from pipeline.distributed import from_environment

    return from_environment().is_main


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # exits with status 2 and one message on a bad option
    try:
        cfg = config_from_args(args)
        training.check_model_init(args.model, args.init)
    except ValueError as err:
        parser.error(str(err))
    try:
        if is_main_process():  # one holder of the step, however many processes train
            hold_step(Path(args.out), "train_cli")
        info = training.train(args.model, args.init, cfg, args.data, args.out, device=args.device, seed=args.seed,
                       resume=not args.no_resume, stop_at=args.stop_at, model_overrides=model_overrides(args))
        if not is_main_process():
            return 0  # process 0 wrote the files and reports
        folder = PretrainFiles(Path(args.out))
        rows = training.read_metrics(folder.model(args.model).metrics)
        print(json.dumps({"model": args.model, "steps_done": info["steps_done"], "final": rows[-1]}))
        if args.compare and all(folder.model(m).metrics.exists() for m in MODEL_NAMES):
            print(json.dumps(training.write_comparison(args.out), indent=2))
    except (ValueError, FileNotFoundError, TrainingDiverged) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
