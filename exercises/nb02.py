"""Notebook 02's exercises (the WordPiece tokenizer): reference solutions and the checks their self-check cells use.

Try the exercises before reading on: every function below gives an answer away.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from helpers import tokenizer as tk

EXERCISE_1_WORDS = {"sing": 6, "singer": 3, "ring": 5, "rings": 2, "song": 4}
EXERCISE_2_SENTENCE = "Photosynthesis converts sunlight into chemical energy stored in glucose."
# A fertility given to 2 decimals is off by at most 0.005; the small extra keeps an exact .xx5 in.
FERTILITY_TOLERANCE = 0.005 + 1e-9
EXERCISE_4_ANSWER = "b"
EXERCISE_4_EXPLANATION = (
    "A piece that starts a word and the same letters inside a word are different things. With the mark, "
    "`walk ##ed` decodes to one word, walked, and `walk ed` to two; without it the two encodings would be "
    "the same string and decoding could not tell where a word ends. The model, too, gets one embedding for "
    "the word and another for the suffix instead of one shared row. (d) has it backwards: dropping the "
    "mark would merge each such pair into one entry, so the vocabulary would shrink. Notebook 03 meets the "
    "question from the other side: a fastText vector belongs to a whole word, so `##ed` is not given the "
    "vector of the word `ed`.")


def exercise_1(words: Mapping[str, int]) -> tuple[tuple[str, str], tuple[str, str]]:
    """The first merge by WordPiece's score, then the first by raw frequency (what the trainer does)."""
    split = {tk.split_word(w): n for w, n in words.items()}
    return tk.next_merge(split, by="score"), tk.next_merge(split, by="frequency")


def right_1(words: Mapping[str, int] = EXERCISE_1_WORDS) -> Callable[[Any], bool]:
    """Exercise 1's check: the pair with the top score, then the pair with the top count (either of a tie)."""
    pieces, pairs = tk.count_pieces_and_pairs({tk.split_word(w): n for w, n in words.items()})
    scores = tk.wordpiece_scores(pieces, pairs)

    def is_right(answer: Any) -> bool:
        score_pair, frequency_pair = (tuple(pair) for pair in answer)
        return (score_pair in pairs and frequency_pair in pairs and scores[score_pair] == max(scores.values())
                and pairs[frequency_pair] == max(pairs.values()))

    return is_right


def exercise_2(tokenizer: Any, sentence: str) -> float:
    """Fertility: tokens per whitespace word, without [CLS] and [SEP]."""
    return len(tokenizer.tokenize(sentence)) / len(sentence.split())


def right_2(tokenizer: Any, sentence: str = EXERCISE_2_SENTENCE) -> Callable[[Any], bool]:
    """Exercise 2's check: the fertility, given to 2 decimals or more (a count of pieces must be right)."""
    n_pieces = len(tokenizer(sentence, add_special_tokens=False)["input_ids"])
    expected = n_pieces / len(sentence.split())
    return lambda answer: math.isfinite(float(answer)) and abs(float(answer) - expected) <= FERTILITY_TOLERANCE


def exercise_3(tokenizer: Any) -> int:
    """Entries whose string exists twice, word-initial ``x`` and continuation ``##x``."""
    vocab = tokenizer.get_vocab()
    return sum(1 for t in vocab if t.startswith(tk.CONTINUATION_PREFIX) and t[len(tk.CONTINUATION_PREFIX):] in vocab)


def right_3(tokenizer: Any) -> Callable[[Any], bool]:
    """Exercise 3's check: the strings found both with and without the mark, counted as a set intersection."""
    vocab = set(tokenizer.get_vocab())
    pieces = {t for t in vocab if t.startswith(tk.CONTINUATION_PREFIX)}
    expected = len({t.removeprefix(tk.CONTINUATION_PREFIX) for t in pieces} & vocab)
    return lambda answer: float(answer) == expected
