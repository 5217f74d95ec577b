"""pipeline.corpora.online: the Hub loaders' record handling, the real ``datasets`` path on files the tests write,
and one clear error when the Hub cannot be reached."""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from pipeline.corpora import data, online
from pipeline.corpora.data import HUB, load_corpus, load_labelled
from pipeline.corpora.online import HubUnavailableError


# --------------------------------------------------------------------------------------------
# Records into documents
# --------------------------------------------------------------------------------------------
def test_records_to_texts_stops_early_on_a_stream() -> None:
    pulled = 0

    def stream() -> Iterator[dict[str, Any]]:
        nonlocal pulled
        for i in range(1_000_000):
            pulled += 1
            yield {"text": f"document {i}", "url": "u", "timestamp": "t"}

    assert online.records_to_texts(stream(), max_docs=5) == [f"document {i}" for i in range(5)]
    assert pulled <= 6
    with pytest.raises(ValueError, match="no 'text' field"):
        online.records_to_texts([{"body": "x"}])


def test_ag_news_records() -> None:
    records = [{"text": "a", "label": 0}, {"text": "b", "label": 3}, {"text": "c", "label": 1}]
    texts, labels = online.ag_news_records(records, max_docs=2)
    assert (texts, labels) == (["a", "b"], [0, 3])
    with pytest.raises(ValueError, match="unknown AG News label 4; its 4 labels are 0, 1, 2, 3"):
        online.ag_news_records([{"text": "a", "label": 4}])


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
def hub_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend the Hub's host answers and offline mode is off."""
    monkeypatch.setattr(online, "hub_reachable", lambda *a, **k: True)
    monkeypatch.setattr(online, "offline_mode", lambda: False)


def _patch_load(monkeypatch: pytest.MonkeyPatch, fake: FakeLoad) -> None:
    import datasets

    monkeypatch.setattr(datasets, "load_dataset", fake)


def test_hub_c4_streams_the_asked_language(hub_up: None, monkeypatch: pytest.MonkeyPatch) -> None:
    records = ({"text": f"Czech doc {i}", "timestamp": "2019", "url": "x"} for i in range(50))
    fake = FakeLoad(result=records)
    _patch_load(monkeypatch, fake)
    corpus = load_corpus(HUB, "cs", "eval", eval_docs=7)
    assert corpus.texts == [f"Czech doc {i}" for i in range(7)]
    assert fake.calls == [("allenai/c4", "cs", {"split": "validation", "streaming": True})]
    assert (corpus.source, corpus.lang, corpus.name) == ("hub", "cs", "c4-cs")


def test_hub_ag_news_path(hub_up: None, monkeypatch: pytest.MonkeyPatch) -> None:
    news = FakeLoad(result=[{"text": "Stocks fall", "label": 2}, {"text": "Team wins", "label": 1}])
    _patch_load(monkeypatch, news)
    labelled = load_labelled(HUB, "en", "test", name="ag_news")
    assert (labelled.texts, labelled.labels) == (["Stocks fall", "Team wins"], [2, 1])
    assert labelled.label_names == ["World", "Sports", "Business", "Sci/Tech"]
    assert news.calls == [("fancyzhx/ag_news", None, {"split": "test", "streaming": False})]


# --------------------------------------------------------------------------------------------
# The real datasets library on local files: the same calls the Hub loaders make
# --------------------------------------------------------------------------------------------


def _redirect_to_local_json(monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> list[tuple]:
    """datasets.load_dataset(<hub id>, ...) reads the JSON-lines files the test wrote instead of the Hub."""
    import datasets

    real_load = datasets.load_dataset
    calls: list[tuple] = []

    def load(path: str, name: str | None = None, split: str | None = None, streaming: bool = False) -> Any:
        calls.append((path, name, split, streaming))
        return real_load("json", data_files={split: files[split]}, split=split, streaming=streaming)

    monkeypatch.setattr(datasets, "load_dataset", load)
    return calls


def test_c4_loader_streams_a_real_iterable_dataset(hub_up: None, monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    french = data.embedded_articles("fr")[:30]
    shard = tmp_path / "c4-validation.00000-of-00001.json.gz"
    with gzip.open(shard, "wt", encoding="utf-8") as fh:
        for i, article in enumerate(french):
            fh.write(json.dumps({"text": article["extract"], "timestamp": "2019-04-25T12:00:00Z",
                                 "url": f"https://example.org/{i}"}, ensure_ascii=False) + "\n")
    calls = _redirect_to_local_json(monkeypatch, {"validation": str(shard)})
    corpus = load_corpus(HUB, "fr", "eval", eval_docs=12)
    assert corpus.texts == [a["extract"] for a in french[:12]]
    assert calls == [("allenai/c4", "fr", "validation", True)]


def test_ag_news_loader_reads_a_real_dataset(hub_up: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "ag_news_test.jsonl"
    rows = [{"text": f"story {i}", "label": i % 4} for i in range(20)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    calls = _redirect_to_local_json(monkeypatch, {"test": str(path)})
    labelled = load_labelled(HUB, "en", "test", streaming=True)
    assert (labelled.texts, labelled.labels) == ([r["text"] for r in rows], [r["label"] for r in rows])
    assert calls == [("fancyzhx/ag_news", None, "test", True)]


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
def test_unreachable_hub_gives_one_clear_error(hub_up: None, monkeypatch: pytest.MonkeyPatch,
                                               error: BaseException) -> None:
    fake = FakeLoad(error=error)
    _patch_load(monkeypatch, fake)
    with pytest.raises(HubUnavailableError) as caught:
        load_corpus(HUB, "de", "train", max_docs=10)
    assert len(fake.calls) == 1  # one attempt from us, no retry loop
    message = str(caught.value)
    assert "the corpus 'embedded'" in message and "allenai/c4" in message
    assert "never cached" in message and "HF_HUB_OFFLINE=1" not in message  # C4 is streamed: no cache to offer
    assert caught.value.__cause__ is None and caught.value.__suppress_context__  # one error, not a chain
    assert caught.value.__context__ is error  # the original, kept but not shown as a chain


@pytest.mark.parametrize("error", [
    ValueError("BuilderConfig 'xx' not found. Available: ['en', 'de']"),
    KeyError("text"),
], ids=lambda e: type(e).__name__)
def test_other_hub_errors_pass_through_unchanged(hub_up: None, monkeypatch: pytest.MonkeyPatch,
                                                 error: BaseException) -> None:
    _patch_load(monkeypatch, FakeLoad(error=error))
    with pytest.raises(type(error)) as caught:
        load_labelled(HUB, "en", "train")
    assert caught.value is error


@pytest.mark.parametrize("streaming", [False, True])
def test_the_cached_copy_is_offered_only_for_a_dataset_that_was_not_streamed(
        hub_up: None, monkeypatch: pytest.MonkeyPatch, streaming: bool) -> None:
    _patch_load(monkeypatch, FakeLoad(error=TimeoutError("timed out")))
    with pytest.raises(HubUnavailableError) as caught:
        load_labelled(HUB, "en", "train", streaming=streaming)
    message = str(caught.value)
    assert "the labelled set 'embedded'" in message and "the corpus" not in message
    assert ("HF_HUB_OFFLINE=1" in message) is not streaming and ("never cached" in message) is streaming


def test_missing_dataset_means_not_cached_only_in_offline_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    from datasets.exceptions import DatasetNotFoundError

    missing = DatasetNotFoundError("Dataset 'fancyzhx/ag_news' doesn't exist on the Hub or cannot be accessed.")
    monkeypatch.setattr(online, "hub_reachable", lambda *a, **k: True)
    _patch_load(monkeypatch, FakeLoad(error=missing))
    monkeypatch.setattr(online, "offline_mode", lambda: False)
    with pytest.raises(DatasetNotFoundError):
        load_labelled(HUB, "en", "train")
    monkeypatch.setattr(online, "offline_mode", lambda: True)
    with pytest.raises(HubUnavailableError, match="HF_HUB_OFFLINE is set"):
        load_labelled(HUB, "en", "train")


def test_dead_connection_is_reported_before_any_download(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeLoad(result=[])
    _patch_load(monkeypatch, fake)
    monkeypatch.setattr(online, "offline_mode", lambda: False)
    monkeypatch.setattr(online, "hub_reachable", lambda *a, **k: False)
    with pytest.raises(HubUnavailableError, match="the corpus 'embedded'"):
        load_corpus(HUB, "en", "eval")
    assert fake.calls == []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_hub_reachable_probes_one_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in online.PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        assert online.hub_reachable(f"http://127.0.0.1:{server.getsockname()[1]}", timeout=2)
    assert not online.hub_reachable(f"http://127.0.0.1:{_closed_port()}", timeout=2)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert online.hub_reachable(f"http://127.0.0.1:{_closed_port()}", timeout=2)  # left to datasets


_REAL_HUB_SCRIPT = """
import json
from pipeline.corpora.data import HUB, load_corpus, load_labelled
out = []
for call in (lambda: load_corpus(HUB, "cs", "eval"), lambda: load_labelled(HUB, "en", "train"),
             lambda: load_labelled(HUB, "de", "test", name="sib200")):
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
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_") and k not in online.PROXY_VARS}
    env["HF_HOME"] = str(tmp_path / "hf_home")
    if mode == "offline-mode":
        env["HF_HUB_OFFLINE"] = env["HF_DATASETS_OFFLINE"] = "1"
    else:
        env["HF_ENDPOINT"] = f"http://127.0.0.1:{_closed_port()}"
    run = subprocess.run([sys.executable, "-c", _REAL_HUB_SCRIPT], capture_output=True, text=True, env=env,
                         timeout=60, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout)
    assert [kind for kind, _ in results] == ["HubUnavailableError"] * 3
    assert "the corpus 'embedded'" in results[0][1] and "the labelled set 'embedded'" in results[1][1]
    assert "Davlan/sib200 (deu_Latn)" in results[2][1] and "--labelled sib200:PATH" in results[2][1]
    assert "Retrying" not in run.stderr
    cache = tmp_path / "hf_home"
    assert not cache.exists() or not [p for p in cache.rglob("*") if p.is_file()]


def test_hub_bad_requests() -> None:
    with pytest.raises(ValueError, match="pass max_docs"):
        load_corpus(HUB, "en", "train")
    with pytest.raises(ValueError, match="unknown C4 language 'ja'"):
        load_corpus(HUB, "ja", "eval", eval_docs=5)
    with pytest.raises(ValueError, match="unknown option.s. name for the hub corpus"):  # C4 only
        load_corpus(HUB, "en", "eval", name="bookcorpus")
    with pytest.raises(ValueError, match="English only"):
        load_labelled(HUB, "de", "train")




# --------------------------------------------------------------------------------------------
# SIB-200: the real datasets csv builder on a local copy in the repository's layout
# --------------------------------------------------------------------------------------------

# Real rows of Davlan/sib200's data/deu_Latn/train.tsv (CC BY-SA 4.0), as the file holds them: a header, tabs,
# CSV-style quoting (the fourth row).
SIB200_DEU = """index_id\tcategory\ttext
431\tgeography\tDie Türkei ist auf drei Seiten von Meeren umgeben – von der Ägäis im Westen, dem Schwarze Meer im \
Norden und dem Mittelmeer im Süden.
403\tscience/technology\tZu Beginn des Krieges bewegten sie sich meist an der Meeresoberfläche, aber als sich das \
Radar weiterentwickelte und immer genauer wurde, waren die U-Boote zum Abtauchen gezwungen, um nicht gesehen zu werden.
993\tentertainment\tAllerdings verfügen sie im Winter über eine andere Art von Schönheit und Zauber.
76\tpolitics\t\"\"\"Allerdings wiederholte er seine vorherige Erklärung, dass Roe v. Wade \"\"\"\"geltende \
Rechtsprechung des Landes\"\"\"\" sei.\"\"\"
1205\thealth\tDanielle Lantagne, ein UN-Experte für die Krankheit, stellte fest, dass der Ausbruch vermutlich von \
den Blauhelmen verursacht wurde.
195\tsports\tMassa wird für den Rest der Saison 2009 ausfallen.
688\ttravel\tBesucher, die nur begrenzte Zeit zur Verfügung haben, sollten diese lieber anderswo verbringen.
"""


def write_sib200_copy(root: Path, code: str = "deu_Latn") -> Path:
    """A local copy in the layout of the dataset's repository: data/<code>/{train,dev,test}.tsv and labels.txt."""
    folder = root / "data" / code
    folder.mkdir(parents=True)
    for name in ("train.tsv", "dev.tsv", "test.tsv"):
        (folder / name).write_text(SIB200_DEU, encoding="utf-8")
    (folder / "labels.txt").write_text("\n".join(online.SIB200_LABELS) + "\n", encoding="utf-8")
    return root


def test_sib200_has_every_language_of_the_paper() -> None:
    from helpers.paper_values import LANGS

    assert set(online.SIB200_CONFIGS) == set(LANGS) and len(online.SIB200_LABELS) == 7
    assert online.sib200_file("cs", "test") == "hf://datasets/Davlan/sib200/data/ces_Latn/test.tsv"


def test_sib200_reads_a_local_copy_in_the_repositorys_layout(tmp_path: Path) -> None:
    root = write_sib200_copy(tmp_path / "sib200")
    test = load_labelled(HUB, "de", "test", name="sib200", root=root)
    assert len(test) == 7 and (test.lang, test.split, test.name) == ("de", "test", "sib200-deu_Latn")
    assert test.label_names == list(online.SIB200_LABELS)
    assert [test.label_names[y] for y in test.labels] == ["geography", "science/technology", "entertainment",
                                                           "politics", "health", "sports", "travel"]
    assert test.texts[3] == ('"Allerdings wiederholte er seine vorherige Erklärung, dass Roe v. Wade ""geltende '
                             'Rechtsprechung des Landes"" sei."')  # the quoting undone as pandas reads the file
    assert "CC BY-SA 4.0" in test.licence and test.meta["file"].endswith("data/deu_Latn/test.tsv")
    assert load_labelled(HUB, "de", "train", name="sib200", root=root, max_docs=2).texts == test.texts[:2]


def test_sib200_from_the_hub_reads_the_same_files_there(hub_up: None, monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    import datasets

    real_load = datasets.load_dataset
    rows = [{"index_id": 1, "category": "sports", "text": "Ein Tor."}, {"index_id": 2, "category": "travel",
                                                                         "text": "Eine Reise."}]
    fake = FakeLoad(result=iter(rows))
    _patch_load(monkeypatch, fake)
    labelled = load_labelled(HUB, "pl", "train", name="sib200")
    assert (labelled.texts, labelled.labels, labelled.source) == (["Ein Tor.", "Eine Reise."], [5, 6], "hub")
    assert fake.calls == [("csv", None, {"data_files": "hf://datasets/Davlan/sib200/data/pol_Latn/train.tsv",
                                          "split": "train", "streaming": True, "delimiter": "\t",
                                          "keep_default_na": False})]
    # the real builder, the Hub's address swapped for a local copy: the very call the Hub path makes
    monkeypatch.setattr(datasets, "load_dataset", real_load)
    monkeypatch.setattr(online, "SIB200_HUB_ROOT", str(write_sib200_copy(tmp_path / "hub", "ita_Latn")))
    assert len(load_labelled(HUB, "it", "test", name="sib200")) == 7


def test_sib200_errors_name_the_file_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"data/deu_Latn/test.tsv is missing.*git clone"):
        load_labelled(HUB, "de", "test", name="sib200", root=tmp_path)
    with pytest.raises(ValueError, match="unknown SIB-200 language 'ja'"):
        load_labelled(HUB, "ja", "test", name="sib200", root=tmp_path)
    with pytest.raises(ValueError, match=r"x.tsv:3: unknown SIB-200 category 'weather'"):
        online.sib200_records([{"index_id": 1, "category": "sports", "text": "a"},
                               {"index_id": 2, "category": "weather", "text": "b"}], "x.tsv")
    with pytest.raises(ValueError, match=r"x.tsv:2: this row has no .category. field.*is it a SIB-200 file"):
        online.sib200_records([{"index_id": 1, "label": "sports", "text": "a"}], "x.tsv")
