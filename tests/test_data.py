"""pipeline.corpora.data: the embedded corpus and its one partition, local files (C4 shards included), bad input."""

from __future__ import annotations

import collections
import csv
import gzip
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.corpora import data, documents, files
from pipeline.corpora.data import EMBEDDED, CorpusSpec, load_corpus, load_labelled

EN_ARTICLES = 10_033
EN_TOPICS = 12

# --------------------------------------------------------------------------------------------
# Embedded corpus
# --------------------------------------------------------------------------------------------


def test_embedded_english_has_all_vital_articles() -> None:
    articles = data.embedded_articles("en")
    assert len(articles) == EN_ARTICLES
    assert all(a["extract"].strip() and a["topic"] for a in articles)
    assert [a["key"] for a in articles] == sorted(a["key"] for a in articles)


def test_the_partition_puts_every_article_in_exactly_one_part() -> None:
    every = {a["extract"] for a in data.embedded_articles("en")}
    assert len(every) == EN_ARTICLES  # English summaries are all distinct, so texts identify articles
    train = load_corpus(EMBEDDED, "en", "train")
    held = load_corpus(EMBEDDED, "en", "eval")
    test = load_labelled(EMBEDDED, "en", "test")
    parts = [set(train.texts), set(held.texts), set(test.texts)]
    assert sum(map(len, parts)) == EN_ARTICLES and set.union(*parts) == every
    assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
    # eval: a hash-based Bernoulli(0.05 / 0.9) draw per article outside the test part; allow 5 binomial sd.
    n, p = EN_ARTICLES - len(test), documents.EVAL_FRACTION / (1 - data.EMBEDDED_TEST_FRACTION)
    assert abs(len(held) - n * p) <= 5 * math.sqrt(n * p * (1 - p))
    assert train.meta["articles_total"] == EN_ARTICLES
    assert train.licence and "CC BY-SA" in train.licence
    assert train.meta["partition_sha256"] == test.meta["partition_sha256"] == data.partition_record("en")["sha256"]


@pytest.mark.parametrize("lang", ["en", "fr", "es"])
def test_no_probe_test_article_is_in_any_training_text(lang: str) -> None:
    """The tokenizer, fastText and pretraining all read load_corpus(split='train'), whole or its first
    max_docs documents; the evaluation text is load_corpus(split='eval'). None may hold a test article."""
    test = set(load_labelled(EMBEDDED, lang, "test").texts)
    train = load_corpus(EMBEDDED, lang, "train").texts
    for split, texts in (("train", train), ("eval", load_corpus(EMBEDDED, lang, "eval").texts)):
        assert texts and not set(texts) & test, split
    for max_docs in (1, 400, 2_000, len(train)):  # what the presets ask for is always a prefix of the split
        assert load_corpus(EMBEDDED, lang, "train", max_docs=max_docs).texts == train[:max_docs]
    # not even as part of a longer document: every test text is looked up in the joined training text
    joined = "\x00".join(train)
    assert not [t for t in test if t in joined]


def test_the_partition_record_names_each_part_with_a_hash() -> None:
    record = data.partition_record("en")
    assert set(record["parts"]) == {"train", "eval", "probe_test"}
    sizes = {name: part["articles"] for name, part in record["parts"].items()}
    assert sizes == {"train": len(load_corpus(EMBEDDED, "en", "train")),
                     "eval": len(load_corpus(EMBEDDED, "en", "eval")),
                     "probe_test": len(load_labelled(EMBEDDED, "en", "test"))}
    assert all(len(part["sha256"]) == 64 for part in record["parts"].values())
    other = data.partition_record("en", seed=1)
    assert other["sha256"] != record["sha256"] and other["parts"]["probe_test"]["sha256"] != \
        record["parts"]["probe_test"]["sha256"]
    assert data.partition_record("fr")["sha256"] != record["sha256"]
    with pytest.raises(KeyError, match="test"):
        data.embedded_partition("en")["test"]
    with pytest.raises(TypeError):  # read-only: the one partition every step uses
        data.embedded_partition("en")["train"] = ()  # type: ignore[index]


def test_the_cached_embedded_articles_cannot_be_changed_by_a_caller() -> None:
    """One cached copy serves every caller in the process: an edit by one would change every later run's text."""
    articles = data.embedded_articles("en")
    with pytest.raises(TypeError):
        articles[0]["extract"] = "changed"  # type: ignore[index]
    with pytest.raises(TypeError):
        articles[0] = {}  # type: ignore[index]
    assert data.embedded_articles("en") is articles and set(articles[0]) == {"key", "title", "extract", "topic"}


def test_embedded_split_is_repeatable_and_independent_of_max_docs() -> None:
    first = load_corpus(EMBEDDED, "en", "eval")
    again = load_corpus(EMBEDDED, "en", "eval")
    assert first.texts == again.texts
    assert load_corpus(EMBEDDED, "en", "eval", max_docs=40).texts == first.texts[:40]
    full_train = load_corpus(EMBEDDED, "en", "train")
    assert load_corpus(EMBEDDED, "en", "train", max_docs=300).texts == full_train.texts[:300]
    other_seed = load_corpus(EMBEDDED, "en", "eval", seed=1)
    assert set(other_seed.texts) != set(first.texts)


def test_embedded_split_is_the_same_in_a_fresh_interpreter() -> None:
    """Python's string hashing is salted per process; the split must not depend on it."""
    code = ("import hashlib, json; from pipeline.corpora.data import EMBEDDED, load_corpus, partition_record; "
            "t = load_corpus(EMBEDDED, 'en', 'eval').texts; "
            "print(json.dumps([len(t), hashlib.sha256('\\n'.join(t).encode()).hexdigest(), "
            "partition_record('en')['sha256']]))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True)
    here = load_corpus(EMBEDDED, "en", "eval").texts
    assert json.loads(out.stdout) == [len(here), hashlib.sha256("\n".join(here).encode()).hexdigest(),
                                      data.partition_record("en")["sha256"]]


def test_embedded_first_documents_are_a_spread_out_sample() -> None:
    """max_docs takes the first N in hash order, not alphabetical order, so any N is a fair sample."""
    n_head = 300
    position = {a["extract"]: i for i, a in enumerate(data.embedded_articles("en"))}  # alphabetical rank
    head = load_corpus(EMBEDDED, "en", "train", max_docs=n_head).texts
    mean_rank = sum(position[t] for t in head) / n_head
    # A uniform sample's mean rank is (N-1)/2 with sd about N / sqrt(12 n); allow 5 sd.
    assert abs(mean_rank - (EN_ARTICLES - 1) / 2) <= 5 * EN_ARTICLES / math.sqrt(12 * n_head)
    labelled_head = load_labelled(EMBEDDED, "en", "train", max_docs=600)
    assert set(labelled_head.labels) == set(range(EN_TOPICS))  # rarest topic: expected ~15 of 600


def test_embedded_topics_and_stratified_split() -> None:
    train = load_labelled(EMBEDDED, "en", "train")
    test = load_labelled(EMBEDDED, "en", "test")
    assert train.label_names == test.label_names
    assert len(train.label_names) == EN_TOPICS
    assert {"People", "Geography", "Mathematics"} <= set(train.label_names)
    assert len(train) + len(test) == EN_ARTICLES  # the labelled training part is the corpus' train + eval
    corpus = load_corpus(EMBEDDED, "en", "train").texts + load_corpus(EMBEDDED, "en", "eval").texts
    assert set(train.texts) == set(corpus)
    assert not set(train.texts) & set(test.texts)
    assert all(0 <= y < EN_TOPICS for y in train.labels + test.labels)
    n_train, n_test = collections.Counter(train.labels), collections.Counter(test.labels)
    for topic in range(EN_TOPICS):
        size = n_train[topic] + n_test[topic]
        # round(fraction * size) per topic: off from the fraction by at most half a document.
        assert abs(n_test[topic] / size - data.EMBEDDED_TEST_FRACTION) <= 0.5 / size + 1e-12
    # the text-label pairs are the articles' own
    topic_of = {a["extract"]: a["topic"] for a in data.embedded_articles("en")}
    assert all(topic_of[t] == test.label_names[y] for t, y in zip(test.texts, test.labels))


@pytest.mark.parametrize("lang, n_topics", [("fr", 11), ("es", 8)])
def test_embedded_french_and_spanish(lang: str, n_topics: int) -> None:
    train, held = load_corpus(EMBEDDED, lang, "train"), load_corpus(EMBEDDED, lang, "eval")
    assert len(train) > 10 * len(held) > 0
    assert not set(train.texts) & set(held.texts)
    assert not set(train.texts + held.texts) & set(load_labelled(EMBEDDED, lang, "test").texts)
    assert train.n_words() > 100_000
    extracts = [a["extract"] for a in data.embedded_articles(lang)]
    assert len(set(extracts)) == len(extracts)  # redirects sharing one summary are folded into one article
    labelled = load_labelled(EMBEDDED, lang, "test")
    assert len(labelled.label_names) == n_topics and set(labelled.labels) == set(range(n_topics))


def test_stratified_split_on_small_classes() -> None:
    keys = [f"doc{i}" for i in range(23)]
    labels = [0] * 10 + [1] * 10 + [2] * 2 + [3]
    kept, held = documents.stratified_split(keys, labels, 0.2, seed=0)
    assert sorted(kept + held) == list(range(23))
    held_by_class = collections.Counter(labels[i] for i in held)
    assert held_by_class == {0: 2, 1: 2, 2: 1}  # a singleton class stays in training


def test_stable_fraction_is_sha256_of_seed_and_key() -> None:
    expected = int.from_bytes(hashlib.sha256(b"7:Berlin").digest()[:8], "big") / 2**64
    assert documents.stable_fraction("Berlin", 7) == expected
    assert documents.stable_fraction("Berlin", 7, purpose="order:") != expected


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


def _files(path: Path) -> CorpusSpec:
    return CorpusSpec("files", path)


def _lines(n: int, prefix: str = "line") -> list[str]:
    return [f"{prefix} number {i} about something" for i in range(n)]


def _both_splits(path: Path, **options: Any) -> list[str]:
    """Every document of a files corpus: its train split, then its eval split."""
    return load_corpus(_files(path), "xx", "train", **options).texts + \
        load_corpus(_files(path), "xx", "eval", **options).texts


def test_txt_one_document_per_line(tmp_path: Path) -> None:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(_lines(200)[:100]) + "\n\n   \n" + "\n".join(_lines(200)[100:]) + "\n", encoding="utf-8")
    train = load_corpus(_files(path), "en", "train")
    held = load_corpus(_files(path), "en", "eval")
    assert sorted(train.texts + held.texts) == sorted(_lines(200))
    assert held.texts and not set(train.texts) & set(held.texts)
    # the split follows each line's content, so reordering the file keeps it
    path.write_text("\n".join(reversed(_lines(200))), encoding="utf-8")
    assert set(load_corpus(_files(path), "en", "eval").texts) == set(held.texts)
    assert load_corpus(_files(path), "en", "train", max_docs=3).texts == \
        [t for t in reversed(_lines(200)) if t in set(train.texts)][:3]


def test_jsonl_with_a_chosen_column(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    records = [json.dumps({"body": t, "id": i}) for i, t in enumerate(_lines(60))]
    path.write_text("\n".join(records) + "\n", encoding="utf-8")
    assert sorted(_both_splits(path, text_column="body")) == sorted(_lines(60))
    with pytest.raises(ValueError, match=r"docs.jsonl:1: this record has no 'text' field.*body, id.*text_column"):
        load_corpus(_files(path), "en", "train")


def test_csv_labelled_with_string_labels(tmp_path: Path) -> None:
    path = tmp_path / "news.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["headline", "section"])
        for i in range(50):
            writer.writerow([f"sport story {i}, with a comma", "sport"])
            writer.writerow([f"money story {i}", "business"])
    train = load_labelled(_files(path), "en", "train", text_column="headline", label_column="section")
    test = load_labelled(_files(path), "en", "test", text_column="headline", label_column="section")
    assert train.label_names == ["business", "sport"]
    assert collections.Counter(test.labels) == {0: 10, 1: 10}
    assert all(("sport" in t) == (y == 1) for t, y in zip(train.texts + test.texts, train.labels + test.labels))
    corpus = load_corpus(_files(path), "en", "train", text_column="headline")
    assert "sport story 0, with a comma" in corpus.texts + load_corpus(_files(path), "en", "eval",
                                                                         text_column="headline").texts


def test_parquet_corpus_and_labels(tmp_path: Path) -> None:
    path = tmp_path / "part.parquet"
    texts = _lines(40)
    pq.write_table(pa.table({"text": texts, "label": [i % 4 for i in range(40)]}), path)
    train = load_labelled(_files(path), "en", "train", label_names=["a", "b", "c", "d"])
    test = load_labelled(_files(path), "en", "test", label_names=["a", "b", "c", "d"])
    assert train.label_names == ["a", "b", "c", "d"]
    assert collections.Counter(test.labels) == {0: 2, 1: 2, 2: 2, 3: 2}
    assert all(int(t.split()[2]) % 4 == y for t, y in zip(train.texts, train.labels))
    assert len(_both_splits(path)) == 40


def test_folder_of_mixed_files(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("\n".join(_lines(30, "txt")), encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.jsonl").write_text("\n".join(json.dumps({"text": t}) for t in _lines(30, "json")),
                                              encoding="utf-8")
    (tmp_path / "c.CSV").write_text("text\n" + "\n".join(_lines(30, "csv")), encoding="utf-8")
    (tmp_path / "notes.md").write_text("# not data", encoding="utf-8")
    (tmp_path / ".hidden.txt").write_text("secret line", encoding="utf-8")
    assert sorted(_both_splits(tmp_path)) == sorted(_lines(30, "txt") + _lines(30, "json") + _lines(30, "csv"))


def _write_ag_news(path: Path, rows: list[list[str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(rows)


def test_ag_news_style_csv(tmp_path: Path) -> None:
    path = tmp_path / "train.csv"
    rows = [[str(1 + i % 4), f"Title {i}", f"Description, number {i}."] for i in range(40)]
    _write_ag_news(path, rows)
    train = load_labelled(_files(path), "en", "train", csv_format="ag_news")
    test = load_labelled(_files(path), "en", "test", csv_format="ag_news")
    assert train.label_names == ["World", "Sports", "Business", "Sci/Tech"]
    assert len(train) + len(test) == 40 and collections.Counter(test.labels) == {0: 2, 1: 2, 2: 2, 3: 2}
    assert "Title 5 Description, number 5." in train.texts + test.texts
    assert all(int(t.split()[1]) % 4 == y for t, y in zip(train.texts + test.texts, train.labels + test.labels))

    _write_ag_news(path, [["Class Index", "Title", "Description"], *rows])
    with pytest.raises(ValueError, match="labels are 1-4.*header"):
        load_labelled(_files(path), "en", "train", csv_format="ag_news")
    _write_ag_news(path, [["1", "only a title"]])
    with pytest.raises(ValueError, match="3 fields"):
        load_labelled(_files(path), "en", "train", csv_format="ag_news")


# --------------------------------------------------------------------------------------------
# Bad input: one clear error each
# --------------------------------------------------------------------------------------------


def test_unknown_source_split_language_and_option() -> None:
    with pytest.raises(ValueError, match=r"unknown corpus 'web'; choose embedded .*, hub .*, or files:PATH"):
        CorpusSpec("web")
    with pytest.raises(TypeError, match=r"take a CorpusSpec.*CorpusSpec.parse\('embedded'\)"):
        load_corpus("embedded", "en", "train")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown option.*path.*accepts: text_column"):
        load_corpus(_files(Path("corpus.txt")), "en", "train", path="other.txt")
    with pytest.raises(ValueError, match="unknown split 'test'; choose one of: train, eval"):
        load_corpus(EMBEDDED, "en", "test")
    with pytest.raises(ValueError, match="unknown split 'eval'; choose one of: train, test"):
        load_labelled(EMBEDDED, "en", "eval")
    with pytest.raises(ValueError, match="unknown embedded language 'de'.*the corpus 'hub'"):
        load_corpus(EMBEDDED, "de")
    with pytest.raises(ValueError, match="unknown embedded language 'cs'"):
        load_labelled(EMBEDDED, "cs")
    with pytest.raises(ValueError, match="unknown option.*max_doc.*accepts: max_docs, seed"):
        load_corpus(EMBEDDED, "en", "train", max_doc=5)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="max_docs must be a positive whole number"):
            load_corpus(EMBEDDED, "en", "train", max_docs=bad)


def test_a_corpus_is_parsed_once_into_a_spec_that_prints_back_canonically(tmp_path: Path) -> None:
    spec = CorpusSpec.parse("files:data/c4", base=tmp_path)
    assert spec == CorpusSpec("files", (tmp_path / "data" / "c4").resolve())
    assert str(spec) == f"files:{(tmp_path / 'data' / 'c4').resolve()}" and CorpusSpec.parse(str(spec)) == spec
    assert CorpusSpec.parse(" hub ") == data.HUB and CorpusSpec.parse(data.EMBEDDED) is data.EMBEDDED
    with pytest.raises(ValueError, match="unknown corpus 'files:'"):
        CorpusSpec.parse("files:")


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        load_corpus(_files(tmp_path / "nope.txt"), "en", "train")
    with pytest.raises(ValueError, match="the corpus 'files' names no path; write files:PATH"):
        CorpusSpec("files")
    with pytest.raises(ValueError, match="the corpus 'hub' takes no path; write hub, or files:PATH"):
        CorpusSpec("hub", tmp_path)


def test_empty_file_and_no_documents(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match="empty.txt is empty"):
        load_corpus(_files(empty), "en", "train")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n   \n\t\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no non-empty documents"):
        load_corpus(_files(blank), "en", "train")
    header_only = tmp_path / "header.csv"
    header_only.write_text("text,label\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no non-empty documents"):
        load_corpus(_files(header_only), "en", "train")
    only_empty_texts = tmp_path / "empty_texts.jsonl"
    only_empty_texts.write_text('{"text": ""}\n{"text": "  "}\n{"text": null}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="no non-empty documents"):
        load_corpus(_files(only_empty_texts), "en", "train")
    empty_folder = tmp_path / "nothing"
    empty_folder.mkdir()
    with pytest.raises(ValueError, match="holds no .txt"):
        load_corpus(_files(empty_folder), "en", "train")


@pytest.mark.parametrize("rows", ["hello there,a\ngeneral kenobi,b\n", ""], ids=["rows", "header only"])
def test_csv_without_the_named_column(tmp_path: Path, rows: str) -> None:
    """Refused by its header, so a file without rows is refused by name too (not as 'no documents')."""
    path = tmp_path / "t.csv"
    path.write_text("body,topic\n" + rows, encoding="utf-8")
    with pytest.raises(ValueError, match=r"t.csv:1: the header has no 'text' field \(its fields: body, topic\); "
                                         "pass text_column"):
        load_corpus(_files(path), "en", "train")
    with pytest.raises(ValueError, match=r"t.csv:1: the header has no 'label' field.*pass label_column"):
        load_labelled(_files(path), "en", "train", text_column="body")


def test_other_bad_files(tmp_path: Path) -> None:
    doc = tmp_path / "essay.docx"
    doc.write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match="not a supported file type"):
        load_corpus(_files(doc), "en", "train")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"text": "fine"}\n{"text": oops}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="broken.jsonl:2 is not valid JSON"):
        load_corpus(_files(broken), "en", "train")
    txt = tmp_path / "plain.txt"
    txt.write_text("a line\n", encoding="utf-8")
    with pytest.raises(ValueError, match="has no labels"):
        load_labelled(_files(txt), "en", "train")
    unlabelled = tmp_path / "gaps.csv"
    unlabelled.write_text("text,label\nfirst,1\nsecond,\n", encoding="utf-8")
    with pytest.raises(ValueError, match="some rows of .*gaps.csv have no label"):
        load_labelled(_files(unlabelled), "en", "train")
    with pytest.raises(ValueError, match="unknown csv_format"):
        load_labelled(_files(unlabelled), "en", "train", csv_format="tsv")
    with pytest.raises(ValueError, match="eval_fraction must lie strictly between 0 and 1"):
        load_corpus(_files(txt), "en", "train", eval_fraction=1.0)


# --------------------------------------------------------------------------------------------
# C4-format shards: folders of gzipped JSON lines (text, timestamp, url)
# --------------------------------------------------------------------------------------------


def _write_c4_shards(folder: Path, texts: list[str], n_shards: int, suffix: str = ".json.gz") -> None:
    """Shards as allenai/c4 has them: one JSON record per line with text, timestamp and url, gzipped."""
    folder.mkdir(parents=True, exist_ok=True)
    for shard in range(n_shards):
        with gzip.open(folder / f"c4-train.{shard:05d}-of-{n_shards:05d}{suffix}", "wt", encoding="utf-8") as fh:
            for i in range(shard, len(texts), n_shards):
                fh.write(json.dumps({"text": texts[i], "timestamp": "2019-04-25T12:57:54Z",
                                     "url": f"https://example.org/{i}"}, ensure_ascii=False) + "\n")


def test_a_folder_of_c4_shards_reads_as_a_corpus(tmp_path: Path) -> None:
    french = [a["extract"] for a in data.embedded_articles("fr")[:400]]
    _write_c4_shards(tmp_path / "c4", french, n_shards=3)
    train = load_corpus(_files(tmp_path / "c4"), "fr", "train")
    held = load_corpus(_files(tmp_path / "c4"), "fr", "eval")
    assert sorted(train.texts + held.texts) == sorted(french)  # accents survive the gzip and JSON round trip
    assert held.texts and not set(train.texts) & set(held.texts)
    assert train.meta["documents_total"] == 400
    # the split follows each document's text: the same documents in 7 .jsonl.gz shards split the same way
    _write_c4_shards(tmp_path / "again", list(reversed(french)), n_shards=7, suffix=".jsonl.gz")
    assert set(load_corpus(_files(tmp_path / "again"), "fr", "eval").texts) == set(held.texts)
    assert list(next(files.read_records(next((tmp_path / "c4").iterdir())))[1]) == ["text", "timestamp", "url"]


def test_gzip_is_streamed_not_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "big.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for i in range(5000):
            fh.write(json.dumps({"text": f"document {i}", "url": "u"}) + "\n")
    records = files.read_records(path)
    assert next(records) == (1, {"text": "document 0", "url": "u"})  # a lazy iterator over the lines


def test_a_truncated_gzip_names_the_file(tmp_path: Path) -> None:
    whole = tmp_path / "whole.json.gz"
    _write_c4_shards(tmp_path / "src", _lines(2000), n_shards=1)
    whole.write_bytes(next((tmp_path / "src").iterdir()).read_bytes())
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(ValueError, match=r"cut.json.gz is not a complete gzip file.*write or download it again"):
        load_corpus(_files(cut), "en", "train")
    garbage = tmp_path / "garbage.jsonl.gz"
    garbage.write_bytes(b"this is not gzip at all\n")
    with pytest.raises(ValueError, match="garbage.jsonl.gz is not a complete gzip file"):
        load_corpus(_files(garbage), "en", "train")


# --------------------------------------------------------------------------------------------
# Data errors that used to be silent or cryptic: one clear message each
# --------------------------------------------------------------------------------------------


def test_a_latin1_text_file_is_refused_with_its_name_and_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("first line\nsecond line, café crème\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.txt:2 is not UTF-8 text \(byte 0xe9.*iconv -f latin1"):
        load_corpus(_files(path), "en", "train")
    csv_path = tmp_path / "latin1.csv"
    csv_path.write_bytes("text,label\ncafé,a\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.csv:2 is not UTF-8"):
        load_labelled(_files(csv_path), "en", "train")


WIDE_ENCODINGS = [("utf-16", "UTF-16"), ("utf-16-le", "UTF-16LE"), ("utf-16-be", "UTF-16BE"), ("utf-32", "UTF-32"),
                  ("utf-32-le", "UTF-32LE")]


@pytest.mark.parametrize("gzipped", [False, True], ids=["txt", "jsonl.gz"])
@pytest.mark.parametrize(("codec", "named"), WIDE_ENCODINGS, ids=[codec for codec, _ in WIDE_ENCODINGS])
def test_a_utf16_or_utf32_file_gets_a_command_that_converts_it_and_following_it_reads_the_same_text(
        tmp_path: Path, codec: str, named: str, gzipped: bool) -> None:
    """On 0cc080c every one of these got the Latin-1 hint, which turns the file into garbage that loads silently."""
    if not shutil.which("iconv"):
        pytest.skip("iconv is not installed")
    documents = ["Première phrase, en français.", "Zweiter Satz: Größe über alles.", *_lines(40)]
    if gzipped:  # a C4-style shard: JSON lines, gzipped
        path = tmp_path / "my shard.jsonl.gz"
        text = "".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in documents)
        path.write_bytes(gzip.compress(text.encode(codec)))  # 'utf-16'/'utf-32' put one byte-order mark first
    else:
        path = tmp_path / "my corpus.txt"
        path.write_bytes(("\n".join(documents) + "\n").encode(codec))
    with pytest.raises(ValueError, match=rf"it looks like {named[:6]}: convert it with `") as refused:
        load_corpus(_files(path), "xx", "train")
    command = str(refused.value).split("`")[1]
    assert f"-f {named} -t UTF-8" in command and "latin1" not in str(refused.value)
    subprocess.run(command, shell=True, check=True, cwd=tmp_path)
    assert sorted(_both_splits(path)) == sorted(documents)


def test_a_stray_nul_byte_in_utf8_text_is_named_without_an_encoding_hint(tmp_path: Path) -> None:
    path = tmp_path / "nul.txt"
    path.write_bytes("\n".join(_lines(200)).encode() + b"\nbroken\x00line\n")
    with pytest.raises(ValueError, match=r"nul.txt:201 holds NUL bytes.*NUL bytes are not text: remove them"):
        load_corpus(_files(path), "xx", "train")


def test_following_the_latin1_hint_reads_the_latin1_file(tmp_path: Path) -> None:
    if not shutil.which("iconv"):
        pytest.skip("iconv is not installed")
    path = tmp_path / "latin1.txt"
    path.write_bytes("\n".join(["café crème", *_lines(30)]).encode("latin-1"))
    with pytest.raises(ValueError, match="iconv -f latin1") as refused:
        load_corpus(_files(path), "xx", "train")
    subprocess.run(str(refused.value).split("`")[1], shell=True, check=True, cwd=tmp_path)
    assert "café crème" in _both_splits(path)


def test_a_utf8_bom_is_not_part_of_the_first_document(tmp_path: Path) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes("\ufefffirst document\n".encode("utf-8") + "\n".join(_lines(50)).encode("utf-8"))
    assert "first document" in _both_splits(path)


def test_an_empty_parquet_is_refused_for_a_labelled_set(tmp_path: Path) -> None:
    path = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"text": pa.array([], pa.string()), "label": pa.array([], pa.int64())}), path)
    with pytest.raises(ValueError, match=r"empty.parquet holds no rows; a labelled set needs rows"):
        load_labelled(_files(path), "en", "train")
    with pytest.raises(ValueError, match="no non-empty documents"):
        load_corpus(_files(path), "en", "train")


def test_a_jsonl_record_without_the_text_field_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "gappy.jsonl"
    path.write_text('{"text": "one"}\n\n{"text": "two"}\n{"body": "three"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"gappy.jsonl:4: this record has no 'text' field \(its fields: body\)"):
        load_corpus(_files(path), "en", "train")
    labelled = tmp_path / "nolabel.jsonl"
    labelled.write_text('{"text": "one", "label": 0}\n{"text": "two"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"nolabel.jsonl:2: this record has no 'label' field"):
        load_labelled(_files(labelled), "en", "train")


def _labelled_jsonl(path: Path, labels: list[Any]) -> Path:
    path.write_text("\n".join(json.dumps({"text": f"document {i}", "label": y}) for i, y in enumerate(labels)) + "\n",
                    encoding="utf-8")
    return path


def test_equal_numbers_are_one_label(tmp_path: Path) -> None:
    path = _labelled_jsonl(tmp_path / "mixed.jsonl", [2, 2.0, "2", 0, 0.0] * 10)
    train, test = load_labelled(_files(path), "en", "train"), load_labelled(_files(path), "en", "test")
    assert train.label_names == test.label_names == ["0", "2"]
    assert collections.Counter(train.labels + test.labels) == {0: 20, 1: 30}


def test_sparse_integer_labels_become_dense_classes_with_their_names(tmp_path: Path) -> None:
    path = _labelled_jsonl(tmp_path / "sparse.jsonl", [0, 1, 1000000] * 10)
    train = load_labelled(_files(path), "en", "train")
    assert train.label_names == ["0", "1", "1000000"] and set(train.labels) == {0, 1, 2}
    assert train.meta["label_values"] == [0, 1, 1000000]
    assert all(int(t.split()[1]) % 3 == y for t, y in zip(train.texts, train.labels))
    named = load_labelled(_files(_labelled_jsonl(tmp_path / "two.jsonl", [1, 3] * 10)), "en", "train",
                          label_names=["zero", "one", "two", "three"])
    assert named.label_names == ["one", "three"]


@pytest.mark.parametrize("labels, message", [
    ([0, 1, 1000000], r"2 label names given, but the labels of .* run from 0 to 1000000"),
    ([0, 1.5], r"label 1.5 in .* is not a whole number"),
    ([0, "sport"], r"mix numbers and names \(e.g. 0 and 'sport'\)"),
])
def test_labels_that_cannot_be_classes_are_refused(tmp_path: Path, labels: list[Any], message: str) -> None:
    path = _labelled_jsonl(tmp_path / "bad.jsonl", labels * 5)
    with pytest.raises(ValueError, match=message):
        load_labelled(_files(path), "en", "train", label_names=["a", "b"] if 1000000 in labels else None)


def test_a_json_lines_file_whose_first_record_lacks_the_text_field_names_the_option(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text('{}\n{"text": "a"}\n')
    with pytest.raises(ValueError, match=r"docs.jsonl:1: this record has no 'text' field \(its fields: none\); "
                                         r"pass text_column="):
        list(files.read_columns(path, text_column="text"))
