"""The Hub loaders (WikiText-103, ``allenai/c4`` per language, AG News, SIB-200) and what happens without a network.

``pipeline.data.load_corpus`` and ``load_labelled`` of the ``hub`` corpus end up here. The
loaders stream or download through ``datasets``; when the Hub cannot be reached they fail at once
with one :class:`HubUnavailableError` that names the offline default, instead of retrying for half
a minute and ending in a chain of library errors. The record handling (``records_to_texts``,
``wikitext_articles``, ``ag_news_records``) is plain Python, so it is tested on in-memory records.
"""

from __future__ import annotations

import os
import socket
import urllib.parse
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pipeline.documents import AG_NEWS_LABELS, Corpus, LabelledSet, check_choice, check_max_docs, take

# Hub datasets, checked against their dataset cards on huggingface.co:
# Salesforce/wikitext (configs wikitext-103-raw-v1 ...; splits train/validation/test; field text),
# allenai/c4 (one config per language: en, de, cs, pl, it, es, fr ...; splits train/validation;
# fields text, timestamp, url), fancyzhx/ag_news (the former "ag_news"; splits train/test;
# fields text, label 0-3 = World, Sports, Business, Sci/Tech).
WIKITEXT_ID, WIKITEXT_CONFIG = "Salesforce/wikitext", "wikitext-103-raw-v1"
C4_ID = "allenai/c4"
AG_NEWS_ID = "fancyzhx/ag_news"
C4_LANGS = ("en", "de", "cs", "pl", "it", "es", "fr")  # the paper's languages (Mištera & Král)
C4_EVAL_DOCS = 100_000  # the paper's evaluation set size (Czech's validation split is smaller)
HUB_CORPORA = ("c4", "wikitext-103")
HUB_LABELLED = ("ag_news", "sib200")
HUB_SPLITS = {"train": "train", "eval": "validation", "test": "test"}
HUB_PROBE_TIMEOUT_S = 3.0
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


# Davlan/sib200 (CC BY-SA 4.0; Adelani et al. 2023, arXiv 2309.07445): topic classification of Flores-200
# sentences, the same sentences and splits in every language. Its repository on huggingface.co holds one folder
# per language in FLORES codes, data/<code>/{train,dev,test}.tsv (701, 99 and 204 rows), each with the header
# index_id, category, text and CSV-style quoting (checked against the repository's file listing and a copy of
# data/deu_Latn/train.tsv). The repository's loading script (sib200.py) reads exactly these files, and
# datasets >= 4 refuses loading scripts, so the files are read directly with datasets' packaged csv builder:
# from the Hub (hf://datasets/Davlan/sib200/...) or from a local copy in the same layout.
SIB200_ID = "Davlan/sib200"
SIB200_HUB_ROOT = f"hf://datasets/{SIB200_ID}"
SIB200_CONFIGS = {"en": "eng_Latn", "de": "deu_Latn", "cs": "ces_Latn", "pl": "pol_Latn", "it": "ita_Latn",
                  "es": "spa_Latn", "fr": "fra_Latn"}  # the paper's seven languages
SIB200_FILES = {"train": "train.tsv", "validation": "dev.tsv", "test": "test.tsv"}
SIB200_COLUMNS = ("index_id", "category", "text")
SIB200_LABELS = ("entertainment", "geography", "health", "politics", "science/technology", "sports", "travel")
SIB200_LICENCE = "CC BY-SA 4.0 (SIB-200, Adelani et al. 2023, over Flores-200; Davlan/sib200)"


class HubUnavailableError(ConnectionError):
    """Raised once, with the offline alternative named, when the Hub cannot be reached."""


# --------------------------------------------------------------------------------------------
# Network failures: recognised once, reported once
# --------------------------------------------------------------------------------------------


def offline_hint(dataset: str, offline_mode: bool = False, instead: str | None = None) -> str:
    """The one message every Hub failure carries: what failed and the offline way on.

    ``instead`` names that way for a dataset that is always streamed (so never cached); by default it is
    the offline corpus, or the copy ``datasets`` cached.
    """
    if instead is not None:
        return f"Could not reach the Hugging Face Hub for {dataset}. Offline, use {instead}."
    cache = ("HF_HUB_OFFLINE is set and no cached copy was found." if offline_mode else
             "If you loaded this dataset before without streaming, set HF_HUB_OFFLINE=1 to use the cached copy.")
    return (
        f"Could not reach the Hugging Face Hub for {dataset}. Use the offline default instead: "
        f"the corpus 'embedded' (Wikipedia summaries for en, fr, es), or 'files:PATH' with a local copy. {cache}"
    )


def offline_mode() -> bool:
    """Whether the user switched ``datasets``/``huggingface_hub`` to offline mode (read at their import)."""
    import datasets.config

    return bool(datasets.config.HF_HUB_OFFLINE)


def hub_reachable(endpoint: str | None = None, timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """One TCP connection to the Hub's host, a few seconds at most.

    ``huggingface_hub`` retries a dead connection five times with backoff before ``datasets``
    gives up; one quick connection answers sooner. Behind a proxy a direct connection says
    nothing, so the answer is then left to ``datasets``.
    """
    if any(os.environ.get(v) for v in PROXY_VARS):
        return True
    if endpoint is None:
        from huggingface_hub import constants

        endpoint = constants.ENDPOINT
    url = urllib.parse.urlsplit(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname or "", port), timeout=timeout):
            return True
    except OSError:
        return False


def network_error_types() -> tuple[type[BaseException], ...]:
    """The exception types that mean 'no connection', from every layer ``datasets`` may surface."""
    types: list[type[BaseException]] = [ConnectionError, TimeoutError, socket.gaierror]
    try:
        from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled

        types += [LocalEntryNotFoundError, OfflineModeIsEnabled]
    except ImportError:
        pass
    try:
        import httpx

        types.append(httpx.TransportError)
    except ImportError:
        pass
    try:
        import requests

        types += [requests.exceptions.ConnectionError, requests.exceptions.Timeout]
    except ImportError:
        pass
    return tuple(types)


def error_chain(err: BaseException) -> Iterator[BaseException]:
    """``err`` and every error it was raised from or during, each once."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def is_network_error(err: BaseException, offline: bool = False) -> bool:
    """True when ``err`` (or anything it was raised from) says the Hub was not reachable.

    A server-side HTTP error (5xx, 429) counts; a wrong dataset id or config while online does not,
    so those reach the user unchanged. In offline mode a missing dataset means 'not cached'.
    """
    network = network_error_types()
    for e in error_chain(err):
        if isinstance(e, network):
            return True
        status = getattr(getattr(e, "response", None), "status_code", None)
        if isinstance(status, int) and (status >= 500 or status == 429):
            return True
        if offline and isinstance(e, FileNotFoundError):
            return True
    return False


def hub_call(fn: Callable[[], Any], dataset: str, instead: str | None = None) -> Any:
    """Run a ``datasets`` call; turn a network failure into one HubUnavailableError.

    Any other error (a wrong config name, say) passes through unchanged. The chain is cut
    (``from None``) so the user sees one error; its message keeps the underlying one.
    """
    try:
        return fn()
    except HubUnavailableError:
        raise
    except Exception as err:  # noqa: BLE001 - classified below, re-raised when not a network failure
        offline = offline_mode()
        if not is_network_error(err, offline):
            raise
        error = HubUnavailableError(f"{offline_hint(dataset, offline, instead)} "
                                    f"(underlying error: {type(err).__name__}: {err})")
        error.original = err  # type: ignore[attr-defined]
    raise error from None


def import_datasets() -> Any:
    try:
        import datasets
    except ImportError as err:
        raise ImportError("the hub corpus needs the `datasets` package (pip install datasets); "
                          "the embedded and files corpora work without it") from err
    return datasets


def check_hub_reachable(dataset: str, instead: str | None = None) -> None:
    """Fail at once, naming the offline way on, when the Hub's host does not answer (unless in offline mode)."""
    if not offline_mode() and not hub_reachable():
        raise HubUnavailableError(f"{offline_hint(dataset, instead=instead)} (no connection to the Hub's host within "
                                  f"{HUB_PROBE_TIMEOUT_S:g} s)")


def hub_dataset(path: str, config: str | None, split: str, streaming: bool) -> Any:
    """``datasets.load_dataset`` called once, after a quick reachability check.

    Streaming writes no cache, so a broken connection leaves nothing half-written; a non-streamed
    download is written by ``datasets`` to temporary names and renamed only when complete.
    """
    datasets = import_datasets()
    dataset = f"{path}" + (f" ({config})" if config else "")
    check_hub_reachable(dataset)
    return hub_call(lambda: datasets.load_dataset(path, config, split=split, streaming=streaming), dataset)


# --------------------------------------------------------------------------------------------
# Records into documents
# --------------------------------------------------------------------------------------------


def records_to_texts(records: Iterable[dict[str, Any]], text_key: str = "text",
                     max_docs: int | None = None) -> list[str]:
    """Turn loaded records into a list of documents; stop after ``max_docs`` (streams stay lazy)."""
    check_max_docs(max_docs)
    texts: list[str] = []
    for record in records:
        if max_docs is not None and len(texts) >= max_docs:
            break
        if text_key not in record:
            raise ValueError(f"record has no {text_key!r} field (fields: {', '.join(record)})")
        texts.append("" if record[text_key] is None else str(record[text_key]))
    return texts


# WikiText's tokenisation splits numbers and hyphenated words with '@' markers: '1 @,@ 000', 'role @-@ playing'.
_WIKITEXT_MARKERS = (" @-@ ", "-"), (" @,@ ", ","), (" @.@ ", ".")


def wikitext_articles(lines: Iterable[str]) -> Iterator[str]:
    """WikiText-103 raw stores one line per paragraph, with ' = Title = ' headings; yield whole articles.

    A top-level heading (one '=' on each side) starts a new article; section headings and blank
    lines are dropped, and the '@-@'-style markers are undone. Lazy, so a stream stops early.
    """
    parts: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("= ") and stripped.endswith(" ="):
            if not stripped.startswith("= ="):  # a new article
                if parts:
                    yield _unmark(" ".join(parts))
                parts = []
            continue
        parts.append(stripped)
    if parts:
        yield _unmark(" ".join(parts))


def _unmark(text: str) -> str:
    for marker, plain in _WIKITEXT_MARKERS:
        text = text.replace(marker, plain)
    return text


def ag_news_records(records: Iterable[dict[str, Any]], max_docs: int | None = None) -> tuple[list[str], list[int]]:
    """AG News records (``text``, ``label`` 0-3) into texts and labels."""
    check_max_docs(max_docs)
    texts, labels = [], []
    for record in records:
        if max_docs is not None and len(texts) >= max_docs:
            break
        missing = [k for k in ("text", "label") if k not in record]
        if missing:
            raise ValueError(f"AG News record lacks {', '.join(missing)} (fields: {', '.join(record)})")
        label = int(record["label"])
        if not 0 <= label < len(AG_NEWS_LABELS):
            raise ValueError(f"AG News label {label} outside 0..{len(AG_NEWS_LABELS) - 1}")
        texts.append(str(record["text"]))
        labels.append(label)
    return texts, labels


# --------------------------------------------------------------------------------------------
# The loaders behind load_corpus and load_labelled of the hub corpus
# --------------------------------------------------------------------------------------------


def hub_corpus(lang: str, split: str, name: str = "c4", max_docs: int | None = None,
               eval_docs: int = C4_EVAL_DOCS, streaming: bool | None = None) -> Corpus:
    """C4 in ``lang`` (always streamed) or English WikiText-103, as a Corpus."""
    check_choice("hub corpus", name, HUB_CORPORA)
    check_max_docs(max_docs)
    hub_split = HUB_SPLITS[split]
    if name == "wikitext-103":
        if lang != "en":
            raise ValueError(f"WikiText-103 is English only, got lang={lang!r}; use name='c4' for other languages")
        ds = hub_dataset(WIKITEXT_ID, WIKITEXT_CONFIG, hub_split, streaming=bool(streaming))
        texts = hub_call(lambda: take(wikitext_articles(r["text"] for r in ds), max_docs), WIKITEXT_ID)
        return Corpus(texts, lang, "hub", split, "wikitext-103", "CC BY-SA 3.0 (Wikipedia)",
                      meta={"hub_id": WIKITEXT_ID, "config": WIKITEXT_CONFIG, "hub_split": hub_split,
                            "max_docs": max_docs})
    check_choice("C4 language", lang, C4_LANGS, " (the paper's languages)")
    if streaming is False:
        raise ValueError("C4 is always streamed (hundreds of GB per language); leave streaming unset")
    if split == "train":
        if max_docs is None:
            raise ValueError("C4 is streamed and has millions of documents; pass max_docs "
                             "(the paper trained its tokenizer on 5,000,000)")
        limit = max_docs
    else:
        check_max_docs(eval_docs)
        limit = min(eval_docs, max_docs or eval_docs)
    ds = hub_dataset(C4_ID, lang, hub_split, streaming=True)
    texts = hub_call(lambda: records_to_texts(ds, "text", limit), C4_ID)
    return Corpus(texts, lang, "hub", split, f"c4-{lang}", "ODC-BY (C4, allenai/c4)",
                  meta={"hub_id": C4_ID, "config": lang, "hub_split": hub_split, "max_docs": limit})


def hub_labelled(lang: str, split: str, name: str = "ag_news", max_docs: int | None = None,
                 streaming: bool = False, root: str | Path | None = None) -> LabelledSet:
    """AG News (English, 4 classes) or SIB-200 (``name='sib200'``: 7 topics in the paper's seven languages).

    ``root`` is read for SIB-200 only: a local copy of its repository (``data/<code>/train.tsv`` ...)
    instead of the Hub.
    """
    check_choice("hub labelled set", name, HUB_LABELLED)
    if name == "sib200":
        return sib200_labelled(lang, split, root=root, max_docs=max_docs)
    if root is not None:
        raise ValueError("root (a local copy) is read for SIB-200 only; AG News from local files is the "
                         "labelled set 'files:PATH' with csv_format='ag_news'")
    if lang != "en":
        raise ValueError(f"AG News is English only, got lang={lang!r}; the embedded corpus has labelled fr and es")
    ds = hub_dataset(AG_NEWS_ID, None, HUB_SPLITS[split], streaming=streaming)
    texts, labels = hub_call(lambda: ag_news_records(ds, max_docs), AG_NEWS_ID)
    return LabelledSet(texts, labels, list(AG_NEWS_LABELS), lang, "hub", split, "ag_news",
                       "AG's corpus of news articles (academic, non-commercial use)",
                       meta={"hub_id": AG_NEWS_ID, "hub_split": HUB_SPLITS[split], "max_docs": max_docs})


# --------------------------------------------------------------------------------------------
# SIB-200: the same topic labels in all seven of the paper's languages
# --------------------------------------------------------------------------------------------


def sib200_config(lang: str) -> str:
    """The FLORES code of ``lang``'s SIB-200 configuration ('de' -> 'deu_Latn')."""
    check_choice("SIB-200 language", lang, tuple(SIB200_CONFIGS),
                 " (the paper's languages; give another labelled set as files:PATH)")
    return SIB200_CONFIGS[lang]


def sib200_file(lang: str, split: str, root: str | Path | None = None) -> str:
    """Where one split of ``lang`` lies: on the Hub (``root`` None) or in a local copy of the repository."""
    base = SIB200_HUB_ROOT if root is None else str(Path(root))
    return f"{base}/data/{sib200_config(lang)}/{SIB200_FILES[HUB_SPLITS[split]]}"


def sib200_offline_hint(lang: str) -> str:
    """The offline way on for SIB-200: a local copy, another labelled set, or no probe."""
    return (f"a local copy of the dataset's repository (git clone https://huggingface.co/datasets/{SIB200_ID}), "
            f"given as --labelled sib200:PATH (notebook 05: labelled = 'sib200:PATH'), PATH holding "
            f"data/{sib200_config(lang)}/train.tsv and test.tsv; or files:PATH with your own labelled set; "
            "or --labelled none to skip the probe")


def sib200_records(records: Iterable[dict[str, Any]], where: str,
                   max_docs: int | None = None) -> tuple[list[str], list[int]]:
    """SIB-200 rows (``index_id``, ``category``, ``text``) into texts and labels (the index of SIB200_LABELS)."""
    check_max_docs(max_docs)
    texts, labels = [], []
    for n, record in enumerate(records, 2):  # line 1 is the header
        if max_docs is not None and len(texts) >= max_docs:
            break
        missing = [k for k in SIB200_COLUMNS if k not in record]
        if missing:
            raise ValueError(f"{where}: a SIB-200 row has the columns {', '.join(SIB200_COLUMNS)}; this one lacks "
                             f"{', '.join(missing)} (columns: {', '.join(map(str, record))}); is it a SIB-200 file?")
        category = str(record["category"]).strip()
        if category not in SIB200_LABELS:
            raise ValueError(f"{where}:{n}: unknown SIB-200 category {category!r}; "
                             f"its 7 categories are {', '.join(SIB200_LABELS)}")
        texts.append("" if record["text"] is None else str(record["text"]))
        labels.append(SIB200_LABELS.index(category))
    return texts, labels


def _sib200_rows(file: str) -> Any:
    """The rows of one SIB-200 file as a lazy stream (nothing is cached); every cell is text, 'NA' included."""
    datasets = import_datasets()
    return datasets.load_dataset("csv", data_files=file, split="train", streaming=True, delimiter="\t",
                                 keep_default_na=False)


def sib200_labelled(lang: str, split: str, root: str | Path | None = None,
                    max_docs: int | None = None) -> LabelledSet:
    """One split of SIB-200 in ``lang``, from the Hub or from a local copy of its repository (``root``).

    Without a network the Hub fails at once with one HubUnavailableError that names the local copy.
    """
    config = sib200_config(lang)
    file = sib200_file(lang, split, root)
    if root is None:
        dataset = f"{SIB200_ID} ({config})"
        check_hub_reachable(dataset, sib200_offline_hint(lang))
        texts, labels = hub_call(lambda: sib200_records(_sib200_rows(file), file, max_docs), dataset,
                                 sib200_offline_hint(lang))
    else:
        if not Path(file).is_file():
            raise FileNotFoundError(f"{file} is missing: a local copy of SIB-200 holds data/<code>/train.tsv, dev.tsv "
                                    f"and test.tsv as in the repository (git clone https://huggingface.co/datasets/"
                                    f"{SIB200_ID}); give the folder that holds data/")
        texts, labels = sib200_records(_sib200_rows(file), file, max_docs)
    return LabelledSet(texts, labels, list(SIB200_LABELS), lang, "hub" if root is None else "files", split,
                       f"sib200-{config}", SIB200_LICENCE,
                       meta={"hub_id": SIB200_ID, "config": config, "file": file, "max_docs": max_docs})
