"""Every preset whole in one table: each names every step's settings, the paper's are the paper's, and the
reference preset differs from demo only where it must."""

from __future__ import annotations

import dataclasses
import math

import pytest

from helpers import presets
from helpers.presets import PRESET_NAMES, PRESETS, check_preset


def test_every_preset_holds_the_settings_of_every_step_and_unknown_names_fail() -> None:
    assert set(PRESETS) == set(PRESET_NAMES)
    for name, preset in PRESETS.items():
        assert preset.name == name == preset.train.name
        assert [f.name for f in dataclasses.fields(preset)][1:] == ["masking", "tokenizer", "vectors", "train", "probe"]
    with pytest.raises(ValueError, match="unknown preset 'huge'; choose one of smoke, demo, reference, paper"):
        presets.get("huge")
    assert [check_preset(n) for n in PRESET_NAMES] == list(PRESET_NAMES)


def test_the_paper_preset_holds_the_papers_settings() -> None:
    paper = presets.get("paper")
    train = paper.train
    assert (train.lr, train.batch_size, train.seq_len, train.steps, train.warmup_steps) == (5e-4, 128, 128, 100_000,
                                                                                             10_000)
    assert (train.eval_every, train.checkpoint_every, train.grad_clip, train.weight_decay) == (5_000, 5_000, 1.0, 0.01)
    assert not train.packing and train.shards and train.batching == "random"
    assert paper.tokenizer.vocab_size == paper.masking.vocab_size == 30_000 and paper.tokenizer.corpus_source == "hub"
    vectors = paper.vectors
    assert (vectors.source, vectors.top_n, vectors.normalisation, vectors.fallback, vectors.pieces, vectors.case,
            vectors.scale) == ("published", 300_000, ("unit", "center"), "zero", "skip", "exact", None)


def test_every_preset_fits_the_table4_model_and_the_probes_grow_with_the_preset() -> None:
    assert all(p.vectors.dim == 300 for p in PRESETS.values())  # the model's hidden size
    assert all(p.tokenizer.vocab_size > 5 for p in PRESETS.values())
    assert not presets.get("smoke").train.shards and not presets.get("demo").train.shards
    size = {name: (p.probe.max_train or math.inf, p.probe.max_test or math.inf) for name, p in PRESETS.items()}
    assert size["smoke"] < size["demo"] <= size["paper"]
    assert all(len(p.probe.Cs) >= 2 and p.probe.n_boot >= 100 for p in PRESETS.values())


def test_the_reference_preset_trained_fewer_steps_is_the_configuration_of_the_committed_series_rows() -> None:
    """The 4,800-step reference with steps=1,200 (or 2,400) is exactly what the committed 1,200-step runs and
    the series were trained with: the same train_config_hash, so their records pair with new runs by content."""
    import json
    from pathlib import Path

    from pipeline.store.checkpoints import run_identity

    root = Path(__file__).resolve().parent.parent / "figures" / "reference"
    reference = presets.get("reference").train
    assert reference.steps == 4_800
    for record in (root / "runs" / "reference-en", root / "series" / "reference-en-steps2400",
                   root / "series" / "reference-en-steps1200"):
        info = json.loads((record / "pretrain" / "bert_tiny" / "run.json").read_text(encoding="utf-8"))
        ours = run_identity("en", 0, reference.replace(steps=info["steps"]), "embedded", "x", "y")
        assert ours["train_config_hash"] == info["identity"]["train_config_hash"], record.name


def test_the_reference_preset_is_the_demo_trained_longer_on_better_vectors() -> None:
    demo, reference = presets.get("demo"), presets.get("reference")
    assert reference.train.steps > demo.train.steps and reference.train.eval_sequences is None
    same = ("batch_size", "seq_len", "lr", "warmup_fraction", "batching", "packing", "betas", "eps", "weight_decay")
    assert all(getattr(reference.train, f) == getattr(demo.train, f) for f in same)
    assert reference.vectors.fasttext == presets.REFERENCE_FASTTEXT and reference.vectors.source == "train"
    assert (reference.masking, reference.tokenizer) == (demo.masking, demo.tokenizer)
    # The probe too, but for its C grid: the reference keeps the narrower grid its committed records were probed
    # on (notebook 05 names any probe that chose an end of it), which lies inside the demo's wider one.
    assert dataclasses.replace(reference.probe, Cs=demo.probe.Cs) == demo.probe
    assert set(reference.probe.Cs) < set(demo.probe.Cs)


def test_bad_settings_fail_on_construction_and_name_the_setting() -> None:
    with pytest.raises(ValueError, match="seq_len"):
        presets.TrainConfig(name="x", steps=1, batch_size=1, seq_len=512)
    with pytest.raises(ValueError, match="pieces must be one of"):
        presets.VectorsConfig(source="train", pieces="glue")
    with pytest.raises(ValueError, match="shards=True"):
        presets.TrainConfig(name="x", steps=1, batch_size=1, packing=True, shards=True)
