"""MLM pretraining of BERT_TINY and BERT_FT under identical settings (notebook 04, or the CLI on a GPU).

Three stages, each runnable alone:

* :func:`prepare_data` tokenises once and writes 128-token sequences and a fixed, pre-masked
  evaluation set as ``.npy`` files (plus the tokenizer), so training needs nothing but these files;
* :func:`train` is a plain loop a reader can hold in their head: sample a batch, mask it on the
  device, masked-only MLM loss, backward, clip, AdamW, learning-rate schedule; evaluate and
  checkpoint every N steps, resume exactly;
* :func:`compare_runs` reads both ``metrics.csv`` files and answers the paper's question: how many
  steps did BERT_FT need to reach BERT_TINY's final evaluation loss and accuracy?

Module-level imports are limited to the standard library, numpy, torch, transformers and
tokenizers (through helpers.model / helpers.masking / helpers.runinfo): the GPU machines lack
datasets, fasttext, papermill and the plotting stack. ``python -m helpers.pretrain --help``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch
from transformers import get_linear_schedule_with_warmup

from helpers.masking import IGNORE_INDEX, MLMCollator
from helpers.model import InitSpec, build_model, count_parameters, mlm_loss, use_attention
from helpers.presets import pick
from helpers.runinfo import environment, pick_device
from helpers.static_vectors import vocab_fingerprint

try:  # tqdm is on every machine we know of, but a bar is not worth a crash
    from tqdm.auto import tqdm
except ImportError:  # pragma: no cover
    tqdm = None

MODEL_NAMES = ("bert_tiny", "bert_ft")
# train_loss: mean over the steps since the previous row (NaN at step 0); lr: the rate the *next* step
# uses (read after the scheduler stepped), so it is 0.0 on the last row of a finished run.
METRIC_COLUMNS = ("step", "train_loss", "eval_loss", "eval_accuracy", "lr", "elapsed_s")
DATA_SUBDIR = "data"
CHECKPOINT_FILE = "checkpoint.pt"
EVAL_MASK_SEED = 1234  # fixed: the evaluation mask belongs to the data, not to a training seed


# --------------------------------------------------------------------------------------------
# Settings
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainConfig:
    """Everything that shapes a pretraining run; BERT_TINY and BERT_FT always share one instance.

    Optimiser choices the paper leaves open (it states AdamW, lr 5e-4, batch 128, 100k steps, 10 %
    warmup): eps 1e-6 and weight decay 0.01 on matrices only (not biases or LayerNorm), both from
    the original BERT recipe the paper says it follows; the Hugging Face Trainer's defaults would
    be eps 1e-8 and no decay. eps 1e-6 also keeps the update of rarely seen embedding rows (tiny
    second moments) bounded. Linear decay to zero after the warmup, as in BERT.
    """

    name: str  # the preset this came from, recorded in run.json
    steps: int
    batch_size: int
    seq_len: int = 128
    packing: bool = False  # False: the paper's [CLS] doc[:126] [SEP] per example; True: full packed blocks
    lr: float = 5e-4
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-6
    weight_decay: float = 0.01
    warmup_fraction: float = 0.1
    grad_clip: float = 1.0
    eval_every: int = 5_000
    checkpoint_every: int = 5_000
    eval_batch_size: int = 128
    eval_sequences: int | None = None  # first N prepared evaluation sequences (None: all)
    train_docs: int | None = None  # documents given to prepare_data (None: all)
    eval_docs: int | None = None
    mlm_probability: float = 0.15
    compile: bool = False  # torch.compile the loss on CUDA (static shapes through max_masked)
    attention: str = "auto"  # 'auto': sdpa on CPU, sdpa_padded (head dim 75 -> 80) on CUDA
    cpu_threads: int | None = None  # torch threads while training on the CPU (None: torch's default)

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError(f"steps and batch_size must be positive, got {self.steps} and {self.batch_size}")
        if not 8 <= self.seq_len <= 128:
            raise ValueError(f"seq_len must lie in [8, 128] (Table 4: 128 positions), got {self.seq_len}")
        if self.eval_every < 1 or self.checkpoint_every < 1:
            raise ValueError("eval_every and checkpoint_every must be positive step counts")
        if not 0.0 <= self.warmup_fraction < 1.0:
            raise ValueError(f"warmup_fraction must lie in [0, 1), got {self.warmup_fraction}")

    @property
    def warmup_steps(self) -> int:
        return int(round(self.warmup_fraction * self.steps))

    def replace(self, **changes: Any) -> "TrainConfig":
        return replace(self, **changes)


PRESETS: dict[str, TrainConfig] = {
    # Seconds: proves the loop, the files and resume work; the numbers mean nothing.
    # One thread: on ops this small, two threads spend more time synchronising than computing
    # (measured 4x faster with one thread while the machine was busy).
    "smoke": TrainConfig(name="smoke", steps=6, batch_size=4, seq_len=64, eval_every=3, checkpoint_every=3,
                         eval_batch_size=32, eval_sequences=32, train_docs=200, eval_docs=40, lr=1e-3,
                         warmup_fraction=0.2, cpu_threads=1),
    # The 2-core CPU budget: both models, data included, in about 8 minutes. Batch 32 of the paper's
    # truncated 128-token sequences, 300 steps (~1 epoch of the 9.5k English training articles).
    # lr 1e-3 with 10 % warmup: a short run needs a faster start than the paper's 5e-4 over 100k
    # steps; both models get exactly the same schedule. See notebook 04 for the measurements.
    "demo": TrainConfig(name="demo", steps=300, batch_size=32, seq_len=128, eval_every=25, checkpoint_every=100,
                        eval_batch_size=128, eval_sequences=256, lr=1e-3, warmup_fraction=0.1),
    # Mištera & Král, Section 4.3 and Table 4 (meant for a GPU with prepared C4 data).
    "paper": TrainConfig(name="paper", steps=100_000, batch_size=128, seq_len=128, eval_every=5_000,
                         checkpoint_every=5_000, eval_batch_size=512),
}


def preset_config(preset: str) -> TrainConfig:
    return pick(PRESETS, preset)


def cap_steps(cfg: TrainConfig, max_steps: int) -> TrainConfig:
    """The same run cut to at most ``max_steps`` steps, for trying a configuration cheaply.

    The schedule is rescaled (warmup stays the same fraction) and evaluation and checkpoints happen
    at least four times, so a capped run still draws a curve. The cap is part of the config's name,
    so it is recorded in run.json and in every figure title.
    """
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
    if max_steps >= cfg.steps:
        return cfg
    every = max(1, max_steps // 4)
    return cfg.replace(name=f"{cfg.name} (max {max_steps} steps)", steps=max_steps,
                       eval_every=min(cfg.eval_every, every), checkpoint_every=min(cfg.checkpoint_every, every))


# --------------------------------------------------------------------------------------------
# Data: tokenise once, cut into sequences, fix the evaluation mask, save as .npy
# --------------------------------------------------------------------------------------------


@dataclass
class TokenizedCorpus:
    """All documents' token ids end to end (no special tokens) plus where each document starts."""

    ids: np.ndarray  # uint16 when the vocabulary fits, else int32
    offsets: np.ndarray  # int64, len n_docs + 1

    @property
    def n_docs(self) -> int:
        return len(self.offsets) - 1

    def doc(self, i: int) -> np.ndarray:
        return self.ids[self.offsets[i]:self.offsets[i + 1]]


def id_dtype(vocab_size: int) -> np.dtype:
    """uint16 halves the files and the host memory of int32 whenever the vocabulary allows it."""
    return np.dtype(np.uint16) if vocab_size <= np.iinfo(np.uint16).max + 1 else np.dtype(np.int32)


def tokenize_corpus(tokenizer: Any, texts: Sequence[str], batch_size: int = 1_000) -> TokenizedCorpus:
    """Batched fast tokenisation into one flat array; empty documents are dropped."""
    texts = [t for t in texts if t and t.strip()]
    if not texts:
        raise ValueError("no non-empty documents to tokenise; check the corpus (helpers.data.load_corpus)")
    dtype = id_dtype(len(tokenizer))
    chunks, lengths = [], []
    for start in range(0, len(texts), batch_size):
        # verbose=False: documents longer than 128 tokens are expected here (cut later), not a mistake.
        encoded = tokenizer(texts[start:start + batch_size], add_special_tokens=False, verbose=False,
                            return_attention_mask=False, return_token_type_ids=False)["input_ids"]
        for ids in encoded:
            if ids:
                chunks.append(np.asarray(ids, dtype=dtype))
                lengths.append(len(ids))
    if not chunks:
        raise ValueError("the tokenizer produced no tokens for any document")
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return TokenizedCorpus(np.concatenate(chunks), offsets)


def truncate_sequences(corpus: TokenizedCorpus, seq_len: int, cls_id: int, sep_id: int,
                       pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """The paper's format: one example per document, ``[CLS] doc[:seq_len-2] [SEP]``, then padding.

    Returns (ids [n, seq_len], lengths [n]); the text after position 126 of a long document is lost.
    """
    starts = corpus.offsets[:-1]
    lens = np.minimum(np.diff(corpus.offsets), seq_len - 2)
    n = len(lens)
    out = np.full((n, seq_len), pad_id, dtype=corpus.ids.dtype)
    out[:, 0] = cls_id
    rows = np.repeat(np.arange(n), lens)
    cols = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
    out[rows, 1 + cols] = corpus.ids[np.repeat(starts, lens) + cols]
    out[np.arange(n), 1 + lens] = sep_id
    return out, (lens + 2).astype(np.int16)


def pack_sequences(corpus: TokenizedCorpus, seq_len: int, cls_id: int, sep_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Packed format: documents joined with [SEP], cut into ``[CLS] + seq_len-1`` token blocks.

    Every position is a real token (no padding, ~1.4x the text per step on the embedded corpus),
    long documents are kept whole, but attention crosses document boundaries. The tail that does
    not fill a block is dropped.
    """
    stream = np.insert(corpus.ids, corpus.offsets[1:], sep_id)
    block = seq_len - 1
    n = len(stream) // block
    if n == 0:
        raise ValueError(f"the corpus has {len(stream)} tokens, too few for one packed block of {seq_len}")
    out = np.empty((n, seq_len), dtype=corpus.ids.dtype)
    out[:, 0] = cls_id
    out[:, 1:] = stream[:n * block].reshape(n, block)
    return out, np.full(n, seq_len, dtype=np.int16)


def make_sequences(corpus: TokenizedCorpus, tokenizer: Any, seq_len: int, packing: bool) -> tuple[np.ndarray, np.ndarray]:
    if packing:
        return pack_sequences(corpus, seq_len, tokenizer.cls_token_id, tokenizer.sep_token_id)
    return truncate_sequences(corpus, seq_len, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id)


def lengths_to_mask(lengths: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Attention mask (1 = real token) from per-sequence lengths, on the lengths' device."""
    return (torch.arange(seq_len, device=lengths.device)[None, :] < lengths[:, None]).long()


def fixed_eval_mask(tokenizer: Any, ids: np.ndarray, lengths: np.ndarray, mlm_probability: float = 0.15,
                    seed: int = EVAL_MASK_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Mask the evaluation sequences once, so every evaluation of every model scores the same positions."""
    collator = MLMCollator(tokenizer, mlm_probability=mlm_probability, seed=seed)
    input_ids = torch.from_numpy(ids.astype(np.int64))
    masked = collator.mask(input_ids, lengths_to_mask(torch.from_numpy(lengths.astype(np.int64)), ids.shape[1]))
    return masked["input_ids"].numpy().astype(ids.dtype), masked["labels"].numpy().astype(np.int32)


def prepare_data(tokenizer: Any, train_texts: Sequence[str], eval_texts: Sequence[str], out_dir: str | Path,
                 seq_len: int = 128, packing: bool = False, lang: str = "unknown",
                 mlm_probability: float = 0.15, eval_mask_seed: int = EVAL_MASK_SEED) -> dict[str, Any]:
    """Write ``out_dir/data/``: train/eval sequences, the masked evaluation set, the tokenizer, meta.json.

    Returns the meta dictionary (counts, formats, where the files are).
    """
    data_dir = Path(out_dir) / DATA_SUBDIR
    data_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    meta: dict[str, Any] = {"seq_len": seq_len, "packing": packing, "lang": lang, "vocab_size": len(tokenizer),
                            "mlm_probability": mlm_probability, "eval_mask_seed": eval_mask_seed,
                            "pad_token_id": tokenizer.pad_token_id, "format": _format_note(packing, seq_len),
                            "vocab_sha256": vocab_fingerprint(tokenizer)}
    for split, texts in (("train", train_texts), ("eval", eval_texts)):
        corpus = tokenize_corpus(tokenizer, texts)
        ids, lengths = make_sequences(corpus, tokenizer, seq_len, packing)
        np.save(data_dir / f"{split}_ids.npy", ids)
        np.save(data_dir / f"{split}_lengths.npy", lengths)
        doc_lens = np.diff(corpus.offsets)
        meta[split] = {"documents": corpus.n_docs, "tokens": int(corpus.ids.size), "sequences": int(ids.shape[0]),
                       "real_positions": int(lengths.astype(np.int64).sum()),
                       "padding_share": float(1 - lengths.astype(np.int64).sum() / ids.size),
                       "docs_longer_than_seq": float(np.mean(doc_lens > seq_len - 2))}
        if split == "eval":
            masked, labels = fixed_eval_mask(tokenizer, ids, lengths, mlm_probability, eval_mask_seed)
            np.save(data_dir / "eval_masked_ids.npy", masked)
            np.save(data_dir / "eval_labels.npy", labels)
            meta["eval"]["masked_positions"] = int((labels != IGNORE_INDEX).sum())
    tokenizer.save_pretrained(str(data_dir / "tokenizer"))
    meta["seconds"] = round(time.perf_counter() - started, 2)
    (data_dir / "meta.json").write_text(json.dumps(meta, indent=2))
    return meta


def _format_note(packing: bool, seq_len: int) -> str:
    if packing:
        return f"packed: documents joined with [SEP] and cut into [CLS] + {seq_len - 1} token blocks"
    return f"truncated per document (the paper): [CLS] doc[:{seq_len - 2}] [SEP], padded to {seq_len}"


@dataclass
class PreparedData:
    """What :func:`prepare_data` wrote, loaded back (numpy arrays; moved to the device per batch)."""

    train_ids: np.ndarray
    train_lengths: np.ndarray
    eval_masked_ids: np.ndarray
    eval_lengths: np.ndarray
    eval_labels: np.ndarray
    meta: dict[str, Any]
    directory: Path

    @property
    def seq_len(self) -> int:
        return int(self.train_ids.shape[1])


def resolve_data_dir(path: str | Path) -> Path:
    """Accept either the data folder itself or the out_dir that holds ``data/``."""
    path = Path(path)
    return path if (path / "meta.json").exists() else path / DATA_SUBDIR


def load_data(path: str | Path) -> PreparedData:
    data_dir = resolve_data_dir(path)
    if not (data_dir / "meta.json").exists():
        raise FileNotFoundError(f"no prepared data in {data_dir}; run helpers.pretrain.prepare_data first "
                                "(notebook 04 does) and copy the data/ folder to this machine")
    load = lambda name: np.load(data_dir / f"{name}.npy", allow_pickle=False)  # noqa: E731
    return PreparedData(load("train_ids"), load("train_lengths"), load("eval_masked_ids"), load("eval_lengths"),
                        load("eval_labels"), json.loads((data_dir / "meta.json").read_text()), data_dir)


def load_data_tokenizer(path: str | Path) -> Any:
    """The tokenizer saved next to the data (so a GPU machine needs only the data folder)."""
    from transformers import AutoTokenizer

    folder = resolve_data_dir(path) / "tokenizer"
    if not (folder / "tokenizer.json").exists():
        raise FileNotFoundError(f"no tokenizer.json in {folder}; rerun prepare_data")
    return AutoTokenizer.from_pretrained(str(folder))


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


# --------------------------------------------------------------------------------------------
# One step, evaluation, optimiser
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
    """AdamW with the fused kernel on CPU and CUDA alike.

    Measured on the 2-core CPU (benchmarks/optimizer_step.py): one step over these 10.5 M parameters
    took 40 ms with the for-loop kernel, 31 ms with foreach and 6 ms fused; small beside a 0.7 s
    training step, but free to take.
    """
    return torch.optim.AdamW(decay_groups(model, cfg.weight_decay), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps,
                             fused=True)


def static_cap(cfg: TrainConfig) -> int:
    """Masked rows per batch for static shapes on CUDA: the mean plus 6 binomial standard deviations.

    Every position counts as eligible here, so the real count (which excludes [CLS], [SEP] and
    padding) stays further below the cap; overflow has probability under 1e-9 per batch.
    """
    n = cfg.batch_size * cfg.seq_len
    p = cfg.mlm_probability
    cap = n * p + 6 * math.sqrt(n * p * (1 - p))
    return min(n, int(math.ceil(cap / 64) * 64))


@dataclass
class StepContext:
    """What a training step needs besides the batch; built once by :func:`make_step_context`."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: Any
    collator: MLMCollator
    cfg: TrainConfig
    device: torch.device
    max_masked: int | None
    loss_fn: Any


def make_step_context(model: torch.nn.Module, cfg: TrainConfig, tokenizer: Any, device: str, seed: int) -> StepContext:
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    optimizer = make_optimizer(model, cfg)
    scheduler = get_linear_schedule_with_warmup(optimizer, cfg.warmup_steps, cfg.steps)
    collator = MLMCollator(tokenizer, mlm_probability=cfg.mlm_probability, seed=seed)
    loss_fn = torch.compile(mlm_loss) if (cfg.compile and cuda) else mlm_loss
    # On CUDA a fixed number of scored rows avoids the host sync of nonzero(); on the CPU the
    # exact count costs nothing and nothing is ever dropped.
    max_masked = static_cap(cfg) if cuda else None
    return StepContext(model, optimizer, scheduler, collator, cfg, dev, max_masked, loss_fn)


def batch_to_device(ids: np.ndarray, lengths: np.ndarray, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    ids_t = torch.from_numpy(ids.astype(np.int64))
    len_t = torch.from_numpy(lengths.astype(np.int64))
    if device.type == "cuda":
        ids_t, len_t = ids_t.pin_memory(), len_t.pin_memory()
    return ids_t.to(device, non_blocking=True), len_t.to(device, non_blocking=True)


def model_attention_mask(attention: torch.Tensor, packed: bool) -> torch.Tensor | None:
    """None for full packed blocks: no mask lets CUDA's SDPA use its fastest kernels."""
    return None if packed else attention


def train_step(ctx: StepContext, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """One optimisation step; returns the loss as a device tensor (no host sync)."""
    attention = lengths_to_mask(lengths, ids.shape[1])
    batch = ctx.collator.mask(ids, attention)
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=ctx.device.type == "cuda"):
        loss, _, _ = ctx.loss_fn(ctx.model, batch["input_ids"], model_attention_mask(attention, ctx.cfg.packing),
                                 batch["labels"], ctx.max_masked, with_accuracy=False)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(ctx.model.parameters(), ctx.cfg.grad_clip)
    ctx.optimizer.step()
    ctx.scheduler.step()
    ctx.optimizer.zero_grad(set_to_none=True)
    return loss.detach()


@torch.no_grad()
def evaluate(model: torch.nn.Module, data: PreparedData, cfg: TrainConfig, device: torch.device) -> tuple[float, float]:
    """MLM loss (mean over masked tokens) and masked-token accuracy on the fixed evaluation set."""
    was_training = model.training
    model.eval()
    n = len(data.eval_labels) if cfg.eval_sequences is None else min(cfg.eval_sequences, len(data.eval_labels))
    loss_sum = torch.zeros((), device=device, dtype=torch.float64)
    correct = torch.zeros((), device=device, dtype=torch.long)
    masked = torch.zeros((), device=device, dtype=torch.long)
    for start in range(0, n, cfg.eval_batch_size):
        stop = min(n, start + cfg.eval_batch_size)
        ids, lengths = batch_to_device(data.eval_masked_ids[start:stop], data.eval_lengths[start:stop], device)
        labels = torch.from_numpy(data.eval_labels[start:stop].astype(np.int64)).to(device)
        attention = model_attention_mask(lengths_to_mask(lengths, ids.shape[1]), cfg.packing)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss, n_correct, n_masked = mlm_loss(model, ids, attention, labels)
        loss_sum += loss.double() * n_masked
        correct += n_correct
        masked += n_masked
    model.train(was_training)
    total = int(masked.item())
    if total == 0:
        raise ValueError("the evaluation set has no masked positions; prepare more evaluation documents")
    return float(loss_sum.item()) / total, int(correct.item()) / total


# --------------------------------------------------------------------------------------------
# The training loop
# --------------------------------------------------------------------------------------------


def _init_record(init: InitSpec) -> dict[str, Any]:
    if isinstance(init, str) and init == "random":
        return {"init": "random", "manifest": None}
    if hasattr(init, "matrix"):
        return {"init": "alignment object", "manifest": getattr(init, "report", None)}
    manifest_path = Path(init) / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else None
    return {"init": str(init), "manifest": manifest}


def check_same_vocabulary(init: InitSpec, meta: Mapping[str, Any]) -> None:
    """Refuse a static matrix aligned to another tokenizer than the data's (same size, other tokens or order).

    Folders written before fingerprints were recorded carry none; they pass, as the shape check alone did.
    """
    manifest = _init_record(init)["manifest"] or {}
    built_for, data_for = manifest.get("vocab_sha256"), meta.get("vocab_sha256")
    if built_for and data_for and built_for != data_for:
        raise ValueError("the static vectors were aligned to a different vocabulary than the one the data was "
                         "prepared with (same size, other tokens or order); rerun notebook 03 with the tokenizer saved in "
                         "the data folder, or prepare the data with the tokenizer notebook 03 used")


def write_metrics(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=METRIC_COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row[k] for k in METRIC_COLUMNS})


def read_metrics(path: str | Path) -> list[dict[str, float]]:
    """metrics.csv as a list of rows (numbers as float, step as int), without pandas."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no metrics file at {path}; train the model first (helpers.pretrain.train)")
    with open(path, newline="") as handle:
        rows = []
        for row in csv.DictReader(handle):
            parsed = {k: (float(v) if v not in ("", "nan") else float("nan")) for k, v in row.items()}
            parsed["step"] = int(parsed["step"])
            rows.append(parsed)
    return rows


def _rng_state(ctx: StepContext) -> dict[str, Any]:
    state = {"torch": torch.get_rng_state(), "mask": ctx.collator._generator(ctx.device).get_state()}
    if ctx.device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(ctx.device)
    return state


def _set_rng_state(ctx: StepContext, state: Mapping[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    ctx.collator._generator(ctx.device).set_state(state["mask"])
    if ctx.device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], ctx.device)


def _save_checkpoint(path: Path, ctx: StepContext, step: int, sampler: BatchSampler, rows: list[dict[str, Any]],
                     running: tuple[float, int], elapsed: float, identity: dict[str, Any]) -> None:
    """Everything a resumed run needs to continue bit for bit; written to a temp file, then renamed."""
    payload = {
        "identity": identity, "step": step, "model": ctx.model.state_dict(),
        "optimizer": ctx.optimizer.state_dict(), "scheduler": ctx.scheduler.state_dict(),
        "rng": _rng_state(ctx), "sampler": sampler.state(step), "metrics": rows,
        "running_loss": running, "elapsed_s": elapsed,
    }
    tmp = path.with_suffix(".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)


def _identity(model_name: str, init: InitSpec, cfg: TrainConfig, seed: int, data: PreparedData) -> dict[str, Any]:
    """What must match for a checkpoint to be resumed (anything else would mix two runs)."""
    return {"model_name": model_name, "init": _init_record(init)["init"], "cfg": asdict(cfg), "seed": seed,
            "data_meta": {k: data.meta[k] for k in ("seq_len", "packing", "vocab_size", "train", "eval")}}


def pick_attention(cfg: TrainConfig, device: torch.device) -> str:
    if cfg.attention != "auto":
        return cfg.attention
    return "sdpa_padded" if device.type == "cuda" else "sdpa"


def train(model_name: str, init: InitSpec, cfg: TrainConfig, data_dir: str | Path, out_dir: str | Path,
          tokenizer: Any = None, device: str = "auto", seed: int = 0, resume: bool = True,
          stop_at: int | None = None, progress: bool = True,
          model_overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Pretrain one model; write metrics.csv, run.json, model/ (and checkpoint.pt) under ``out_dir/model_name``.

    ``init`` is 'random' (BERT_TINY) or a static-vector folder / Alignment (BERT_FT). ``stop_at``
    ends the call after that step with a checkpoint (the next call with ``resume=True`` continues);
    it exists for time-boxed sessions and for the resume test. ``model_overrides`` change the Table 4
    config (the unit tests use a tiny model). Returns run.json's content.
    """
    threads = torch.get_num_threads()
    if cfg.cpu_threads and pick_device(device) == "cpu":
        torch.set_num_threads(cfg.cpu_threads)
    try:
        return _train(model_name, init, cfg, data_dir, out_dir, tokenizer, device, seed, resume, stop_at, progress,
                      model_overrides)
    finally:
        torch.set_num_threads(threads)


def _train(model_name: str, init: InitSpec, cfg: TrainConfig, data_dir: str | Path, out_dir: str | Path,
           tokenizer: Any, device: str, seed: int, resume: bool, stop_at: int | None, progress: bool,
           model_overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    if model_name not in MODEL_NAMES:
        raise ValueError(f"unknown model name {model_name!r}; choose one of {MODEL_NAMES}")
    data = load_data(data_dir)
    if data.seq_len != cfg.seq_len or bool(data.meta["packing"]) != cfg.packing:
        raise ValueError(f"the prepared data has seq_len={data.seq_len}, packing={data.meta['packing']} but the "
                         f"config asks for seq_len={cfg.seq_len}, packing={cfg.packing}; rerun prepare_data")
    tokenizer = tokenizer if tokenizer is not None else load_data_tokenizer(data.directory)
    if len(tokenizer) != data.meta["vocab_size"]:
        raise ValueError(f"the tokenizer has {len(tokenizer)} tokens but the data was prepared with "
                         f"{data.meta['vocab_size']}; use the tokenizer saved in {data.directory / 'tokenizer'}")
    check_same_vocabulary(init, data.meta)
    dev = torch.device(pick_device(device))
    run_dir = Path(out_dir) / model_name
    run_dir.mkdir(parents=True, exist_ok=True)

    overrides = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id, **(model_overrides or {})}
    model = build_model(init, seed=seed, **overrides)
    use_attention(model, pick_attention(cfg, dev))
    model.to(dev).train()
    torch.manual_seed(seed)  # the dropout stream starts in the same place for both models
    ctx = make_step_context(model, cfg, tokenizer, str(dev), seed)
    sampler = BatchSampler(len(data.train_ids), cfg.batch_size, seed)
    identity = {**_identity(model_name, init, cfg, seed, data), "model_overrides": overrides}

    step, rows, running_sum, running_n, elapsed_before = 0, [], 0.0, 0, 0.0
    ckpt_path = run_dir / CHECKPOINT_FILE
    if resume and ckpt_path.exists():
        # On the CPU first: RNG states must be restored from CPU tensors, and load_state_dict moves the
        # weights and optimiser moments to the parameters' device anyway.
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=False)
        if ckpt["identity"] != identity:
            raise ValueError(f"{ckpt_path} belongs to a different run (model, init, settings, seed or data "
                             "differ); delete it or pass resume=False")
        model.load_state_dict(ckpt["model"])
        ctx.optimizer.load_state_dict(ckpt["optimizer"])
        ctx.scheduler.load_state_dict(ckpt["scheduler"])
        _set_rng_state(ctx, ckpt["rng"])
        step, rows, elapsed_before = ckpt["step"], ckpt["metrics"], ckpt["elapsed_s"]
        running_sum, running_n = ckpt["running_loss"]

    run_info = _run_record(model_name, init, cfg, seed, data, model, dev)
    (run_dir / "run.json").write_text(json.dumps(run_info, indent=2, default=str))
    last = cfg.steps if stop_at is None else min(cfg.steps, stop_at)
    started = time.perf_counter() - elapsed_before
    running = torch.tensor(running_sum, device=dev)

    def log_eval(at: int) -> None:
        nonlocal running, running_n
        eval_loss, eval_acc = evaluate(model, data, cfg, dev)
        train_loss = float(running.item()) / running_n if running_n else float("nan")
        rows.append({"step": at, "train_loss": train_loss, "eval_loss": eval_loss, "eval_accuracy": eval_acc,
                     "lr": ctx.scheduler.get_last_lr()[0], "elapsed_s": round(time.perf_counter() - started, 2)})
        running, running_n = torch.zeros((), device=dev), 0
        write_metrics(run_dir / "metrics.csv", rows)
        if bar is not None:
            bar.set_postfix(train=f"{train_loss:.3f}", eval=f"{eval_loss:.3f}", acc=f"{eval_acc:.3f}", refresh=False)

    bar = None
    if progress and tqdm is not None:
        bar = tqdm(total=cfg.steps, initial=step, desc=model_name, mininterval=10, dynamic_ncols=True)
    if step == 0 and not rows:
        log_eval(0)
    while step < last:
        picked = sampler.indices(step)
        ids, lengths = batch_to_device(data.train_ids[picked], data.train_lengths[picked], dev)
        running += train_step(ctx, ids, lengths).float()
        running_n += 1
        step += 1
        if bar is not None:
            bar.update(1)
        if step % cfg.eval_every == 0 or step == cfg.steps:
            log_eval(step)
        if step % cfg.checkpoint_every == 0 or step == last:
            _save_checkpoint(ckpt_path, ctx, step, sampler, rows, (float(running.item()), running_n),
                             time.perf_counter() - started, identity)
    if bar is not None:
        bar.close()
    if step >= cfg.steps:
        model.save_pretrained(str(run_dir / "model"))
    run_info["finished"] = step >= cfg.steps
    run_info["steps_done"] = step
    run_info["train_seconds"] = round(time.perf_counter() - started, 2)
    (run_dir / "run.json").write_text(json.dumps(run_info, indent=2, default=str))
    return run_info


def _run_record(model_name: str, init: InitSpec, cfg: TrainConfig, seed: int, data: PreparedData,
                model: torch.nn.Module, device: torch.device) -> dict[str, Any]:
    record = _init_record(init)
    return {
        "model_name": model_name, "preset": cfg.name, "lang": data.meta.get("lang"), "steps": cfg.steps,
        "batch_size": cfg.batch_size, "seq_len": cfg.seq_len, "seed": seed, "init": record["init"],
        "init_manifest": record["manifest"], "parameters": count_parameters(model),
        "attention": model.config._attn_implementation, "train_config": asdict(cfg),
        "model_config": model.config.to_dict(), "data": data.meta, "data_dir": str(data.directory),
        "environment": environment(str(device)),
    }


# --------------------------------------------------------------------------------------------
# Comparing the two runs
# --------------------------------------------------------------------------------------------


def _rows(metrics: str | Path | Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return read_metrics(metrics) if isinstance(metrics, (str, Path)) else list(metrics)


def first_step(rows: Iterable[Mapping[str, Any]], column: str, target: float, lower_is_better: bool) -> int | None:
    """The first evaluated step at which ``column`` reached ``target`` (None if it never did)."""
    for row in rows:
        value = row[column]
        if value == value and (value <= target if lower_is_better else value >= target):
            return int(row["step"])
    return None


def compare_runs(tiny_metrics: str | Path | Sequence[Mapping[str, Any]],
                 ft_metrics: str | Path | Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The paper's comparison: final numbers of both models and when BERT_FT reached BERT_TINY's final ones."""
    tiny, ft = _rows(tiny_metrics), _rows(ft_metrics)
    if not tiny or not ft:
        raise ValueError("both metrics tables need at least one row")
    # A run stopped early (stop_at) must not be compared with a longer one: both end at the last
    # step they share, so "final" means the same step for both models.
    shared = min(int(tiny[-1]["step"]), int(ft[-1]["step"]))
    tiny = [r for r in tiny if int(r["step"]) <= shared]
    ft = [r for r in ft if int(r["step"]) <= shared]
    final = lambda rows: {k: rows[-1][k] for k in ("step", "train_loss", "eval_loss", "eval_accuracy")}  # noqa: E731
    t, f = final(tiny), final(ft)
    loss_step = first_step(ft, "eval_loss", t["eval_loss"], lower_is_better=True)
    acc_step = first_step(ft, "eval_accuracy", t["eval_accuracy"], lower_is_better=False)
    total = t["step"] or 1
    return {
        "bert_tiny_final": t, "bert_ft_final": f,
        "ft_steps_to_tiny_final_eval_loss": loss_step,
        "ft_steps_to_tiny_final_eval_accuracy": acc_step,
        "ft_fraction_to_tiny_final_eval_loss": None if loss_step is None else loss_step / total,
        "ft_fraction_to_tiny_final_eval_accuracy": None if acc_step is None else acc_step / total,
        "eval_loss_difference": f["eval_loss"] - t["eval_loss"],
        "eval_accuracy_difference": f["eval_accuracy"] - t["eval_accuracy"],
        "ft_ahead": bool(f["eval_loss"] < t["eval_loss"] and f["eval_accuracy"] > t["eval_accuracy"]),
    }


def write_comparison(out_dir: str | Path) -> dict[str, Any]:
    """compare_runs on out_dir/bert_tiny and out_dir/bert_ft, written to out_dir/comparison.json."""
    out_dir = Path(out_dir)
    result = compare_runs(out_dir / "bert_tiny" / "metrics.csv", out_dir / "bert_ft" / "metrics.csv")
    (out_dir / "comparison.json").write_text(json.dumps(result, indent=2))
    return result


# --------------------------------------------------------------------------------------------
# Command line (runs from prepared files only, e.g. on a GPU machine)
# --------------------------------------------------------------------------------------------


def _config_from_args(args: argparse.Namespace) -> TrainConfig:
    cfg = preset_config(args.preset)
    changes = {k: v for k, v in {"steps": args.steps, "batch_size": args.batch_size, "lr": args.lr,
                                 "eval_every": args.eval_every, "checkpoint_every": args.checkpoint_every,
                                 "attention": args.attention}.items() if v is not None}
    if args.compile:
        changes["compile"] = True
    return cfg.replace(**changes)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.pretrain", description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder written by prepare_data (or the out_dir holding data/)")
    parser.add_argument("--out", required=True, help="folder for bert_tiny/ and bert_ft/")
    parser.add_argument("--model", required=True, choices=MODEL_NAMES)
    parser.add_argument("--init", default="random", help="'random' (BERT_TINY) or a static-vector folder (BERT_FT)")
    parser.add_argument("--preset", default="paper", help="smoke, demo or paper")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int)
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--lr", type=float)
    parser.add_argument("--eval-every", type=int)
    parser.add_argument("--checkpoint-every", type=int)
    parser.add_argument("--attention", choices=("auto", "sdpa", "sdpa_padded", "eager"))
    parser.add_argument("--compile", action="store_true", help="torch.compile the loss (CUDA only)")
    parser.add_argument("--stop-at", type=int, help="stop after this step with a checkpoint (resume later)")
    parser.add_argument("--no-resume", action="store_true", help="ignore an existing checkpoint")
    parser.add_argument("--compare", action="store_true", help="afterwards, write comparison.json if both runs exist")
    args = parser.parse_args(argv)
    try:
        cfg = _config_from_args(args)
        info = train(args.model, args.init, cfg, args.data, args.out, device=args.device, seed=args.seed,
                     resume=not args.no_resume, stop_at=args.stop_at)
        rows = read_metrics(Path(args.out) / args.model / "metrics.csv")
        print(json.dumps({"model": args.model, "steps_done": info["steps_done"], "final": rows[-1]}))
        if args.compare and all((Path(args.out) / m / "metrics.csv").exists() for m in MODEL_NAMES):
            print(json.dumps(write_comparison(args.out), indent=2))
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


# --------------------------------------------------------------------------------------------
# Reporting (matplotlib is imported inside: the GPU machines may train without it)
# --------------------------------------------------------------------------------------------

LABELS = {"bert_tiny": "BERT_TINY (random embeddings)", "bert_ft": "BERT_FT (fastText embeddings)"}


def plot_runs(out_dir: str | Path, save: bool = True) -> list[Any]:
    """Figures 1-2 style: training loss, evaluation loss, evaluation accuracy of both models over steps.

    Saves pretrain_loss.png and pretrain_accuracy.png into ``out_dir``; returns the figures.
    """
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    runs = {name: read_metrics(out_dir / name / "metrics.csv") for name in MODEL_NAMES
            if (out_dir / name / "metrics.csv").exists()}
    if not runs:
        raise FileNotFoundError(f"no metrics.csv under {out_dir}/bert_tiny or {out_dir}/bert_ft; train first")
    loss_fig, (ax_train, ax_eval) = plt.subplots(1, 2, figsize=(11, 4))
    acc_fig, ax_acc = plt.subplots(figsize=(5.5, 4))
    for name, rows in runs.items():
        steps = [r["step"] for r in rows]
        ax_train.plot(steps[1:], [r["train_loss"] for r in rows][1:], marker=".", label=LABELS[name])
        ax_eval.plot(steps, [r["eval_loss"] for r in rows], marker=".", label=LABELS[name])
        ax_acc.plot(steps, [r["eval_accuracy"] for r in rows], marker=".", label=LABELS[name])
    for ax, title, ylabel in ((ax_train, "(a) training loss (mean over each interval)", "cross-entropy"),
                              (ax_eval, "(b) evaluation loss (fixed masked set)", "cross-entropy"),
                              (ax_acc, "evaluation accuracy of masked tokens", "accuracy")):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("training step")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    loss_fig.tight_layout()
    acc_fig.tight_layout()
    if save:
        loss_fig.savefig(out_dir / "pretrain_loss.png", dpi=120)
        acc_fig.savefig(out_dir / "pretrain_accuracy.png", dpi=120)
    return [loss_fig, acc_fig]


def describe_comparison(result: Mapping[str, Any]) -> str:
    """A few sentences, written from the numbers, on whether BERT_FT came out ahead."""
    t, f = result["bert_tiny_final"], result["bert_ft_final"]
    steps = t["step"]
    lines = [f"After {steps:,} steps BERT_TINY reached evaluation loss {t['eval_loss']:.3f} and accuracy "
             f"{t['eval_accuracy']:.3f}; BERT_FT reached {f['eval_loss']:.3f} and {f['eval_accuracy']:.3f}."]
    for what, key in (("evaluation loss", "ft_steps_to_tiny_final_eval_loss"),
                      ("accuracy", "ft_steps_to_tiny_final_eval_accuracy")):
        reached = result[key]
        if reached is None:
            lines.append(f"BERT_FT never reached BERT_TINY's final {what} within the run.")
        else:
            lines.append(f"BERT_FT reached BERT_TINY's final {what} at step {reached:,} "
                         f"({reached / max(steps, 1):.0%} of the run).")
    if result["ft_ahead"]:
        lines.append("So at this scale the static initialisation helped, in the direction the paper reports.")
    elif f["eval_loss"] < t["eval_loss"] or f["eval_accuracy"] > t["eval_accuracy"]:
        lines.append("The result is mixed: BERT_FT is ahead on one measure and behind on the other, so this run "
                     "neither confirms nor contradicts the paper.")
    else:
        lines.append("At this scale BERT_FT did **not** come out ahead: this run does not reproduce the paper's "
                     "advantage. It is one seed of a very short run on a small corpus, so it is weak evidence "
                     "either way.")
    return " ".join(lines)


if __name__ == "__main__":
    sys.exit(main())
