"""A smoke run's numbers before and after the redesign: the same metrics and the same positions.

tests/golden/smoke_en_metrics.json holds both models' metrics.csv (elapsed_s left out) and a SHA-256 of
their eval_positions.npz, written by the code at 0cc080c on the CPU. Steps, learning rates, accuracies and the
scored positions must be equal exactly; the float losses only to FLOAT32_LOSS_RTOL, because another CPU's kernels
(AVX-512 against AVX2, say) sum in another order: the same code is bit-exact only on the same machine.
The smoke pretraining here runs through the same path as notebook 04 (the smoke_step fixture runs notebooks
02-04 under the smoke preset).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline.store.layout import MODEL_NAMES, ModelFiles, read_metrics

pytestmark = pytest.mark.notebook

GOLDEN = Path(__file__).parent / "golden" / "smoke_en_metrics.json"
EXACT = ("step", "eval_accuracy", "lr")
LOSSES = ("train_loss", "eval_loss")
# float32's unit roundoff is 2**-24 = 6e-8; a mean over a few hundred positions, summed in another order, and
# six Adam steps on it stay within a few units of it (measured on another machine, an AMD EPYC with AVX-512,
# against the file: at most 9e-8 relative). 1e-6 is about 17 units: any real change of the code moves a loss by
# far more.
FLOAT32_LOSS_RTOL = 1e-6
INTEGER_ARRAYS = ("correct", "position", "sequence")


GOLDEN_ARRAYS = ("correct", "loss", "position", "sequence")  # what 0cc080c saved; newer records keep more ids


def positions_sha256(path: Path, names: tuple[str, ...] = GOLDEN_ARRAYS) -> str:
    """SHA-256 over the named arrays of an .npz, by sorted name: the name's bytes, then the array's bytes."""
    digest = hashlib.sha256()
    with np.load(path) as arrays:
        for name in sorted(set(arrays.files) & set(names)):
            digest.update(name.encode())
            digest.update(np.ascontiguousarray(arrays[name]).tobytes())
    return digest.hexdigest()


def same_number(a: float, b: float, rtol: float = 0.0) -> bool:
    """Equality within ``rtol`` (exact by default), with NaN equal to NaN (step 0 has no training loss)."""
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=rtol, abs_tol=0.0)


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text())


@pytest.fixture(scope="module")
def pretrain_dir(smoke_step) -> Path:
    return smoke_step("04_pretraining")


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_smoke_metrics_equal_the_golden_file_up_to_float32_rounding(pretrain_dir, golden, name):
    rows = read_metrics(ModelFiles(pretrain_dir / name).metrics)
    expected = golden[name]
    assert len(rows) == len(expected)
    tolerance = {**{k: 0.0 for k in EXACT}, **{k: FLOAT32_LOSS_RTOL for k in LOSSES}}
    for row, want in zip(rows, expected):
        changed = {k: (row[k], want[k]) for k, rtol in tolerance.items()
                   if not same_number(float(row[k]), float(want[k]), rtol)}
        assert not changed, f"{name} step {want['step']}: (now, golden) {changed}"


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_smoke_evaluation_positions_equal_the_golden_file(pretrain_dir, golden, name):
    positions = ModelFiles(pretrain_dir / name).positions
    if positions_sha256(positions) == golden[f"{name}_positions_sha256"]:
        return  # bit-exact: the machine sums as the one that wrote the file
    assert positions_sha256(positions, INTEGER_ARRAYS) == golden[f"{name}_ids_sha256"], "other positions scored"
    with np.load(positions) as arrays:
        mean_loss = float(arrays["loss"].astype(np.float64).mean())
    assert same_number(mean_loss, golden[name][-1]["eval_loss"], FLOAT32_LOSS_RTOL)


def test_the_loss_tolerance_tells_a_float32_reordering_from_a_real_change() -> None:
    loss = 7.3003095401806775
    assert same_number(loss * (1 + 3e-7), loss, FLOAT32_LOSS_RTOL)
    assert not same_number(loss + 1e-4, loss, FLOAT32_LOSS_RTOL)
    assert not same_number(loss, loss * (1 + 3e-7))  # exact by default
