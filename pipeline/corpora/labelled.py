"""Which labelled set notebook 05 probes (:data:`LABELLED_HELP`), parsed once from ``--labelled`` or the notebook's
``labelled`` parameter. The probe is this collection's addition to the paper, so it never stops the paper's
experiment: a language without a labelled set gets ``none``, recorded with how to give one, and the probe is skipped."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from helpers.probe import overlap
from pipeline.corpora import parallel_help
from pipeline.corpora.data import EMBEDDED_FILES, HUB, CorpusSpec, PathSpec, load_corpus, load_labelled
from pipeline.corpora.documents import LabelledSet
from pipeline.corpora.online import SIB200_CONFIGS

KINDS = ("auto", "embedded", "sib200", "ag_news", "libreoffice", "files", "none")
LABELLED_HELP = ("auto (libreoffice with --corpus libreoffice; embedded for en, fr, es; sib200 with --corpus hub; "
                 "else none), embedded, sib200 (the Hub), sib200:PATH (a local copy of Davlan/sib200), ag_news (the "
                 "Hub, English), libreoffice (LibreOffice help pages labelled by module, in the paper's seven "
                 "languages: the run's libreoffice corpus, else the pinned download), files:PATH (.csv, .jsonl or "
                 ".parquet with text and label columns) or none (no probe)")


@dataclass(frozen=True)
class LabelledSpec(PathSpec):
    """A labelled set: one of :data:`LABELLED_HELP`."""

    WHAT, KINDS, WITH_PATH, HELP = "labelled set", KINDS, ("files", "sib200"), LABELLED_HELP
    KIND_FIELD = "kind"
    kind: str  # one of KINDS
    path: Path | None = None  # files: the file or folder; sib200: a local copy (None: the Hub)
    corpus: CorpusSpec | None = field(default=None, compare=False, repr=False)  # the run's text, set by resolve

    def resolve(self, lang: str, corpus: CorpusSpec) -> LabelledSpec:
        """``auto`` made concrete for one language and corpus, and the corpus kept, so that :meth:`load` can warn
        when the models read part of the test split."""
        auto = ("libreoffice" if corpus.source == "libreoffice" else
                "sib200" if corpus.source == "hub" and lang in SIB200_CONFIGS else
                "embedded" if lang in EMBEDDED_FILES else "none")
        return replace(self, kind=auto if self.kind == "auto" else self.kind, corpus=corpus)

    def check(self, lang: str) -> None:
        """Refuse a set that has no ``lang`` (a ValueError that names the choices that have it)."""
        has = {"embedded": tuple(EMBEDDED_FILES), "sib200": tuple(SIB200_CONFIGS), "ag_news": ("en",),
               "libreoffice": parallel_help.LANGS}.get(self.kind)
        if has is not None and lang not in has:
            raise ValueError(f"the labelled set {self.kind!r} has no {lang!r} (it has {', '.join(has)}); for "
                             f"{lang} choose sib200 or libreoffice (the paper's seven languages), files:PATH or none")

    def load(self, lang: str, split: str, **options: Any) -> LabelledSet:
        """The 'train' or 'test' split in ``lang`` (options as :func:`pipeline.corpora.data.load_labelled` takes
        them)."""
        self.check(lang)
        if self.kind in ("auto", "none"):
            raise ValueError(f"the labelled set {self}: there is nothing to load; resolve 'auto' first, and skip the "
                             "probe for 'none'")
        hub = {"name": self.kind, "root": self.path} if self.kind in ("sib200", "ag_news") else {}  # ag_news: no root
        corpus = self.corpus
        same = corpus if self.kind == "libreoffice" and corpus and corpus.source == "libreoffice" else None
        data = load_labelled(HUB if hub else same or CorpusSpec(self.kind, self.path), lang, split, **hub, **options)
        # Not counted for the Hub's (streamed) corpus, nor the topics or modules of the corpus whose partition keeps
        # them out (embedded, libreoffice).
        if split == "test" and corpus and corpus.source != "hub" and not (
                corpus.source == data.source == "embedded" or same):
            if found := overlap(data.texts, load_corpus(corpus, lang, "train").texts):
                warnings.warn(f"{found} of the {len(data)} test documents of the labelled set {data.name} are "
                              f"training text of the corpus {corpus}, so the probe's accuracies overstate what the "
                              "encoders learned; give a labelled set whose test texts the corpus does not hold, or "
                              "remove them from the corpus", stacklevel=2)
        return data


def no_labelled_set(lang: str) -> str:
    """The status a run without a labelled set records."""
    return f"no labelled set for {lang}"


def how_to_give_one(lang: str) -> str:
    """What a run without a labelled set says: that the probe was skipped, and how to give one."""
    return (f"{no_labelled_set(lang)}: the probe (notebook 05) is skipped and the run goes on. To probe {lang}, "
            f"give a labelled set: to the main job, --labelled sib200 (SIB-200 from the Hub, 7 topics), "
            f"--labelled sib200:PATH (a local copy of Davlan/sib200) or --labelled files:PATH (a .csv, .jsonl or "
            f".parquet file with text and label columns); to notebook 05, the parameter labelled "
            f"(papermill: -p labelled files:PATH).")
