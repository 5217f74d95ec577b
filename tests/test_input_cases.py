"""Issue 32, "Inputs": what a hostile user gave the pipeline, and what it now says or does with it.

Every input is written here, in tmp_path, in its real format.
"""

from __future__ import annotations

import csv
import struct
import warnings
import zlib
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from helpers.masking import MLMCollator
from helpers.static_vectors import align, normalise_vectors
from pipeline.corpora.data import CorpusSpec, load_corpus
from pipeline.corpora.files import data_files
from pipeline.corpora.labelled import LabelledSpec
from pipeline.run.job_options import parse_options
from pipeline.run.steps import JobError
from pipeline.vectors.vector_files import read_vec


def files(path: Path) -> CorpusSpec:
    return CorpusSpec.parse(f"files:{path}")


# ----------------------------------------------------------------------------- 1: CR-only line endings


def test_a_corpus_with_cr_line_endings_keeps_its_documents_apart(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "old_mac.txt").write_bytes("".join(f"Document number {i} is here.\r" for i in range(500)).encode())
    corpus = load_corpus(files(tmp_path), "en", "train", eval_fraction=0.1)
    assert corpus.meta["documents_total"] == 500
    assert not any("\r" in text for text in corpus.texts)
    assert "Document number 0 is here." in corpus.texts + load_corpus(files(tmp_path), "en", "eval",
                                                                      eval_fraction=0.1).texts
    assert "old_mac.txt ends lines with a lone \\r (old Mac line endings)" in capsys.readouterr().err


def test_windows_line_endings_still_give_one_document_a_line(tmp_path: Path) -> None:
    (tmp_path / "windows.txt").write_bytes(b"First document.\r\nSecond document.\r\nThird one.\r\n")
    corpus = load_corpus(files(tmp_path), "en", "train", eval_fraction=0.01)
    assert corpus.meta["documents_total"] == 3 and not any("\r" in text for text in corpus.texts)


# ----------------------------------------------------------------------------- 2: symlinked folders


def test_a_symlinked_subfolder_of_a_corpus_is_read_and_a_loop_is_skipped_and_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus, elsewhere = tmp_path / "corpus", tmp_path / "elsewhere"
    corpus.mkdir()
    elsewhere.mkdir()
    (corpus / "own.txt").write_text("A document of the folder itself.\n", encoding="utf-8")
    (elsewhere / "linked.txt").write_text("A document behind a symlink.\n", encoding="utf-8")
    (corpus / "more").symlink_to(elsewhere, target_is_directory=True)
    (elsewhere / "back").symlink_to(corpus, target_is_directory=True)  # corpus/more/back: a loop
    found = data_files(corpus)
    assert [f.relative_to(corpus).as_posix() for f in found] == ["more/linked.txt", "own.txt"]
    said = capsys.readouterr().err
    assert f"symlinked folder(s) read too: more -> {elsewhere.resolve()}" in said
    assert "more/back" in said and "loop" in said


# ----------------------------------------------------------------------------- 3: test set inside the training text


def _labelled(tmp_path: Path) -> tuple[Path, list[str]]:
    """A labelled CSV of 20 rows in two topics, and the texts of its test split."""
    path = tmp_path / "topics.csv"
    rows = [(f"Match {i} was won by the home team.", "sport") for i in range(10)]
    rows += [(f"On day {i} it rained all afternoon.", "weather") for i in range(10)]
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([("text", "label"), *rows])
    return path, LabelledSpec.parse(f"files:{path}").load("en", "test").texts


def test_a_labelled_test_set_that_is_training_text_gives_a_warning_naming_both(tmp_path: Path) -> None:
    path, test_texts = _labelled(tmp_path)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(["Some other text.", *test_texts]) + "\n", encoding="utf-8")
    trained = set(load_corpus(files(corpus), "en", "train").texts) & set(test_texts)  # 5 % of text is for evaluation
    assert trained
    spec = LabelledSpec.parse(f"files:{path}").resolve("en", files(corpus))
    with pytest.warns(UserWarning, match=rf"{len(trained)} of the {len(test_texts)} test documents of the "
                                         rf"labelled set {path} are training text of the corpus files:{corpus}"):
        assert spec.load("en", "test").texts == test_texts


def test_a_labelled_test_set_partly_in_the_training_text_gives_a_warning(tmp_path: Path) -> None:
    path, test_texts = _labelled(tmp_path)
    corpus = tmp_path / "corpus.txt"
    for text in test_texts:  # one test document that lands in the corpus's training split
        corpus.write_text(f"Some other text.\n{text}\n", encoding="utf-8")
        if text in load_corpus(files(corpus), "en", "train").texts:
            break
    spec = LabelledSpec.parse(f"files:{path}").resolve("en", files(corpus))
    with pytest.warns(UserWarning, match=rf"1 of the {len(test_texts)} test documents"):
        assert spec.load("en", "test").texts == test_texts
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spec.load("en", "train")  # the training split is not checked: only test documents must be unseen


# ----------------------------------------------------------------------------- 4: one files corpus, two languages


def test_one_files_corpus_for_two_languages_is_refused_at_parse_time(tmp_path: Path) -> None:
    (tmp_path / "text.txt").write_text("Un document.\n", encoding="utf-8")
    with pytest.raises(JobError, match="one language per files: corpus"):
        parse_options(["--preset", "smoke", "--lang", "en,fr", "--corpus", f"files:{tmp_path / 'text.txt'}",
                       "--out", str(tmp_path / "out")])


# ----------------------------------------------------------------------------- 5: vectors with no vocabulary word


def test_vectors_without_a_single_vocabulary_word_are_refused_at_alignment(tmp_path: Path) -> None:
    vec = tmp_path / "cc.de.300.vec"
    vec.write_text("2 3\nHund 0.1 0.2 0.3\nKatze 0.3 0.2 0.1\n", encoding="utf-8")
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "dog", "##s"])}
    vectors = normalise_vectors(read_vec(vec))
    with pytest.raises(ValueError, match=rf"none of the 8 vocabulary tokens has a vector in {vec}; "
                                         "check the language"):
        align(vocab, vectors)


# ----------------------------------------------------------------------------- 6: a PNG named .txt


def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
            + chunk(b"IEND", b""))


def test_a_png_named_txt_in_a_corpus_is_called_an_image_not_utf16(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("A real document.\n", encoding="utf-8")
    (tmp_path / "photo.txt").write_bytes(_png())
    with pytest.raises(ValueError, match=r"photo\.txt is not text \(it looks like a PNG image\); remove it from "
                                         "the corpus folder") as raised:
        load_corpus(files(tmp_path), "en", "train")
    assert "UTF-16" not in str(raised.value)


# ----------------------------------------------------------------------------- 7: MLMCollator.mask given a list


def test_masking_a_list_of_examples_names_the_call_to_make_instead(tmp_path: Path) -> None:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {t: i for i, t in enumerate(specials + [f"w{i}" for i in range(120)])}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]",
                                        cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    collator = MLMCollator(tokenizer, seed=0)
    examples = [tokenizer("w1 w2 w3"), tokenizer("w4")]
    with pytest.raises(ValueError) as raised:
        collator.mask(examples)  # type: ignore[arg-type]
    message = str(raised.value)
    assert "call the collator itself" not in message
    assert "tokenizer.pad(" in message and "collator.mask(batch['input_ids'], batch['attention_mask'])" in message
    batch = tokenizer.pad(examples, return_tensors="pt")  # what the message says works
    assert collator.mask(batch["input_ids"], batch["attention_mask"])["labels"].shape == torch.Size([2, 3])
