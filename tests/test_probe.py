"""helpers.probe (statistics, data hygiene, feature extractors) and pipeline.train.probe_runs (its files)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from helpers import probe
from pipeline.corpora.labelled import LabelledSpec
from pipeline.store.layout import RunLayout
from pipeline.train.probe_runs import load_probe_data, save_probe_results, stratified_subset

# --------------------------------------------------------------------------------------------
# Toy data and a tiny encoder
# --------------------------------------------------------------------------------------------


def blobs(n_per_class: int, n_classes: int = 3, dim: int = 8, spread: float = 10.0, seed: int = 0):
    """Well separated Gaussian blobs: a linear probe should get (almost) everything right."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_classes, dim)) * spread
    y = np.repeat(np.arange(n_classes), n_per_class)
    X = centres[y] + rng.normal(size=(len(y), dim))
    order = rng.permutation(len(y))
    return X[order], y[order]


WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "away", "big", "red"]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@pytest.fixture(scope="module")
def tiny_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(SPECIALS + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


@pytest.fixture(scope="module")
def tiny_encoder(tiny_tokenizer):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tiny_tokenizer), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32, pad_token_id=0)
    return BertModel(config, add_pooling_layer=False)


# --------------------------------------------------------------------------------------------
# fit_probe
# --------------------------------------------------------------------------------------------


def test_separable_problem_is_solved():
    X, y = blobs(150)
    result = probe.fit_probe(X[:300], y[:300], X[300:], y[300:], Cs=(0.1, 1.0), n_boot=500)
    assert result.accuracy >= 0.99
    assert 0.9 <= result.ci_low <= result.accuracy <= result.ci_high <= 1.0
    assert result.n_train == 300 and result.n_test == 150
    assert result.predictions.shape == (150,)


def test_random_labels_give_chance_accuracy():
    rng = np.random.default_rng(1)
    k, n_train, n_test = 4, 800, 1000
    X = rng.normal(size=(n_train + n_test, 20))
    y = rng.integers(0, k, size=n_train + n_test)
    result = probe.fit_probe(X[:n_train], y[:n_train], X[n_train:], y[n_train:], Cs=(0.01, 1.0), n_boot=200)
    # Test labels are independent of everything the probe saw, so its accuracy is Binomial(n, 1/k) / n.
    sd = math.sqrt((1 / k) * (1 - 1 / k) / n_test)
    assert abs(result.accuracy - 1 / k) < 5 * sd


def test_scaler_is_fitted_on_training_data_only():
    X, y = blobs(100, dim=5)
    train_X, test_X = X[:200], X[200:] + 50.0  # a test set far from the training mean
    result = probe.fit_probe(train_X, y[:200], test_X, y[200:], Cs=(1.0,), n_boot=50)
    scaler = result.model.named_steps["scale"]
    np.testing.assert_allclose(scaler.mean_, train_X.mean(axis=0), rtol=1e-10, atol=1e-10)
    assert not np.allclose(scaler.mean_, np.vstack([train_X, test_X]).mean(axis=0))


def test_C_sweep_never_sees_the_test_labels():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(600, 10))
    y = (X[:, 0] + 0.8 * rng.normal(size=600) > 0).astype(int)  # noisy, so C matters
    Cs = (0.001, 0.01, 0.1, 1.0, 10.0)
    first = probe.fit_probe(X[:400], y[:400], X[400:], y[400:], Cs=Cs, n_boot=50)
    shuffled = probe.fit_probe(X[:400], y[:400], X[400:], rng.permutation(y[400:]), Cs=Cs, n_boot=50)
    assert first.val_scores == shuffled.val_scores
    assert first.best_C == shuffled.best_C
    assert set(first.val_scores) == set(Cs)
    assert first.val_scores[first.best_C] == max(first.val_scores.values())


def test_choose_C_keeps_the_first_of_equal_validation_scores():
    X, y = blobs(60, n_classes=2)
    # Well separated blobs: every C reaches validation accuracy 1.0, so the first listed must win.
    best, scores = probe.choose_C(X, y, Cs=(10.0, 0.1, 1.0))
    assert scores == {10.0: 1.0, 0.1: 1.0, 1.0: 1.0} and best == 10.0
    best, _ = probe.choose_C(X, y, Cs=(1.0, 10.0))
    assert best == 1.0


def test_fit_probe_rejects_bad_input():
    X, y = blobs(20)
    with pytest.raises(ValueError, match="width"):
        probe.fit_probe(X, y, X[:, :3], y)
    with pytest.raises(ValueError, match="one label per row"):
        probe.fit_probe(X, y[:-1], X, y)
    with pytest.raises(ValueError, match="single class"):
        probe.fit_probe(X, np.zeros(len(y), dtype=int), X, y)


def test_majority_baseline_predicts_the_training_majority():
    train_y = np.array([2] * 50 + [0] * 30 + [1] * 20)
    test_y = np.array([2] * 40 + [1] * 60)
    result = probe.majority_baseline(train_y, test_y, n_boot=300)
    assert set(result.predictions) == {2}
    assert result.accuracy == pytest.approx(0.4)
    assert result.ci_low <= 0.4 <= result.ci_high
    assert result.best_C is None


# --------------------------------------------------------------------------------------------
# bootstrap_ci
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.3, 0.7, 0.95])
def test_bootstrap_interval_contains_estimate_and_narrows(p):
    rng = np.random.default_rng(3)
    widths, p_hats = [], []
    for n in (100, 1000, 10_000):
        correct = rng.random(n) < p
        low, high = probe.bootstrap_ci(correct, n_boot=1000, seed=0)
        assert low <= correct.mean() <= high
        widths.append(high - low)
        p_hats.append(float(correct.mean()))
    assert widths[0] > widths[1] > widths[2]
    # The percentile interval approximates the normal one, 2 * 1.96 * sqrt(p^ (1 - p^) / n), with the
    # sample's own p^. Each endpoint is a percentile of 1,000 resamples: its standard error is about
    # sqrt(0.025 * 0.975 / 1000) / phi(1.96) = 0.085 sd, so the width's is about 0.12 sd, 3 % of the
    # 3.92 sd width; 15 % allows five of those (plus the binomial's slight skew at p = 0.95).
    normal = 2 * 1.96 * math.sqrt(p_hats[1] * (1 - p_hats[1]) / 1000)
    assert widths[1] == pytest.approx(normal, rel=0.15)


def test_paired_interval_is_narrower_than_separate_ones_and_finds_a_real_gap():
    """Two probes that agree on most documents: the paired interval sees the small, consistent gap."""
    rng = np.random.default_rng(5)
    n = 1000
    test_y = rng.integers(0, 4, n)
    a_right = rng.random(n) < 0.70
    b_right = a_right & (rng.random(n) > 0.06)  # b misses ~6 % of what a gets right, never the reverse
    wrong = (test_y + 1) % 4
    a = probe.ProbeResult(a_right.mean(), *probe.bootstrap_ci(a_right), 1.0, {}, np.where(a_right, test_y, wrong),
                          10, n)
    b = probe.ProbeResult(b_right.mean(), *probe.bootstrap_ci(b_right), 1.0, {}, np.where(b_right, test_y, wrong),
                          10, n)
    diff, low, high = probe.paired_difference(a, b, test_y)
    assert diff == pytest.approx(a_right.mean() - b_right.mean())
    assert 0 < low <= diff <= high  # a clear gain
    assert a.ci_low < b.ci_high  # while the two separate intervals overlap
    table = probe.paired_table({("BERT_FT", "mean"): a, ("BERT_TINY", "mean"): b}, test_y)
    assert table[["a", "b"]].values.tolist() == [["BERT_FT / mean", "BERT_TINY / mean"]]
    assert bool(table["clear"].iloc[0]) and table["difference"].iloc[0] == pytest.approx(diff)
    same, low0, high0 = probe.paired_difference(a, a, test_y)
    assert same == low0 == high0 == 0.0
    with pytest.raises(ValueError, match="every test example"):
        probe.paired_difference(a, b, test_y[:10])


def test_bootstrap_is_seeded_and_rejects_empty_input():
    correct = np.random.default_rng(4).random(300) < 0.5
    assert probe.bootstrap_ci(correct, seed=7) == probe.bootstrap_ci(correct, seed=7)
    with pytest.raises(ValueError):
        probe.bootstrap_ci(np.array([]))


# --------------------------------------------------------------------------------------------
# Features
# --------------------------------------------------------------------------------------------


def test_extract_features_shapes(tiny_encoder, tiny_tokenizer):
    texts = ["the cat sat", "a dog ran far away", "red", "the big red dog sat on the mat"]
    feats = probe.extract_features(tiny_encoder, tiny_tokenizer, texts, batch_size=3, progress=False)
    assert set(feats) == {"cls", "mean"}
    for X in feats.values():
        assert X.shape == (4, 16) and X.dtype == np.float32 and np.isfinite(X).all()
    assert not np.allclose(feats["cls"], feats["mean"])


def test_mean_ignores_padding_and_keeps_input_order(tiny_encoder, tiny_tokenizer):
    short, long = "the cat sat", "the big red dog ran far far away on a mat"
    alone = probe.extract_features(tiny_encoder, tiny_tokenizer, [short], batch_size=2, progress=False)
    padded = probe.extract_features(tiny_encoder, tiny_tokenizer, [short, long], batch_size=2, progress=False)
    np.testing.assert_allclose(padded["mean"][0], alone["mean"][0], atol=1e-5)
    np.testing.assert_allclose(padded["cls"][0], alone["cls"][0], atol=1e-5)
    # ...and the mean is over the real tokens: compare with a direct forward pass of the short text.
    batch = tiny_tokenizer([short], return_tensors="pt")
    with torch.no_grad():
        hidden = tiny_encoder.eval()(**batch).last_hidden_state[0]
    np.testing.assert_allclose(alone["mean"][0], hidden.mean(0).numpy(), atol=1e-5)
    np.testing.assert_allclose(alone["cls"][0], hidden[0].numpy(), atol=1e-5)


def test_pool_takes_position_zero_and_the_masked_mean():
    hidden = torch.arange(2 * 4 * 3, dtype=torch.float32).reshape(2, 4, 3)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    pooled = probe.pool(hidden, mask)
    torch.testing.assert_close(pooled["cls"], hidden[:, 0])
    torch.testing.assert_close(pooled["mean"][0], hidden[0].mean(0))
    torch.testing.assert_close(pooled["mean"][1], hidden[1, :2].mean(0))  # the two padded positions are left out
    empty = probe.pool(hidden, torch.zeros(2, 4, dtype=torch.long))["mean"]
    assert torch.equal(empty, torch.zeros(2, 3))  # no real token: zero, not a division by zero


def test_overlap_counts_test_documents_found_in_training_text():
    assert probe.overlap(["a cat", "a dog ", "a cow"], ["a dog", "a cat sat", "a cow"]) == 2
    assert probe.overlap(["x"], []) == 0


def test_static_mean_excludes_specials_and_zero_rows(tiny_tokenizer):
    vocab = tiny_tokenizer.get_vocab()
    matrix = np.zeros((len(tiny_tokenizer), 3), dtype=np.float32)
    matrix[[vocab[s] for s in SPECIALS]] = 100.0  # would dominate the mean if specials were counted
    matrix[vocab["cat"]] = [1, 0, 0]
    matrix[vocab["dog"]] = [0, 1, 0]
    # "the" keeps its zero row: no vector was found for it
    texts = ["the cat dog", "the the", "zebra cat"]
    X = probe.static_mean_features(tiny_tokenizer, matrix, texts)
    np.testing.assert_allclose(X[0], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(X[1], [0.0, 0.0, 0.0])  # nothing usable -> zero vector
    np.testing.assert_allclose(X[2], [1.0, 0.0, 0.0])  # [UNK] for "zebra" is a special: left out
    with pytest.raises(ValueError, match="rows"):
        probe.static_mean_features(tiny_tokenizer, matrix[:5], texts)


# --------------------------------------------------------------------------------------------
# Data subsets, presets, table, verdict
# --------------------------------------------------------------------------------------------


def test_stratified_subset_keeps_class_shares():
    labels = np.array([0] * 600 + [1] * 300 + [2] * 100)
    idx = stratified_subset(labels, 200, seed=0)
    assert len(idx) == 200 and len(set(idx)) == 200
    assert np.bincount(labels[idx]).tolist() == [120, 60, 20]
    assert len(stratified_subset(labels, None)) == 1000


def test_load_probe_data_from_files_takes_stratified_subsets(tmp_path):
    rows = ["text,label"] + [f"document number {i} about {'cats' if i % 4 else 'dogs'},{'a' if i % 4 else 'b'}"
                             for i in range(400)]
    (tmp_path / "set.csv").write_text("\n".join(rows) + "\n")
    config = probe.ProbeConfig(max_train=100, max_test=40, Cs=(1.0,), n_boot=10, batch_size=8)
    data = load_probe_data(config, LabelledSpec.parse(f"files:{tmp_path / 'set.csv'}"))
    assert data.label_names == ["a", "b"]
    assert len(data.train_texts) == len(data.train_y) == 100 and len(data.test_texts) == len(data.test_y) == 40
    assert np.bincount(data.train_y).tolist() == [75, 25] and np.bincount(data.test_y).tolist() == [30, 10]
    assert not set(data.train_texts) & set(data.test_texts)
    assert data.class_counts()["train"].tolist() == [75, 25]



def _fake_result(acc: float, low: float, high: float) -> probe.ProbeResult:
    return probe.ProbeResult(acc, low, high, 0.1, {0.1: acc}, np.zeros(3), 10, 3)


def test_table_order_files_and_verdict(tmp_path):
    rows = [
        probe.result_row("BERT_FT", "mean", _fake_result(0.80, 0.77, 0.83)),
        probe.result_row("BERT_FT", "cls", _fake_result(0.60, 0.57, 0.63)),
        probe.result_row("majority", "-", _fake_result(0.20, 0.18, 0.22)),
        probe.result_row("random init", "cls", _fake_result(0.50, 0.45, 0.55)),
        probe.result_row("random init", "mean", _fake_result(0.48, 0.43, 0.53)),
    ]
    df = probe.results_table(rows)
    assert df["model"].tolist() == ["majority", "random init", "random init", "BERT_FT", "BERT_FT"]
    paired = pd.DataFrame([{"a": "BERT_FT / mean", "b": "BERT_FT / cls", "difference": 0.2}])
    run = RunLayout(tmp_path)
    assert save_probe_results(df, paired, run, {"preset": "smoke", "lang": "en"}) == \
        [run.probe_table, run.probe_record, run.probe_differences]
    assert run.probe_table.read_text().splitlines()[0] == ",".join(probe.TABLE_COLUMNS)
    assert pd.read_csv(run.probe_differences).to_dict("records") == paired.to_dict("records")
    saved = json.loads(run.probe_record.read_text())
    assert saved["preset"] == "smoke" and len(saved["results"]) == 5
    assert saved["results"][0]["best_C"] == 0.1
    verdict = probe.pooling_verdict(df)
    assert ("mean pooling is shown better for 1 of 2 encoders and the [CLS] vector for 0; "
            "for 1 the difference is not shown:") in verdict
    assert "**BERT_FT**: mean 0.800 vs cls 0.600 (intervals do not overlap)" in verdict
    assert "**random init**: cls 0.500 vs mean 0.480 (intervals overlap: not shown)" in verdict
    assert "Mean pooling shown better for 1 of 1 pretrained encoders (BERT_FT) in this run." in verdict
    assert probe.best_feature(df, "BERT_FT") == "mean" and probe.best_feature(df, "random init") == "cls"
    with pytest.raises(ValueError, match="no cls/mean rows"):
        probe.best_feature(df, "majority")


def test_verdict_uses_the_paired_interval_when_given():
    rows = [probe.result_row("BERT_FT", "mean", _fake_result(0.62, 0.59, 0.65)),
            probe.result_row("BERT_FT", "cls", _fake_result(0.60, 0.57, 0.63))]
    df = probe.results_table(rows)
    assert "intervals overlap: not shown" in probe.pooling_verdict(df)
    paired = pd.DataFrame([{"a": "BERT_FT / mean", "b": "BERT_FT / cls", "difference": 0.02, "ci_low": 0.01,
                            "ci_high": 0.03, "clear": True}])
    verdict = probe.pooling_verdict(df, paired)
    assert "paired 95 % interval of mean - cls: [+0.010, +0.030], a clear difference" in verdict
    assert "Mean pooling shown better for 1 of 1 pretrained encoders (BERT_FT)" in verdict


def test_a_pooling_whose_paired_interval_includes_zero_is_not_shown_and_not_counted_as_agreeing():
    rows = [probe.result_row(model, feature, _fake_result(acc, acc - 0.03, acc + 0.03))
            for model, feature, acc in (("BERT_TINY", "mean", 0.55), ("BERT_TINY", "cls", 0.50),
                                        ("BERT_FT", "mean", 0.74), ("BERT_FT", "cls", 0.70))]
    paired = pd.DataFrame([{"a": "BERT_TINY / mean", "b": "BERT_TINY / cls", "difference": 0.05, "ci_low": 0.02,
                            "ci_high": 0.08, "clear": True},
                           {"a": "BERT_FT / mean", "b": "BERT_FT / cls", "difference": 0.04, "ci_low": -0.001,
                            "ci_high": 0.08, "clear": False}])
    verdict = probe.pooling_verdict(probe.results_table(rows), paired)
    assert "**BERT_FT**: mean 0.740 vs cls 0.700 (paired 95 % interval of mean - cls: [-0.001, +0.080], " \
           "includes 0: not shown)" in verdict
    assert "shown better for 1 of 2 encoders and the [CLS] vector for 0; for 1 the difference is not shown" in verdict
    assert "Mean pooling shown better for 1 of 2 pretrained encoders (BERT_TINY, BERT_FT)" in verdict


def test_the_paired_table_compares_bert_tiny_with_its_untrained_control_for_both_poolings():
    results = {(model, feature): _fake_result(0.5, 0.4, 0.6) for model in ("random init", "BERT_TINY", "BERT_FT")
               for feature in probe.FEATURES}
    pairs = probe.default_pairs(results)
    for feature in probe.FEATURES:
        assert (("BERT_TINY", feature), ("random init", feature)) in pairs
    assert len(pairs) == len(set(pairs))


# --------------------------------------------------------------------------------------------
# Plots and the exercises' reference solutions
# --------------------------------------------------------------------------------------------


def test_plots_draw_every_row_and_panel():
    import matplotlib

    matplotlib.use("Agg")
    from plots import probe as probe_plots

    rows = [probe.result_row("majority", "-", _fake_result(0.2, 0.18, 0.22)),
            probe.result_row("BERT_FT", "mean", _fake_result(0.8, 0.77, 0.83))]
    fig = probe_plots.plot_accuracies(probe.results_table(rows), chance=0.2)
    assert len(fig.axes[0].patches) == 2
    X, y = blobs(30)
    fig = probe_plots.plot_pca({"a": X, "b": -X}, y, ["p", "q", "r"])
    assert len(fig.axes) == 2 and all("first 2 PCs" in ax.get_title() for ax in fig.axes)


def test_exercise_1_accepts_the_guessing_floor_to_three_decimals_and_rejects_the_other_floors():
    from exercises import nb05

    train_y, test_y = np.array([2] * 50 + [0] * 30 + [1] * 20), np.array([2] * 40 + [1] * 60)
    expected = 0.5 * 0.4 + 0.3 * 0.0 + 0.2 * 0.6  # training share times test share, summed over the classes
    assert nb05.exercise_1(train_y, test_y) == pytest.approx(expected)
    is_right = nb05.proportional_guess_right(train_y, test_y)
    assert is_right(expected) and is_right(round(expected, 3)) and is_right(expected + 0.0004)
    assert not is_right(0.4)  # always the largest training class: the majority row
    assert not is_right(1 / 3)  # uniform guessing over three classes
    assert not is_right(0.5 * 0.5 + 0.3 * 0.3 + 0.2 * 0.2)  # the training shares squared: not scored on the test set
    assert nb05.exercise_1(np.array([0, 1]), np.array([2, 2])) == 0.0  # a class the training labels never hold


def test_exercise_4s_reference_answer_starts_with_its_letter():
    # Refusing wrong letters and showing the answer only afterwards: tests/test_exercises.py, for every notebook.
    from exercises import nb05

    assert nb05.exercise_4() == nb05.POOLING_REASON and nb05.POOLING_EXPLANATION.startswith(f"({nb05.POOLING_REASON})")


def test_exercise_2_measures_predictions_changed_by_a_test_fitted_scaler():
    from exercises import nb05

    X, y = blobs(100, dim=5, spread=2.0)
    result = probe.fit_probe(X[:200], y[:200], X[200:] + 3.0, y[200:], Cs=(1.0,), n_boot=10)  # a shifted test set
    share = nb05.exercise_2(result.model, X[200:] + 3.0)
    assert 0 < share <= 1  # re-centring the shifted test set moves documents across the probe's boundaries
    is_right = nb05.changed_share_right(result.model, X[200:] + 3.0)
    assert is_right(share) and not is_right(0.0) and not is_right(share * 100)
    assert is_right(round(share, 3)) and is_right(share + 0.0004) and not is_right(share + 0.0006)


def test_exercise_3_follows_choose_C_not_the_test_column():
    from exercises import nb05

    answer = nb05.exercise_3(nb05.C_TABLE)
    assert answer == 0.1 and nb05.C_right(answer)
    best_on_test = max(nb05.C_TABLE, key=lambda c: nb05.C_TABLE[c][1])
    assert best_on_test == 1.0 and not nb05.C_right(best_on_test)
    validation = {c: v for c, (v, _) in nb05.C_TABLE.items()}
    assert max(validation, key=validation.__getitem__) == answer  # the rule choose_C uses
