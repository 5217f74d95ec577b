"""The command line of pipeline.train.training: train one model from prepared files (for example on a GPU machine).

``torchrun --nproc_per_node=N -m pipeline.train.train_cli ...`` splits every batch over N processes. Numbers are checked
while parsing with TrainConfig's rules; a user error ends in one ``error:`` line and exit status 2 (bad arguments)
or 1 (found while training, such as a non-finite loss), never in a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields
from pathlib import Path
from typing import Sequence

from helpers import presets
from helpers.presets import PRESET_HELP, PRESET_NAMES, TrainConfig
from helpers.pretrain import TrainingDiverged, cap_steps
from pipeline.store.layout import MODEL_NAMES, TRAINABLE_MODELS, PretrainFiles, read_metrics
from pipeline.store.run_identity import claim_step_by_hand
from pipeline.store.runinfo import device_argument, setting_argument
from pipeline.train import distributed, training

# TrainConfig fields given as options of the same name: integers of at least 1, or numbers in their presets range
COUNTS = ("steps", "batch_size", "eval_every", "checkpoint_every", "eval_sequences", "eval_batch_size")
NUMBERS = ("lr", "weight_decay", "grad_clip", "eps", "warmup_fraction")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pipeline.train.train_cli",
                                     description=training.__doc__.splitlines()[0])
    add = parser.add_argument
    add("--data", required=True, help="folder written by prepare_data (or the out_dir holding data/)")
    add("--out", required=True, help="folder for one folder per model (bert_tiny/, bert_ft/, ...)")
    add("--model", required=True, choices=TRAINABLE_MODELS,
        help="bert_tiny (random embeddings), bert_ft (static vectors), bert_ft_perm (the control: BERT_FT's vector "
             "rows permuted among themselves, a fixed permutation per seed), bert_ft_web (vectors pretrained on other "
             "text) or bert_ft_web_perm (those rows permuted)")
    add("--init", default="random", help="'random' for bert_tiny; the static-vector folder of notebook 03 for bert_ft "
        "and bert_ft_perm, that of pipeline.vectors.pretrained_vectors (RUN/static_web) for bert_ft_web and "
        "bert_ft_web_perm (required)")
    add("--preset", default="paper", choices=PRESET_NAMES, help=PRESET_HELP)
    add("--device", default="auto", type=device_argument, help="auto, cpu, cuda or cuda:N")
    add("--seed", type=setting_argument("seed", low=0), default=0)
    add("--max-steps", type=setting_argument("max_steps"), help="cap the preset's steps (schedule rescaled)")
    for name in COUNTS + NUMBERS:
        add("--" + name.replace("_", "-"), type=setting_argument(name, number=name in NUMBERS))
    add("--beta1", type=setting_argument("beta", number=True))
    add("--beta2", type=setting_argument("beta", number=True))
    add("--attention", choices=presets.ATTENTION, help="attention kernel (auto: sdpa_padded on CUDA, sdpa elsewhere)")
    add("--precision", choices=presets.PRECISION, help="bf16 autocast or fp32 (auto: bf16 on CUDA only)")
    add("--batching", choices=presets.BATCHING)
    add("--dropout", choices=presets.DROPOUT)
    add("--compile", action="store_const", const=True, help="torch.compile the loss (any device)")
    add("--static-cap", dest="cap_masked", action="store_const", const=True,
        help="score a fixed number of masked rows per batch, for static shapes (default on CUDA)")
    add("--model-dropout", type=setting_argument("dropout_probability", number=True),
        help="the model's dropout probability (Table 4: 0.1); 0 makes runs with different numbers of processes "
             "give the same losses")
    add("--stop-at", type=setting_argument("stop_at"), help="stop after this step with a checkpoint")
    add("--no-resume", action="store_true", help="ignore an existing checkpoint and start again")
    add("--compare", action="store_true", help="afterwards, write comparison.json if both runs exist")
    return parser


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The preset's TrainConfig with the options given on the command line applied (and checked again)."""
    cfg = presets.get(args.preset).train
    changes = {f.name: getattr(args, f.name) for f in fields(TrainConfig)
               if f.name != "max_steps" and getattr(args, f.name, None) is not None}
    changes["betas"] = tuple(old if new is None else new for old, new in zip(cfg.betas, (args.beta1, args.beta2)))
    cfg = cfg.replace(**changes)
    return cap_steps(cfg, args.max_steps) if args.max_steps is not None else cfg


def model_overrides(args: argparse.Namespace) -> dict[str, float] | None:
    """Changes to the Table 4 model asked for on the command line (None: none)."""
    dropout = args.model_dropout
    return None if dropout is None else {"hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # exits with status 2 and one message on a bad option
    try:
        cfg = config_from_args(args)
        training.check_model_init(args.model, args.init)
    except ValueError as err:
        parser.error(str(err))
    try:
        main_process = distributed.from_environment().is_main
        if main_process:  # one holder of the step, however many processes train
            claim_step_by_hand(Path(args.out), "train_cli")
        info = training.train(args.model, args.init, cfg, args.data, args.out, device=args.device, seed=args.seed,
                              resume=not args.no_resume, stop_at=args.stop_at, model_overrides=model_overrides(args))
        if not main_process:
            return 0  # process 0 wrote the files and reports
        folder = PretrainFiles(Path(args.out))
        final = read_metrics(folder.model(args.model).metrics)[-1]
        print(json.dumps({"model": args.model, "steps_done": info["steps_done"], "final": final}))
        if args.compare and all(folder.model(m).metrics.exists() for m in MODEL_NAMES):
            print(json.dumps(training.write_comparison(args.out), indent=2))
    except (ValueError, FileNotFoundError, TrainingDiverged) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
