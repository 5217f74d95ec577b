"""Reference solutions of notebook 02's exercises (the WordPiece tokenizer)."""

from __future__ import annotations

from typing import Any, Mapping

from helpers import tokenizer as tk

EXERCISE_1_WORDS = {"sing": 6, "singer": 3, "ring": 5, "rings": 2, "song": 4}
EXERCISE_2_SENTENCE = "Photosynthesis converts sunlight into chemical energy stored in glucose."


def exercise_1(words: Mapping[str, int]) -> tuple[tuple[str, str], tuple[str, str]]:
    """The first merge by WordPiece's score, then the first by raw frequency (what the trainer does)."""
    split = {tk.split_word(w): n for w, n in words.items()}
    return tk.next_merge(split, by="score"), tk.next_merge(split, by="frequency")


def exercise_2(tokenizer: Any, sentence: str) -> float:
    """Fertility: tokens per whitespace word, without [CLS] and [SEP]."""
    return len(tokenizer.tokenize(sentence)) / len(sentence.split())


def exercise_3(tokenizer: Any) -> int:
    """Entries whose string exists twice, word-initial ``x`` and continuation ``##x``."""
    vocab = tokenizer.get_vocab()
    return sum(1 for t in vocab if t.startswith(tk.CONTINUATION_PREFIX) and t[len(tk.CONTINUATION_PREFIX):] in vocab)
