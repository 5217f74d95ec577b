"""Tokenise a document stream once into memory-mapped ``uint16`` shards (the ``paper`` preset's data).

The paper's 12.8 million sequences are too many to tokenise in memory the way
``pipeline.prepare.prepare_data`` does for the demo; the shards hold exactly its rows, and memory stays at one
shard plus one batch. Each shard is renamed into place when complete, then the manifest records it with the
number of documents read so far, so an interrupted :func:`write_shards` resumes at the next shard.

Why several files and not one pre-allocated ``np.memmap``: the number of sequences is not known
before the stream is read (``prepare_data`` passes ``n_sequences=None``), so one file would need a
counting pass over the stream first (a second download of a Hub corpus) or a file that is grown and
re-mapped, and its resume point would still need this manifest. Files cost little: on 20,000 embedded
English documents (3,000-token vocabulary, 2-core CPU, two runs) tokenising alone took 1.6 s,
write_shards 1.7-2.0 s with one shard and 1.8-2.2 s with twenty shards of 1,000, and reading 6,400
random rows took 2 ms from one shard and 6 ms from twenty. So the shards stay.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from pipeline.layout import ShardFiles
from pipeline.sequences import TokenizedCorpus, encode, offsets_of, truncate_sequences

FORMAT = "truncated per document (the paper): [CLS] doc[:seq_len-2] [SEP], padded to seq_len"
ID_DTYPE = np.dtype(np.uint16)
LENGTH_DTYPE = np.dtype(np.int16)  # as prepare_data stores lengths
MAX_VOCAB = int(np.iinfo(np.uint16).max) + 1  # ids 0..65,535
DEFAULT_SHARD_SIZE = 100_000  # sequences per shard: 100,000 x 128 x 2 bytes = 25.6 MB


def check_vocab_fits(vocab_size: int) -> None:
    """uint16 holds ids 0..65,535; a larger vocabulary would wrap around silently, so refuse it."""
    if vocab_size > MAX_VOCAB:
        raise ValueError(f"a vocabulary of {vocab_size:,} tokens does not fit uint16 shards (at most {MAX_VOCAB:,} "
                         "ids); use a smaller vocabulary or prepare_data without shards, which switches to int32")


# ---- Writing ----


def _identity(tokenizer: Any, seq_len: int, shard_size: int, n_sequences: int | None) -> dict[str, Any]:
    """What a resumed run must share with the interrupted one, or the shards would mix two datasets."""
    from helpers.static_vectors import vocab_fingerprint

    return {"format": FORMAT, "seq_len": seq_len, "shard_size": shard_size, "n_sequences": n_sequences,
            "vocab_size": len(tokenizer), "vocab_sha256": vocab_fingerprint(tokenizer),
            "special_ids": {"cls": tokenizer.cls_token_id, "sep": tokenizer.sep_token_id,
                            "pad": tokenizer.pad_token_id}}


def read_manifest(out_dir: str | Path) -> dict[str, Any] | None:
    path = ShardFiles(Path(out_dir)).manifest
    return json.loads(path.read_text()) if path.is_file() else None


def _write_atomically(path: Path, write: Callable[[IO[bytes]], Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        write(handle)
    os.replace(tmp, path)


def _write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    _write_atomically(path, lambda handle: handle.write(json.dumps(manifest, indent=1).encode()))


def _start(out_dir: Path, identity: dict[str, Any]) -> dict[str, Any]:
    """The manifest to continue from: the existing one if it matches, else a fresh one."""
    manifest = read_manifest(out_dir)
    if manifest is None:
        return {**identity, "shards": [], "documents_read": 0, "sequences": 0, "tokens": 0, "docs_longer": 0,
                "complete": False}
    differs = sorted(k for k, v in identity.items() if manifest.get(k) != v)
    if differs:
        raise ValueError(f"{out_dir} holds shards written with different settings ({', '.join(differs)}); "
                         "write to an empty folder or delete this one")
    return manifest


def _skip_used(docs: Iterator[str], used: int) -> Iterator[str]:
    """The stream after the ``used`` documents the finished shards hold (read, not tokenised)."""
    skipped = sum(1 for _ in itertools.islice(docs, used))
    if skipped < used:
        raise ValueError(f"the stream has {skipped:,} documents, fewer than the {used:,} the finished shards "
                         "used; resume with the same documents")
    return docs


def _encoded_batches(tokenizer: Any, docs: Iterator[str], batch_size: int) -> Iterator[list[list[int]]]:
    """Token ids (no special tokens) of each document, one list per batch; empty documents give []."""
    while batch := list(itertools.islice(docs, batch_size)):
        for text in batch:
            if not isinstance(text, str):
                raise TypeError(f"documents must be strings, got {type(text).__name__}")
        kept = [text for text in batch if text.strip()]
        encoded = iter(encode(tokenizer, kept) if kept else [])
        yield [next(encoded) if text.strip() else [] for text in batch]


def sequence_rows(docs: Sequence[Sequence[int]], seq_len: int, cls_id: int, sep_id: int,
                  pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Documents' ids into ``prepare_data``'s rows: [CLS] doc[:seq_len-2] [SEP] padding, and their lengths."""
    offsets = offsets_of(docs)
    flat = np.fromiter(itertools.chain.from_iterable(docs), dtype=ID_DTYPE, count=int(offsets[-1]))
    return truncate_sequences(TokenizedCorpus(flat, offsets), seq_len, cls_id, sep_id, pad_id)


class _ShardWriter:
    """Fills one shard in memory (all the memory used) and saves it when full; the manifest counts saved ones."""

    def __init__(self, files: ShardFiles, manifest: dict[str, Any], specials: tuple[int, int, int], bar: Any) -> None:
        self.files, self.manifest, self.specials, self.bar = files, manifest, specials, bar
        self.seq_len, self.shard_size = manifest["seq_len"], manifest["shard_size"]
        self.ids = np.empty((self.shard_size, self.seq_len), dtype=ID_DTYPE)
        self.lengths = np.empty(self.shard_size, dtype=LENGTH_DTYPE)
        self.filled, self.read = 0, manifest["documents_read"]
        self.tokens, self.longer = manifest.get("tokens", 0), manifest.get("docs_longer", 0)  # of the kept documents

    def take(self, batch: list[list[int]], wanted: float) -> bool:
        """Add one batch of encoded documents; True once ``wanted`` sequences are saved."""
        rows: list[list[int]] = []
        for doc in batch:
            self.read += 1
            if not doc:
                continue  # empty documents are dropped, as prepare_data drops them
            rows.append(doc[:self.seq_len - 2])  # only the first seq_len - 2 tokens are ever used
            self.tokens += len(doc)
            self.longer += len(doc) > self.seq_len - 2
            pending = self.filled + len(rows)  # rows of the shard being filled
            if pending == self.shard_size or self.manifest["sequences"] + pending >= wanted:
                self._add(rows)
                rows = []
                self.save_shard()
                if self.manifest["sequences"] >= wanted:
                    return True
        if rows:
            self._add(rows)
        return self.manifest["sequences"] >= wanted

    def _add(self, rows: list[list[int]]) -> None:
        block, lengths = sequence_rows(rows, self.seq_len, *self.specials)
        end = self.filled + len(rows)
        self.ids[self.filled:end], self.lengths[self.filled:end] = block, lengths
        self.filled = end
        self.bar.update(len(rows))

    def save_shard(self) -> None:
        """Save the rows filled so far as the next shard; it counts only once the manifest says so."""
        if not self.filled:
            return
        index, manifest = len(self.manifest["shards"]), self.manifest
        _write_atomically(self.files.ids(index), partial(np.save, arr=self.ids[:self.filled]))
        _write_atomically(self.files.lengths(index), partial(np.save, arr=self.lengths[:self.filled]))
        manifest["shards"].append({"ids": self.files.ids(index).name, "lengths": self.files.lengths(index).name,
                                   "sequences": self.filled})
        manifest["sequences"] += self.filled
        manifest["documents_read"] = self.read
        manifest["tokens"], manifest["docs_longer"] = self.tokens, self.longer
        _write_manifest(self.files.manifest, manifest)
        self.filled = 0


def write_shards(tokenizer: Any, documents: Iterable[str], out_dir: str | Path, n_sequences: int | None = None,
                 seq_len: int = 128, shard_size: int = DEFAULT_SHARD_SIZE, batch_size: int = 1_000,
                 progress: bool = True) -> dict[str, Any]:
    """Write up to ``n_sequences`` sequences (None: the whole stream) into ``out_dir``; resume if started.

    ``documents`` must give the same documents in the same order on every call (a file, a seeded
    stream); the manifest's ``documents_read`` says how many of them the finished shards used.
    Returns the manifest; besides the counts above it records ``tokens`` (all tokens of the kept documents,
    before the cut) and ``docs_longer`` (documents longer than ``seq_len - 2`` tokens), as prepare_data reports.
    """
    from tqdm.auto import tqdm

    check_vocab_fits(len(tokenizer))
    if seq_len < 3 or shard_size < 1 or batch_size < 1 or (n_sequences is not None and n_sequences < 1):
        raise ValueError("seq_len must be at least 3 and shard_size, batch_size and n_sequences at least 1")
    files = ShardFiles(Path(out_dir))
    files.folder.mkdir(parents=True, exist_ok=True)
    manifest = _start(files.folder, _identity(tokenizer, seq_len, shard_size, n_sequences))
    if manifest["complete"]:
        return manifest
    wanted = n_sequences if n_sequences is not None else float("inf")
    docs = _skip_used(iter(documents), manifest["documents_read"])
    with tqdm(total=n_sequences, initial=manifest["sequences"], unit="seq", desc="tokenising",
              disable=not progress) as bar:
        writer = _ShardWriter(files, manifest, (tokenizer.cls_token_id, tokenizer.sep_token_id,
                                                tokenizer.pad_token_id), bar)
        for batch in _encoded_batches(tokenizer, docs, batch_size):
            if writer.take(batch, wanted):
                break
        writer.save_shard()
    manifest["complete"] = True
    manifest["exhausted"] = manifest["sequences"] < wanted  # the stream ended before n_sequences
    _write_manifest(files.manifest, manifest)
    return manifest


# ---- Reading ----


class ShardedArray:
    """Equal-sized memory-mapped shards seen as one array: ``a[i]``, ``a[start:stop]``, ``a[index_array]``.

    Only the rows asked for are read from disk; indexing returns an ordinary numpy array.
    """

    def __init__(self, parts: Sequence[np.ndarray], shard_size: int) -> None:
        if not parts:
            raise ValueError("no shards to read")
        self.parts, self.shard_size = list(parts), shard_size
        self.length = sum(len(p) for p in self.parts)
        self.shape = (self.length, *self.parts[0].shape[1:])
        self.dtype = self.parts[0].dtype
        self.ndim = len(self.shape)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, key: Any) -> np.ndarray:
        if isinstance(key, (int, np.integer)):
            index = int(key) + self.length if key < 0 else int(key)
            if not 0 <= index < self.length:
                raise IndexError(f"index {key} is out of range for {self.length} rows")
            return np.asarray(self.parts[index // self.shard_size][index % self.shard_size])
        rows = np.arange(*key.indices(self.length)) if isinstance(key, slice) else np.asarray(key)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        rows = np.where(rows < 0, rows + self.length, rows)
        if rows.size and (rows.min() < 0 or rows.max() >= self.length):
            raise IndexError(f"an index is out of range for {self.length} rows")
        out = np.empty((*rows.shape, *self.shape[1:]), dtype=self.dtype)
        shard, within = np.divmod(rows, self.shard_size)
        for s in np.unique(shard):
            picked = shard == s
            out[picked] = self.parts[s][within[picked]]
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        whole = np.concatenate([np.asarray(p) for p in self.parts])
        return whole if dtype is None else whole.astype(dtype)


@dataclass
class Shards:
    """What :func:`write_shards` wrote: ``ids`` [n, seq_len] uint16 and ``lengths`` [n] int16."""

    ids: ShardedArray
    lengths: ShardedArray
    manifest: dict[str, Any]

    def __len__(self) -> int:
        return len(self.ids)


def open_shards(out_dir: str | Path, allow_incomplete: bool = False) -> Shards:
    """The finished shards of ``out_dir`` as memory maps; refuse an interrupted folder unless asked."""
    out = Path(out_dir)
    manifest = read_manifest(out)
    if manifest is None or not manifest["shards"]:
        raise FileNotFoundError(f"no shards in {out}; write them with pipeline.shards.write_shards")
    if not manifest["complete"] and not allow_incomplete:
        raise ValueError(f"the shards in {out} are incomplete (interrupted after {manifest['sequences']:,} "
                         "sequences); run write_shards again with the same documents to finish them")
    ids, lengths = (ShardedArray([np.load(out / shard[kind], mmap_mode="r", allow_pickle=False)
                                  for shard in manifest["shards"]], manifest["shard_size"])
                    for kind in ("ids", "lengths"))
    return Shards(ids, lengths, manifest)
