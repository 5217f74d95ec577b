"""MLM pretraining of BERT_TINY and BERT_FT under identical settings (notebook 04, or the CLI on a GPU).

Three stages, each runnable alone:

* :func:`prepare_data` tokenises once and writes 128-token sequences and a fixed, pre-masked
  evaluation set as ``.npy`` files (plus the tokenizer), so training needs nothing but these files;
* :func:`train` is a plain loop a reader can hold in their head: sample a batch, :func:`train_step`
  (mask on the device, masked-only MLM loss, backward, clip, AdamW, learning-rate schedule),
  evaluate and checkpoint every N steps; it stops at the first non-finite loss or gradient norm;
* :func:`compare_runs` reads both ``metrics.csv`` files and answers the paper's question: how many
  steps did BERT_FT need to reach BERT_TINY's final evaluation loss and accuracy?

Checkpoints, resume and a run's identity live in pipeline.checkpoints, the command line in
pipeline.train_cli (``python -m helpers.pretrain --help``), the plots in helpers.plots.pretrain.
Module-level imports are limited to the standard library, numpy, torch, transformers and
tokenizers: the GPU machines lack datasets, fasttext, papermill and the plotting stack.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from transformers import get_linear_schedule_with_warmup

from helpers.crossing import crossing_step, fraction_of
from helpers.masking import IGNORE_INDEX, MLMCollator
from helpers.model import (
    InitSpec,
    MaskedLMLoss,
    build_model,
    count_parameters,
    masked_logits,
    sync_free_mask,
    use_attention,
)
from helpers.presets import TrainConfig, check_choice, check_count, check_shards
from helpers.static_vectors import vocab_fingerprint
from pipeline import checkpoints as ck
from pipeline import distributed
from pipeline.runinfo import environment, pick_device

try:  # tqdm is on every machine we know of, but a bar is not worth a crash
    from tqdm.auto import tqdm
except ImportError:  # pragma: no cover
    tqdm = None

MODEL_NAMES = ("bert_tiny", "bert_ft")
# train_loss: mean over the steps since the previous row (NaN at step 0); lr: the rate the *next* step
# uses (read after the scheduler stepped), so it is 0.0 on the last row of a finished run.
METRIC_COLUMNS = ("step", "train_loss", "eval_loss", "eval_accuracy", "lr", "elapsed_s")
DATA_SUBDIR = "data"
CHECKPOINT_FILE = ck.CHECKPOINT_FILE
EVAL_POSITIONS_FILE = "eval_positions.npz"
EVAL_MASK_SEED = 1234  # fixed: the evaluation mask belongs to the data, not to a training seed


# --------------------------------------------------------------------------------------------
# Settings
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
        raise ValueError("no non-empty documents to tokenise; check the corpus (pipeline.data.load_corpus)")
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


def make_sequences(corpus: TokenizedCorpus, tokenizer: Any, seq_len: int,
                   packing: bool) -> tuple[np.ndarray, np.ndarray]:
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


def prepare_data(tokenizer: Any, train_texts: Iterable[str], eval_texts: Sequence[str], out_dir: str | Path,
                 seq_len: int = 128, packing: bool = False, lang: str = "unknown",
                 mlm_probability: float = 0.15, eval_mask_seed: int = EVAL_MASK_SEED,
                 corpus: str = "unknown", shards: bool = False, shard_size: int | None = None,
                 progress: bool = True) -> dict[str, Any]:
    """Write ``out_dir/data/``: train/eval sequences, the masked evaluation set, the tokenizer, meta.json.

    Returns the meta dictionary (counts, formats, where the files are). ``lang`` and ``corpus`` are
    recorded there and become part of every run's identity. With ``shards`` the training documents
    (any iterable, read once and lazily) go to memory-mapped shards in ``data/train_shards`` instead of
    ``train_ids.npy``: one sequence per document, as without shards; an interrupted run resumes there
    when called again with the same documents. meta.json's ``storage`` says which was written.
    """
    check_shards(shards, packing)
    data_dir = Path(out_dir) / DATA_SUBDIR
    data_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    meta: dict[str, Any] = {"seq_len": seq_len, "packing": packing, "lang": lang, "corpus": corpus,
                            "vocab_size": len(tokenizer),
                            "mlm_probability": mlm_probability, "eval_mask_seed": eval_mask_seed,
                            "pad_token_id": tokenizer.pad_token_id, "format": _format_note(packing, seq_len),
                            "vocab_sha256": vocab_fingerprint(tokenizer)}
    (data_dir / "meta.json").unlink(missing_ok=True)  # the folder is incomplete until the new meta.json is written
    if shards:
        meta["train"], meta["storage"] = write_train_shards(tokenizer, train_texts, data_dir, seq_len, shard_size,
                                                            progress)
    else:
        shutil.rmtree(data_dir / SHARDS_SUBDIR, ignore_errors=True)  # one training format per folder
        meta["storage"] = {"train": "npy"}
    for split, texts in (("train", train_texts), ("eval", eval_texts))[1 if shards else 0:]:
        tokens = tokenize_corpus(tokenizer, texts)
        ids, lengths = make_sequences(tokens, tokenizer, seq_len, packing)
        np.save(data_dir / f"{split}_ids.npy", ids)
        np.save(data_dir / f"{split}_lengths.npy", lengths)
        meta[split] = split_summary(tokens.n_docs, int(tokens.ids.size), lengths, seq_len,
                                    int(np.sum(np.diff(tokens.offsets) > seq_len - 2)))
        if split == "eval":
            masked, labels = fixed_eval_mask(tokenizer, ids, lengths, mlm_probability, eval_mask_seed)
            np.save(data_dir / "eval_masked_ids.npy", masked)
            np.save(data_dir / "eval_labels.npy", labels)
            meta["eval"]["masked_positions"] = int((labels != IGNORE_INDEX).sum())
    tokenizer.save_pretrained(str(data_dir / "tokenizer"))
    meta["seconds"] = round(time.perf_counter() - started, 2)
    (data_dir / "meta.json").write_text(json.dumps(meta, indent=2))
    return meta


SHARDS_SUBDIR = "train_shards"


def split_summary(documents: int, tokens: int, lengths: np.ndarray, seq_len: int, longer: int) -> dict[str, Any]:
    """meta.json's counts of one split (``lengths`` of its sequences, ``longer``: documents cut by seq_len)."""
    real = int(lengths.astype(np.int64).sum())
    return {"documents": documents, "tokens": tokens, "sequences": len(lengths), "real_positions": real,
            "padding_share": float(1 - real / (len(lengths) * seq_len)),
            "docs_longer_than_seq": float(longer / documents)}


def write_train_shards(tokenizer: Any, texts: Iterable[str], data_dir: Path, seq_len: int, shard_size: int | None,
                       progress: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Stream the training documents into ``data_dir/train_shards``; returns (meta's train counts, storage).

    A finished folder belongs to an earlier preparation and is replaced (as the .npy files would be); an
    unfinished one is continued, so the documents must be the same as in the interrupted call.
    """
    from pipeline import shards as S

    folder = data_dir / SHARDS_SUBDIR
    if (S.read_manifest(folder) or {}).get("complete"):
        shutil.rmtree(folder)
    shard_size = shard_size or S.DEFAULT_SHARD_SIZE
    # Documents are tokenised 1,000 at a time (fewer for tiny shards): memory holds one shard and one batch.
    manifest = S.write_shards(tokenizer, texts, folder, n_sequences=None, seq_len=seq_len, shard_size=shard_size,
                              batch_size=min(1_000, shard_size), progress=progress)
    if manifest["sequences"] == 0:
        raise ValueError("no non-empty documents to tokenise; check the corpus (pipeline.data.load_corpus)")
    for name in ("train_ids.npy", "train_lengths.npy"):  # one training format per folder
        (data_dir / name).unlink(missing_ok=True)
    lengths = np.asarray(S.open_shards(folder).lengths)  # 2 bytes a sequence: small even at the paper's scale
    summary = split_summary(manifest["sequences"], manifest["tokens"], lengths, seq_len, manifest["docs_longer"])
    storage = {"train": "shards", "folder": SHARDS_SUBDIR, "shards": len(manifest["shards"]),
               "shard_size": manifest["shard_size"], "documents_read": manifest["documents_read"]}
    return summary, storage


def _format_note(packing: bool, seq_len: int) -> str:
    if packing:
        return f"packed: documents joined with [SEP] and cut into [CLS] + {seq_len - 1} token blocks"
    return f"truncated per document (the paper): [CLS] doc[:{seq_len - 2}] [SEP], padded to {seq_len}"


@dataclass
class PreparedData:
    """What :func:`prepare_data` wrote, loaded back (numpy arrays; moved to the device per batch)."""

    train_ids: np.ndarray  # or pipeline.shards.ShardedArray (memory maps): indexed the same way
    train_lengths: np.ndarray
    eval_masked_ids: np.ndarray
    eval_lengths: np.ndarray
    eval_labels: np.ndarray
    meta: dict[str, Any]
    directory: Path

    @property
    def seq_len(self) -> int:
        return int(self.train_ids.shape[1])

    def train_batch(self, picked: np.ndarray, cut: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Token ids and lengths of the training sequences at ``picked``.

        ``cut`` drops the padding columns every row has (bucketed batches, where rows are of similar
        length). Random batches keep their full width, so their masks are the paper preset's.
        """
        ids, lengths = self.train_ids[picked], self.train_lengths[picked]
        return (ids[:, :int(np.max(lengths))] if cut else ids), lengths

    def fingerprint(self) -> str:
        """SHA-256 of every array and of meta.json (timings aside): the data part of a run's identity.

        The same digest as pipeline.checkpoints.arrays_fingerprint, computed a block of rows at a time so
        memory-mapped shards are never loaded whole; meta's ``storage`` (shards or .npy) is left out, so
        the same rows give the same identity however they are stored.
        """
        arrays = {"train_ids": self.train_ids, "train_lengths": self.train_lengths,
                  "eval_masked_ids": self.eval_masked_ids, "eval_lengths": self.eval_lengths,
                  "eval_labels": self.eval_labels}
        meta = {k: v for k, v in self.meta.items() if k != "storage"}
        digest = hashlib.sha256(ck.sha256_json(ck.without_timings(meta)).encode())
        for name in sorted(arrays):
            array, rows = arrays[name], 1 << 16  # 16 MB of 128 uint16 ids at a time
            digest.update(f"{name}:{np.dtype(array.dtype).str}:{tuple(array.shape)}".encode())
            for start in range(0, len(array), rows):
                digest.update(np.ascontiguousarray(array[start:start + rows]).tobytes())
        return digest.hexdigest()


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
    meta = json.loads((data_dir / "meta.json").read_text())
    if meta.get("storage", {}).get("train") == "shards":  # memory maps: rows are read from disk when picked
        from pipeline.shards import open_shards

        train = open_shards(data_dir / meta["storage"]["folder"])
        train_ids, train_lengths = train.ids, train.lengths
    else:
        train_ids, train_lengths = load("train_ids"), load("train_lengths")
    return PreparedData(train_ids, train_lengths, load("eval_masked_ids"), load("eval_lengths"), load("eval_labels"),
                        meta, data_dir)


def load_data_tokenizer(path: str | Path) -> Any:
    """The tokenizer saved next to the data (so a GPU machine needs only the data folder)."""
    from transformers import AutoTokenizer

    folder = resolve_data_dir(path) / "tokenizer"
    if not (folder / "tokenizer.json").exists():
        raise FileNotFoundError(f"no tokenizer.json in {folder}; rerun prepare_data")
    return AutoTokenizer.from_pretrained(str(folder))


# --------------------------------------------------------------------------------------------
# One training step
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


def step_options(cfg: TrainConfig, device: torch.device, world: distributed.World = distributed.World()) -> StepOptions:
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
                  world: distributed.World = distributed.World()) -> torch.nn.Module:
    """The masked-only loss as a module (sum, count): inside DistributedDataParallel with several processes,
    then compiled if asked (torch.compile outside DDP lets it split the graph at DDP's gradient buckets)."""
    module = distributed.wrap(MaskedLMLoss(model, options.max_masked), device, world)
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
    world: distributed.World = distributed.World()
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
        rows = distributed.my_rows(input_ids.shape[0], self.world)
        with self.autocast():
            total, count = self.loss_fn(input_ids[rows], self.encoder_mask(attention[rows]), labels[rows])
        return total * self.world.world_size / distributed.sum_over_processes(count, self.world)


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


def distribute(ctx: StepContext, world: distributed.World) -> StepContext:
    """The same step for one of several processes: the row cap sized for its share, the loss inside DDP."""
    distributed.my_rows(ctx.cfg.batch_size, world)  # refuse a batch that does not split evenly, before any step
    return replace(ctx, world=world)  # __post_init__ sizes the options and builds the loss for this world


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


def batch_to_device(ids: np.ndarray, lengths: np.ndarray, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    ids_t = torch.from_numpy(ids.astype(np.int64))
    len_t = torch.from_numpy(lengths.astype(np.int64))
    if device.type == "cuda":
        ids_t, len_t = ids_t.pin_memory(), len_t.pin_memory()
    return ids_t.to(device, non_blocking=True), len_t.to(device, non_blocking=True)


@dataclass
class Evaluation:
    """Loss and accuracy on the fixed masked evaluation set; per-position results when asked for."""

    loss: float
    accuracy: float
    positions: dict[str, np.ndarray] | None = None


@torch.no_grad()
def evaluate(model: torch.nn.Module, data: PreparedData, cfg: TrainConfig, device: torch.device,
             per_position: bool = False) -> Evaluation:
    """MLM loss (mean over masked tokens) and masked-token accuracy on the fixed evaluation set.

    With ``per_position`` also each masked position's loss and correctness, in reading order
    (sequence, then position), so figures can bootstrap over evaluation positions.
    """
    was_training = model.training
    model.eval()
    precision = step_options(cfg, device).precision
    n = len(data.eval_labels) if cfg.eval_sequences is None else min(cfg.eval_sequences, len(data.eval_labels))
    losses, corrects = [], []
    for start in range(0, n, cfg.eval_batch_size):
        stop = min(n, start + cfg.eval_batch_size)
        ids, lengths = batch_to_device(data.eval_masked_ids[start:stop], data.eval_lengths[start:stop], device)
        labels = torch.from_numpy(data.eval_labels[start:stop].astype(np.int64)).to(device)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
            logits, targets = masked_logits(model, ids, encoder_mask(model, lengths_to_mask(lengths, ids.shape[1]),
                                                                     cfg.packing), labels)
        losses.append(F.cross_entropy(logits, targets, reduction="none"))
        corrects.append(logits.argmax(dim=-1) == targets)
    model.train(was_training)
    loss, correct = torch.cat(losses), torch.cat(corrects)
    if loss.numel() == 0:
        raise ValueError("the evaluation set has no masked positions; prepare more evaluation documents")
    result = Evaluation(float(loss.double().mean().item()), float(correct.double().mean().item()))
    if per_position:
        sequence, position = np.nonzero(data.eval_labels[:n] != IGNORE_INDEX)
        result.positions = {"sequence": sequence.astype(np.int32), "position": position.astype(np.int16),
                            "correct": correct.cpu().numpy().astype(bool),
                            "loss": loss.float().cpu().numpy().astype(np.float32)}
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


def make_sampler(cfg: TrainConfig, data: PreparedData, seed: int) -> Any:
    """The batch order: seeded random epochs, or length buckets (helpers.batching, imported only then)."""
    if cfg.batching == "bucketed":
        from helpers.batching import BucketedBatchSampler

        return BucketedBatchSampler(np.asarray(data.train_lengths), cfg.batch_size, seed)
    return BatchSampler(len(data.train_ids), cfg.batch_size, seed)


# --------------------------------------------------------------------------------------------
# The training loop
# --------------------------------------------------------------------------------------------


def check_model_init(model_name: str, init: InitSpec) -> None:
    """BERT_TINY starts from random embeddings and BERT_FT from static vectors; anything else is mislabelled."""
    check_choice("model name", model_name, MODEL_NAMES)
    random = isinstance(init, str) and init == "random"
    if model_name == "bert_ft" and random:
        raise ValueError("bert_ft needs static vectors: pass init (--init) = the static/ folder notebook 03 wrote")
    if model_name == "bert_tiny" and not random:
        raise ValueError(f"bert_tiny starts from random embeddings, but init={str(init)!r} was given; "
                         "use --model bert_ft for static vectors, or --init random")


def check_same_vocabulary(init: InitSpec, meta: Mapping[str, Any]) -> None:
    """Refuse a static matrix aligned to another tokenizer than the data's (same size, other tokens or order).

    Folders written before fingerprints were recorded carry none; they pass, as the shape check alone did.
    """
    manifest = ck.init_record(init)["manifest"] or {}
    built_for, data_for = manifest.get("vocab_sha256"), meta.get("vocab_sha256")
    if built_for and data_for and built_for != data_for:
        raise ValueError("the static vectors were aligned to a different vocabulary than the one the data was "
                         "prepared with (same size, other tokens or order); rerun notebook 03 with the tokenizer "
                         "saved in the data folder, or prepare the data with the tokenizer notebook 03 used")


def pick_attention(cfg: TrainConfig, device: torch.device) -> str:
    """The attention kernel a run on ``device`` uses (see step_options)."""
    return step_options(cfg, device).attention


def train(model_name: str, init: InitSpec, cfg: TrainConfig, data_dir: str | Path, out_dir: str | Path,
          tokenizer: Any = None, device: str = "auto", seed: int = 0, resume: bool = True,
          stop_at: int | None = None, progress: bool = True,
          model_overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Pretrain one model; write metrics.csv, run.json, model/, eval_positions.npz (and checkpoint.pt)
    under ``out_dir/model_name``.

    ``init`` is 'random' (BERT_TINY) or a static-vector folder / Alignment (BERT_FT). ``stop_at``
    ends the call after that step with a checkpoint (the next call with ``resume=True`` continues);
    it exists for time-boxed sessions and for the resume test. ``model_overrides`` change the Table 4
    config (the unit tests use a tiny model). Returns run.json's content. A non-finite loss or
    gradient norm raises TrainingDiverged after run.json records ``finished: false`` and the step.
    Started by torchrun, each process trains on its share of every batch (pipeline.distributed) and
    process 0 alone writes the files.
    """
    world = distributed.from_environment()
    dev = distributed.process_device(pick_device(device), world)
    threads = torch.get_num_threads()
    if cfg.cpu_threads and dev.type == "cpu":
        torch.set_num_threads(cfg.cpu_threads)
    try:
        with distributed.process_group(dev, world):
            return _train(model_name, init, cfg, data_dir, out_dir, tokenizer, dev, world, seed, resume, stop_at,
                          progress, model_overrides)
    finally:
        torch.set_num_threads(threads)


def _train(model_name: str, init: InitSpec, cfg: TrainConfig, data_dir: str | Path, out_dir: str | Path,
           tokenizer: Any, dev: torch.device, world: distributed.World, seed: int, resume: bool,
           stop_at: int | None, progress: bool, model_overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    # --- set up: data, model, optimiser, batch order, identity (all checked before any step) ---
    check_model_init(model_name, init)
    if stop_at is not None:
        check_count("stop_at", stop_at)
    data = load_data(data_dir)
    if data.seq_len != cfg.seq_len or bool(data.meta["packing"]) != cfg.packing:
        raise ValueError(f"the prepared data has seq_len={data.seq_len}, packing={data.meta['packing']} but the "
                         f"config asks for seq_len={cfg.seq_len}, packing={cfg.packing}; rerun prepare_data")
    tokenizer = tokenizer if tokenizer is not None else load_data_tokenizer(data.directory)
    if len(tokenizer) != data.meta["vocab_size"]:
        raise ValueError(f"the tokenizer has {len(tokenizer)} tokens but the data was prepared with "
                         f"{data.meta['vocab_size']}; use the tokenizer saved in {data.directory / 'tokenizer'}")
    check_same_vocabulary(init, data.meta)
    run_dir = Path(out_dir) / model_name
    if world.is_main:
        run_dir.mkdir(parents=True, exist_ok=True)

    overrides = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id, **(model_overrides or {})}
    model = build_model(init, seed=seed, **overrides)
    use_attention(model, step_options(cfg, dev, world).attention)
    model.to(dev).train()
    # Every process draws the same masks (the collator's seed) but its own dropout (a stream per process).
    dropout_seed = distributed.dropout_seed(seed, world)
    torch.manual_seed(dropout_seed)  # the dropout stream starts in the same place for both models
    ctx = make_step_context(model, cfg, tokenizer, str(dev), seed)
    if world.distributed:
        ctx = distribute(ctx, world)
    sampler = make_sampler(cfg, data, seed)
    record = run_record(model_name, init, cfg, seed, data, tokenizer, model, dev)
    record.update(world_size=world.world_size, step_options=asdict(ctx.options))
    key = {"model_name": model_name, "identity": record["identity"], "init": record["init"],
           "model_overrides": overrides, "world_size": world.world_size}

    # --- resume where a checkpoint of this same run stopped (process 0 reads it and hands it to the others) ---
    step, rows, running, running_n, elapsed = 0, [], 0.0, 0, 0.0
    ckpt_path = run_dir / CHECKPOINT_FILE
    ckpt = read_checkpoint_on_main(ckpt_path, resume, world)
    if ckpt is not None:
        ck.check_resumable(ckpt_path, ckpt["key"], key, ckpt.get("train_config"), asdict(cfg))
        model.load_state_dict(ckpt["model"])  # onto the parameters' device
        ctx.optimizer.load_state_dict(ckpt["optimizer"])
        ctx.scheduler.load_state_dict(ckpt["scheduler"])
        rng = ckpt.get("process_rng", [ckpt["rng"]])[world.rank]
        ck.set_rng_state(rng, ctx.collator.generator(dev), dev, None)
        step, rows, elapsed = ckpt["step"], ckpt["metrics"], ckpt["elapsed_s"]
        running, running_n = ckpt["running_loss"]
    record.update(finished=False, steps_done=step)
    if world.is_main:
        ck.write_run_json(run_dir, record)

    last = cfg.steps if stop_at is None else min(cfg.steps, stop_at)
    started = time.perf_counter() - elapsed
    running = torch.tensor(running, device=dev)
    guard = FiniteGuard(dev)
    bar = tqdm(total=cfg.steps, initial=step, desc=model_name, mininterval=10, dynamic_ncols=True) \
        if progress and tqdm is not None and world.is_main else None

    def log_eval(at: int) -> None:
        nonlocal running, running_n
        final = at == cfg.steps
        result = evaluate(model, data, cfg, dev, per_position=final)
        train_loss = float(running.item()) / running_n if running_n else float("nan")
        rows.append({"step": at, "train_loss": train_loss, "eval_loss": result.loss, "eval_accuracy": result.accuracy,
                     "lr": ctx.scheduler.get_last_lr()[0], "elapsed_s": round(time.perf_counter() - started, 2)})
        running, running_n = torch.zeros((), device=dev), 0
        write_metrics(run_dir / "metrics.csv", rows)
        if final:
            np.savez(run_dir / EVAL_POSITIONS_FILE, **result.positions)
        if bar is not None:
            bar.set_postfix(train=f"{train_loss:.3f}", eval=f"{result.loss:.3f}", acc=f"{result.accuracy:.3f}",
                            refresh=False)

    # --- the loop: batch, step, and every so often evaluate and checkpoint ---
    try:
        if step == 0 and not rows and world.is_main:
            log_eval(0)
        while step < last:
            picked = sampler.indices(step)
            ids, lengths = batch_to_device(*data.train_batch(picked, cut=cfg.batching == "bucketed"), dev)
            loss, grad_norm = train_step(ctx, ids, lengths)
            loss = distributed.sum_over_processes(loss, world) / world.world_size  # the whole batch's loss
            step += 1
            guard.watch(step, loss, grad_norm)
            running += loss.float()
            running_n += 1
            if bar is not None:
                bar.update(1)
            if step % cfg.eval_every == 0 or step == cfg.steps:
                guard.check()
                if world.is_main:
                    log_eval(step)
            if step % cfg.checkpoint_every == 0 or step == last:
                guard.check()
                save_on_main(ckpt_path, ctx, world, {
                    "key": key, "train_config": asdict(cfg), "step": step, "metrics": rows,
                    "sampler": sampler.state(step), "running_loss": (float(running.item()), running_n),
                    "elapsed_s": time.perf_counter() - started})
    except TrainingDiverged as err:
        record.update(finished=False, steps_done=err.step, stopped=str(err))
        if world.is_main:
            ck.write_run_json(run_dir, record)
        raise
    finally:
        if bar is not None:
            bar.close()

    record.update(finished=step >= cfg.steps, steps_done=step, train_seconds=round(time.perf_counter() - started, 2))
    if world.is_main:
        if step >= cfg.steps:
            model.save_pretrained(str(run_dir / "model"))
        ck.write_run_json(run_dir, record)
    return record


def read_checkpoint_on_main(path: Path, resume: bool, world: distributed.World) -> dict[str, Any] | None:
    """The checkpoint to resume from (None: start afresh), read by process 0 and handed to every process,
    so several machines need no shared disk; an unreadable file raises the same error in every process."""
    payload: Any = None
    if world.is_main and resume and path.exists():
        try:
            payload = ck.load_checkpoint(path)
        except ck.CheckpointError as err:
            payload = err
    payload = distributed.broadcast_from_main(payload, world)
    if isinstance(payload, Exception):
        raise payload
    return payload


def save_on_main(path: Path, ctx: StepContext, world: distributed.World, payload: dict[str, Any]) -> None:
    """Process 0 writes the checkpoint, with every process's random streams (each draws its own dropout)."""
    dev = ctx.device
    rng = ck.rng_state(ctx.collator.generator(dev), dev, None)
    process_rng = distributed.gather_to_main(rng, world)
    if world.is_main:
        ck.save_checkpoint(path, {**payload, "model": ctx.model.state_dict(), "optimizer": ctx.optimizer.state_dict(),
                                  "scheduler": ctx.scheduler.state_dict(), "rng": rng, "process_rng": process_rng})


def run_record(model_name: str, init: InitSpec, cfg: TrainConfig, seed: int, data: PreparedData, tokenizer: Any,
               model: torch.nn.Module, device: torch.device) -> dict[str, Any]:
    """run.json: the run's identity and init first, then what a reader wants to know about it."""
    init_info = ck.init_record(init)
    identity = ck.run_identity(data.meta.get("lang"), seed, cfg, data.meta.get("corpus"), data.fingerprint(),
                               vocab_fingerprint(tokenizer))
    return {
        "model_name": model_name, "identity": identity,
        "init": {k: init_info[k] for k in ("kind", "manifest_sha256", "embeddings_sha256", "source")},
        "preset": cfg.name, "lang": data.meta.get("lang"), "corpus": data.meta.get("corpus"), "steps": cfg.steps,
        "max_steps": cfg.max_steps, "batch_size": cfg.batch_size, "seq_len": cfg.seq_len, "seed": seed,
        "init_manifest": init_info["manifest"], "parameters": count_parameters(model),
        "attention": model.config._attn_implementation, "train_config": asdict(cfg),
        "model_config": model.config.to_dict(), "data": data.meta, "data_dir": str(data.directory),
        "environment": environment(str(device)),
    }


# --------------------------------------------------------------------------------------------
# Metrics, and comparing the two runs
# --------------------------------------------------------------------------------------------


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


def _rows(metrics: str | Path | Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return read_metrics(metrics) if isinstance(metrics, (str, Path)) else list(metrics)


def _identity_beside(metrics: Any) -> dict[str, Any] | None:
    """The identity in the run.json next to a metrics.csv path (None for rows given directly)."""
    if not isinstance(metrics, (str, Path)):
        return None
    record = ck.read_run_json(Path(metrics).parent)
    return record.get("identity") if record else None


def compare_runs(tiny_metrics: str | Path | Sequence[Mapping[str, Any]],
                 ft_metrics: str | Path | Sequence[Mapping[str, Any]],
                 tiny_identity: Mapping[str, Any] | None = None,
                 ft_identity: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The paper's comparison: final numbers of both models and when BERT_FT reached BERT_TINY's final ones.

    Refuses runs whose identities differ (read from the run.json beside each metrics.csv, or given).
    A crossing is helpers.crossing's: the first evaluation after step 0 that is strictly better.
    """
    tiny_identity = tiny_identity if tiny_identity is not None else _identity_beside(tiny_metrics)
    ft_identity = ft_identity if ft_identity is not None else _identity_beside(ft_metrics)
    ck.check_same_experiment(tiny_identity, ft_identity)
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
    steps = [r["step"] for r in ft]
    loss_step = crossing_step(steps, [r["eval_loss"] for r in ft], t["eval_loss"], lower_is_better=True)
    acc_step = crossing_step(steps, [r["eval_accuracy"] for r in ft], t["eval_accuracy"], lower_is_better=False)
    return {
        "bert_tiny_final": t, "bert_ft_final": f,
        "ft_steps_to_tiny_final_eval_loss": loss_step,
        "ft_steps_to_tiny_final_eval_accuracy": acc_step,
        "ft_fraction_to_tiny_final_eval_loss": fraction_of(loss_step, t["step"]),
        "ft_fraction_to_tiny_final_eval_accuracy": fraction_of(acc_step, t["step"]),
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
    from pipeline.train_cli import main

    sys.exit(main())
