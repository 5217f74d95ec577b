"""The Hub loaders (``allenai/c4`` per language, AG News, SIB-200). Without a network they fail at
once with one :class:`HubUnavailableError` that names the offline default, instead of retrying for half a minute and
ending in a chain of library errors. The record handling is plain Python, tested on records in memory."""

from __future__ import annotations

import itertools
import os
import socket
import urllib.parse
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple, Sequence

from pipeline.corpora.documents import AG_NEWS_LABELS, Corpus, LabelledSet, as_text, check_choice, check_max_docs

# Checked against the dataset cards: allenai/c4 (a config per language; splits train/validation; fields text,
# timestamp, url), fancyzhx/ag_news (the former "ag_news"; splits train/test; fields text, label 0-3).
C4_ID = "allenai/c4"
AG_NEWS_ID = "fancyzhx/ag_news"
C4_LANGS = ("en", "de", "cs", "pl", "it", "es", "fr")  # the paper's languages (Mištera & Král)
C4_EVAL_DOCS = 100_000  # the paper's evaluation set size (Czech's validation split is smaller)
HUB_PROBE_TIMEOUT_S = 3.0
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
# The errors that mean 'no connection' in every layer datasets may surface: Python's, requests' (ConnectionError,
# Timeout), httpx's and huggingface_hub's. Matched by class name, so none of those libraries need be imported.
NETWORK_ERRORS = {"ConnectionError", "TimeoutError", "Timeout", "TransportError", "gaierror", "LocalEntryNotFoundError"}

# Davlan/sib200 (Adelani et al. 2023, arXiv 2309.07445): topics of Flores-200 sentences, the same in every language,
# in data/<FLORES code>/{train,dev,test}.tsv (701, 99, 204 rows; dev unused). datasets >= 4 refuses its
# loading script, which reads exactly these files, so datasets' csv builder reads them: from the Hub or a local copy.
SIB200_ID = "Davlan/sib200"
SIB200_HUB_ROOT = f"hf://datasets/{SIB200_ID}"
SIB200_URL = f"https://huggingface.co/datasets/{SIB200_ID}"
SIB200_CONFIGS = {"en": "eng_Latn", "de": "deu_Latn", "cs": "ces_Latn", "pl": "pol_Latn", "it": "ita_Latn",
                  "es": "spa_Latn", "fr": "fra_Latn"}  # the paper's seven languages
SIB200_COLUMNS = ("index_id", "category", "text")
SIB200_LABELS = ("entertainment", "geography", "health", "politics", "science/technology", "sports", "travel")
SIB200_LICENCE = "CC BY-SA 4.0 (SIB-200, Adelani et al. 2023, over Flores-200; Davlan/sib200)"


class HubUnavailableError(ConnectionError):
    """Raised once, with the offline alternative named, when the Hub cannot be reached."""


def offline_mode() -> bool:
    """Whether the user switched ``datasets`` to offline mode (HF_HUB_OFFLINE, read at its import)."""
    import datasets  # imported when the Hub is asked for: the offline corpora start faster without it

    return bool(datasets.config.HF_HUB_OFFLINE)


def hub_reachable(endpoint: str | None = None, timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """One TCP connection to the Hub's host, answering sooner than ``huggingface_hub``'s five retries with backoff;
    behind a proxy a direct connection says nothing, so the answer is left to ``datasets``."""
    if any(os.environ.get(v) for v in PROXY_VARS):
        return True
    if endpoint is None:
        from huggingface_hub import constants

        endpoint = constants.ENDPOINT
    url = urllib.parse.urlsplit(endpoint)
    try:
        socket.create_connection((url.hostname or "", url.port or (443 if url.scheme == "https" else 80)),
                                 timeout=timeout).close()
        return True
    except OSError:
        return False


def is_hub_failure(err: BaseException | None, offline: bool) -> bool:
    """Whether ``err`` or an error in its chain says the Hub failed us: the connection broke, the server failed (5xx,
    429), or, offline, a file is not cached. A wrong dataset id or config online is the user's to fix."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        status = getattr(getattr(err, "response", None), "status_code", None)
        if (NETWORK_ERRORS & {c.__name__ for c in type(err).__mro__} or (offline and isinstance(err, FileNotFoundError))
                or (isinstance(status, int) and (status >= 500 or status == 429))):
            return True
        err = err.__cause__ or err.__context__
    return False


def from_hub(dataset: str, read: Callable[[], Any], instead: str, streamed: bool) -> Any:
    """``read()`` (a ``datasets`` call and the reading of its records) after a quick probe of the Hub's host. A Hub
    failure becomes one HubUnavailableError naming the offline way on (``instead``), the cached copy where one can
    exist (never for a stream) and the underlying error (also its unshown ``__context__``); others pass unchanged."""
    offline = offline_mode()
    cache = ("A streamed dataset is never cached, so it needs the Hub." if streamed else
             "HF_HUB_OFFLINE is set and no cached copy was found." if offline else
             "If you loaded this dataset before, set HF_HUB_OFFLINE=1 to use the cached copy.")
    hint = f"Could not reach the Hugging Face Hub for {dataset}. Offline, use {instead}. {cache}"
    if not offline and not hub_reachable():
        raise HubUnavailableError(f"{hint} (no connection to the Hub's host within {HUB_PROBE_TIMEOUT_S:g} s)")
    try:
        return read()
    except Exception as err:  # noqa: BLE001 - re-raised unless a Hub failure
        if not is_hub_failure(err, offline):
            raise
        raise HubUnavailableError(f"{hint} (underlying error: {type(err).__name__}: {err})") from None


def _dataset(path: str, config: str | None, split: str, streaming: bool, **options: Any) -> Any:
    import datasets

    return datasets.load_dataset(path, config, split=split, streaming=streaming, **options)


LabelRule = NamedTuple("LabelRule", [("name", str), ("labels", Sequence[Any]), ("of", Callable[[dict[str, Any]], Any])])


def _read(records: Iterable[dict[str, Any]], fields: Sequence[str], what: str, max_docs: int | None,
          label: LabelRule | None = None, hint: str = "", where: str | None = None) -> tuple[list[str], list[int]]:
    """The texts and labels of the first ``max_docs`` records (a stream is read no further), each refused unless it
    has ``fields`` and a label among ``label.labels``. Numbered from 2, as line 1 of a file ``where`` is its header."""
    texts, labels = [], []
    for n, record in enumerate(itertools.islice(records, max_docs), 2):
        at = f"{where}:{n}: " if where else ""
        if missing := [k for k in fields if k not in record]:
            raise ValueError(f"{at}{what} has no {', '.join(map(repr, missing))} field "
                             f"(fields: {', '.join(map(str, record))}){hint}")
        if label and (value := label.of(record)) not in label.labels:
            raise ValueError(f"{at}unknown {label.name} {value!r}; its {len(label.labels)} labels are "
                             f"{', '.join(map(str, label.labels))}")
        labels += [list(label.labels).index(value)] if label else []
        texts.append(as_text(record["text"]))
    return texts, labels


def records_to_texts(records: Iterable[dict[str, Any]], max_docs: int | None = None) -> list[str]:
    """Turn loaded records (field ``text``) into a list of documents; stop after ``max_docs`` (streams stay lazy)."""
    return _read(records, ["text"], "record", max_docs)[0]


def ag_news_records(records: Iterable[dict[str, Any]], max_docs: int | None = None) -> tuple[list[str], list[int]]:
    """AG News records (``text``, ``label`` 0-3) into texts and labels."""
    return _read(records, ("text", "label"), "AG News record", max_docs,
                 LabelRule("AG News label", range(len(AG_NEWS_LABELS)), lambda record: int(record["label"])))


def hub_corpus(lang: str, split: str, max_docs: int | None = None, eval_docs: int = C4_EVAL_DOCS) -> Corpus:
    """C4 in ``lang``, streamed (hundreds of GB per language), as a Corpus: the paper's pretraining text."""
    check_choice("C4 language", lang, C4_LANGS, " (the paper's languages)")
    if split == "train" and max_docs is None:
        raise ValueError("C4 is streamed and has millions of documents; pass max_docs "
                         "(the paper trained its tokenizer on 5,000,000)")
    check_max_docs(eval_docs)
    hub_split = "validation" if split == "eval" else split
    limit = max_docs if split == "train" else min(eval_docs, max_docs or eval_docs)
    texts = from_hub(f"{C4_ID} ({lang})", lambda: records_to_texts(_dataset(C4_ID, lang, hub_split, True), limit),
                     "the corpus 'embedded' (Wikipedia summaries for en, fr, es), or 'files:PATH' with a local copy",
                     streamed=True)
    return Corpus(texts, lang, "hub", split, f"c4-{lang}", "ODC-BY (C4, allenai/c4)",
                  meta={"hub_id": C4_ID, "config": lang, "hub_split": hub_split, "max_docs": limit})


def hub_labelled(lang: str, split: str, name: str = "ag_news", max_docs: int | None = None,
                 streaming: bool = False, root: str | Path | None = None) -> LabelledSet:
    """AG News (English, 4 classes) or SIB-200 (``name='sib200'``: 7 topics in the paper's seven languages), the
    latter from the Hub or from ``root``, a local copy of its repository (``data/<code>/train.tsv`` ...)."""
    check_choice("hub labelled set", name, ("ag_news", "sib200"))
    if name == "ag_news":
        if root is not None:
            raise ValueError("root (a local copy) is read for SIB-200 only; AG News from local files is the "
                             "labelled set 'files:PATH' with csv_format='ag_news'")
        if lang != "en":
            raise ValueError(f"AG News is English only, got lang={lang!r}; the embedded corpus has labelled fr and es")
        texts, labels = from_hub(
            AG_NEWS_ID, lambda: ag_news_records(_dataset(AG_NEWS_ID, None, split, streaming), max_docs),
            "the labelled set 'embedded' (the Wikipedia summaries' topics for en, fr, es), or 'files:PATH' with a "
            "local copy (csv_format='ag_news')", streamed=streaming)
        return LabelledSet(texts, lang, "hub", split, "ag_news", "AG's corpus of news articles (academic, "
                           "non-commercial use)", labels=labels, label_names=list(AG_NEWS_LABELS),
                           meta={"hub_id": AG_NEWS_ID, "hub_split": split, "max_docs": max_docs})
    file, config = sib200_file(lang, split, root), SIB200_CONFIGS[lang]
    if root is not None and not Path(file).is_file():
        raise FileNotFoundError(f"{file} is missing: give the folder that holds data/<code>/train.tsv, dev.tsv and "
                                f"test.tsv, a copy of the repository (git clone {SIB200_URL})")
    # a lazy stream, nothing cached; every cell is text, 'NA' included
    read = lambda: sib200_records(_dataset("csv", None, "train", streaming=True, data_files=file, delimiter="\t",
                                           keep_default_na=False), file, max_docs)
    texts, labels = read() if root is not None else from_hub(f"{SIB200_ID} ({config})", read, instead=(
        f"a local copy (git clone {SIB200_URL}) as --labelled sib200:PATH (notebook 05: labelled = 'sib200:PATH'), "
        f"PATH holding data/{config}/train.tsv and test.tsv; your own as files:PATH; or --labelled none to skip the "
        "probe"), streamed=True)
    return LabelledSet(texts, lang, "hub" if root is None else "files", split, f"sib200-{config}", SIB200_LICENCE,
                       labels=labels, label_names=list(SIB200_LABELS),
                       meta={"hub_id": SIB200_ID, "config": config, "file": file, "max_docs": max_docs})


def sib200_file(lang: str, split: str, root: str | Path | None = None) -> str:
    """Where one split of ``lang`` lies: on the Hub (``root`` None) or in a local copy of the repository."""
    check_choice("SIB-200 language", lang, tuple(SIB200_CONFIGS),
                 " (the paper's languages; give another labelled set as files:PATH)")
    return f"{SIB200_HUB_ROOT if root is None else Path(root)}/data/{SIB200_CONFIGS[lang]}/{split}.tsv"


def sib200_records(records: Iterable[dict[str, Any]], where: str,
                   max_docs: int | None = None) -> tuple[list[str], list[int]]:
    """SIB-200 rows (``index_id``, ``category``, ``text``) into texts and labels (the index of SIB200_LABELS)."""
    return _read(records, SIB200_COLUMNS, "this row", max_docs,
                 LabelRule("SIB-200 category", SIB200_LABELS, lambda record: str(record["category"]).strip()),
                 f"; a SIB-200 row has the columns {', '.join(SIB200_COLUMNS)}: is it a SIB-200 file?", where)
