"""helpers.tokenizer: the toy merges, training, the save/load round trip, and the report numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers import presets
from helpers import tokenizer as T
from pipeline.corpora.data import EMBEDDED, load_corpus

SMOKE = presets.get("smoke").tokenizer


@pytest.fixture(scope="module")
def train_texts() -> list[str]:
    return load_corpus(EMBEDDED, "en", "train", max_docs=SMOKE.max_docs).texts


@pytest.fixture(scope="module")
def eval_texts() -> list[str]:
    return load_corpus(EMBEDDED, "en", "eval").texts


@pytest.fixture(scope="module")
def pair(train_texts: list[str]) -> dict:
    """A cased and an uncased tokenizer on the same documents, as notebook 02 trains them."""
    return {name: T.train_wordpiece(train_texts, SMOKE.vocab_size, lowercase=name == "uncased",
                                    min_frequency=SMOKE.min_frequency, show_progress=False)
            for name in ("cased", "uncased")}


@pytest.fixture(scope="module")
def cased(pair: dict):
    return pair["cased"]


@pytest.fixture(scope="module")
def toy():
    """A hand-written WordPiece vocabulary, so the report functions can be checked against exact counts."""
    from tokenizers import models

    vocab = {t: i for i, t in enumerate([*T.SPECIAL_TOKENS, "the", "cat", "sat", "##s", "on", "mat", "."])}
    backend = T.build_untrained(lowercase=False)
    backend.model = models.WordPiece(vocab=vocab, unk_token="[UNK]", continuing_subword_prefix="##")
    return T.wrap_fast(backend)


# ---- WordPiece merges by hand --------------------------------------------------------------

TOY = {"walk": 9, "walked": 4, "talked": 5, "talk": 3, "milk": 6, "mild": 2}  # the notebook's word list


def toy_words() -> dict[tuple[str, ...], int]:
    return {T.split_word(w): n for w, n in TOY.items()}


def test_split_word_marks_every_later_character() -> None:
    assert T.split_word("walk") == ("w", "##a", "##l", "##k")
    assert T.split_word("a") == ("a",)


def test_counts_and_scores_on_the_toy_list() -> None:
    pieces, pairs = T.count_pieces_and_pairs(toy_words())
    assert pieces["##l"] == 29 and pieces["##k"] == 27 and pieces["m"] == 8
    assert pairs[("##l", "##k")] == 27 and pairs[("m", "##i")] == 8
    scores = T.wordpiece_scores(pieces, pairs)
    assert scores[("##l", "##k")] == pytest.approx(27 / (29 * 27))
    assert scores[("m", "##i")] == pytest.approx(8 / (8 * 8))


def test_frequency_and_score_pick_different_pairs() -> None:
    assert T.next_merge(toy_words(), by="frequency") == ("##l", "##k")
    assert T.next_merge(toy_words(), by="score") == ("m", "##i")


def test_merge_pair_joins_every_occurrence_and_drops_the_inner_prefix() -> None:
    merged = T.merge_pair(toy_words(), ("##l", "##k"))
    assert merged[("w", "##a", "##lk")] == 9 and merged[("m", "##i", "##l", "##d")] == 2
    assert T.merge_pair(merged, ("w", "##a"))[("wa", "##lk")] == 9
    assert sum(merged.values()) == sum(TOY.values())


def test_the_trainer_merges_by_frequency_like_the_hand_count() -> None:
    words, by_hand = toy_words(), []
    for _ in range(4):
        pair = T.next_merge(words, by="frequency")
        words = T.merge_pair(words, pair)
        by_hand.append(pair[0] + pair[1].removeprefix("##"))
    texts = [" ".join([w] * n) for w, n in TOY.items()]
    base = len(T.SPECIAL_TOKENS) + 9 + 6  # 9 characters (a d e i k l m t w), 6 of them also as ## pieces
    tok = T.train_wordpiece(texts, vocab_size=base + 4, min_frequency=1, show_progress=False)
    assert tok.convert_ids_to_tokens(list(range(base, base + 4))) == by_hand == ["##lk", "##alk", "walk", "##ed"]


# ---- training ------------------------------------------------------------------------------


def test_smoke_preset_reaches_its_vocab_size(cased) -> None:
    assert len(cased) == SMOKE.vocab_size


def test_special_tokens_have_ids_0_to_4(pair: dict) -> None:
    for tok in pair.values():
        assert tok.convert_tokens_to_ids(list(T.SPECIAL_TOKENS)) == [0, 1, 2, 3, 4]
        roles = (tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.mask_token_id)
        assert roles == (0, 1, 2, 3, 4)
        assert tok.model_max_length == 128


def test_encoding_is_wrapped_in_cls_and_sep(cased) -> None:
    ids = cased("The cat sat on the mat.")["input_ids"]
    assert ids[0] == cased.cls_token_id and ids[-1] == cased.sep_token_id
    assert cased.cls_token_id not in ids[1:-1] and cased.sep_token_id not in ids[1:-1]


def test_decode_undoes_wordpiece_splits(cased) -> None:
    text = "The river flows through the mountains."
    assert cased.decode(cased(text)["input_ids"], skip_special_tokens=True) == text


def test_cased_keeps_case_and_uncased_lowercases_and_strips_accents(pair: dict) -> None:
    cased, uncased = pair["cased"], pair["uncased"]
    assert uncased.tokenize("PARIS Café") == uncased.tokenize("paris cafe")
    assert cased.tokenize("Paris") != cased.tokenize("paris")
    assert not any(ch.isupper() for tok in uncased.get_vocab() if tok not in T.SPECIAL_TOKENS for ch in tok)
    assert any(ch.isupper() for tok in cased.get_vocab() for ch in tok if tok not in T.SPECIAL_TOKENS)
    assert T.is_lowercase(uncased) and not T.is_lowercase(cased)


def test_vocabulary_far_smaller_than_asked_is_an_error(train_texts: list[str]) -> None:
    with pytest.raises(ValueError, match=r"(?s)50 documents.*smaller vocab_size"):
        T.train_wordpiece(train_texts[:50], vocab_size=100_000, show_progress=False)


@pytest.mark.parametrize("texts", [[], ["", "   \n"]])
def test_empty_corpus_is_an_error(texts: list[str]) -> None:
    with pytest.raises(ValueError, match="empty"):
        T.train_wordpiece(texts, vocab_size=100, show_progress=False)


def test_training_is_reproducible_and_the_seeded_pieces_stay_ordinary(train_texts: list[str], cased) -> None:
    """Upstream alone gave 5 different vocabularies in 5 trainings of this corpus (tokenizers#1794)."""
    from helpers.static_vectors import vocab_fingerprint

    runs = {vocab_fingerprint(T.train_wordpiece(train_texts, SMOKE.vocab_size, show_progress=False))
            for _ in range(3)}
    runs.add(vocab_fingerprint(T.train_wordpiece(iter(train_texts), SMOKE.vocab_size, show_progress=False)))
    assert runs == {vocab_fingerprint(cased)}
    vocab = cased.get_vocab()
    pieces = T.continuation_pieces(T.build_untrained(), train_texts)
    assert pieces == sorted(pieces) and "##e" in pieces and all(p in vocab for p in pieces)
    assert set(cased.all_special_tokens) == set(T.SPECIAL_TOKENS)  # the pieces are not special
    assert "##e" not in cased.tokenize("the ##e")  # nor matched as one token in raw text


def pieces_word_by_word(backend, texts: list[str]) -> list[str]:
    """The definition, spelt out one word at a time (the slow loop the trainer pass replaced)."""
    chars: set[str] = set()
    for text in texts:
        for word, _ in backend.pre_tokenizer.pre_tokenize_str(backend.normalizer.normalize_str(text)):
            chars.update(word[1:])
    return sorted("##" + c for c in chars)


@pytest.mark.parametrize("lowercase", [False, True])
@pytest.mark.parametrize("lang", ["en", "fr"])
def test_continuation_pieces_match_the_word_by_word_definition(lang: str, lowercase: bool) -> None:
    texts = [*load_corpus(EMBEDDED, lang, "train", max_docs=1_000).texts, "naïve 中文 x-ray ½ café", ""]
    backend = T.build_untrained(lowercase)
    assert T.continuation_pieces(backend, texts, batch_size=64) == pieces_word_by_word(backend, texts)
    assert backend.get_vocab_size() == 0  # the throwaway pass trained a copy, not this pipeline


def test_a_single_string_is_refused() -> None:
    with pytest.raises(TypeError, match="iterable of documents"):
        T.train_wordpiece("a whole corpus in one string", vocab_size=100, show_progress=False)


def test_a_one_shot_generator_trains(train_texts: list[str]) -> None:
    tok = T.train_wordpiece((t for t in train_texts[:200]), vocab_size=500, show_progress=False)
    assert len(tok) == 500


# ---- save / load ---------------------------------------------------------------------------


def test_save_and_load_round_trip(cased, tmp_path: Path, eval_texts: list[str]) -> None:
    out = T.save_tokenizer(cased, tmp_path / "tok")
    assert (out / "tokenizer.json").is_file()
    loaded = T.load_tokenizer(out)
    assert loaded.get_vocab() == cased.get_vocab()
    assert loaded(eval_texts[:20])["input_ids"] == cased(eval_texts[:20])["input_ids"]
    assert loaded.model_max_length == 128


def test_auto_tokenizer_loads_it_as_fast(cased, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    T.save_tokenizer(cased, tmp_path)
    tok = AutoTokenizer.from_pretrained(str(tmp_path))
    assert tok.is_fast
    assert [tok.pad_token, tok.unk_token, tok.cls_token, tok.sep_token, tok.mask_token] == list(T.SPECIAL_TOKENS)
    assert len(tok) == len(cased)
    assert T.unk_rate(tok, ["The history of the world is long."]) == 0.0


def test_uncased_survives_the_round_trip(pair: dict, tmp_path: Path) -> None:
    loaded = T.load_tokenizer(T.save_tokenizer(pair["uncased"], tmp_path))
    assert T.is_lowercase(loaded)
    assert loaded.tokenize("HISTORY") == loaded.tokenize("history")


def test_missing_folder_and_missing_tokenizer_json_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="02_tokenizer"):
        T.load_tokenizer(tmp_path / "nowhere")
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n")
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        T.load_tokenizer(tmp_path)


def test_a_tokenizer_without_the_specials_is_refused(cased, tmp_path: Path) -> None:
    from transformers import PreTrainedTokenizerFast

    bare = PreTrainedTokenizerFast(tokenizer_object=cased.backend_tokenizer)
    with pytest.raises(ValueError, match="pad_token"):
        T.save_tokenizer(bare, tmp_path)


# ---- report functions: exact counts on a hand-written vocabulary -----------------------------


def test_toy_counts(toy) -> None:
    # "the cats sat" -> the cat ##s sat: 4 tokens for 3 words; "the dog" -> the [UNK].
    assert toy.tokenize("the cats sat") == ["the", "cat", "##s", "sat"]
    assert T.fertility(toy, ["the cats sat"]) == pytest.approx(4 / 3)
    assert T.unk_rate(toy, ["the dog"]) == pytest.approx(1 / 2)
    assert T.unk_rate(toy, ["the dog", "the cat sat on the mat ."]) == pytest.approx(1 / 9)
    assert T.continuation_share(toy) == pytest.approx(1 / 7)
    assert T.encoded_lengths(toy, ["the", "the cats sat"]).tolist() == [3, 6]


def test_share_over_limit_counts_strictly_longer() -> None:
    assert T.share_over_limit([10, 128, 129, 500], limit=128) == 0.5
    assert T.share_over_limit(np.array([1, 2]), limit=1) == 0.5
    with pytest.raises(ValueError):
        T.share_over_limit([])


def test_report_functions_reject_empty_text(toy) -> None:
    for fn in (T.unk_rate, T.fertility, T.encoded_lengths):
        with pytest.raises(ValueError, match="no non-empty texts"):
            fn(toy, ["", " "])


# ---- report functions on the trained tokenizer and real held-out text -----------------------


def test_unk_rate_of_real_eval_text_is_low(cased, eval_texts: list[str]) -> None:
    assert T.unk_rate(cased, eval_texts) < 0.02


def test_fertility_and_continuation_share_are_in_range(cased, eval_texts: list[str]) -> None:
    assert T.fertility(cased, eval_texts) >= 1.0
    assert 0.0 < T.continuation_share(cased) < 1.0


def test_lengths_include_cls_and_sep(cased) -> None:
    word = "the"
    assert word in cased.get_vocab()
    assert T.encoded_lengths(cased, [word]).tolist() == [3]
    long_text = " ".join(["the"] * 300)
    assert T.encoded_lengths(cased, [long_text]).tolist() == [302]  # not truncated at 128


def test_report_is_consistent(cased, eval_texts: list[str]) -> None:
    report = T.tokenizer_report(cased, eval_texts)
    lengths = T.encoded_lengths(cased, eval_texts)
    assert report["vocab_size"] == len(cased)
    assert report["lowercase"] is False
    assert report["whole_word_share"] == pytest.approx(1 - report["continuation_share"])
    assert report["share_over_limit"] == pytest.approx(float(np.mean(lengths > 128)))
    assert report["mean_length"] == pytest.approx(lengths.mean())
    assert report["n_eval_docs"] == len(eval_texts)



def test_vocab_ceiling_is_where_the_error_starts(train_texts: list[str]) -> None:
    texts = train_texts[:150]
    ceiling = T.vocab_ceiling(texts, min_frequency=2)
    assert ceiling > len(T.SPECIAL_TOKENS)
    # Ties between merges break in hash order (tokenizers#1794), so allow a few entries of slack.
    assert len(T.train_wordpiece(texts, ceiling, show_progress=False)) >= 0.99 * ceiling
    with pytest.raises(ValueError, match="far fewer"):
        T.train_wordpiece(texts, 2 * ceiling, show_progress=False)
    assert T.vocab_ceiling(texts, min_frequency=5) < ceiling


# ---- notebook 02's exercise checks ---------------------------------------------------------


def test_exercise_1_check_wants_the_score_pair_then_the_frequency_pair() -> None:
    import exercises
    from exercises import nb02

    right = nb02.right_1(nb02.EXERCISE_1_WORDS)
    assert right(nb02.exercise_1(nb02.EXERCISE_1_WORDS))
    assert right([["##e", "##r"], ["##n", "##g"]])  # lists and tuples alike
    assert not right((("##n", "##g"), ("##e", "##r")))  # the two rules swapped
    with pytest.raises(exercises.WrongAnswer):
        exercises.check("Ex1", (("s", "##i"), ("##n", "##g")), right, hint="")
    with pytest.raises(exercises.WrongAnswer):  # a malformed answer is a wrong answer, not a crash
        exercises.check("Ex1", "##e ##r", right, hint="")


def test_exercise_2_check_accepts_a_fertility_rounded_to_two_decimals_and_not_a_miscount(cased) -> None:
    import exercises
    from exercises import nb02

    sentence = nb02.EXERCISE_2_SENTENCE
    n_words, n_pieces = len(sentence.split()), len(cased.tokenize(sentence))
    right = nb02.right_2(cased, sentence)
    exact = nb02.exercise_2(cased, sentence)
    assert exact == n_pieces / n_words
    assert right(exact) and right(round(exact, 2)) and right(f"{exact:.2f}")
    for miscount in (n_pieces - 1, n_pieces + 1):  # one piece too few or too many is wrong at 2 decimals
        with pytest.raises(exercises.WrongAnswer):
            exercises.check("Ex2", round(miscount / n_words, 2), right, hint="")
    with pytest.raises(exercises.WrongAnswer):  # with [CLS] and [SEP]
        exercises.check("Ex2", (n_pieces + 2) / n_words, right, hint="")


def test_exercise_3_check_counts_strings_with_and_without_the_mark(cased) -> None:
    import exercises
    from exercises import nb02

    right = nb02.right_3(cased)
    answer = nb02.exercise_3(cased)
    assert 0 < answer < len(cased) and right(answer)
    vocab = cased.get_vocab()
    pieces = [t for t in vocab if t.startswith("##") and len(t) > 2]
    assert answer < len(pieces)  # not every piece has a word-initial twin
    with pytest.raises(exercises.WrongAnswer):
        exercises.check("Ex3", len(pieces), right, hint="")
    with pytest.raises(exercises.WrongAnswer):
        exercises.check("Ex3", answer + 1, right, hint="")
