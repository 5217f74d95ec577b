"""One AdamW step over the Table 4 model's 10.5 M parameters: the for-loop, foreach and fused kernels.

Why it exists: ``helpers.pretrain.make_optimizer`` asks for ``fused=True`` on every device, and this
prints what that choice buys on the machine at hand. Timed in alternating rounds in one process;
the last line is ``ratio: <for-loop seconds / fused seconds>``.

    python benchmarks/optimizer_step.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.model import build_model  # noqa: E402
from helpers.pretrain import decay_groups  # noqa: E402

KINDS = {"for-loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}


def make(kind: str) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    model = build_model("random", seed=0)
    for p in model.parameters():
        p.grad = torch.randn_like(p) * 1e-3
    return model, torch.optim.AdamW(decay_groups(model, 0.01), lr=5e-4, eps=1e-6, **KINDS[kind])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per kind per round")
    args = parser.parse_args(argv)
    optimizers = {kind: make(kind)[1] for kind in KINDS}
    for opt in optimizers.values():
        opt.step()  # warm-up: allocates the moment buffers
    seconds = dict.fromkeys(KINDS, 0.0)
    for r in range(args.rounds):
        for kind in (list(KINDS) if r % 2 == 0 else list(reversed(KINDS))):
            start = time.perf_counter()
            for _ in range(args.steps):
                optimizers[kind].step()
            seconds[kind] += time.perf_counter() - start
    n = args.rounds * args.steps
    for kind, total in seconds.items():
        print(f"{kind:9s} {total / n * 1000:7.1f} ms per step")
    print(f"ratio: {seconds['for-loop'] / seconds['fused']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
