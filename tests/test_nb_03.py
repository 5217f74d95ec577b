"""Notebook 03 under the smoke preset: the aligned matrix it saves is what pretraining expects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from exercises import nb03
from helpers.static_vectors import PIECE_PREFIX, SPECIAL_TOKENS
from helpers.tokenizer import load_tokenizer
from pipeline.notebook import REPO_ROOT
from pipeline.vectors.static_files import load_aligned

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


@pytest.fixture(scope="module")
def executed(smoke_step: Callable[[str], Path]) -> dict:
    out = smoke_step("03_static_vectors")
    return json.loads((out.parent / "03_static_vectors.ipynb").read_text())


def outputs_of(executed: dict, kind: str) -> str:
    """Everything the executed notebook showed as ``kind``: 'text' (printed) or 'text/markdown' (built prose)."""
    texts = []
    for cell in executed["cells"]:
        for output in cell.get("outputs", []):
            text = output.get("text", "") if kind == "text" else output.get("data", {}).get(kind, "")
            texts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(texts)


def test_every_exercise_passes_and_shows_its_reference_answer_only_after(executed: dict) -> None:
    printed = outputs_of(executed, "text")
    for n in (1, 2, 3, 4):
        assert f"Exercise {n}: ✓ right" in printed
    for explanation in (nb03.EXERCISE_1_EXPLANATION, nb03.EXERCISE_2_EXPLANATION, nb03.EXERCISE_3_EXPLANATION,
                        nb03.EXERCISE_4_EXPLANATION):
        assert f"Why: {explanation}" in printed


def test_the_settings_summary_states_the_committed_benchmark_numbers(executed: dict) -> None:
    import pandas as pd

    from helpers import presets

    quality = pd.read_csv(REPO_ROOT / "benchmarks" / "results" / "fasttext_settings.csv").set_index("setting")
    ws, simlex, cpu = quality["wordsim353"], quality["simlex999"], quality["train_cpu_seconds"]
    prose = outputs_of(executed, "text/markdown")
    assert f"**SimLex-999 stays at or below {simlex.max():.2f}** for every setting" in prose
    assert (f"from {ws['sg-5ep-nosub']:.2f} (5 epochs) to {ws['sg-10ep-nosub']:.2f} (10) on WordSim-353, CBOW from "
            f"{ws['cbow-20ep-nosub']:.2f} (20) to {ws['cbow-40ep-nosub']:.2f} (40), and "
            f"{ws['cbow-60ep-nosub']:.2f} at 60.") in prose
    assert f"take {cpu['sg-10ep-ng36'] / cpu['sg-10ep-nosub']:.1f}x the time" in prose
    assert (f"So the `demo` preset trains {presets.DEMO_FASTTEXT.label()}: {ws['cbow-30ep-nosub']:.2f} on "
            f"WordSim-353 in {cpu['cbow-30ep-nosub']:.0f} s") in prose
    assert presets.DEMO_FASTTEXT == presets.FastTextSettings(**{**quality.loc["cbow-30ep-nosub", [
        "model", "epochs", "minn", "maxn", "neg"]].to_dict(), "dim": presets.DEMO_FASTTEXT.dim})


def test_the_centring_sentence_counts_the_neighbours_that_stay(smoke_step: Callable[[str], Path],
                                                               executed: dict) -> None:
    manifest = load_aligned(smoke_step("03_static_vectors")).report
    kept = manifest["neighbours_kept_after_centring"]
    assert kept and all(0 <= n <= 5 for n in kept.values())
    n_kept, n_all = sum(kept.values()), 5 * len(kept)
    most_changed = min(kept, key=kept.get)
    assert (f"After centring, {n_kept} of the {n_all} neighbours ({n_kept / n_all:.0%}) are still among the 5 "
            f"nearest; `{most_changed}` changes most ({5 - kept[most_changed]} of 5 replaced)."
            in outputs_of(executed, "text/markdown"))


def test_the_ngram_demonstration_names_every_difference_and_states_its_shares(
        smoke_step: Callable[[str], Path], executed: dict) -> None:
    from helpers import presets

    record = load_aligned(smoke_step("03_static_vectors")).report["ngram_demonstration"]
    ours, quick = presets.get("smoke").vectors.fasttext, presets.FastTextSettings(epochs=2)
    changed = [field for field in ("model", "epochs", "maxn", "neg") if getattr(ours, field) != getattr(quick, field)]
    assert len(record["differences"]) == len(changed) + ("documents" in " ".join(record["differences"]))
    assert all(any(str(getattr(quick, field)) in d for d in record["differences"]) for field in changed)
    n = len(record["differences"])
    assert f"this run differs from ours in {n} way{'s' * (n != 1)}" in outputs_of(executed, "text")
    spelled = [row["share spelled alike"] for row in record["summary"]]
    cosine = [row["mean cosine"] for row in record["summary"]]
    assert (f"With n-grams, {spelled[0]:.0%} of the neighbours share a three-letter sequence with their query, "
            f"against {spelled[1]:.0%} for ours, and their mean cosine is {cosine[0]:.2f} against {cosine[1]:.2f}"
            in outputs_of(executed, "text/markdown"))
