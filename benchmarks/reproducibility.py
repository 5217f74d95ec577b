"""Which settings change a run's numbers: the same training repeated, with 1 and with 2 CPU threads.

Why: a committed BERT_TINY record was reproduced elsewhere only to about 0.015 nat while BERT_FT matched
to 7 digits. This script separates the causes that can be tested on one machine. From one prepared data
folder it trains each model for ``--steps`` steps (evaluating every ``--eval-every``) three times, in fresh
processes: twice with ``OMP_NUM_THREADS=1`` and once with ``OMP_NUM_THREADS=2``. It prints, per model, the
largest difference in evaluation loss between the two 1-thread runs (bit-exact if 0) and between 1 and
2 threads, at step 0 (before any update: the evaluation's own sums) and at the last step (after the
differences have been carried through training).

    python benchmarks/reproducibility.py --data runs/reference-en/pretrain/data \
        --static runs/reference-en/static --steps 40
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def train(data: Path, static: Path, model: str, steps: int, eval_every: int, threads: int, out: Path) -> list[dict]:
    """One fresh process of pipeline.train.train_cli; its metrics rows."""
    init = "random" if model == "bert_tiny" else str(static)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    subprocess.run([sys.executable, "-m", "pipeline.train.train_cli", "--data", str(data), "--out", str(out), "--model",
                    model, "--init", init, "--preset", "reference", "--steps", str(steps), "--eval-every",
                    str(eval_every), "--checkpoint-every", str(steps), "--device", "cpu"],
                   cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
    with (out / model / "metrics.csv").open() as handle:
        return list(csv.DictReader(handle))


def largest_difference(a: list[dict], b: list[dict], row: int) -> float:
    return abs(float(a[row]["eval_loss"]) - float(b[row]["eval_loss"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--static", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--eval-every", type=int, default=20)
    args = parser.parse_args()
    print("| model | step | 1 thread vs 1 thread | 1 thread vs 2 threads |")
    print("| --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for model in ("bert_tiny", "bert_ft"):
            runs = [train(args.data, args.static, model, args.steps, args.eval_every, threads,
                          Path(tmp) / f"{model}{i}") for i, threads in enumerate((1, 1, 2))]
            for row in (0, len(runs[0]) - 1):
                print(f"| {model} | {runs[0][row]['step']} | {largest_difference(runs[0], runs[1], row):.3e} | "
                      f"{largest_difference(runs[0], runs[2], row):.3e} |")


if __name__ == "__main__":
    main()
