"""Reference solutions of notebook 01's exercises (masking), and the checks their self-check cells use.

Try the exercises before reading on: every function below gives an answer away.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from helpers.masking import MaskingStats, expected_random_specials, within_tolerance

SHARE_KEYS = ("mask", "random", "unchanged")
# Exercise 3's setting: the paper's run (100,000 steps of 128 x 128 tokens, a 30,000-id vocabulary
# with 5 specials); 120 of a sequence's 128 positions are assumed eligible (the rest [CLS], [SEP], padding).
PAPER_RUN = {"steps": 100_000, "rows": 128, "eligible_per_row": 120, "vocab_size": 30_000, "n_special": 5}


def exercise_1(mask_replace_prob: float, random_replace_prob: float) -> dict[str, float]:
    """The shares of the selected tokens: the split itself, since each selected token draws its action alone.

    (A random draw equals the original id once in |non-special vocabulary| draws, far below the error bars.)
    """
    return {"mask": mask_replace_prob, "random": random_replace_prob,
            "unchanged": 1.0 - mask_replace_prob - random_replace_prob}


def shares_agree(answer: Mapping[str, Any], measured: MaskingStats, z: float = 5.0) -> bool:
    """Exercise 1's check: a share for each action, each within ``z`` binomial s.d. of the measured share."""
    if set(answer) != set(SHARE_KEYS):
        return False
    predicted = {key: float(answer[key]) for key in SHARE_KEYS}
    if not all(0.0 <= p <= 1.0 for p in predicted.values()):
        return False
    return all(row["ok"] for row in within_tolerance(measured, predicted, z).values())


def exercise_2(mlm_probability: float = 0.15, target: float = 0.99) -> int:
    """Smallest E with 1 - (1 - p)^E >= target: a token escapes E independent draws with probability (1 - p)^E."""
    return math.ceil(math.log(1.0 - target) / math.log(1.0 - mlm_probability))


def epochs_right(answer: Any) -> bool:
    """Exercise 2's check: the whole number of epochs for 99 % coverage at p = 0.15 (not a fraction of one)."""
    return float(answer) == exercise_2(0.15, 0.99)


def exercise_3(steps: int = PAPER_RUN["steps"], rows: int = PAPER_RUN["rows"],
               eligible_per_row: int = PAPER_RUN["eligible_per_row"], vocab_size: int = PAPER_RUN["vocab_size"],
               n_special: int = PAPER_RUN["n_special"]) -> float:
    """Expected [PAD]/[UNK]/[CLS]/[SEP] insertions over a run when random ids are drawn from the whole vocabulary.

    Selected positions: steps x rows x eligible x 0.15; of those 10 % get a random id, which is one
    of the n_special - 1 specials other than [MASK] with probability (n_special - 1) / vocab_size.
    """
    n_selected = steps * rows * eligible_per_row * 0.15
    return expected_random_specials(round(n_selected), n_special, vocab_size)


def special_draws_right(answer: Any, rel_tolerance: float = 0.02) -> bool:
    """Exercise 3's check: within 2 % of the expected count (rounding is fine, a missing factor is not)."""
    expected = exercise_3()
    return math.isfinite(float(answer)) and abs(float(answer) - expected) <= rel_tolerance * expected


# Exercise 1's written reference answer, printed by the self-check only after a right answer.
SPLIT_EXPLANATION = (
    "Each selected token takes its action on its own, with the probabilities of the split, so the expected "
    "shares of the selected tokens are the split itself: 0.5 [MASK], 0.25 random, 0.25 unchanged. What you "
    "measure differs only by binomial noise, about sqrt(p(1 - p) / n) for n selected tokens, and by the random "
    "draws that hit the original id (1 in the number of non-special ids), which count as unchanged."
)
