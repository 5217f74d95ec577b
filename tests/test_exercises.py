"""exercises.check: an answer is judged, a reference explanation appears only after a right answer."""

from __future__ import annotations

import json
import re

import pytest

import exercises
from exercises import nb02, nb03, nb05, nb06
from pipeline.store.layout import NOTEBOOKS_DIR

# Each notebook's multiple-choice explanation: (its right letter, its written reference answer).
EXPLANATIONS = {"02 Ex4": (nb02.EXERCISE_4_ANSWER, nb02.EXERCISE_4_EXPLANATION),
                "03 Ex4": (nb03.EXERCISE_4_ANSWER, nb03.EXERCISE_4_EXPLANATION),
                "05 Ex4": (nb05.POOLING_REASON, nb05.POOLING_EXPLANATION),
                "06 Ex4": (nb06.EXERCISE_4_ANSWER, nb06.EXERCISE_4_EXPLANATION)}


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


@pytest.mark.parametrize("name", EXPLANATIONS)
def test_every_wrong_letter_is_refused_and_the_reference_answer_shows_only_after_the_right_one(name, capsys) -> None:
    letter, explanation = EXPLANATIONS[name]
    right = exercises.choice(letter, "abcd")
    for wrong in set("abcd") - {letter}:
        with pytest.raises(exercises.WrongAnswer):
            exercises.check(name, wrong, right, hint="", explanation=explanation)
    assert explanation not in capsys.readouterr().out
    assert exercises.check(name, letter, right, hint="", explanation=explanation) is True
    assert explanation in capsys.readouterr().out


# The multiple-choice exercises of notebooks 02, 03 and 05: (notebook, the words that open the exercise, right letter).
CHOICES = {"02 Ex4": ("02_tokenizer", "**Exercise 4 · Why the `##`?**", nb02.EXERCISE_4_ANSWER),
           "03 Ex4": ("03_static_vectors", "**Exercise 4 (centring and neighbours).**", nb03.EXERCISE_4_ANSWER),
           "05 Ex4": ("05_probing", "### Exercise 4:", nb05.POOLING_REASON)}
OPTION = re.compile(r"^(?:\* )?\(([a-e])\) (.*?)(?=\n(?:\* )?\([a-e]\) |\n\n|\Z)", re.M | re.S)


@pytest.mark.parametrize("name", CHOICES)
def test_no_right_option_gives_itself_away_by_being_the_longest(name: str) -> None:
    notebook, opening, right = CHOICES[name]
    cells = json.loads((NOTEBOOKS_DIR / f"{notebook}.ipynb").read_text(encoding="utf-8"))["cells"]
    text = next("".join(c["source"]) for c in cells if "".join(c["source"]).startswith(opening))
    lengths = {letter: len(" ".join(option.split())) for letter, option in OPTION.findall(text)}
    assert set(lengths) == set("abcd"), lengths
    assert lengths[right] < max(length for letter, length in lengths.items() if letter != right), lengths


def test_exercise_2_of_05_accepts_any_share_within_the_3_decimals_it_asks_for() -> None:
    cells = json.loads((NOTEBOOKS_DIR / "05_probing.ipynb").read_text(encoding="utf-8"))["cells"]
    text = next("".join(c["source"]) for c in cells if "### Exercise 2" in "".join(c["source"]))
    assert "to 3 decimals or better" in text and "within 0.0005 of the measured share" in text
    assert 0.0005 <= nb05.SHARE_TOLERANCE < 0.00051
