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


# The tables show a Spearman score to 3 decimals: read off one of them, it is off by at most 0.0005.
SPEARMAN_TOLERANCE = 0.0005 + 1e-9
# Exercise 3 asks for a ratio to 2 decimals (0.005); another seed for the random rows moves it by far less.
RATIO_TOLERANCE = 0.01


def right_1(words: Sequence[str], raw_matrix: np.ndarray, word_similarity: WordSimilarity) -> Callable[[Any], bool]:
    """Exercise 1's check: the raw vectors' score, computed or read to 3 decimals from a table."""
    expected = word_similarity(words, raw_matrix, n_bootstrap=1)["wordsim353"]["spearman"]

    def is_right(answer: Any) -> bool:
        value = float(answer)
        return (math.isnan(value) and math.isnan(expected)) or abs(value - expected) <= SPEARMAN_TOLERANCE

    return is_right


EXERCISE_1_EXPLANATION = (
    "No change: a cosine divides the dot product by both lengths, so scaling a row to unit length changes no "
    "cosine, no ranking of pairs and so no Spearman score. Centring is different: it changes the cosines "
    "themselves (compare the 'unit + center' rows of the benchmark table further up).")


# Exercise 2: a ## piece looked up by its bare form can start as an exact copy of a word's row
def exercise_2(tokenizer_vocab: Mapping[str, int] | Any, vectors: sv.WordVectors) -> int:
    """Pieces ``##x`` that pieces='strip' finds while ``x`` itself is a token that found a vector (same row)."""
    vocab = sv.vocab_of(tokenizer_vocab)
    words_found = sv.align(vocab, vectors).found  # the paper's lookup: whole-word tokens only
    pieces_found = sv.align(vocab, vectors, pieces="strip").found
    prefix = len(sv.PIECE_PREFIX)
    return sum(1 for token, i in vocab.items() if token.startswith(sv.PIECE_PREFIX) and pieces_found[i]
               and token[prefix:] in vocab and words_found[vocab[token[prefix:]]])


def right_2(tokenizer_vocab: Mapping[str, int] | Any, vectors: sv.WordVectors) -> Callable[[Any], bool]:
    """Exercise 2's check: ## rows of the 'strip' matrix equal to the row of their bare form, compared row by row."""
    vocab = sv.vocab_of(tokenizer_vocab)
    strip = sv.align(vocab, vectors, pieces="strip")
    twins = [(i, vocab[token[len(sv.PIECE_PREFIX):]]) for token, i in vocab.items()
             if token.startswith(sv.PIECE_PREFIX) and token[len(sv.PIECE_PREFIX):] in vocab]
    expected = sum(1 for piece, word in twins if strip.found[piece] and strip.found[word]
                   and np.array_equal(strip.matrix[piece], strip.matrix[word]))
    return lambda answer: float(answer) == expected


EXERCISE_2_EXPLANATION = (
    "Each of those pieces starts with exactly the row of its word: at the first step of pretraining the model "
    "cannot tell `##ing`, which continues a word, from `ing` standing alone, the very difference the `##` mark "
    "exists for (notebook 02, Exercise 4). Pretraining must first pull every such pair apart. The paper's "
    "'skip' avoids this: a piece starts at zero, with no meaning borrowed from a word.")


# Exercise 3: the random fallback the paper tried and rejected, against the copied rows
def exercise_3(tokenizer_vocab: Mapping[str, int] | Any, vectors: sv.WordVectors, seed: int = 0) -> float:
    """Mean row length of the copied fastText rows over that of the N(0, 0.02) fallback rows."""
    alignment = sv.align(tokenizer_vocab, vectors, fallback="random", seed=seed)
    lengths = np.linalg.norm(alignment.matrix, axis=1)
    return float(lengths[alignment.found].mean() / lengths[~alignment.found].mean())


def right_3(tokenizer_vocab: Mapping[str, int] | Any, vectors: sv.WordVectors) -> Callable[[Any], bool]:
    """Exercise 3's check: the copied rows' mean length (the paper's matrix) over a random row's expected length.

    A row of ``dim`` N(0, s) draws has expected length s * sqrt(2) * Gamma((dim + 1) / 2) / Gamma(dim / 2).
    """
    paper = sv.align(tokenizer_vocab, vectors)
    copied = float(np.linalg.norm(paper.matrix[paper.found], axis=1).mean())
    dim = paper.matrix.shape[1]
    random_length = sv.BERT_INIT_STD * math.sqrt(2) * math.exp(math.lgamma((dim + 1) / 2) - math.lgamma(dim / 2))
    expected = copied / random_length
    return lambda answer: math.isfinite(float(answer)) and abs(float(answer) - expected) <= RATIO_TOLERANCE


EXERCISE_3_EXPLANATION = (
    "A random fallback row has 300 elements of standard deviation 0.02, so its length is about "
    "0.02 x sqrt(300), 0.35. A copied row was unit length before centring and is shorter after it, by an amount "
    "that depends on how strong the shared direction was (the length of the mean vector printed above). So the "
    "rows without a vector do not start empty: they point in arbitrary directions, with a length comparable to "
    "a real word vector's, and that noise must first be unlearned, which is why the paper found zeros better. "
    "Read the other way, the ratio is the scale question: how far the copied rows are from the length BERT's "
    "own initialisation gives every row.")

# Exercise 4: why centring replaces some nearest neighbours
EXERCISE_4_ANSWER = "b"
EXERCISE_4_EXPLANATION = (
    "Split each row into its part along the mean vector and the rest. Centring takes away most of the part "
    "along the mean, so the dot product of two words loses the product of their two projections, and the "
    "rows shrink by different amounts. Two words that both lean far along the shared direction (frequent "
    "words often do) looked alike partly because of that lean, and their cosine falls more than the cosine "
    "of a pair whose likeness lies in the rest of the vector. Near the bottom of a top-5 list the cosines are "
    "close, so that is where the order changes first. (a) cannot be: a shift shared by every cosine would "
    "leave every list as it was. (c): after centring the rows are shorter than 1 (see the normalisation "
    "table). (d): the words are the same before and after.")
