"""Notebook 03's exercises: reference solutions and the checks their self-check cells use."""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from helpers import static_vectors as sv

# The notebook's word-similarity scores: (words, matrix, n_bootstrap=...) -> {benchmark: {"spearman": ...}}
WordSimilarity = Callable[..., Mapping[str, Mapping[str, Any]]]


# Exercise 1: does unit length change a word-similarity score?
def exercise_1(words: Sequence[str], raw_matrix: np.ndarray, word_similarity: WordSimilarity) -> float:
    """WordSim-353 Spearman of the unit-length rows: the same as the raw rows', since cosine ignores length."""
    return word_similarity(words, sv.unit_length(raw_matrix), n_bootstrap=1)["wordsim353"]["spearman"]


def right_1(words: Sequence[str], raw_matrix: np.ndarray, word_similarity: WordSimilarity) -> Callable[[Any], bool]:
    expected = word_similarity(words, raw_matrix, n_bootstrap=1)["wordsim353"]["spearman"]

    def is_right(answer: Any) -> bool:
        value = float(answer)
        return (math.isnan(value) and math.isnan(expected)) or abs(value - expected) < 1e-6

    return is_right


# Exercise 2: strip the ## of continuation pieces and look them up as words
def exercise_2(tokenizer_vocab: Mapping[str, int] | Any, vectors: sv.WordVectors) -> int:
    """How many more tokens find a vector with pieces='strip' than with the paper's 'skip'."""
    strip = sv.align(tokenizer_vocab, vectors, pieces="strip").report["n_found"]
    return strip - sv.align(tokenizer_vocab, vectors, pieces="skip").report["n_found"]


def right_2(tokenizer_vocab: Mapping[str, int] | Any, vectors: sv.WordVectors) -> Callable[[Any], bool]:
    report = sv.align(tokenizer_vocab, vectors, pieces="strip").report
    expected = report["n_found_pieces"]  # every extra row is a ## piece whose bare form is a word
    return lambda answer: int(answer) == expected and float(answer) == int(answer)


# Exercise 3: the random fallback the paper tried and rejected
def exercise_3(tokenizer_vocab: Mapping[str, int] | Any, vectors: sv.WordVectors, seed: int = 0) -> sv.Alignment:
    return sv.align(tokenizer_vocab, vectors, fallback="random", seed=seed)


def right_3(tokenizer_vocab: Mapping[str, int] | Any, vectors: sv.WordVectors) -> Callable[[Any], bool]:
    """Found rows equal the zero-fallback ones; the others look like N(0, 0.02) draws.

    The sample std of n normal values has a relative standard error of about 1/sqrt(2n); the check
    allows 6 of those (and at least 1 % for tiny vocabularies).
    """
    paper = sv.align(tokenizer_vocab, vectors)

    def is_right(answer: Any) -> bool:
        matrix, found = np.asarray(answer.matrix), np.asarray(answer.found)
        if not np.array_equal(found, paper.found) or not np.array_equal(matrix[found], paper.matrix[found]):
            return False
        rest = matrix[~found]
        if rest.size == 0:
            return True
        tolerance = max(6 / math.sqrt(2 * rest.size), 0.01)
        return abs(float(rest.std()) / sv.BERT_INIT_STD - 1) < tolerance and abs(float(rest.mean())) < 0.01

    return is_right
