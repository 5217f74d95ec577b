"""A pretraining run's identity (which experiment), checkpoints (where it stopped) and run.json (what it did).
BERT_TINY and BERT_FT of one experiment share an identity and differ only in their init record. Only the standard
library, numpy, torch and a few light pipeline modules: this runs on the GPU machines too."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

from pipeline.store.fingerprints import differences, input_kind, without_paths
from pipeline.store.layout import StaticFiles
from pipeline.store.staging import written_whole

RESUME_HINT = ("to start this model again, delete the file (the job and the notebooks resume from it; "
               "train_cli takes --no-resume, Python resume=False)")


class CheckpointError(ValueError):
    """A checkpoint that cannot be read or does not belong to this run; the message says what to do."""


def sha256_json(value: Any) -> str:
    """SHA-256 of ``value`` as canonical JSON (sorted keys), so formatting never changes the hash."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def without_timings(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record minus its wall-clock entries (keys holding 'seconds'), which differ between identical runs."""
    return {k: (without_timings(v) if isinstance(v, Mapping) else v) for k, v in record.items() if "seconds" not in k}


def arrays_fingerprint(arrays: Mapping[str, Any], meta: Mapping[str, Any]) -> str:
    """SHA-256 over named arrays (dtype, shape, bytes, a block of rows at a time, so memory-mapped shards are never
    loaded whole) and a metadata record without its timings."""
    digest = hashlib.sha256(sha256_json(without_timings(meta)).encode())
    for name in sorted(arrays):
        array, rows = arrays[name] if hasattr(arrays[name], "shape") else np.asarray(arrays[name]), 1 << 16
        digest.update(f"{name}:{np.dtype(array.dtype).str}:{tuple(array.shape)}".encode())
        for start in range(0, len(array), rows):
            digest.update(np.ascontiguousarray(array[start:start + rows]).tobytes())
    return digest.hexdigest()


def init_record(init: Any) -> dict[str, Any]:
    """How the token embeddings started: {'kind': 'random'|'static', 'manifest_sha256', 'embeddings_sha256', ...},
    from 'random', a static-vector folder or an Alignment (``.matrix``, ``.report``); timings hash to nothing."""
    if isinstance(init, str) and init == "random":
        return {"kind": "random", "manifest_sha256": None, "embeddings_sha256": None, "source": "random",
                "manifest": None}
    if hasattr(init, "matrix"):
        manifest, matrix, source = dict(getattr(init, "report", None) or {}), init.matrix, "alignment object"
    else:
        files = StaticFiles(Path(init))
        manifest = json.loads(files.manifest.read_text(encoding="utf-8")) if files.manifest.exists() else {}
        matrix = np.load(files.embeddings, mmap_mode="r") if files.embeddings.exists() else np.zeros(0, np.float32)
        source = str(files.folder)
    return {"kind": "static", "manifest_sha256": sha256_json(without_timings(manifest)),
            "embeddings_sha256": arrays_fingerprint({"embeddings": np.asarray(matrix)}, {}),
            "source": source, "manifest": manifest}


def key_without_paths(key: Mapping[str, Any]) -> dict[str, Any]:
    """A run key without where its inputs lie (the init's folder, a files corpus' path), so a run folder moved
    whole still resumes; content digests (init.embeddings_sha256, identity.data_fingerprint) say what they are."""
    free = json.loads(json.dumps(key, default=str))
    if isinstance(free.get("init"), dict):
        free["init"].pop("source", None)
    free["identity"] = without_paths(free.get("identity"))
    return free


def run_identity(lang: str | None, seed: int, cfg: Any, corpus: str | None, data_fingerprint: str,
                 tokenizer_fingerprint: str | None) -> dict[str, Any]:
    """What BERT_TINY and BERT_FT of one experiment share; anything else makes them incomparable."""
    config = asdict(cfg) if is_dataclass(cfg) else dict(cfg)
    return {"lang": lang, "seed": seed, "preset": config.get("name"), "corpus": input_kind(corpus),
            "max_steps": config.get("max_steps"), "data_fingerprint": data_fingerprint,
            "tokenizer_fingerprint": tokenizer_fingerprint, "train_config_hash": sha256_json(config)}


def check_same_experiment(tiny: Mapping[str, Any] | None, ft: Mapping[str, Any] | None) -> None:
    """Refuse to compare BERT_TINY and BERT_FT runs whose identities differ (the init may differ)."""
    if tiny is not None and ft is not None and (changed := differences(without_paths(tiny), without_paths(ft))):
        raise ValueError(f"BERT_TINY and BERT_FT belong to different experiments ({'; '.join(changed)}); "
                         "train both with the same data, tokenizer, seed, preset and settings before comparing")


def rng_state(mask_generator: torch.Generator | None, device: torch.device) -> dict[str, Any]:
    """The random streams a step draws from: torch's (dropout), the masking generator's, and CUDA's."""
    state = {"torch": torch.get_rng_state(), "mask": mask_generator.get_state() if mask_generator else None}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: Mapping[str, Any], mask_generator: torch.Generator | None, device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    if mask_generator is not None and state.get("mask") is not None:
        mask_generator.set_state(state["mask"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def save_checkpoint(path: Path, payload: Mapping[str, Any]) -> None:
    # In memory first: torch's writer reports a full disk as a RuntimeError without errno ("unexpected pos").
    torch.save(dict(payload), data := io.BytesIO())
    with written_whole(path, "save the checkpoint", tmp=path.with_suffix(".tmp")) as tmp:
        tmp.write_bytes(data.getbuffer())


def load_checkpoint(path: Path) -> dict[str, Any]:
    """Read a checkpoint on the CPU; one clear CheckpointError (path and what to do) if it is unreadable."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # truncated zip, empty file, garbage pickle: all mean the same to the user
        detail = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else 'no detail'}"
        raise CheckpointError(f"cannot read the checkpoint {path} ({detail}); it is empty, truncated or not a "
                              f"checkpoint; {RESUME_HINT}") from None
    keys = ("key", "step", "model", "optimizer", "scheduler", "rng", "metrics", "running_loss", "elapsed_s")
    if missing := [k for k in keys if not isinstance(payload, dict) or k not in payload]:
        raise CheckpointError(f"{path} is not a checkpoint of this version (missing {missing}); {RESUME_HINT}")
    return payload


def check_resumable(path: Path, saved_key: Mapping[str, Any], key: Mapping[str, Any],
                    saved_config: Mapping[str, Any] | None = None, config: Mapping[str, Any] | None = None) -> None:
    """Refuse a checkpoint whose run key (identity, init, model) differs, naming every change."""
    changed = differences(key_without_paths(saved_key), key_without_paths(key))
    if changed and saved_config is not None and config is not None:
        changed += [f"train_config.{d}" for d in differences(saved_config, config)]
    if changed:
        raise CheckpointError(f"{path} belongs to a different run ({'; '.join(changed)}); {RESUME_HINT}")


def write_run_json(path: Path, record: Mapping[str, Any], indent: int = 2) -> None:
    with written_whole(path) as tmp:
        tmp.write_text(json.dumps(record, indent=indent, default=str))


def read_run_json(path: Path) -> dict[str, Any] | None:
    """A run's record, or None when the run has not written one."""
    return json.loads(path.read_text()) if path.is_file() else None
