"""exercises.check: an answer is judged, a reference explanation appears only after a right answer."""

from __future__ import annotations

import pytest

import exercises


def test_an_unanswered_exercise_shows_neither_a_verdict_nor_the_reference_answer(capsys) -> None:
    assert exercises.check("Ex", None, lambda a: True, hint="h", explanation="THE REASON") is None
    assert "THE REASON" not in capsys.readouterr().out


def test_a_right_answer_prints_the_reference_explanation_after_the_tick(capsys) -> None:
    assert exercises.check("Ex", "b", exercises.choice("b", "abc"), hint="h", explanation="THE REASON") is True
    out = capsys.readouterr().out
    assert out.index("✓") < out.index("THE REASON")


def test_a_wrong_choice_raises_with_the_hint_and_keeps_the_explanation_hidden(capsys) -> None:
    with pytest.raises(exercises.WrongAnswer, match="think again"):
        exercises.check("Ex", "a", exercises.choice("b", "abc"), hint="think again", explanation="THE REASON")
    assert "THE REASON" not in capsys.readouterr().out


def test_a_letter_outside_the_options_is_refused_naming_the_options() -> None:
    with pytest.raises(exercises.WrongAnswer, match="a, b, c"):
        exercises.check("Ex", "z", exercises.choice("b", "abc"), hint="")
    assert exercises.check("Ex", " B ", exercises.choice("b", "abc"), hint="") is True
