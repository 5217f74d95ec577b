"""MLM pretraining of BERT_TINY and BERT_FT under identical settings (notebook 04): the step and the loop.

* :func:`train_step` masks a batch on the device, computes the masked-only MLM loss, back-propagates,
  clips, steps AdamW and the learning-rate schedule;
* :func:`train_loop` is the loop a reader holds in their head: batch, step, and every so often
  evaluate and checkpoint; it stops at the first non-finite loss or gradient norm;
* :func:`evaluate` scores the fixed, pre-masked evaluation set.

Everything that touches files (preparing the data, checkpoints and resume, run.json, metrics.csv,
the command line, several processes under torchrun) is the machinery's: ``pipeline.train.training`` hands
the loop a ``run`` object that resumes, logs and checkpoints (:class:`Run`), and ``pipeline.train.distributed``
a process group with the methods of :class:`OneProcess`. Module-level imports are limited to numpy, torch
and transformers: the GPU machines lack datasets, fasttext, papermill and the plotting stack.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol

import numpy as np
import torch
import torch.nn.functional as F
from transformers import get_linear_schedule_with_warmup

from helpers.batching import BucketedBatchSampler, cut_to_longest
from helpers.masking import IGNORE_INDEX, MLMCollator
from helpers.model import MaskedLMLoss, masked_logits, sync_free_mask
from helpers.presets import TrainConfig

# --------------------------------------------------------------------------------------------
# Settings and data
# --------------------------------------------------------------------------------------------


def cap_steps(cfg: TrainConfig, max_steps: int) -> TrainConfig:
    """The same run cut to at most ``max_steps`` steps, for trying a configuration cheaply.

    The schedule is rescaled (warmup stays the same fraction) and evaluation and checkpoints happen
    at least four times, so a capped run still draws a curve. The cap is part of the config's name
    and its ``max_steps``, so it is recorded in run.json, in the run's identity and in every figure title.
    """
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
    if max_steps >= cfg.steps:
        return cfg.replace(max_steps=max_steps)
    every = max(1, max_steps // 4)
    return cfg.replace(name=f"{cfg.name} (max {max_steps} steps)", steps=max_steps, max_steps=max_steps,
                       eval_every=min(cfg.eval_every, every), checkpoint_every=min(cfg.checkpoint_every, every))


@dataclass
class TrainingData:
    """The token arrays the loop reads: training sequences and the fixed, pre-masked evaluation set.

    pipeline.train.prepare writes them once and loads them back as its PreparedData (this class plus the
    folder and meta.json); ``train_ids`` may also be memory-mapped shards, indexed the same way.
    """

    train_ids: Any  # [n, seq_len] token ids: np.ndarray or pipeline.train.shards.ShardedArray
    train_lengths: Any  # [n] real tokens per sequence ([CLS] and [SEP] included)
    eval_masked_ids: np.ndarray  # the evaluation sequences, masked once with a fixed seed
    eval_lengths: np.ndarray
    eval_labels: np.ndarray  # the original id at each masked position, IGNORE_INDEX elsewhere

    @property
    def seq_len(self) -> int:
        return int(self.train_ids.shape[1])

    def train_batch(self, picked: np.ndarray, cut: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Token ids and lengths of the training sequences at ``picked``.

        ``cut`` drops the padding columns every row has (bucketed batches, where rows are of similar
        length). Random batches keep their full width, so their masks are the paper preset's.
        """
        ids, lengths = self.train_ids[picked], self.train_lengths[picked]
        return (cut_to_longest(ids, lengths) if cut else ids), lengths


def lengths_to_mask(lengths: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Attention mask (1 = real token) from per-sequence lengths, on the lengths' device."""
    return (torch.arange(seq_len, device=lengths.device)[None, :] < lengths[:, None]).long()


def batch_to_device(ids: np.ndarray, lengths: np.ndarray, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    ids_t = torch.from_numpy(ids.astype(np.int64))
    len_t = torch.from_numpy(lengths.astype(np.int64))
    if device.type == "cuda":
        ids_t, len_t = ids_t.pin_memory(), len_t.pin_memory()
    return ids_t.to(device, non_blocking=True), len_t.to(device, non_blocking=True)


class BatchSampler:
    """Shuffled epochs from a seed: the batch of step s depends only on (seed, s).

    Stateless, so both models see the same batches in the same order and a resumed run picks up
    exactly where it stopped without storing a generator.
    """

    def __init__(self, n: int, batch_size: int, seed: int) -> None:
        if n < batch_size:
            raise ValueError(f"only {n} training sequences for a batch of {batch_size}; use more documents "
                             "or a smaller batch")
        self.n, self.batch_size, self.seed = n, batch_size, seed
        self.per_epoch = n // batch_size  # the remainder of each epoch is skipped

    def indices(self, step: int) -> np.ndarray:
        epoch, k = divmod(step, self.per_epoch)
        order = np.random.default_rng([self.seed, epoch]).permutation(self.n)
        return order[k * self.batch_size:(k + 1) * self.batch_size]

    def state(self, step: int) -> dict[str, int]:
        return {"seed": self.seed, "step": step, "epoch": step // self.per_epoch}


def make_sampler(cfg: TrainConfig, lengths: Any, seed: int) -> BatchSampler | BucketedBatchSampler:
    """The batch order over sequences of these ``lengths``: seeded random epochs, or length buckets."""
    if cfg.batching == "bucketed":
        return BucketedBatchSampler(np.asarray(lengths), cfg.batch_size, seed)
    return BatchSampler(len(lengths), cfg.batch_size, seed)


# --------------------------------------------------------------------------------------------
# How a step runs: optimiser, schedule, precision, one process or several
# --------------------------------------------------------------------------------------------


def decay_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """Weight decay on matrices and embeddings, none on biases and LayerNorm (BERT's convention).

    named_parameters() lists a tied tensor once, so the shared embedding/decoder matrix is not
    decayed twice.
    """
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW (decoupled weight decay) with the fused kernel, on CPU and CUDA alike.

    The fused kernel gives the same update as the for-loop one in a fraction of the time
    (benchmarks/optimizer_step.py measures the three kernels): small beside a training step, but free.
    """
    return torch.optim.AdamW(decay_groups(model, cfg.weight_decay), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps,
                             fused=True)


class Processes(Protocol):
    """Who trains: :class:`OneProcess`, or several processes under torchrun (pipeline.train.distributed.World)."""

    @property
    def world_size(self) -> int: ...

    @property
    def is_main(self) -> bool: ...

    def my_rows(self, batch_size: int) -> slice: ...

    def sum_over_processes(self, value: torch.Tensor) -> torch.Tensor: ...

    def wrap(self, module: torch.nn.Module, device: torch.device) -> torch.nn.Module: ...


@dataclass(frozen=True)
class OneProcess:
    """Training in one process: every row of the batch is this process's, and a sum needs no messages."""

    world_size: int = 1
    is_main: bool = True

    def my_rows(self, batch_size: int) -> slice:
        return slice(0, batch_size)

    def sum_over_processes(self, value: torch.Tensor) -> torch.Tensor:
        return value

    def wrap(self, module: torch.nn.Module, device: torch.device) -> torch.nn.Module:
        return module


def static_cap(cfg: TrainConfig, rows: int | None = None) -> int:
    """Masked rows per batch (of ``rows`` sequences, default the batch size) for static shapes: the mean plus
    6 binomial standard deviations.

    Every position counts as eligible here, so the real count (which excludes [CLS], [SEP] and
    padding) stays further below the cap; overflow has probability under 1e-9 per batch. The price is
    output-layer rows for padding: on the CPU's demo batches the cap projects ~1.8x the masked rows.
    """
    n = (cfg.batch_size if rows is None else rows) * cfg.seq_len
    p = cfg.mlm_probability
    cap = n * p + 6 * math.sqrt(n * p * (1 - p))
    return min(n, int(math.ceil(cap / 64) * 64))


def encoder_mask(model: torch.nn.Module, attention: torch.Tensor, packed: bool) -> torch.Tensor | None:
    """The attention mask the encoder gets: none for full packed blocks (CUDA's fastest SDPA kernels),
    a ready 4-D mask on CUDA (no host sync), the plain 2-D mask on the CPU."""
    return None if packed else sync_free_mask(model, attention)


@dataclass(frozen=True)
class StepOptions:
    """How a training step runs, with the config's 'auto' settings resolved for one device (in run.json)."""

    precision: str  # 'fp32' or 'bf16' (autocast: bf16 matmuls; the softmax over the vocabulary stays float32)
    compile: bool  # torch.compile the loss module
    attention: str  # 'sdpa', 'sdpa_padded' or 'eager'
    max_masked: int | None  # a fixed number of scored rows per process (static shapes); None: exactly the masked ones


def step_options(cfg: TrainConfig, device: torch.device, world: Processes = OneProcess()) -> StepOptions:
    """Resolve 'auto': the GPU configuration (bf16, sdpa_padded, a fixed row count) on CUDA; fp32 with plain
    SDPA elsewhere, where bf16 and compilation measured slower (benchmarks/results/cpu_options.json).

    Only these defaults depend on the device: every option runs the same code on the CPU and on CUDA.
    """
    gpu = device.type == "cuda"
    precision = cfg.precision if cfg.precision != "auto" else ("bf16" if gpu else "fp32")
    attention = cfg.attention if cfg.attention != "auto" else ("sdpa_padded" if gpu else "sdpa")
    cap = gpu if cfg.cap_masked is None else cfg.cap_masked
    rows = cfg.batch_size // world.world_size
    return StepOptions(precision, cfg.compile, attention, static_cap(cfg, rows) if cap else None)


def loss_function(model: torch.nn.Module, options: StepOptions, device: torch.device,
                  world: Processes = OneProcess()) -> torch.nn.Module:
    """The masked-only loss as a module (sum, count): inside DistributedDataParallel with several processes,
    then compiled if asked (torch.compile outside DDP lets it split the graph at DDP's gradient buckets)."""
    module = world.wrap(MaskedLMLoss(model, options.max_masked), device)
    return torch.compile(module) if options.compile else module


@dataclass
class StepContext:
    """What a training step needs besides the batch; built once by :func:`make_step_context`."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: Any
    collator: MLMCollator
    cfg: TrainConfig
    device: torch.device
    world: Processes = OneProcess()
    options: StepOptions = field(init=False)  # the cfg's step settings resolved for this device (step_options)
    loss_fn: torch.nn.Module = field(init=False)  # MaskedLMLoss, in DDP with several processes, compiled if asked

    def __post_init__(self) -> None:
        self.options = step_options(self.cfg, self.device, self.world)
        self.loss_fn = loss_function(self.model, self.options, self.device, self.world)

    def autocast(self) -> torch.autocast:
        """bfloat16 autocast when the options ask for it, on whatever device the step runs."""
        return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16,
                              enabled=self.options.precision == "bf16")

    def encoder_mask(self, attention: torch.Tensor) -> torch.Tensor | None:
        return encoder_mask(self.model, attention, self.cfg.packing)

    def loss(self, input_ids: torch.Tensor, attention: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The batch's masked-only loss: summed cross-entropy over the masked tokens / their number.

        With several processes each takes its block of rows and returns world_size x (its rows' sum) /
        (the whole batch's count): DDP averages the gradients, so they are those of the one-process loss.
        """
        rows = self.world.my_rows(input_ids.shape[0])
        with self.autocast():
            total, count = self.loss_fn(input_ids[rows], self.encoder_mask(attention[rows]), labels[rows])
        return total * self.world.world_size / self.world.sum_over_processes(count)


# --------------------------------------------------------------------------------------------
# One training step
# --------------------------------------------------------------------------------------------


def make_step_context(model: torch.nn.Module, cfg: TrainConfig, tokenizer: Any, device: str, seed: int) -> StepContext:
    """The optimiser, the schedule, the masking collator and the loss of one run (both models get the same ones)."""
    dev = torch.device(device)
    optimizer = make_optimizer(model, cfg)
    # Linear warmup from 0 to cfg.lr over warmup_steps, then linear decay to 0 at cfg.steps (BERT's schedule).
    scheduler = get_linear_schedule_with_warmup(optimizer, cfg.warmup_steps, cfg.steps)
    collator = MLMCollator(tokenizer, mlm_probability=cfg.mlm_probability, seed=seed)
    # StepContext also builds the loss and resolves how it runs: bfloat16, torch.compile and a fixed number
    # of scored rows work on any device, and are on by default on CUDA only (the CPU measured them slower).
    return StepContext(model, optimizer, scheduler, collator, cfg, dev)


def train_step(ctx: StepContext, ids: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One optimisation step on a batch of token ids; returns (loss, gradient norm) as device tensors."""
    # 1. Mask afresh: 15 % of the real tokens; of those 80 % [MASK], 10 % random, 10 % unchanged (notebook 01).
    attention = lengths_to_mask(lengths, ids.shape[1])
    batch = ctx.collator.mask(ids, attention)
    # 2. The loss on the masked positions only: summed cross-entropy / number of masked tokens (StepContext.loss,
    #    in bfloat16 autocast if asked; with several processes each scores its own rows of the batch).
    loss = ctx.loss(batch["input_ids"], attention, batch["labels"])
    # 3. Gradients, then scale them down if their global norm exceeds grad_clip (the norm before clipping
    #    is returned, so a non-finite one can be caught).
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(ctx.model.parameters(), ctx.cfg.grad_clip)
    # 4. AdamW update, then move the learning rate one step along its warmup/decay schedule.
    ctx.optimizer.step()
    ctx.scheduler.step()
    ctx.optimizer.zero_grad(set_to_none=True)
    return loss.detach(), grad_norm.detach()


# --------------------------------------------------------------------------------------------
# Evaluation, and what stops a run
# --------------------------------------------------------------------------------------------


@dataclass
class Evaluation:
    """Loss and accuracy on the fixed masked evaluation set; per-position results when asked for."""

    loss: float
    accuracy: float
    positions: dict[str, np.ndarray] | None = None


@torch.no_grad()
def evaluate(model: torch.nn.Module, data: TrainingData, cfg: TrainConfig, device: torch.device,
             per_position: bool = False) -> Evaluation:
    """MLM loss (mean over masked tokens) and masked-token accuracy on the fixed evaluation set.

    With ``per_position`` also, for each masked position in reading order (sequence, then position), its
    loss, correctness, true id (``label``), the id the model saw there (``visible``: [MASK], a random token or
    the token itself) and its top prediction (``top1``): figures bootstrap over positions and score the
    [MASK], random and unchanged positions apart, since copying a visible token needs no context.
    """
    was_training = model.training
    model.eval()
    precision = step_options(cfg, device).precision
    n = len(data.eval_labels) if cfg.eval_sequences is None else min(cfg.eval_sequences, len(data.eval_labels))
    losses, corrects, predictions = [], [], []
    for start in range(0, n, cfg.eval_batch_size):
        stop = min(n, start + cfg.eval_batch_size)
        ids, lengths = batch_to_device(data.eval_masked_ids[start:stop], data.eval_lengths[start:stop], device)
        labels = torch.from_numpy(data.eval_labels[start:stop].astype(np.int64)).to(device)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
            logits, targets = masked_logits(model, ids, encoder_mask(model, lengths_to_mask(lengths, ids.shape[1]),
                                                                     cfg.packing), labels)
        losses.append(F.cross_entropy(logits, targets, reduction="none"))
        predictions.append(logits.argmax(dim=-1))
        corrects.append(predictions[-1] == targets)
    model.train(was_training)
    loss, correct = torch.cat(losses), torch.cat(corrects)
    if loss.numel() == 0:
        raise ValueError("the evaluation set has no masked positions; prepare more evaluation documents")
    result = Evaluation(float(loss.double().mean().item()), float(correct.double().mean().item()))
    if per_position:
        sequence, position = np.nonzero(data.eval_labels[:n] != IGNORE_INDEX)
        result.positions = {"sequence": sequence.astype(np.int32), "position": position.astype(np.int16),
                            "correct": correct.cpu().numpy().astype(bool),
                            "loss": loss.float().cpu().numpy().astype(np.float32),
                            "label": data.eval_labels[sequence, position].astype(np.int32),
                            "visible": np.asarray(data.eval_masked_ids[sequence, position]).astype(np.int32),
                            "top1": torch.cat(predictions).cpu().numpy().astype(np.int32)}
    return result


class TrainingDiverged(RuntimeError):
    """The loss or the gradient norm became NaN or infinite; training stopped there."""

    def __init__(self, step: int, loss: float, grad_norm: float) -> None:
        self.step = step
        super().__init__(f"training diverged at step {step}: loss {loss}, gradient norm {grad_norm}. Lower the "
                         "learning rate, check the static vectors for non-finite values, or keep grad_clip small")


class FiniteGuard:
    """Remembers the first step whose loss or gradient norm is not finite, without a host sync per step on CUDA.

    On the CPU it checks every step (reading a number costs nothing there); on CUDA the first bad
    step is kept on the device and checked before every evaluation and checkpoint, so nothing
    non-finite is ever logged or saved, and the error names the exact step.
    """

    def __init__(self, device: torch.device) -> None:
        self.every_step = device.type != "cuda"
        self.first = torch.full((3,), -1.0, dtype=torch.float64, device=device)  # step, loss, grad norm

    def watch(self, step: int, loss: torch.Tensor, grad_norm: torch.Tensor) -> None:
        bad = ~(torch.isfinite(loss) & torch.isfinite(grad_norm))
        now = torch.stack([torch.tensor(float(step), dtype=torch.float64, device=loss.device),
                           loss.double(), grad_norm.double()])
        self.first = torch.where(bad & (self.first[0] < 0), now, self.first)
        if self.every_step:
            self.check()

    def check(self) -> None:
        step, loss, grad_norm = self.first.tolist()
        if step >= 0:
            raise TrainingDiverged(int(step), loss, grad_norm)


class RunningLoss:
    """The mean training loss since the last evaluation, summed on the device (no host sync per step)."""

    def __init__(self, device: torch.device, total: float = 0.0, count: int = 0) -> None:
        self.device, self.total, self.count = device, torch.tensor(total, device=device), count

    def add(self, loss: torch.Tensor) -> None:
        self.total += loss.float()
        self.count += 1

    def take(self) -> float:
        """The mean so far (NaN before the first step), and start a new interval."""
        mean = float(self.total.item()) / self.count if self.count else float("nan")
        self.total, self.count = torch.zeros((), device=self.device), 0
        return mean

    def state(self) -> tuple[float, int]:
        return float(self.total.item()), self.count


# --------------------------------------------------------------------------------------------
# The training loop
# --------------------------------------------------------------------------------------------


class Run(Protocol):
    """Where a run's progress goes: pipeline.train.training.RunFiles keeps files, :class:`InMemoryRun` a list."""

    def resume(self, ctx: StepContext) -> tuple[int, RunningLoss]: ...

    def progress(self, steps: range) -> Iterable[int]: ...

    def log(self, step: int, train_loss: float, evaluation: Evaluation, lr: float) -> None: ...

    def checkpoint(self, step: int, ctx: StepContext, train_loss: RunningLoss, batches: dict[str, Any]) -> None: ...


class InMemoryRun:
    """A run that starts afresh and keeps its metrics rows in ``rows``: no files, no checkpoints."""

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []

    def resume(self, ctx: StepContext) -> tuple[int, RunningLoss]:
        return 0, RunningLoss(ctx.device)

    def progress(self, steps: range) -> Iterable[int]:
        return steps

    def log(self, step: int, train_loss: float, evaluation: Evaluation, lr: float) -> None:
        self.rows.append({"step": step, "train_loss": train_loss, "eval_loss": evaluation.loss,
                          "eval_accuracy": evaluation.accuracy, "lr": lr})

    def checkpoint(self, step: int, ctx: StepContext, train_loss: RunningLoss, batches: dict[str, Any]) -> None:
        pass


def train_loop(ctx: StepContext, data: TrainingData, run: Run, seed: int, last_step: int) -> int:
    """Train from where ``run`` resumes up to ``last_step``; returns the last step done.

    Evaluates every ``eval_every`` steps and at the end, checkpoints every ``checkpoint_every`` steps
    and at ``last_step``, and raises TrainingDiverged at the first non-finite loss or gradient norm.
    """
    cfg, device, world = ctx.cfg, ctx.device, ctx.world
    sampler = make_sampler(cfg, data.train_lengths, seed)  # both models see the same batches in the same order
    guard = FiniteGuard(device)
    step, train_loss = run.resume(ctx)  # step 0, or where a checkpoint of this same run stopped
    if step == 0 and world.is_main:  # where the initialisation starts (process 0 alone evaluates and logs)
        run.log(0, train_loss.take(), evaluate(ctx.model, data, cfg, device), ctx.scheduler.get_last_lr()[0])
    for step in run.progress(range(step + 1, last_step + 1)):
        # The batch of this step (its sequences depend only on the seed and the step), then one step on it.
        picked = sampler.indices(step - 1)
        ids, lengths = batch_to_device(*data.train_batch(picked, cut=cfg.batching == "bucketed"), device)
        loss, grad_norm = train_step(ctx, ids, lengths)
        loss = world.sum_over_processes(loss) / world.world_size  # the whole batch's loss
        guard.watch(step, loss, grad_norm)
        train_loss.add(loss)
        # Every eval_every steps: the fixed masked evaluation set, and the mean training loss since the last row.
        if step % cfg.eval_every == 0 or step == cfg.steps:
            guard.check()  # nothing non-finite is ever logged or saved
            if world.is_main:
                evaluation = evaluate(ctx.model, data, cfg, device, per_position=step == cfg.steps)
                run.log(step, train_loss.take(), evaluation, ctx.scheduler.get_last_lr()[0])
        # Every checkpoint_every steps: everything a resumed run needs to go on bit for bit.
        if step % cfg.checkpoint_every == 0 or step == last_step:
            guard.check()
            run.checkpoint(step, ctx, train_loss, sampler.state(step))
    return step
