"""A smoke run's numbers before and after the redesign: the same metrics, bit for bit, and the same positions.

tests/golden/smoke_en_metrics.json holds both models' metrics.csv (elapsed_s left out) and a SHA-256 of
their eval_positions.npz, written by the code at 0cc080c on the CPU. The smoke pretraining here runs
through the same path as notebook 04 (the smoke_step fixture runs notebooks 02-04 under the smoke preset).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline.layout import MODEL_NAMES, ModelFiles
from pipeline.training import read_metrics

pytestmark = pytest.mark.notebook

GOLDEN = Path(__file__).parent / "golden" / "smoke_en_metrics.json"
COMPARED = ("step", "train_loss", "eval_loss", "eval_accuracy", "lr")


GOLDEN_ARRAYS = ("correct", "loss", "position", "sequence")  # what 0cc080c saved; newer records keep more ids


def positions_sha256(path: Path) -> str:
    """SHA-256 over the golden arrays of an .npz, by sorted name: the name's bytes, then the array's bytes."""
    digest = hashlib.sha256()
    with np.load(path) as arrays:
        for name in sorted(set(arrays.files) & set(GOLDEN_ARRAYS)):
            digest.update(name.encode())
            digest.update(np.ascontiguousarray(arrays[name]).tobytes())
    return digest.hexdigest()


def same_number(a: Any, b: Any) -> bool:
    """Exact equality, with NaN equal to NaN (step 0 has no training loss)."""
    return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == b


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text())


@pytest.fixture(scope="module")
def pretrain_dir(smoke_step) -> Path:
    return smoke_step("04_pretraining")


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_smoke_metrics_equal_the_golden_file_exactly(pretrain_dir, golden, name):
    rows = read_metrics(ModelFiles(pretrain_dir / name).metrics)
    expected = golden[name]
    assert len(rows) == len(expected)
    for row, want in zip(rows, expected):
        changed = {k: (row[k], want[k]) for k in COMPARED if not same_number(float(row[k]), float(want[k]))}
        assert not changed, f"{name} step {want['step']}: (now, golden) {changed}"


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_smoke_evaluation_positions_equal_the_golden_file(pretrain_dir, golden, name):
    assert positions_sha256(ModelFiles(pretrain_dir / name).positions) == golden[f"{name}_positions_sha256"]
