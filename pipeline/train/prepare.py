"""Prepared pretraining data: tokenise once, write the sequences and a fixed masked evaluation set, load them back.

Training needs nothing but these files (pipeline.store.layout.PreparedFiles), so they can be copied to a GPU machine.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from helpers.masking import IGNORE_INDEX
from helpers.presets import check_shards
from helpers.pretrain import TrainingData
from helpers.static_vectors import vocab_fingerprint
from pipeline.store import checkpoints as ck
from pipeline.store.layout import PreparedFiles, PretrainFiles
from pipeline.train import shards as S


def prepare_data(tokenizer: Any, train_texts: Iterable[str], eval_texts: Sequence[str], out_dir: str | Path,
                 seq_len: int = 128, packing: bool = False, lang: str = "unknown", mlm_probability: float = 0.15,
                 eval_mask_seed: int = S.EVAL_MASK_SEED, corpus: str = "unknown", shards: bool = False,
                 shard_size: int | None = None, progress: bool = True) -> dict[str, Any]:
    """Write ``out_dir/data/``: train/eval sequences, the masked evaluation set, the tokenizer, meta.json (returned;
    its ``lang`` and ``corpus`` become part of every run's identity). With ``shards`` the training documents (read
    once, lazily) go to resumable memory-mapped shards instead of ``train_ids.npy``; meta's ``storage`` says which."""
    check_shards(shards, packing)
    files = PretrainFiles(Path(out_dir)).data
    files.folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    meta: dict[str, Any] = {"seq_len": seq_len, "packing": packing, "lang": lang, "corpus": corpus,
                            "vocab_size": len(tokenizer), "mlm_probability": mlm_probability,
                            "eval_mask_seed": eval_mask_seed, "pad_token_id": tokenizer.pad_token_id,
                            "format": f"packed: documents joined with [SEP] and cut into [CLS] + {seq_len - 1} token "
                                      "blocks" if packing else f"truncated per document (the paper): [CLS] "
                                      f"doc[:{seq_len - 2}] [SEP], padded to {seq_len}",
                            "vocab_sha256": vocab_fingerprint(tokenizer)}
    files.meta.unlink(missing_ok=True)  # the folder is incomplete until the new meta.json is written
    if shards:
        meta.update(write_train_shards(tokenizer, train_texts, files, seq_len, shard_size, progress))
    else:
        shutil.rmtree(files.shards, ignore_errors=True)  # one training format per folder
        meta["storage"] = {"train": "npy"}
    for split, texts in (("train", train_texts), ("eval", eval_texts))[1 if shards else 0:]:
        tokens = S.tokenize_corpus(tokenizer, texts)
        ids, lengths = S.make_sequences(tokens, tokenizer, seq_len, packing)
        np.save(files.array(f"{split}_ids"), ids)
        np.save(files.array(f"{split}_lengths"), lengths)
        meta[split] = split_summary(len(tokens.offsets) - 1, int(tokens.ids.size), lengths, seq_len,
                                    int(np.sum(np.diff(tokens.offsets) > seq_len - 2)))
        if split == "eval":
            masked, labels = S.fixed_eval_mask(tokenizer, ids, lengths, mlm_probability, eval_mask_seed)
            np.save(files.array("eval_masked_ids"), masked)
            np.save(files.array("eval_labels"), labels)
            meta["eval"]["masked_positions"] = int((labels != IGNORE_INDEX).sum())
    tokenizer.save_pretrained(str(files.tokenizer))
    meta["seconds"] = round(time.perf_counter() - started, 2)
    ck.write_run_json(files.meta, meta)
    return meta


def split_summary(documents: int, tokens: int, lengths: np.ndarray, seq_len: int, longer: int) -> dict[str, Any]:
    """meta.json's counts of one split (``lengths`` of its sequences, ``longer``: documents cut by seq_len)."""
    real = int(lengths.astype(np.int64).sum())
    return {"documents": documents, "tokens": tokens, "sequences": len(lengths), "real_positions": real,
            "padding_share": float(1 - real / (len(lengths) * seq_len)),
            "docs_longer_than_seq": float(longer / documents)}


def write_train_shards(tokenizer: Any, texts: Iterable[str], files: PreparedFiles, seq_len: int,
                       shard_size: int | None, progress: bool) -> dict[str, dict[str, Any]]:
    """Stream the training documents into the shards folder; returns meta's ``train`` and ``storage``. A finished
    folder is replaced (as the .npy files would be); an unfinished one is continued with the same documents."""
    folder = files.shards
    if (S.read_manifest(folder) or {}).get("complete"):
        shutil.rmtree(folder)
    shard_size = shard_size or S.DEFAULT_SHARD_SIZE
    # Documents are tokenised 1,000 at a time (fewer for tiny shards): memory holds one shard and one batch.
    manifest = S.write_shards(tokenizer, texts, folder, n_sequences=None, seq_len=seq_len, shard_size=shard_size,
                              batch_size=min(1_000, shard_size), progress=progress)
    if manifest["sequences"] == 0:
        raise ValueError(S.NO_DOCUMENTS)
    for name in ("train_ids", "train_lengths"):  # one training format per folder
        files.array(name).unlink(missing_ok=True)
    lengths = np.asarray(S.open_shards(folder).lengths)  # 2 bytes a sequence: small even at the paper's scale
    summary = split_summary(manifest["sequences"], manifest["tokens"], lengths, seq_len, manifest["docs_longer"])
    return {"train": summary,
            "storage": {"train": "shards", "folder": folder.name, "shards": len(manifest["shards"]),
                        "shard_size": manifest["shard_size"], "documents_read": manifest["documents_read"]}}


@dataclass
class PreparedData(TrainingData):
    """What :func:`prepare_data` wrote, loaded back: the arrays (moved to the device per batch), meta and folder."""

    meta: dict[str, Any]
    directory: Path

    def fingerprint(self) -> str:
        """The data part of a run's identity: every array and meta.json, less timings and ``storage`` (the same rows
        in shards or .npy are the same data). The arrays are named here, not read from TrainingData's fields, so a field
        added to the taught class cannot change every run's identity unnoticed."""
        arrays = {name: getattr(self, name) for name in ("train_ids", "train_lengths", "eval_masked_ids",
                                                         "eval_lengths", "eval_labels")}
        return ck.arrays_fingerprint(arrays, {k: v for k, v in self.meta.items() if k != "storage"})


def prepared_files(path: str | Path) -> PreparedFiles:
    """Accept either the data folder itself or the pretraining folder that holds ``data/``."""
    path = Path(path)
    return PreparedFiles(path) if PreparedFiles(path).meta.exists() else PretrainFiles(path).data


def load_data(path: str | Path) -> PreparedData:
    files = prepared_files(path)
    if (meta := ck.read_run_json(files.meta)) is None:
        raise FileNotFoundError(f"no prepared data in {files.folder}; run pipeline.train.prepare.prepare_data first "
                                "(notebook 04 does) and copy the data/ folder to this machine")
    load = lambda name: np.load(files.array(name), allow_pickle=False)  # noqa: E731
    if meta.get("storage", {}).get("train") == "shards":  # memory maps: rows are read from disk when picked
        train_ids, train_lengths = S.open_shards(files.shards)
    else:
        train_ids, train_lengths = load("train_ids"), load("train_lengths")
    return PreparedData(train_ids, train_lengths, load("eval_masked_ids"), load("eval_lengths"), load("eval_labels"),
                        meta, files.folder)


def load_data_tokenizer(path: str | Path) -> Any:
    """The tokenizer saved next to the data (so a GPU machine needs only the data folder)."""
    from transformers import AutoTokenizer

    folder = prepared_files(path).tokenizer
    if not (folder / "tokenizer.json").exists():
        raise FileNotFoundError(f"no tokenizer.json in {folder}; rerun prepare_data")
    return AutoTokenizer.from_pretrained(str(folder))
