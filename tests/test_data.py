"""helpers.data: the embedded corpus and its splits, the Hub loaders (offline), local files, bad input."""

from __future__ import annotations

import collections
import csv
import hashlib
import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import data
from helpers.data import HubUnavailableError, load_corpus, load_labelled

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


def test_embedded_train_and_eval_partition_the_articles() -> None:
    train = load_corpus("embedded", "en", "train")
    held = load_corpus("embedded", "en", "eval")
    every = {a["extract"] for a in data.embedded_articles("en")}
    assert len(every) == EN_ARTICLES  # English summaries are all distinct, so texts identify articles
    assert len(train) + len(held) == EN_ARTICLES
    assert not set(train.texts) & set(held.texts)
    assert set(train.texts) | set(held.texts) == every
    # The eval share is a hash-based Bernoulli(0.05) draw per article: allow 5 binomial sd.
    n, p = EN_ARTICLES, data.EMBEDDED_EVAL_FRACTION
    assert abs(len(held) - n * p) <= 5 * math.sqrt(n * p * (1 - p))
    assert train.meta["articles_total"] == EN_ARTICLES
    assert train.licence and "CC BY-SA" in train.licence


def test_embedded_split_is_repeatable_and_independent_of_max_docs() -> None:
    first = load_corpus("embedded", "en", "eval")
    again = load_corpus("embedded", "en", "eval")
    assert first.texts == again.texts
    assert load_corpus("embedded", "en", "eval", max_docs=40).texts == first.texts[:40]
    full_train = load_corpus("embedded", "en", "train")
    assert load_corpus("embedded", "en", "train", max_docs=300).texts == full_train.texts[:300]
    other_seed = load_corpus("embedded", "en", "eval", seed=1)
    assert set(other_seed.texts) != set(first.texts)


def test_embedded_split_is_the_same_in_a_fresh_interpreter() -> None:
    """Python's string hashing is salted per process; the split must not depend on it."""
    code = ("import hashlib, json; from helpers.data import load_corpus; "
            "t = load_corpus('embedded', 'en', 'eval').texts; "
            "print(json.dumps([len(t), hashlib.sha256('\\n'.join(t).encode()).hexdigest()]))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True)
    here = load_corpus("embedded", "en", "eval").texts
    assert json.loads(out.stdout) == [len(here), hashlib.sha256("\n".join(here).encode()).hexdigest()]


def test_embedded_first_documents_are_a_spread_out_sample() -> None:
    """max_docs takes the first N in hash order, not alphabetical order, so any N is a fair sample."""
    n_head = 300
    position = {a["extract"]: i for i, a in enumerate(data.embedded_articles("en"))}  # alphabetical rank
    head = load_corpus("embedded", "en", "train", max_docs=n_head).texts
    mean_rank = sum(position[t] for t in head) / n_head
    # A uniform sample's mean rank is (N-1)/2 with sd about N / sqrt(12 n); allow 5 sd.
    assert abs(mean_rank - (EN_ARTICLES - 1) / 2) <= 5 * EN_ARTICLES / math.sqrt(12 * n_head)
    labelled_head = load_labelled("embedded", "en", "train", max_docs=600)
    assert set(labelled_head.labels) == set(range(EN_TOPICS))  # rarest topic: expected ~15 of 600


def test_embedded_topics_and_stratified_split() -> None:
    train = load_labelled("embedded", "en", "train")
    test = load_labelled("embedded", "en", "test")
    assert train.label_names == test.label_names
    assert len(train.label_names) == EN_TOPICS
    assert {"People", "Geography", "Mathematics"} <= set(train.label_names)
    assert len(train) + len(test) == EN_ARTICLES
    assert not set(train.texts) & set(test.texts)
    assert all(0 <= y < EN_TOPICS for y in train.labels + test.labels)
    n_train, n_test = collections.Counter(train.labels), collections.Counter(test.labels)
    for topic in range(EN_TOPICS):
        size = n_train[topic] + n_test[topic]
        # round(0.2 * size) per topic: off from 20 % by at most half a document.
        assert abs(n_test[topic] / size - data.EMBEDDED_TEST_FRACTION) <= 0.5 / size + 1e-12
    # the text-label pairs are the articles' own
    topic_of = {a["extract"]: a["topic"] for a in data.embedded_articles("en")}
    assert all(topic_of[t] == test.label_names[y] for t, y in zip(test.texts, test.labels))


@pytest.mark.parametrize("lang, n_topics", [("fr", 11), ("es", 8)])
def test_embedded_french_and_spanish(lang: str, n_topics: int) -> None:
    train, held = load_corpus("embedded", lang, "train"), load_corpus("embedded", lang, "eval")
    assert len(train) > 10 * len(held) > 0
    assert not set(train.texts) & set(held.texts)
    assert train.n_words() > 100_000
    extracts = [a["extract"] for a in data.embedded_articles(lang)]
    assert len(set(extracts)) == len(extracts)  # redirects sharing one summary are folded into one article
    labelled = load_labelled("embedded", lang, "test")
    assert len(labelled.label_names) == n_topics and set(labelled.labels) == set(range(n_topics))


def test_stratified_split_on_small_classes() -> None:
    keys = [f"doc{i}" for i in range(23)]
    labels = [0] * 10 + [1] * 10 + [2] * 2 + [3]
    kept, held = data.stratified_split(keys, labels, 0.2, seed=0)
    assert sorted(kept + held) == list(range(23))
    held_by_class = collections.Counter(labels[i] for i in held)
    assert held_by_class == {0: 2, 1: 2, 2: 1}  # a singleton class stays in training


def test_stable_fraction_is_sha256_of_seed_and_key() -> None:
    expected = int.from_bytes(hashlib.sha256(b"7:Berlin").digest()[:8], "big") / 2**64
    assert data.stable_fraction("Berlin", 7) == expected
    assert data.stable_fraction("Berlin", 7, purpose="order:") != expected


# --------------------------------------------------------------------------------------------
# Hub: record handling on in-memory records, and the offline failure
# --------------------------------------------------------------------------------------------


def test_records_to_texts_stops_early_on_a_stream() -> None:
    pulled = 0

    def stream() -> Iterator[dict[str, Any]]:
        nonlocal pulled
        for i in range(1_000_000):
            pulled += 1
            yield {"text": f"document {i}", "url": "u", "timestamp": "t"}

    assert data.records_to_texts(stream(), "text", max_docs=5) == [f"document {i}" for i in range(5)]
    assert pulled <= 6
    with pytest.raises(ValueError, match="no 'text' field"):
        data.records_to_texts([{"body": "x"}])


def test_wikitext_lines_become_articles() -> None:
    lines = [
        "", " = Valkyria Chronicles III = \n", "", " Senjō no Valkyria 3 is a role @-@ playing game . \n",
        " = = Gameplay = = \n", " It sold 1 @,@ 000 copies at 3 @.@ 5 dollars . \n", "",
        " = Tower Building = \n", " The building is tall . \n",
    ]
    assert list(data.wikitext_articles(lines)) == [
        "Senjō no Valkyria 3 is a role-playing game . It sold 1,000 copies at 3.5 dollars .",
        "The building is tall .",
    ]


def test_ag_news_records() -> None:
    texts, labels = data.ag_news_records([{"text": "a", "label": 0}, {"text": "b", "label": 3}, {"text": "c", "label": 1}],
                                         max_docs=2)
    assert (texts, labels) == (["a", "b"], [0, 3])
    with pytest.raises(ValueError, match="outside 0..3"):
        data.ag_news_records([{"text": "a", "label": 4}])


class FakeLoad:
    """Stands in for datasets.load_dataset: records its calls, returns records or raises."""

    def __init__(self, result: Any = None, error: BaseException | None = None) -> None:
        self.result, self.error, self.calls = result, error, []

    def __call__(self, path: str, name: str | None = None, **kwargs: Any) -> Any:
        self.calls.append((path, name, kwargs))
        if self.error is not None:
            raise self.error
        return self.result


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend the Hub's host answers and offline mode is off."""
    monkeypatch.setattr(data, "hub_reachable", lambda *a, **k: True)
    monkeypatch.setattr(data, "_offline_mode", lambda: False)


def _patch_load(monkeypatch: pytest.MonkeyPatch, fake: FakeLoad) -> None:
    import datasets

    monkeypatch.setattr(datasets, "load_dataset", fake)


def test_hub_c4_streams_the_asked_language(online: None, monkeypatch: pytest.MonkeyPatch) -> None:
    records = ({"text": f"Czech doc {i}", "timestamp": "2019", "url": "x"} for i in range(50))
    fake = FakeLoad(result=records)
    _patch_load(monkeypatch, fake)
    corpus = load_corpus("hub", "cs", "eval", eval_docs=7)
    assert corpus.texts == [f"Czech doc {i}" for i in range(7)]
    assert fake.calls == [("allenai/c4", "cs", {"split": "validation", "streaming": True})]
    assert (corpus.source, corpus.lang, corpus.name) == ("hub", "cs", "c4-cs")


def test_hub_wikitext_and_ag_news_paths(online: None, monkeypatch: pytest.MonkeyPatch) -> None:
    wiki = FakeLoad(result=[{"text": " = A = \n"}, {"text": " First . \n"}, {"text": " = B = \n"}, {"text": " Second . \n"}])
    _patch_load(monkeypatch, wiki)
    corpus = load_corpus("hub", "en", "train", name="wikitext-103", max_docs=1)
    assert corpus.texts == ["First ."]
    assert wiki.calls == [("Salesforce/wikitext", "wikitext-103-raw-v1", {"split": "train", "streaming": False})]

    news = FakeLoad(result=[{"text": "Stocks fall", "label": 2}, {"text": "Team wins", "label": 1}])
    _patch_load(monkeypatch, news)
    labelled = load_labelled("hub", "en", "test", name="ag_news")
    assert (labelled.texts, labelled.labels) == (["Stocks fall", "Team wins"], [2, 1])
    assert labelled.label_names == ["World", "Sports", "Business", "Sci/Tech"]
    assert news.calls == [("fancyzhx/ag_news", None, {"split": "test", "streaming": False})]


def _network_errors() -> list[BaseException]:
    import httpx
    import requests
    from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled

    chained = ValueError("could not resolve data files")
    chained.__cause__ = OSError("[Errno -2] Name or service not known")
    chained.__cause__.__cause__ = socket.gaierror(-2, "Name or service not known")

    class Response:
        status_code = 503

    server_down = OSError("503 Service Unavailable")
    server_down.response = Response()  # type: ignore[attr-defined]
    return [
        ConnectionError("Couldn't reach 'allenai/c4' on the Hub (LocalEntryNotFoundError)"),
        requests.exceptions.ConnectionError("Max retries exceeded"),
        requests.exceptions.ReadTimeout("read timed out"),
        httpx.ConnectError("[Errno 111] Connection refused"),
        LocalEntryNotFoundError("not in cache and no connection"),
        OfflineModeIsEnabled("offline"),
        TimeoutError("timed out"),
        chained,
        server_down,
    ]


@pytest.mark.parametrize("error", _network_errors(), ids=lambda e: type(e).__name__)
def test_unreachable_hub_gives_one_clear_error(online: None, monkeypatch: pytest.MonkeyPatch,
                                               error: BaseException) -> None:
    fake = FakeLoad(error=error)
    _patch_load(monkeypatch, fake)
    with pytest.raises(HubUnavailableError) as caught:
        load_corpus("hub", "de", "train", max_docs=10)
    assert len(fake.calls) == 1  # one attempt from us, no retry loop
    message = str(caught.value)
    assert "source='embedded'" in message and "allenai/c4" in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__  # one error, not a chain
    assert caught.value.original is error  # type: ignore[attr-defined]


@pytest.mark.parametrize("error", [
    ValueError("BuilderConfig 'xx' not found. Available: ['en', 'de']"),
    KeyError("text"),
], ids=lambda e: type(e).__name__)
def test_other_hub_errors_pass_through_unchanged(online: None, monkeypatch: pytest.MonkeyPatch,
                                                 error: BaseException) -> None:
    _patch_load(monkeypatch, FakeLoad(error=error))
    with pytest.raises(type(error)) as caught:
        load_labelled("hub", "en", "train")
    assert caught.value is error


def test_missing_dataset_means_not_cached_only_in_offline_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    from datasets.exceptions import DatasetNotFoundError

    missing = DatasetNotFoundError("Dataset 'fancyzhx/ag_news' doesn't exist on the Hub or cannot be accessed.")
    monkeypatch.setattr(data, "hub_reachable", lambda *a, **k: True)
    _patch_load(monkeypatch, FakeLoad(error=missing))
    monkeypatch.setattr(data, "_offline_mode", lambda: False)
    with pytest.raises(DatasetNotFoundError):
        load_labelled("hub", "en", "train")
    monkeypatch.setattr(data, "_offline_mode", lambda: True)
    with pytest.raises(HubUnavailableError, match="HF_HUB_OFFLINE is set"):
        load_labelled("hub", "en", "train")


def test_dead_connection_is_reported_before_any_download(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeLoad(result=[])
    _patch_load(monkeypatch, fake)
    monkeypatch.setattr(data, "_offline_mode", lambda: False)
    monkeypatch.setattr(data, "hub_reachable", lambda *a, **k: False)
    with pytest.raises(HubUnavailableError, match="source='embedded'"):
        load_corpus("hub", "en", "eval", name="wikitext-103")
    assert fake.calls == []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_hub_reachable_probes_one_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in data._PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        assert data.hub_reachable(f"http://127.0.0.1:{server.getsockname()[1]}", timeout=2)
    assert not data.hub_reachable(f"http://127.0.0.1:{_closed_port()}", timeout=2)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert data.hub_reachable(f"http://127.0.0.1:{_closed_port()}", timeout=2)  # left to datasets


_REAL_HUB_SCRIPT = """
import json
from helpers.data import load_corpus, load_labelled
out = []
for call in (lambda: load_corpus("hub", "cs", "eval"), lambda: load_labelled("hub", "en", "train")):
    try:
        call()
        out.append(["no error", ""])
    except Exception as err:
        out.append([type(err).__name__, str(err)])
print(json.dumps(out))
"""


@pytest.mark.parametrize("mode", ["offline-mode", "dead-endpoint"])
def test_real_datasets_without_network(tmp_path: Path, mode: str) -> None:
    """The real datasets.load_dataset, isolated cache: one clear error per call, no retries, no files."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_") and k not in data._PROXY_VARS}
    env["HF_HOME"] = str(tmp_path / "hf_home")
    if mode == "offline-mode":
        env["HF_HUB_OFFLINE"] = env["HF_DATASETS_OFFLINE"] = "1"
    else:
        env["HF_ENDPOINT"] = f"http://127.0.0.1:{_closed_port()}"
    run = subprocess.run([sys.executable, "-c", _REAL_HUB_SCRIPT], capture_output=True, text=True, env=env,
                         timeout=60, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout)
    assert [kind for kind, _ in results] == ["HubUnavailableError", "HubUnavailableError"]
    assert all("source='embedded'" in message for _, message in results)
    assert "Retrying" not in run.stderr
    cache = tmp_path / "hf_home"
    assert not cache.exists() or not [p for p in cache.rglob("*") if p.is_file()]


def test_hub_bad_requests() -> None:
    with pytest.raises(ValueError, match="pass max_docs"):
        load_corpus("hub", "en", "train")
    with pytest.raises(ValueError, match="unknown C4 language 'ja'"):
        load_corpus("hub", "ja", "eval", eval_docs=5)
    with pytest.raises(ValueError, match="English only"):
        load_corpus("hub", "fr", "eval", name="wikitext-103")
    with pytest.raises(ValueError, match="unknown hub corpus"):
        load_corpus("hub", "en", "eval", name="bookcorpus")
    with pytest.raises(ValueError, match="English only"):
        load_labelled("hub", "de", "train")


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


def _lines(n: int, prefix: str = "line") -> list[str]:
    return [f"{prefix} number {i} about something" for i in range(n)]


def test_txt_one_document_per_line(tmp_path: Path) -> None:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(_lines(200)[:100]) + "\n\n   \n" + "\n".join(_lines(200)[100:]) + "\n", encoding="utf-8")
    train = load_corpus("files", "en", "train", path=path)
    held = load_corpus("files", "en", "eval", path=path)
    assert sorted(train.texts + held.texts) == sorted(_lines(200))
    assert held.texts and not set(train.texts) & set(held.texts)
    # the split follows each line's content, so reordering the file keeps it
    path.write_text("\n".join(reversed(_lines(200))), encoding="utf-8")
    assert set(load_corpus("files", "en", "eval", path=path).texts) == set(held.texts)
    assert load_corpus("files", "en", "train", path=path, max_docs=3).texts == \
        [t for t in reversed(_lines(200)) if t in set(train.texts)][:3]


def test_jsonl_with_a_chosen_column(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text("\n".join(json.dumps({"body": t, "id": i}) for i, t in enumerate(_lines(60))) + "\n", encoding="utf-8")
    both = load_corpus("files", "en", "train", path=path, text_column="body").texts + \
        load_corpus("files", "en", "eval", path=path, text_column="body").texts
    assert sorted(both) == sorted(_lines(60))
    with pytest.raises(ValueError, match=r"no column 'text'.*body, id.*text_column"):
        load_corpus("files", "en", "train", path=path)


def test_csv_labelled_with_string_labels(tmp_path: Path) -> None:
    path = tmp_path / "news.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["headline", "section"])
        for i in range(50):
            writer.writerow([f"sport story {i}, with a comma", "sport"])
            writer.writerow([f"money story {i}", "business"])
    train = load_labelled("files", "en", "train", path=path, text_column="headline", label_column="section")
    test = load_labelled("files", "en", "test", path=path, text_column="headline", label_column="section")
    assert train.label_names == ["business", "sport"]
    assert collections.Counter(test.labels) == {0: 10, 1: 10}
    assert all(("sport" in t) == (y == 1) for t, y in zip(train.texts + test.texts, train.labels + test.labels))
    corpus = load_corpus("files", "en", "train", path=path, text_column="headline")
    assert "sport story 0, with a comma" in corpus.texts + load_corpus("files", "en", "eval", path=path,
                                                                         text_column="headline").texts


def test_parquet_corpus_and_labels(tmp_path: Path) -> None:
    path = tmp_path / "part.parquet"
    texts = _lines(40)
    pq.write_table(pa.table({"text": texts, "label": [i % 4 for i in range(40)]}), path)
    train = load_labelled("files", "en", "train", path=path, label_names=["a", "b", "c", "d"])
    test = load_labelled("files", "en", "test", path=path, label_names=["a", "b", "c", "d"])
    assert train.label_names == ["a", "b", "c", "d"]
    assert collections.Counter(test.labels) == {0: 2, 1: 2, 2: 2, 3: 2}
    assert all(int(t.split()[2]) % 4 == y for t, y in zip(train.texts, train.labels))
    assert len(load_corpus("files", "en", "train", path=path)) + len(load_corpus("files", "en", "eval", path=path)) == 40


def test_folder_of_mixed_files(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("\n".join(_lines(30, "txt")), encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.jsonl").write_text("\n".join(json.dumps({"text": t}) for t in _lines(30, "json")),
                                              encoding="utf-8")
    (tmp_path / "c.CSV").write_text("text\n" + "\n".join(_lines(30, "csv")), encoding="utf-8")
    (tmp_path / "notes.md").write_text("# not data", encoding="utf-8")
    (tmp_path / ".hidden.txt").write_text("secret line", encoding="utf-8")
    both = load_corpus("files", "xx", "train", path=tmp_path).texts + load_corpus("files", "xx", "eval", path=tmp_path).texts
    assert sorted(both) == sorted(_lines(30, "txt") + _lines(30, "json") + _lines(30, "csv"))


def _write_ag_news(path: Path, rows: list[list[str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(rows)


def test_ag_news_style_csv(tmp_path: Path) -> None:
    path = tmp_path / "train.csv"
    rows = [[str(1 + i % 4), f"Title {i}", f"Description, number {i}."] for i in range(40)]
    _write_ag_news(path, rows)
    train = load_labelled("files", "en", "train", path=path, csv_format="ag_news")
    test = load_labelled("files", "en", "test", path=path, csv_format="ag_news")
    assert train.label_names == ["World", "Sports", "Business", "Sci/Tech"]
    assert len(train) + len(test) == 40 and collections.Counter(test.labels) == {0: 2, 1: 2, 2: 2, 3: 2}
    assert "Title 5 Description, number 5." in train.texts + test.texts
    assert all(int(t.split()[1]) % 4 == y for t, y in zip(train.texts + test.texts, train.labels + test.labels))

    _write_ag_news(path, [["Class Index", "Title", "Description"], *rows])
    with pytest.raises(ValueError, match="labels are 1-4.*header"):
        load_labelled("files", "en", "train", path=path, csv_format="ag_news")
    _write_ag_news(path, [["1", "only a title"]])
    with pytest.raises(ValueError, match="3 fields"):
        load_labelled("files", "en", "train", path=path, csv_format="ag_news")


# --------------------------------------------------------------------------------------------
# Bad input: one clear error each
# --------------------------------------------------------------------------------------------


def test_unknown_source_split_language_and_option() -> None:
    with pytest.raises(ValueError, match="unknown source 'web'; choose one of: embedded, hub, files"):
        load_corpus("web")
    with pytest.raises(ValueError, match="unknown split 'test'; choose one of: train, eval"):
        load_corpus("embedded", "en", "test")
    with pytest.raises(ValueError, match="unknown split 'eval'; choose one of: train, test"):
        load_labelled("embedded", "en", "eval")
    with pytest.raises(ValueError, match="unknown embedded language 'de'.*source='hub'"):
        load_corpus("embedded", "de")
    with pytest.raises(ValueError, match="unknown embedded language 'cs'"):
        load_labelled("embedded", "cs")
    with pytest.raises(ValueError, match="unknown option.*max_doc.*accepts: max_docs, seed"):
        load_corpus("embedded", "en", "train", max_doc=5)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="max_docs must be a positive whole number"):
            load_corpus("embedded", "en", "train", max_docs=bad)


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        load_corpus("files", "en", "train", path=tmp_path / "nope.txt")
    with pytest.raises(ValueError, match="needs path="):
        load_corpus("files", "en", "train")
    with pytest.raises(ValueError, match="needs path="):
        load_labelled("files", "en", "train")


def test_empty_file_and_no_documents(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match="empty.txt is empty"):
        load_corpus("files", "en", "train", path=empty)
    blank = tmp_path / "blank.txt"
    blank.write_text("\n   \n\t\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no non-empty documents"):
        load_corpus("files", "en", "train", path=blank)
    header_only = tmp_path / "header.csv"
    header_only.write_text("text,label\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no non-empty documents"):
        load_corpus("files", "en", "train", path=header_only)
    only_empty_texts = tmp_path / "empty_texts.jsonl"
    only_empty_texts.write_text('{"text": ""}\n{"text": "  "}\n{"text": null}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="no non-empty documents"):
        load_corpus("files", "en", "train", path=only_empty_texts)
    empty_folder = tmp_path / "nothing"
    empty_folder.mkdir()
    with pytest.raises(ValueError, match="holds no .txt"):
        load_corpus("files", "en", "train", path=empty_folder)


def test_csv_without_the_named_column(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("body,topic\nhello there,a\ngeneral kenobi,b\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"no column 'text'; its columns are: body, topic; pass text_column"):
        load_corpus("files", "en", "train", path=path)
    with pytest.raises(ValueError, match=r"no column 'label'.*pass label_column"):
        load_labelled("files", "en", "train", path=path, text_column="body")


def test_other_bad_files(tmp_path: Path) -> None:
    doc = tmp_path / "essay.docx"
    doc.write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match="not a supported file type"):
        load_corpus("files", "en", "train", path=doc)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"text": "fine"}\n{"text": oops}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="broken.jsonl:2 is not valid JSON"):
        load_corpus("files", "en", "train", path=broken)
    txt = tmp_path / "plain.txt"
    txt.write_text("a line\n", encoding="utf-8")
    with pytest.raises(ValueError, match="has no labels"):
        load_labelled("files", "en", "train", path=txt)
    unlabelled = tmp_path / "gaps.csv"
    unlabelled.write_text("text,label\nfirst,1\nsecond,\n", encoding="utf-8")
    with pytest.raises(ValueError, match="some rows have no label"):
        load_labelled("files", "en", "train", path=unlabelled)
    with pytest.raises(ValueError, match="unknown csv_format"):
        load_labelled("files", "en", "train", path=unlabelled, csv_format="tsv")
    with pytest.raises(ValueError, match="eval_fraction must lie strictly between 0 and 1"):
        load_corpus("files", "en", "train", path=txt, eval_fraction=1.0)
