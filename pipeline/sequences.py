"""Pretraining text as fixed-length sequences: tokenise once, cut per document (or pack), mask the evaluation once.

Ids are stored as uint16 whenever the vocabulary fits. pipeline.prepare writes these arrays to the run folder
and pipeline.shards streams the same rows into memory maps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from helpers.masking import MLMCollator
from helpers.pretrain import lengths_to_mask

EVAL_MASK_SEED = 1234  # fixed: the evaluation mask belongs to the data, not to a training seed
NO_DOCUMENTS = "no non-empty documents to tokenise; check the corpus (pipeline.data.load_corpus)"


@dataclass
class TokenizedCorpus:
    """All documents' token ids end to end (no special tokens) plus where each document starts."""

    ids: np.ndarray  # uint16 when the vocabulary fits, else int32
    offsets: np.ndarray  # int64, len n_docs + 1

    @property
    def n_docs(self) -> int:
        return len(self.offsets) - 1


def id_dtype(vocab_size: int) -> np.dtype:
    """uint16 halves the files and the host memory of int32 whenever the vocabulary allows it."""
    return np.dtype(np.uint16) if vocab_size <= np.iinfo(np.uint16).max + 1 else np.dtype(np.int32)


def encode(tokenizer: Any, texts: list[str]) -> list[list[int]]:
    # verbose=False: documents longer than 128 tokens are expected here (cut later), not a mistake.
    return tokenizer(texts, add_special_tokens=False, verbose=False, return_attention_mask=False,
                     return_token_type_ids=False)["input_ids"]


def offsets_of(docs: Sequence[Sequence[int]]) -> np.ndarray:
    offsets = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum([len(d) for d in docs], out=offsets[1:])
    return offsets


def tokenize_corpus(tokenizer: Any, texts: Sequence[str], batch_size: int = 1_000) -> TokenizedCorpus:
    """Batched fast tokenisation into one flat array; empty documents are dropped."""
    texts = [t for t in texts if t and t.strip()]
    if not texts:
        raise ValueError(NO_DOCUMENTS)
    dtype = id_dtype(len(tokenizer))
    chunks = [np.asarray(ids, dtype=dtype) for start in range(0, len(texts), batch_size)
              for ids in encode(tokenizer, texts[start:start + batch_size]) if ids]
    if not chunks:
        raise ValueError("the tokenizer produced no tokens for any document")
    return TokenizedCorpus(np.concatenate(chunks), offsets_of(chunks))


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


def fixed_eval_mask(tokenizer: Any, ids: np.ndarray, lengths: np.ndarray, mlm_probability: float = 0.15,
                    seed: int = EVAL_MASK_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Mask the evaluation sequences once, so every evaluation of every model scores the same positions."""
    collator = MLMCollator(tokenizer, mlm_probability=mlm_probability, seed=seed)
    input_ids = torch.from_numpy(ids.astype(np.int64))
    masked = collator.mask(input_ids, lengths_to_mask(torch.from_numpy(lengths.astype(np.int64)), ids.shape[1]))
    return masked["input_ids"].numpy().astype(ids.dtype), masked["labels"].numpy().astype(np.int32)
