"""Reference solutions of notebook 05's exercises (linear probing), and the checks their self-check cells use.

Try the exercises before reading on: every function below gives an answer away.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

# Exercise 3's validation table: C -> (validation accuracy, test accuracy). The test column is there
# to tempt: C is chosen on validation data only, and equal validation scores go to the C listed first.
C_TABLE = {0.01: (0.612, 0.598), 0.1: (0.655, 0.641), 1.0: (0.655, 0.662), 10.0: (0.637, 0.650)}


def exercise_1(train_y: np.ndarray, test_y: np.ndarray) -> float:
    """Test accuracy of always predicting the most frequent class of the training labels."""
    majority = np.bincount(np.asarray(train_y)).argmax()
    return float(np.mean(np.asarray(test_y) == majority))


def majority_right(train_y: np.ndarray, test_y: np.ndarray) -> Any:
    """Exercise 1's check: the accuracy exactly (it is a count over the test set, so no tolerance is needed
    beyond float rounding: 1e-9 is far below one document in 1/len(test_y))."""
    expected = exercise_1(train_y, test_y)
    return lambda answer: math.isfinite(float(answer)) and abs(float(answer) - expected) <= 1e-9


def exercise_2(pipeline: Any, test_X: np.ndarray) -> float:
    """Share of test predictions that change when the test set is standardised with its own statistics.

    ``pipeline`` is a fitted probe (scaler then logistic regression). Its scaler holds the training
    data's means and deviations; refitting a scaler on the test features instead makes every
    document's prediction depend on which other documents happen to be in the test set.
    """
    from sklearn.preprocessing import StandardScaler

    test_X = np.asarray(test_X)
    own = StandardScaler().fit(test_X).transform(test_X)
    leaky = pipeline.named_steps["logreg"].predict(own)
    return float(np.mean(leaky != pipeline.predict(test_X)))


def changed_share_right(pipeline: Any, test_X: np.ndarray) -> Any:
    """Exercise 2's check: the measured share, to float rounding."""
    expected = exercise_2(pipeline, test_X)
    return lambda answer: math.isfinite(float(answer)) and abs(float(answer) - expected) <= 1e-9


def exercise_3(table: Mapping[float, tuple[float, float]] = C_TABLE) -> float:
    """The C with the best validation accuracy, the first listed among equals; the test column is never read."""
    best = max(score for score, _ in table.values())
    return next(C for C, (score, _) in table.items() if score == best)


def C_right(answer: Any) -> bool:
    """Exercise 3's check."""
    return float(answer) == exercise_3(C_TABLE)
