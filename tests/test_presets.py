"""One list of presets, known to every step, and a reference preset that differs from demo only where it must."""

from __future__ import annotations

import importlib

import pytest

from helpers import pretrain as P
from helpers import static_vectors as sv
from helpers.presets import PRESET_NAMES, check_preset

STEP_MODULES = ("masking", "tokenizer", "static_vectors", "pretrain", "probe")


@pytest.mark.parametrize("module", STEP_MODULES)
def test_every_step_module_knows_every_preset_and_refuses_others(module: str) -> None:
    mod = importlib.import_module(f"helpers.{module}")
    assert set(mod.PRESETS) == set(PRESET_NAMES)
    for name in PRESET_NAMES:
        assert mod.preset_config(name) is mod.PRESETS[name]
    with pytest.raises(ValueError, match="unknown preset 'huge'; choose one of smoke, demo, reference, paper"):
        mod.preset_config("huge")


def test_the_reference_preset_is_the_demo_trained_longer_on_better_vectors() -> None:
    demo, reference = P.preset_config("demo"), P.preset_config("reference")
    assert reference.steps > demo.steps and reference.eval_sequences is None  # every evaluation sequence
    same = ("batch_size", "seq_len", "lr", "warmup_fraction", "batching", "packing", "betas", "eps", "weight_decay")
    assert all(getattr(reference, f) == getattr(demo, f) for f in same)
    assert sv.preset_config("reference").fasttext == sv.REFERENCE_FASTTEXT
    assert sv.preset_config("reference").source == "train"  # offline, like demo


def test_check_preset_returns_known_names() -> None:
    assert [check_preset(n) for n in PRESET_NAMES] == list(PRESET_NAMES)
