"""Issue 56: the morphology measures, on a text small enough to count by hand, with a WordPiece vocabulary written
out so every piece is known."""

from __future__ import annotations

import pytest

from helpers import tokenizer as tk
from pipeline.corpora.morphology import morphology, words_of


@pytest.fixture(scope="module")
def tokenizer() -> object:
    """The project's BERT pipeline around a fixed vocabulary: dom ##y ##ech kot and the specials."""
    from tokenizers import Tokenizer, models

    backend = tk.build_untrained()
    vocab = {t: i for i, t in enumerate((*tk.SPECIAL_TOKENS, "dom", "kot", "Dom", "##y", "##ech"))}
    backend.model = models.WordPiece(vocab=vocab, unk_token="[UNK]", continuing_subword_prefix="##")
    return tk.wrap_fast(Tokenizer.from_str(backend.to_str()))


def test_words_are_runs_of_letters_with_their_case() -> None:
    assert list(words_of(["Dom, domy; 12 domech!", "kot-koty"])) == ["Dom", "domy", "domech", "kot", "koty"]


def test_a_language_is_measured_on_its_first_words(tokenizer: object) -> None:
    texts = ["Dom domy domech.", "dom kot koty", "koty koty koty"]  # the third text is past the sample
    row = morphology("cs", texts, tokenizer, sample_words=6, manifest={"n_found": 3, "vocab_size": 10})
    # Dom | dom ##y | dom ##ech | dom | kot | kot ##y: 9 pieces for 6 words, 3 of them ## pieces
    assert row == {"lang": "cs", "words": 9, "sample_words": 6, "types": 5, "type_token_ratio": 5 / 6,
                   "pieces_per_word": 1.5, "continuation_share": 3 / 9, "vocab_size": 10, "vector_share": 0.3}
    assert "vector_share" not in morphology("cs", texts, tokenizer, sample_words=2)


def test_a_text_shorter_than_the_sample_is_refused(tokenizer: object) -> None:
    with pytest.raises(ValueError, match="pl: the text has 3 words, fewer than the sample of 4; give every language "
                                         "the same positive sample_words"):
        morphology("pl", ["dom kot 7 koty"], tokenizer, sample_words=4)
