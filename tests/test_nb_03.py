"""Notebook 03 under the smoke preset: the aligned matrix it saves is what pretraining expects."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from helpers.static_vectors import PIECE_PREFIX, SPECIAL_TOKENS
from helpers.tokenizer import load_tokenizer
from pipeline.static_files import load_aligned

pytestmark = pytest.mark.notebook

HIDDEN = 300  # Table 4: the model's hidden size equals fastText's dimension


def test_static_vectors_notebook_artifacts(smoke_step: Callable[[str], Path]) -> None:
    out = smoke_step("03_static_vectors")
    saved = load_aligned(out)
    tokenizer = load_tokenizer(out.parent / "tokenizer")
    manifest = saved.report

    assert saved.matrix.shape == (len(tokenizer), HIDDEN)
    assert saved.matrix.dtype == np.float32 and np.isfinite(saved.matrix).all()
    n_found = int(saved.found.sum())
    assert n_found == manifest["n_found"] > 0
    assert n_found < len(tokenizer)  # pieces are skipped, so some rows must be missing

    # the paper's recipe: zero fallback, unit + center, ## pieces skipped, specials never looked up
    assert manifest["fallback"] == "zero" and manifest["normalisation"] == ["unit", "center"]
    assert manifest["preset"] == "smoke" and manifest["pieces"] == "skip"
    np.testing.assert_array_equal(saved.matrix[~saved.found], 0.0)
    assert np.all(np.linalg.norm(saved.matrix[saved.found], axis=1) > 0)
    found_tokens = tokenizer.convert_ids_to_tokens(np.flatnonzero(saved.found).tolist())
    assert not any(t.startswith(PIECE_PREFIX) or t in SPECIAL_TOKENS for t in found_tokens)
    # normalised rows: unit length before centring, so no row can be far longer than 1 + |mean| <= 2
    assert np.linalg.norm(saved.matrix, axis=1).max() <= 2.0

    # the vectors' quality is measured and recorded (English: both benchmarks, raw and aligned)
    scores = manifest["word_similarity"]
    assert set(scores) == {"raw fastText", "unit + center (all words)", "aligned (unit + center)"}
    for by_benchmark in scores.values():
        assert set(by_benchmark) == {"wordsim353", "simlex999"}
        for result in by_benchmark.values():
            assert 0 <= result["found"] <= result["pairs"] and result["coverage"] == result["found"] / result["pairs"]
    aligned, raw = scores["aligned (unit + center)"], scores["raw fastText"]
    assert raw["wordsim353"]["found"] > 0
    assert all(aligned[b]["found"] <= raw[b]["found"] for b in raw)  # a token must also be in the vocabulary
    # how the vectors were trained: public settings, one thread, the seed's meaning
    assert manifest["fasttext"]["thread"] == 1 and manifest["fasttext"]["dim"] == HIDDEN
    assert "document order" in manifest["fasttext"]["seed_means"]

    for name in ("coverage_by_rank.png", "scale.png"):
        png = out / name
        assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
