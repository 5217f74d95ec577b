"""Linear probing: how much a frozen encoder's features say about a document's topic.

A probe is a logistic regression on fixed features, so its accuracy measures what the encoder
already represents, not what fine-tuning could teach it. Every model in the comparison (the
untrained "random init" encoder, BERT_TINY, BERT_FT) gets the same probe, the same data and the
same regularisation sweep, and two baselines frame the numbers: the majority class (what a probe
that learned nothing scores) and the mean of the static fastText vectors (what the BERT_FT
initialisation brings before any pretraining).

The regularisation strength C is chosen on a validation part of the training data, never on the
test set, and every test accuracy carries a bootstrap 95% interval so that two models are only
called different when the difference is larger than the test set's sampling noise.

Notebook 05 shows the algorithm in its own cells (``pool``, ``make_probe``, ``validation_split``,
``choose_C``, ``fit_probe``, ``majority_baseline``, ``run_probes``); the copies here are checked to be
identical. The plots are in :mod:`plots.probe`; loading the labelled data and the saved
encoders, and writing the results into the run folder, in :mod:`pipeline.train.probe_runs`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from helpers.presets import ProbeConfig
from helpers.stats import bootstrap_draws, percentile_interval

if TYPE_CHECKING:  # heavy imports stay inside the functions that need them
    import pandas as pd
    import torch
    from sklearn.pipeline import Pipeline
    from transformers import BertModel

FEATURES = ("cls", "mean")
MODEL_ORDER = ("majority", "static vectors (mean)", "random init", "BERT_TINY", "BERT_FT")
# The encoders 04_pretraining trains: the name in tables -> the model name (its folder in a run).
PRETRAINED = {"BERT_TINY": "bert_tiny", "BERT_FT": "bert_ft"}
TABLE_COLUMNS = ("model", "feature", "accuracy", "ci_low", "ci_high", "best_C", "n_train", "n_test")
PAIRED_COLUMNS = ("a", "b", "difference", "ci_low", "ci_high", "clear")


# --------------------------------------------------------------------------------------------
# Features
# --------------------------------------------------------------------------------------------


def pool(hidden: "torch.Tensor", attention_mask: "torch.Tensor") -> dict[str, "torch.Tensor"]:
    """Two document vectors from the last layer [batch, positions, hidden]: [CLS] and the mean of real tokens."""
    cls = hidden[:, 0]  # position 0: the [CLS] token the tokenizer puts in front of every text
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)  # 1 at real tokens, 0 at padding
    mean = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)  # padding never enters the mean
    return {"cls": cls, "mean": mean}


def extract_features(encoder: "BertModel", tokenizer: Any, texts: Sequence[str], batch_size: int = 64,
                     max_length: int = 128, device: str = "cpu", progress: bool = True,
                     desc: str = "features") -> dict[str, np.ndarray]:
    """:func:`pool` over every text with a frozen encoder, in batches; rows come back in the input order.

    Texts are batched in order of length so that a batch pads only to a similar length: at 128 tokens
    this cut the positions computed on the embedded set by 27% (384k -> 280k for 3,000 documents);
    at 64 tokens by 5%.
    """
    import torch
    from tqdm.auto import tqdm

    if len(texts) == 0:
        raise ValueError("extract_features needs at least one text")
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    encoder.eval().to(device)
    lengths = [len(ids) for ids in tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]]
    order = np.argsort(lengths, kind="stable")
    out = {name: np.zeros((len(texts), encoder.config.hidden_size), dtype=np.float32) for name in FEATURES}
    with torch.no_grad():
        for start in tqdm(range(0, len(texts), batch_size), desc=desc, unit="batch", disable=not progress):
            rows = order[start:start + batch_size]
            batch = tokenizer([texts[i] for i in rows], padding=True, truncation=True, max_length=max_length,
                              return_tensors="pt").to(device)
            pooled = pool(encoder(**batch).last_hidden_state, batch["attention_mask"])
            for name, vectors in pooled.items():
                out[name][rows] = vectors.float().cpu().numpy()
    return out


def overlap(test_texts: Sequence[str], training_texts: Iterable[str]) -> int:
    """How many test documents also occur, word for word, among the training documents."""
    seen = {hashlib.sha256(t.strip().encode("utf-8")).digest() for t in training_texts}
    return sum(hashlib.sha256(t.strip().encode("utf-8")).digest() in seen for t in test_texts)


FeatureKey = tuple[str, str]  # (model, feature), e.g. ("BERT_FT", "mean")


def encoder_features(encoders: Mapping[str, "BertModel"], tokenizer: Any, train_texts: Sequence[str],
                     test_texts: Sequence[str], config: ProbeConfig, device: str = "cpu"
                     ) -> tuple[dict[FeatureKey, np.ndarray], dict[FeatureKey, np.ndarray], dict[str, float]]:
    """CLS and mean features of every encoder for both splits, and the seconds each encoder took."""
    import time

    texts = list(train_texts) + list(test_texts)
    train: dict[FeatureKey, np.ndarray] = {}
    test: dict[FeatureKey, np.ndarray] = {}
    seconds: dict[str, float] = {}
    for name, encoder in encoders.items():
        started = time.perf_counter()
        for feature, X in extract_features(encoder, tokenizer, texts, config.batch_size, config.max_length,
                                           device, desc=name).items():
            train[(name, feature)], test[(name, feature)] = X[:len(train_texts)], X[len(train_texts):]
        seconds[name] = round(time.perf_counter() - started, 2)
    return train, test, seconds


def static_mean_features(tokenizer: Any, matrix: np.ndarray, texts: Sequence[str], max_length: int = 128) -> np.ndarray:
    """Bag-of-vectors baseline: the mean aligned static vector of each text's tokens.

    Uses the same truncated tokens the encoder sees. Special tokens and tokens whose row is all
    zeros (no fastText vector was found) are left out, so they do not pull the mean to zero; a
    text with no usable token gets the zero vector.
    """
    matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise ValueError(f"the static matrix must be 2-D [vocab, dim], got shape {matrix.shape}")
    if matrix.shape[0] < len(tokenizer):
        raise ValueError(
            f"the static matrix has {matrix.shape[0]} rows but the tokenizer has {len(tokenizer)} tokens; "
            "rebuild the static vectors (03_static_vectors) with this tokenizer"
        )
    usable = np.abs(matrix).sum(axis=1) > 0
    usable[list(tokenizer.all_special_ids)] = False
    ids_per_text = tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]
    out = np.zeros((len(texts), matrix.shape[1]), dtype=np.float32)
    for row, ids in enumerate(ids_per_text):
        ids = np.asarray(ids, dtype=np.int64)
        ids = ids[usable[ids]]
        if ids.size:
            out[row] = matrix[ids].mean(axis=0, dtype=np.float64)
    return out


# --------------------------------------------------------------------------------------------
# Intervals, then the probe itself (shown in notebook 05)
# --------------------------------------------------------------------------------------------


@dataclass
class ProbeResult:
    """Test accuracy with its 95% bootstrap interval, and how the probe was chosen."""

    accuracy: float
    ci_low: float
    ci_high: float
    best_C: float | None
    val_scores: dict[float, float]
    predictions: np.ndarray = field(repr=False)
    n_train: int
    n_test: int
    model: Any = field(default=None, repr=False)  # the fitted Pipeline (None for the majority baseline)


def bootstrap_ci(correct: np.ndarray, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``correct`` (resampling test examples)."""
    correct = np.asarray(correct, dtype=np.float64)
    if correct.ndim != 1 or correct.size == 0:
        raise ValueError(f"bootstrap_ci needs a non-empty 1-D array, got shape {correct.shape}")
    return percentile_interval(bootstrap_draws(correct, draws=n_boot, seed=seed), level)


def paired_difference(a: ProbeResult, b: ProbeResult, test_y: np.ndarray, n_boot: int = 1000, seed: int = 0,
                      level: float = 0.95) -> tuple[float, float, float]:
    """Accuracy of ``a`` minus ``b`` on the same test set, with a paired bootstrap interval.

    Both probes are scored on the same documents, so their errors are correlated; resampling the
    documents once for both (the bootstrap of the per-document difference) gives a narrower and
    correct interval, where asking whether two separate intervals overlap is needlessly conservative.
    """
    test_y = np.asarray(test_y)
    if len(a.predictions) != len(test_y) or len(b.predictions) != len(test_y):
        raise ValueError("both results must hold predictions for every test example")
    diff = (a.predictions == test_y).astype(np.float64) - (b.predictions == test_y).astype(np.float64)
    low, high = bootstrap_ci(diff, n_boot=n_boot, seed=seed, level=level)
    return float(diff.mean()), low, high


def default_pairs(results: Mapping[tuple[str, str], ProbeResult]) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """The comparisons notebook 05 asks about: mean vs cls per encoder, BERT_FT vs each other encoder, and
    BERT_TINY vs its untrained control (what MLM pretraining alone added)."""
    pairs = [((model, "mean"), (model, "cls")) for model in MODEL_ORDER
             if (model, "mean") in results and (model, "cls") in results]
    for feature in FEATURES:
        for other in ("BERT_TINY", "random init"):
            pairs.append((("BERT_FT", feature), (other, feature)))
        pairs.append((("BERT_FT", feature), ("static vectors (mean)", "-")))
    pairs += [(("BERT_TINY", feature), ("random init", feature)) for feature in FEATURES]
    return [(a, b) for a, b in pairs if a in results and b in results]


def paired_table(results: Mapping[tuple[str, str], ProbeResult], test_y: np.ndarray,
                 pairs: Sequence[tuple[tuple[str, str], tuple[str, str]]] | None = None, n_boot: int = 1000,
                 seed: int = 0) -> "pd.DataFrame":
    """One row per pair: the accuracy difference, its paired 95 % interval and whether it excludes zero."""
    import pandas as pd

    rows = []
    for a, b in (default_pairs(results) if pairs is None else pairs):
        diff, low, high = paired_difference(results[a], results[b], test_y, n_boot=n_boot, seed=seed)
        rows.append({"a": " / ".join(a).removesuffix(" / -"), "b": " / ".join(b).removesuffix(" / -"),
                     "difference": diff, "ci_low": low, "ci_high": high, "clear": bool(low > 0 or high < 0)})
    return pd.DataFrame(rows, columns=list(PAIRED_COLUMNS))


def check_probe_inputs(train_X: np.ndarray, train_y: np.ndarray, test_X: np.ndarray, test_y: np.ndarray,
                       Cs: Sequence[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Arrays of matching shapes, at least one C and two classes, or a ValueError saying which is wrong."""
    arrays = []
    for X, y, what in ((train_X, train_y, "training data"), (test_X, test_y, "test data")):
        X, y = np.asarray(X), np.asarray(y)
        if X.ndim != 2 or len(X) != len(y) or len(y) == 0:
            raise ValueError(f"{what}: need a 2-D feature matrix and one label per row, got {X.shape} and {y.shape}")
        arrays += [X, y]
    if arrays[0].shape[1] != arrays[2].shape[1]:
        raise ValueError(f"train and test features differ in width: {arrays[0].shape[1]} vs {arrays[2].shape[1]}")
    if not Cs:
        raise ValueError("Cs must list at least one regularisation strength")
    if np.unique(arrays[1]).size < 2:
        raise ValueError("the training labels hold a single class; a probe needs at least two")
    return arrays[0], arrays[1], arrays[2], arrays[3]


def make_probe(C: float, seed: int = 0) -> "Pipeline":
    """Standardise every feature, then a multinomial logistic regression whose L2 penalty is 1/C.

    Transformer features are anisotropic: a few dimensions are far larger than the rest and would
    dominate the penalty. The scaler is a step of the pipeline, so ``fit`` learns its means and
    deviations from the data it is fitted on, and only from those.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    return Pipeline([
        ("scale", StandardScaler()),
        ("logreg", LogisticRegression(C=C, solver="lbfgs", max_iter=3000, random_state=seed)),
    ])


def validation_split(y: np.ndarray, val_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (fit, validation) of the training data; stratified where every class has 2+ members."""
    from sklearn.model_selection import train_test_split

    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must lie strictly between 0 and 1, got {val_fraction}")
    index = np.arange(len(y))
    stratify = y if np.unique(y, return_counts=True)[1].min() >= 2 else None
    try:
        return tuple(train_test_split(index, test_size=val_fraction, stratify=stratify, random_state=seed))
    except ValueError:  # too few examples per class for a stratified split
        return tuple(train_test_split(index, test_size=val_fraction, random_state=seed))


def choose_C(X: np.ndarray, y: np.ndarray, Cs: Sequence[float], val_fraction: float = 0.2,
             seed: int = 0) -> tuple[float, dict[float, float]]:
    """The C with the best validation accuracy (ties: the first listed), and every C's score.

    Only training data is used: a probe per C is fitted on one part and scored on the other.
    """
    fit_idx, val_idx = validation_split(y, val_fraction, seed)
    scores: dict[float, float] = {}
    for C in Cs:
        candidate = make_probe(C, seed).fit(X[fit_idx], y[fit_idx])
        scores[float(C)] = float(candidate.score(X[val_idx], y[val_idx]))
    return max(scores, key=scores.__getitem__), scores  # max keeps the first of equal scores


def fit_probe(train_X: np.ndarray, train_y: np.ndarray, test_X: np.ndarray, test_y: np.ndarray,
              Cs: Sequence[float] = (0.01, 0.1, 1, 10), val_fraction: float = 0.2, seed: int = 0,
              n_boot: int = 1000) -> ProbeResult:
    """Choose C on validation data, refit on all training data with it, score the test set once."""
    from threadpoolctl import threadpool_limits

    train_X, train_y, test_X, test_y = check_probe_inputs(train_X, train_y, test_X, test_y, Cs)
    with threadpool_limits(limits=1, user_api="blas"):  # small matrices: more BLAS threads only add overhead
        best_C, val_scores = choose_C(train_X, train_y, Cs, val_fraction, seed)
        probe = make_probe(best_C, seed).fit(train_X, train_y)
        predictions = probe.predict(test_X)
    correct = predictions == test_y
    low, high = bootstrap_ci(correct, n_boot=n_boot, seed=seed)
    return ProbeResult(float(correct.mean()), low, high, best_C, val_scores, predictions,
                       len(train_y), len(test_y), probe)


def majority_baseline(train_y: np.ndarray, test_y: np.ndarray, n_boot: int = 1000, seed: int = 0) -> ProbeResult:
    """Always predict the most frequent training class: the floor every probe must clear."""
    train_y, test_y = np.asarray(train_y), np.asarray(test_y)
    if train_y.size == 0 or test_y.size == 0:
        raise ValueError("majority_baseline needs non-empty training and test labels")
    predictions = np.full(test_y.shape, np.bincount(train_y).argmax())
    correct = predictions == test_y
    low, high = bootstrap_ci(correct, n_boot=n_boot, seed=seed)
    return ProbeResult(float(correct.mean()), low, high, None, {}, predictions, len(train_y), len(test_y))


def run_probes(train_features: Mapping[FeatureKey, np.ndarray], test_features: Mapping[FeatureKey, np.ndarray],
               train_y: np.ndarray, test_y: np.ndarray, config: ProbeConfig, seed: int = 0,
               progress: bool = True) -> tuple["pd.DataFrame", dict[FeatureKey, ProbeResult]]:
    """The majority baseline plus one probe per (model, feature) key, all with the same Cs, split and seed."""
    from tqdm.auto import tqdm

    results = {("majority", "-"): majority_baseline(train_y, test_y, n_boot=config.n_boot, seed=seed)}
    for key in tqdm(list(train_features), desc="probes", disable=not progress):
        results[key] = fit_probe(train_features[key], train_y, test_features[key], test_y, Cs=config.Cs,
                                 seed=seed, n_boot=config.n_boot)
    table = results_table([result_row(model, feature, r) for (model, feature), r in results.items()])
    return table, results


# --------------------------------------------------------------------------------------------
# Results table
# --------------------------------------------------------------------------------------------


def result_row(model: str, feature: str, result: ProbeResult) -> dict[str, Any]:
    """One table row; ``feature`` is 'cls', 'mean' or '-' for the baselines."""
    return {"model": model, "feature": feature, "accuracy": result.accuracy, "ci_low": result.ci_low,
            "ci_high": result.ci_high, "best_C": result.best_C, "n_train": result.n_train, "n_test": result.n_test}


def results_table(rows: Sequence[Mapping[str, Any]]) -> "pd.DataFrame":
    """Rows in a fixed order (baselines first, then by model and feature) for tables and plots."""
    import pandas as pd

    df = pd.DataFrame(list(rows), columns=list(TABLE_COLUMNS))
    rank = {name: i for i, name in enumerate(MODEL_ORDER)}
    df["_rank"] = df["model"].map(lambda m: rank.get(m, len(rank)))
    return df.sort_values(["_rank", "feature"], kind="stable").drop(columns="_rank").reset_index(drop=True)


def best_feature(df: "pd.DataFrame", model: str) -> str:
    """The pooling ('cls' or 'mean') with the higher test accuracy for ``model``; a tie goes to 'mean'."""
    rows = df[(df["model"] == model) & df["feature"].isin(FEATURES)]
    if rows.empty:
        raise ValueError(f"the table has no cls/mean rows for {model!r}; models present: {sorted(set(df['model']))}")
    accuracy = rows.set_index("feature")["accuracy"]
    return "mean" if accuracy.get("mean", -1.0) >= accuracy.get("cls", -1.0) else "cls"


def pooling_verdict(df: "pd.DataFrame", paired: "pd.DataFrame | None" = None) -> str:
    """Which pooling wins for each encoder in this run, counted by the one rule: a difference whose interval
    includes 0 is not shown. The interval is the paired one of mean - cls (from :func:`paired_table`) when
    ``paired`` is given; without it, a difference counts only when the two separate intervals do not overlap.
    """
    lines, shown = [], {}
    encoders = [m for m in MODEL_ORDER if {(m, f) for f in FEATURES} <= set(zip(df["model"], df["feature"]))]
    for model in encoders:
        rows = df[df["model"] == model].set_index("feature")
        better = best_feature(df, model)
        worse = "cls" if better == "mean" else "mean"
        evidence, clear = _pooling_evidence(model, rows.loc[better], rows.loc[worse], paired)
        shown[model] = better if clear else None
        lines.append(f"- **{model}**: {better} {rows.loc[better, 'accuracy']:.3f} vs {worse} "
                     f"{rows.loc[worse, 'accuracy']:.3f} ({evidence})")
    if not lines:
        return "No encoder has both CLS and mean features in this table."
    wins = {feature: sum(s == feature for s in shown.values()) for feature in FEATURES}
    unclear = len(lines) - wins["mean"] - wins["cls"]
    head = (f"In this run mean pooling is shown better for {wins['mean']} of {len(lines)} encoders and the [CLS] "
            f"vector for {wins['cls']}" + (f"; for {unclear} the difference is not shown" if unclear else "") + ":")
    pretrained = [m for m in PRETRAINED if m in shown]
    tail = (f"Mean pooling shown better for "
            f"{sum(shown[m] == 'mean' for m in pretrained)} of {len(pretrained)} pretrained encoders "
            f"({', '.join(pretrained)}) in this run." if pretrained else "")
    return "\n".join([head, *lines, "", tail]).strip()


def _pooling_evidence(model: str, better: "pd.Series", worse: "pd.Series",
                      paired: "pd.DataFrame | None") -> tuple[str, bool]:
    """The interval's words for one encoder's mean - cls difference, and whether it excludes 0."""
    match = (paired[(paired["a"] == f"{model} / mean") & (paired["b"] == f"{model} / cls")]
             if paired is not None else [])
    if not len(match):
        separated = bool(better["ci_low"] > worse["ci_high"])
        return ("intervals do not overlap" if separated else "intervals overlap: not shown"), separated
    row = match.iloc[0]
    interval = f"paired 95 % interval of mean - cls: [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"
    clear = bool(row["ci_low"] > 0 or row["ci_high"] < 0)
    return (f"{interval}, a clear difference" if clear else f"{interval}, includes 0: not shown"), clear
