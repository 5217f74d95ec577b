"""Notebook 03's result on disk: the aligned matrix, its found mask and its manifest (numpy and json only, so
notebooks 04 and 05 read it back on GPU machines without fasttext)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from helpers.static_vectors import Alignment
from pipeline.store.layout import StaticFiles

HINT = "run notebooks/03_static_vectors.ipynb to create it"


def jsonable(value: Any) -> Any:
    """``value`` with numpy scalars, paths and tuples turned into JSON types, and nan/inf into None."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value) if isinstance(value, Path) else value


def save_aligned(out_dir: str | Path, alignment: Alignment, manifest: Mapping[str, Any]) -> Path:
    """Write the embeddings (float32), the found mask (bool) and the manifest (with the alignment's report) into
    ``out_dir``; return it. A manifest count that contradicts the matrix, or a non-finite value, is refused."""
    matrix, found = map(np.asarray, (alignment.matrix, alignment.found))
    derived = _counts(matrix, found, "the alignment")
    if not np.isfinite(matrix).all():
        raise ValueError("the aligned matrix holds nan or inf values; check the vector file (vector_files.read_vec "
                         "refuses such files) and the normalisation")
    for key, value in derived.items():
        if key in manifest and manifest[key] != value:
            raise ValueError(f"manifest says {key}={manifest[key]!r} but the alignment has {value}")
    files = StaticFiles(Path(out_dir))
    files.folder.mkdir(parents=True, exist_ok=True)
    full = {**alignment.report, **manifest, **derived}
    np.save(files.embeddings, matrix.astype(np.float32, copy=False))
    np.save(files.found, found.astype(bool, copy=False))
    files.manifest.write_text(json.dumps(jsonable(full), indent=2, ensure_ascii=False), encoding="utf-8")
    return files.folder


def _counts(matrix: np.ndarray, found: np.ndarray, where: str) -> dict[str, int]:
    """What the manifest says of the arrays (vocab_size, dim, n_found), once their shapes are checked."""
    if matrix.ndim != 2:
        raise ValueError(f"{where}: the embedding matrix must be 2-D (vocab_size x dim), got shape {matrix.shape}")
    if found.ndim != 1 or found.shape[0] != matrix.shape[0]:
        raise ValueError(f"{where}: the found mask has shape {found.shape} but the matrix has {matrix.shape[0]} rows")
    return {"vocab_size": int(matrix.shape[0]), "dim": int(matrix.shape[1]), "n_found": int(found.sum())}


def load_aligned(directory: str | Path) -> Alignment:
    """Read what :func:`save_aligned` wrote, checking that the three files agree."""
    files = StaticFiles(Path(directory).expanduser())
    if missing := next((p for p in (files.embeddings, files.found, files.manifest) if not p.is_file()), None):
        raise FileNotFoundError(f"{missing} is missing; {HINT}")
    matrix, found = (np.load(path, allow_pickle=False) for path in (files.embeddings, files.found))
    manifest = json.loads(files.manifest.read_text(encoding="utf-8"))
    actual = _counts(matrix, found, str(files.folder))
    if matrix.dtype != np.float32 or found.dtype != bool:
        raise ValueError(f"{files.folder}: expected float32 embeddings and a bool mask, got {matrix.dtype} and "
                         f"{found.dtype}")
    for key, value in actual.items():
        if manifest.get(key) != value:
            raise ValueError(f"{files.manifest} says {key}={manifest.get(key)!r} but the arrays give {value}; "
                             f"the folder mixes files from different runs: {HINT} again")
    return Alignment(matrix, found, manifest)
