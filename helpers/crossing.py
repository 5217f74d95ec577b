"""The one definition of "BERT_FT reached BERT_TINY's final value", shared by every comparison.

The paper says BERT_FT's loss fell below BERT_TINY's final loss "after less than a third" of
training, and its accuracy passed BERT_TINY's final accuracy "after only 20 000 steps". We read
such a claim as: the first evaluation step **after step 0** at which BERT_FT is **strictly** better
than BERT_TINY's final value. A tie is not a crossing (with a fixed evaluation mask exact ties
happen), step 0 never counts (both models are untrained there), and "under a third" means a
fraction strictly below 1/3.
"""

from __future__ import annotations

import math
from typing import Iterable


def crossing_step(steps: Iterable[float], values: Iterable[float], target: float,
                  lower_is_better: bool) -> int | None:
    """First step > 0 whose value is strictly better than ``target``; None if none is (or target is NaN)."""
    if target is None or math.isnan(target):
        return None
    for step, value in zip(steps, values):
        if step <= 0 or value is None or math.isnan(value):
            continue
        if (value < target) if lower_is_better else (value > target):
            return int(step)
    return None


def fraction_of(step: int | None, total: int | None) -> float | None:
    """``step / total`` (None when either is missing or total is not positive)."""
    if step is None or not total or total <= 0:
        return None
    return step / total


def under_fraction(fraction: float | None, limit: float) -> bool | None:
    """Strictly below ``limit`` (None when there was no crossing to measure)."""
    return None if fraction is None else fraction < limit
