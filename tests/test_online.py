"""pipeline.online: the Hub loaders' record handling, the real ``datasets`` path on files the tests write,
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

from pipeline import data, online
from pipeline.data import HUB, load_corpus, load_labelled
from pipeline.online import HubUnavailableError


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

    assert online.records_to_texts(stream(), "text", max_docs=5) == [f"document {i}" for i in range(5)]
    assert pulled <= 6
    with pytest.raises(ValueError, match="no 'text' field"):
        online.records_to_texts([{"body": "x"}])


def test_wikitext_lines_become_articles() -> None:
    lines = [
        "", " = Valkyria Chronicles III = \n", "", " Senjō no Valkyria 3 is a role @-@ playing game . \n",
        " = = Gameplay = = \n", " It sold 1 @,@ 000 copies at 3 @.@ 5 dollars . \n", "",
        " = Tower Building = \n", " The building is tall . \n",
    ]
    assert list(online.wikitext_articles(lines)) == [
        "Senjō no Valkyria 3 is a role-playing game . It sold 1,000 copies at 3.5 dollars .",
        "The building is tall .",
    ]


def test_ag_news_records() -> None:
    records = [{"text": "a", "label": 0}, {"text": "b", "label": 3}, {"text": "c", "label": 1}]
    texts, labels = online.ag_news_records(records, max_docs=2)
    assert (texts, labels) == (["a", "b"], [0, 3])
    with pytest.raises(ValueError, match="outside 0..3"):
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


def test_hub_wikitext_and_ag_news_paths(hub_up: None, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [" = A = \n", " First . \n", " = B = \n", " Second . \n"]
    wiki = FakeLoad(result=[{"text": line} for line in lines])
    _patch_load(monkeypatch, wiki)
    corpus = load_corpus(HUB, "en", "train", name="wikitext-103", max_docs=1)
    assert corpus.texts == ["First ."]
    assert wiki.calls == [("Salesforce/wikitext", "wikitext-103-raw-v1", {"split": "train", "streaming": False})]

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
    assert caught.value.__cause__ is None and caught.value.__suppress_context__  # one error, not a chain
    assert caught.value.original is error  # type: ignore[attr-defined]


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
        load_corpus(HUB, "en", "eval", name="wikitext-103")
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
from pipeline.data import HUB, load_corpus, load_labelled
out = []
for call in (lambda: load_corpus(HUB, "cs", "eval"), lambda: load_labelled(HUB, "en", "train")):
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
    assert [kind for kind, _ in results] == ["HubUnavailableError", "HubUnavailableError"]
    assert all("the corpus 'embedded'" in message for _, message in results)
    assert "Retrying" not in run.stderr
    cache = tmp_path / "hf_home"
    assert not cache.exists() or not [p for p in cache.rglob("*") if p.is_file()]


def test_hub_bad_requests() -> None:
    with pytest.raises(ValueError, match="pass max_docs"):
        load_corpus(HUB, "en", "train")
    with pytest.raises(ValueError, match="unknown C4 language 'ja'"):
        load_corpus(HUB, "ja", "eval", eval_docs=5)
    with pytest.raises(ValueError, match="English only"):
        load_corpus(HUB, "fr", "eval", name="wikitext-103")
    with pytest.raises(ValueError, match="unknown hub corpus"):
        load_corpus(HUB, "en", "eval", name="bookcorpus")
    with pytest.raises(ValueError, match="English only"):
        load_labelled(HUB, "de", "train")


