"""Pretraining text as fixed-length sequences, in memory or streamed into memory-mapped ``uint16`` shards.

pipeline.train.prepare keeps the sequences in memory; for the paper's 12.8 million sequences :func:`write_shards`
streams
the same rows into shards, memory staying at one shard plus one batch. The manifest records each finished shard
with the documents read so far, so an interrupted run resumes at the next shard. Several files, not one
``np.memmap``: the number of sequences is unknown until the stream ends, and shards cost little (20,000 documents:
1.8-2.2 s in twenty shards against 1.7-2.0 s in one; 6,400 random rows read in 6 ms against 2 ms).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple, Sequence

import numpy as np
import torch

from helpers.masking import MLMCollator
from helpers.pretrain import lengths_to_mask
from helpers.static_vectors import vocab_fingerprint
from pipeline.store import checkpoints as ck
from pipeline.store.layout import ShardFiles
from pipeline.store.staging import written_whole

EVAL_MASK_SEED = 1234  # fixed: the evaluation mask belongs to the data, not to a training seed
NO_DOCUMENTS = ("no non-empty documents to tokenise (or none gave a token); check the corpus "
                "(pipeline.corpora.data.load_corpus)")
FORMAT = "truncated per document (the paper): [CLS] doc[:seq_len-2] [SEP], padded to seq_len"
ID_DTYPE = np.dtype(np.uint16)
MAX_VOCAB = int(np.iinfo(np.uint16).max) + 1  # ids 0..65,535
DEFAULT_SHARD_SIZE = 100_000  # sequences per shard: 100,000 x 128 x 2 bytes = 25.6 MB


class TokenizedCorpus(NamedTuple):
    """All documents' token ids end to end (no special tokens) plus where each document starts."""

    ids: np.ndarray  # uint16 when the vocabulary fits, else int32
    offsets: np.ndarray  # int64, one more than the documents


def offsets_of(docs: Sequence[Sequence[int]]) -> np.ndarray:
    return np.cumsum([0, *map(len, docs)], dtype=np.int64)


def encoded_documents(tokenizer: Any, docs: Iterator[str], batch_size: int) -> Iterator[list[int]]:
    """Token ids (no special tokens) of each document, ``batch_size`` tokenised at a time; an empty one gives []."""
    while batch := list(itertools.islice(docs, batch_size)):
        for text in batch:
            if not isinstance(text, str):
                raise TypeError(f"documents must be strings, got {type(text).__name__}")
        kept = [text for text in batch if text.strip()]
        # verbose=False: documents longer than 128 tokens are expected here (cut later), not a mistake.
        encoded = iter(tokenizer(kept, add_special_tokens=False, verbose=False, return_attention_mask=False,
                                 return_token_type_ids=False)["input_ids"] if kept else [])
        yield from [next(encoded) if text.strip() else [] for text in batch]


def tokenize_corpus(tokenizer: Any, texts: Sequence[str], batch_size: int = 1_000) -> TokenizedCorpus:
    """Batched fast tokenisation into one flat array; empty documents are dropped."""
    dtype = ID_DTYPE if len(tokenizer) <= MAX_VOCAB else np.dtype(np.int32)  # uint16 halves files and memory
    chunks = [np.asarray(ids, dtype=dtype) for ids in encoded_documents(tokenizer, (t for t in texts if t), batch_size)
              if ids]
    if not chunks:
        raise ValueError(NO_DOCUMENTS)
    return TokenizedCorpus(np.concatenate(chunks), offsets_of(chunks))


def truncate_sequences(corpus: TokenizedCorpus, seq_len: int, cls_id: int, sep_id: int,
                       pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """The paper's format: one example per document, ``[CLS] doc[:seq_len-2] [SEP]``, then padding (the rest of a
    long document is lost). Returns (ids [n, seq_len], lengths [n])."""
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


def make_sequences(corpus: TokenizedCorpus, tokenizer: Any, seq_len: int,
                   packing: bool) -> tuple[np.ndarray, np.ndarray]:
    """The paper's truncated rows, or packed: documents joined with [SEP], cut into ``[CLS] + seq_len-1`` token
    blocks (the tail dropped). Packing pads nothing (~1.4x the text per step on the embedded corpus) and keeps long
    documents whole, but attention crosses document boundaries."""
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    if not packing:
        return truncate_sequences(corpus, seq_len, cls_id, sep_id, tokenizer.pad_token_id)
    stream = np.insert(corpus.ids, corpus.offsets[1:], sep_id)
    block = seq_len - 1
    n = len(stream) // block
    if n == 0:
        raise ValueError(f"the corpus has {len(stream)} tokens, too few for one packed block of {seq_len}")
    out = np.empty((n, seq_len), dtype=corpus.ids.dtype)
    out[:, 0] = cls_id
    out[:, 1:] = stream[:n * block].reshape(n, block)
    return out, np.full(n, seq_len, dtype=np.int16)


def fixed_eval_mask(tokenizer: Any, ids: np.ndarray, lengths: np.ndarray, mlm_probability: float = 0.15,
                    seed: int = EVAL_MASK_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Mask the evaluation sequences once, so every evaluation of every model scores the same positions."""
    collator = MLMCollator(tokenizer, mlm_probability=mlm_probability, seed=seed)
    input_ids = torch.from_numpy(ids.astype(np.int64))
    masked = collator.mask(input_ids, lengths_to_mask(torch.from_numpy(lengths.astype(np.int64)), ids.shape[1]))
    return masked["input_ids"].numpy().astype(ids.dtype), masked["labels"].numpy().astype(np.int32)


def check_vocab_fits(vocab_size: int) -> None:
    """uint16 holds ids 0..65,535; a larger vocabulary would wrap around silently, so refuse it."""
    if vocab_size > MAX_VOCAB:
        raise ValueError(f"a vocabulary of {vocab_size:,} tokens does not fit uint16 shards (at most {MAX_VOCAB:,} "
                         "ids); use a smaller vocabulary or prepare_data without shards, which switches to int32")


def read_manifest(out_dir: str | Path) -> dict[str, Any] | None:
    return ck.read_run_json(ShardFiles(Path(out_dir)).manifest)


def _start(out_dir: Path, tokenizer: Any, seq_len: int, shard_size: int, n_sequences: int | None) -> dict[str, Any]:
    """The manifest to continue from: the existing one if it was written with the same settings (else the shards
    would mix two datasets), or a fresh one."""
    identity = {"format": FORMAT, "seq_len": seq_len, "shard_size": shard_size, "n_sequences": n_sequences,
                "vocab_size": len(tokenizer), "vocab_sha256": vocab_fingerprint(tokenizer),
                "special_ids": {"cls": tokenizer.cls_token_id, "sep": tokenizer.sep_token_id,
                                "pad": tokenizer.pad_token_id}}
    manifest = read_manifest(out_dir)
    if manifest is None:
        return {**identity, "shards": [], "documents_read": 0, "sequences": 0, "tokens": 0, "docs_longer": 0,
                "complete": False}
    differs = sorted(k for k, v in identity.items() if manifest.get(k) != v)
    if differs:
        raise ValueError(f"{out_dir} holds shards written with different settings ({', '.join(differs)}); "
                         "write to an empty folder or delete this one")
    return manifest


def _kept_rows(docs: Iterable[list[int]], seq_len: int, counts: dict[str, int]) -> Iterator[list[int]]:
    """The non-empty documents (prepare_data drops empty ones too) cut to the seq_len - 2 tokens ever used; counts
    the documents read and the kept ones' tokens and cuts in ``counts``, up to the document last given."""
    for doc in docs:
        counts["documents_read"] += 1
        if doc:
            counts["tokens"] += len(doc)
            counts["docs_longer"] += len(doc) > seq_len - 2
            yield doc[:seq_len - 2]


def _save_shard(files: ShardFiles, manifest: dict[str, Any], ids: np.ndarray, lengths: np.ndarray,
                counts: dict[str, int]) -> None:
    """Save the next shard; it counts only once the manifest, written after it, says so."""
    index = len(manifest["shards"])
    for kind, rows in (("ids", ids), ("lengths", lengths)):
        with written_whole(files.shard(index, kind)) as tmp:  # a .npy name, so np.save adds no suffix
            np.save(tmp, rows)
    manifest["shards"].append({"ids": files.shard(index, "ids").name, "lengths": files.shard(index, "lengths").name,
                               "sequences": len(ids)})
    manifest["sequences"] += len(ids)
    manifest.update(counts)
    ck.write_run_json(files.manifest, manifest, indent=1)


def write_shards(tokenizer: Any, documents: Iterable[str], out_dir: str | Path, n_sequences: int | None = None,
                 seq_len: int = 128, shard_size: int = DEFAULT_SHARD_SIZE, batch_size: int = 1_000,
                 progress: bool = True) -> dict[str, Any]:
    """Write up to ``n_sequences`` sequences (None: the whole stream) into ``out_dir``; resume if started, so
    ``documents`` must give the same documents in the same order on every call. Returns the manifest: the counts,
    ``documents_read`` (how many documents the finished shards used), ``tokens`` and ``docs_longer``."""
    from tqdm.auto import tqdm

    check_vocab_fits(len(tokenizer))
    if seq_len < 3 or shard_size < 1 or batch_size < 1 or (n_sequences is not None and n_sequences < 1):
        raise ValueError("seq_len must be at least 3 and shard_size, batch_size and n_sequences at least 1")
    files = ShardFiles(Path(out_dir))
    files.folder.mkdir(parents=True, exist_ok=True)
    manifest = _start(files.folder, tokenizer, seq_len, shard_size, n_sequences)
    if manifest["complete"]:
        return manifest
    wanted = n_sequences if n_sequences is not None else float("inf")
    docs, used = iter(documents), manifest["documents_read"]
    skipped = sum(1 for _ in itertools.islice(docs, used))  # the documents the finished shards hold: read, not encoded
    if skipped < used:
        raise ValueError(f"the stream has {skipped:,} documents, fewer than the {used:,} the finished shards "
                         "used; resume with the same documents")
    counts = {k: manifest.get(k, 0) for k in ("documents_read", "tokens", "docs_longer")}  # of the finished shards
    rows = _kept_rows(encoded_documents(tokenizer, docs, batch_size), seq_len, counts)
    specials = (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id)
    ids, lengths = np.empty((shard_size, seq_len), dtype=ID_DTYPE), np.empty(shard_size, dtype=np.int16)
    with tqdm(total=n_sequences, initial=manifest["sequences"], unit="seq", desc="tokenising",
              disable=not progress) as bar:
        while manifest["sequences"] < wanted:  # one shard (all the memory used) a turn, filled a batch at a time
            room, filled = min(shard_size, wanted - manifest["sequences"]), 0
            while filled < room and (batch := list(itertools.islice(rows, min(batch_size, room - filled)))):
                end, offsets = filled + len(batch), offsets_of(batch)
                flat = np.fromiter(itertools.chain.from_iterable(batch), dtype=ID_DTYPE, count=int(offsets[-1]))
                ids[filled:end], lengths[filled:end] = truncate_sequences(TokenizedCorpus(flat, offsets), seq_len,
                                                                          *specials)
                filled = end
                bar.update(len(batch))
            if filled:
                _save_shard(files, manifest, ids[:filled], lengths[:filled], counts)
            if filled < room:
                break  # the stream ended
    manifest["complete"] = True
    manifest["exhausted"] = manifest["sequences"] < wanted  # the stream ended before n_sequences
    ck.write_run_json(files.manifest, manifest, indent=1)
    return manifest


class ShardedArray:
    """Equal-sized memory-mapped shards seen as one array: ``a[i]``, ``a[start:stop]``, ``a[index_array]`` read only
    those rows from disk, into an ordinary numpy array."""

    def __init__(self, parts: Sequence[np.ndarray], shard_size: int) -> None:
        self.parts, self.shard_size = list(parts), shard_size
        self.length = sum(len(p) for p in self.parts)
        self.shape = (self.length, *self.parts[0].shape[1:])
        self.dtype = self.parts[0].dtype

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, key: Any) -> np.ndarray:
        rows = np.arange(*key.indices(self.length)) if isinstance(key, slice) else np.asarray(key)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        rows = np.where(rows < 0, rows + self.length, rows)
        if rows.size and (rows.min() < 0 or rows.max() >= self.length):
            raise IndexError(f"index {key} is out of range for {self.length} rows")
        out = np.empty((*rows.shape, *self.shape[1:]), dtype=self.dtype)
        shard, within = np.divmod(rows, self.shard_size)
        for s in np.unique(shard):
            picked = shard == s
            out[picked] = self.parts[s][within[picked]]
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.concatenate([np.asarray(p) for p in self.parts]).astype(dtype or self.dtype, copy=False)


class Shards(NamedTuple):
    """What :func:`write_shards` wrote: ``ids`` [n, seq_len] uint16 and ``lengths`` [n] int16."""

    ids: ShardedArray
    lengths: ShardedArray


def open_shards(out_dir: str | Path, allow_incomplete: bool = False) -> Shards:
    """The finished shards of ``out_dir`` as memory maps; refuse an interrupted folder unless asked."""
    out = Path(out_dir)
    manifest = read_manifest(out)
    if manifest is None or not manifest["shards"]:
        raise FileNotFoundError(f"no shards in {out}; write them with pipeline.train.shards.write_shards")
    if not manifest["complete"] and not allow_incomplete:
        raise ValueError(f"the shards in {out} are incomplete (interrupted after {manifest['sequences']:,} "
                         "sequences); run write_shards again with the same documents to finish them")
    ids, lengths = (ShardedArray([np.load(out / shard[kind], mmap_mode="r", allow_pickle=False)
                                  for shard in manifest["shards"]], manifest["shard_size"])
                    for kind in ("ids", "lengths"))
    return Shards(ids, lengths)
