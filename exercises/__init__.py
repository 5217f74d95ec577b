"""Self-checks for the exercises at the end of each notebook.

An exercise cell holds ``answer = None``; the self-check cell below it calls :func:`check`. With no
answer yet it says so and moves on (the notebook still runs top to bottom); a wrong answer raises
:class:`WrongAnswer` with a hint; a right one prints a tick. Under papermill the parameter
``solve_exercises=True`` fills each answer with the reference solution from
``exercises.<notebook>``, so the test suite runs every solution through its self-check.
"""

from __future__ import annotations

import math
from typing import Any, Callable


class WrongAnswer(AssertionError):
    """The answer given to an exercise's self-check is not right; the message says why."""


def check(name: str, answer: Any, is_right: Callable[[Any], bool], hint: str, explanation: str = "") -> bool | None:
    """None if unanswered, True if ``is_right(answer)``; otherwise raise WrongAnswer with ``hint``.

    ``explanation`` is the written reference answer of a prediction or explanation exercise: it is
    printed only after a right answer, so it never stands on the screen before the student answers.
    """
    if answer is None:
        print(f"{name}: not answered yet (set the answer in the cell above and run both cells again)")
        return None
    try:
        right = bool(is_right(answer))
    except Exception as err:  # an answer of the wrong shape is a wrong answer, not a crash
        raise WrongAnswer(f"{name}: could not check {answer!r} ({type(err).__name__}: {err}). {hint}") from None
    if not right:
        raise WrongAnswer(f"{name}: {answer!r} is not right. {hint}")
    print(f"{name}: ✓ right")
    if explanation:
        print(f"Why: {explanation}")
    return True


def close_to(expected: float, tolerance: float) -> Callable[[Any], bool]:
    """A checker that accepts a number within ``tolerance`` of ``expected``."""
    return lambda answer: math.isfinite(float(answer)) and abs(float(answer) - expected) <= tolerance


def choice(right: str, options: str) -> Callable[[Any], bool]:
    """A checker for a multiple-choice explanation: accepts the letter ``right`` (any case), refuses
    a letter outside ``options`` with a message that lists them."""
    def is_right(answer: Any) -> bool:
        letter = str(answer).strip().lower()
        if letter not in options.lower():
            raise ValueError(f"answer with one of the letters {', '.join(options)}")
        return letter == right.lower()
    return is_right
