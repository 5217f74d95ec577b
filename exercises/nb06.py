"""Reference solutions of notebook 06's exercises (crossings, the paper's average, testability), and their checks.

Try the exercises before reading on: every function below gives an answer away.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from helpers import paper_values as paper
from helpers.claims import TESTABLE_MARGIN, is_testable
from helpers.crossing import crossing_step

# Exercise 1: BERT_FT's accuracy at each evaluation; BERT_TINY ended at 0.0662 (as in a demo run, where
# BERT_TINY scored exactly the same at two evaluations because the evaluation mask is fixed).
EXERCISE_1 = {"steps": [0, 25, 50, 75, 100, 125], "ft_accuracy": [0.0, 0.0581, 0.0662, 0.0662, 0.0701, 0.0815],
              "tiny_final": 0.0662}
# Exercise 3: final BERT_TINY eval loss and unigram loss per language at the [MASK] positions only, the losses
# helpers.claims.is_testable needs (nats, made-up but plausible values). The answer is an exact set of languages.
EXERCISE_3 = {"en": {"tiny": 7.162, "unigram": 7.299}, "fr": {"tiny": 6.100, "unigram": 6.850},
              "es": {"tiny": 6.600, "unigram": 7.050}}


def exercise_1(steps: Sequence[int], ft_accuracy: Sequence[float], tiny_final: float) -> int | None:
    """The first step after 0 where BERT_FT is strictly above BERT_TINY's final accuracy: ties do not count."""
    return crossing_step(steps, ft_accuracy, tiny_final, lower_is_better=False)


def crossing_right(answer: Any) -> bool:
    """Exactly the step (a whole number): steps are counted, not measured."""
    return int(answer) == exercise_1(**EXERCISE_1)


def exercise_2(accuracy: Mapping[str, Mapping[str, float]] = paper.EVAL_ACCURACY, leave_out: str = "en") -> float:
    """Table 3's average gain without one language: the mean of BERT_FT minus BERT_TINY over the others."""
    gains = [acc["bert_ft"] - acc["bert_tiny"] for lang, acc in accuracy.items() if lang != leave_out]
    return sum(gains) / len(gains)


def average_right(answer: Any) -> bool:
    """Within half a rounding step of the third decimal, so an answer rounded to 0.001 passes."""
    return math.isfinite(float(answer)) and abs(float(answer) - exercise_2()) <= 5e-4


# Exercise 4: the letter of the right explanation, and the written reference answer shown after it.
EXERCISE_4_ANSWER = "b"
EXERCISE_4_EXPLANATION = (
    "With one seed, the bootstrap can only redraw positions, so its interval holds how much the mean would "
    "move with other masked tokens. The three made-up seeds also differ from each other (BERT_FT's rate moves "
    "by up to two points between them), and only a resample of the seeds can see that second source of "
    "variation. Three seeds scored on the same positions add no new positions, so nothing shrinks to make up "
    "for it: the interval widens because it now admits that another seed could give another answer.")


def exercise_3(losses: Mapping[str, Mapping[str, float]] = EXERCISE_3) -> set[str]:
    """The languages whose BERT_TINY ended more than TESTABLE_MARGIN below the unigram loss, both at [MASK]."""
    return {lang for lang, x in losses.items() if is_testable(x["tiny"], x["unigram"], TESTABLE_MARGIN)}


def testable_right(answer: Any) -> bool:
    """Exactly the right set of language codes: none missing, none extra."""
    return {str(lang) for lang in answer} == set(exercise_3())
