"""A parallel text in the paper's seven languages, offline: LibreOffice's help pages, as Debian ships them.

Debian's ``libreoffice-help-{en-us,de,cs,pl,it,es,fr}`` 7.4.7 (MPL-2.0) hold the same help pages in each language,
and a paragraph keeps its id (``<p id="par_id3149842">``) in every translation, so the languages line up paragraph by
paragraph. It is technical help text (menus, dialogs, Basic functions), not encyclopedia prose, and under a million
words per language: a corpus for comparing languages on the same content, not for a large pretraining run.

The corpus ``libreoffice`` downloads the pinned .debs with ``apt-get download`` (never ``apt-get install``, which
pulls LibreOffice in) into ``.cache/libreoffice-help`` and reads them with ``dpkg-deb``; ``libreoffice:PATH`` reads a
folder of those .debs, or of pages extracted with ``dpkg-deb -x``. ``libreoffice@en,cs`` names the languages that
every kept paragraph must be translated into (the main job writes its ``--lang`` list there; none: all seven).

What is kept: a ``<p id="par_id...">`` paragraph (its default variant where the page switches by system or module)
that is non-empty in English and in every language asked for, and translated in each of them. Untranslated means
equal to the English text (numbers, code, names and left-over English), or English by :func:`looks_english`: at
least two English function words and more than twice as many as of the language's own. A paragraph repeated with the
same text in every language is kept once, at its first page in path order. A document is a page: its kept
paragraphs, one a line; a page's module folder (``swriter``, ``scalc``, ...) is its label for the probe. Pages are
split by a hash of their path, stratified by module, so each part holds the same pages in every language.

Measured on the pinned .debs (2,560 pages and 49,580 paragraphs a language; reading them takes about 15 CPU seconds a
language once, then seconds from the cache). With all seven asked for, 20,264 paragraphs on 2,037 pages are kept, the
same in every language (3,144 missing or empty in one, 19,592 untranslated in one or more, 6,580 repeats); the split
(seed 0) gives 1,742 training pages, 92 evaluation and 203 probe pages, in 9 modules (shared 717 pages, swriter 374,
scalc 353, sbasic 272, simpress 154, smath 58, schart 56, sdraw 43, sdatabase 10). "Alone" asks for English and one
language only (English alone: nothing is compared, so numbers and code stay). Words are whitespace-separated.

| lang | words kept, all seven | untranslated: same as English / detected as English | alone: pages, paragraphs, words |
| --- | ---: | ---: | ---: |
| en | 314,672 | - | 2,340, 31,039, 461,396 |
| de | 303,702 | 6,947 / 2 | 2,325, 27,994, 440,067 |
| cs | 253,838 | 7,881 / 3 | 2,321, 27,627, 369,748 |
| pl | 266,701 | 15,457 / 6 | 2,067, 21,662, 292,621 |
| it | 326,101 | 6,946 / 3 | 2,326, 27,997, 474,214 |
| es | 345,219 | 12,403 / 12 | 2,237, 23,769, 406,052 |
| fr | 347,590 | 9,014 / 1 | 2,306, 26,585, 480,143 |

Two limits follow (benchmarks/morphology.py). The training split supports a WordPiece vocabulary of only 9,836 (en)
to 16,840 (pl) tokens at min_frequency 2, so notebook 02 refuses the 30,000 of the demo, reference and paper presets
(smoke's 2,000 fits); and a page averages about 150 words, so the paper's truncation to 128 tokens per document cuts
53-60 % of the tokens.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import inspect
import json
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from pipeline.corpora.documents import Corpus, LabelledSet, hash_order, take, three_way_partition
from pipeline.store.layout import REPO_ROOT
from pipeline.store.staging import written_whole

LANGS = ("en", "de", "cs", "pl", "it", "es", "fr")  # the paper's seven, in its order
HELP_DIRS = {"en": "en-US", "de": "de", "cs": "cs", "pl": "pl", "it": "it", "es": "es", "fr": "fr"}
PACKAGES = {lang: f"libreoffice-help-{folder.lower()}" for lang, folder in HELP_DIRS.items()}
VERSION = "4:7.4.7-1+deb12u14"  # Debian 12's; the archive keeps only the newest, so a later one may replace it
SHA256 = {  # of each .deb of VERSION, measured on the files apt-get downloaded
    "en": "8faa840285734d6cfe1ed25537b48f07e74bd6412e3917bf8e5f8a653f7b3712",
    "de": "00490b63c509ac96f7f212d6a6e40452d3e0d1f97ccf4b824dd5ec4c01e8277f",
    "cs": "9fcbf9b3cbbc1370d827d5bc59df0227fa95bdf3b5628b907ef5fb4d8d55be6a",
    "pl": "27441ce6d1303524b223aa94a17356bf7195f388d9b05a9e5e346866d7983694",
    "it": "7fa29342a302bb495981fdabf98f3a9c3628123f3f191b2a5c95cb583c9ff212",
    "es": "9128a84d83d92c8b1c618d90469d16affddb7d1290b09d42a0c5109cb16f0480",
    "fr": "c796530d3e95af1ea4d054076682efc8aad2b569ae9513f3d4a776b2df3fd206",
}
HELP_ROOT = "usr/share/libreoffice/help"  # inside a .deb; pages lie in HELP_ROOT/<help dir>/text/<module>/...
CACHE_DIR = REPO_ROOT / ".cache" / "libreoffice-help"  # downloaded .debs, and each language's paragraphs read once
TEST_FRACTION = 0.1  # the probe's test pages, per module; never training or evaluation text
LICENCE = f"MPL-2.0 (LibreOffice help, Debian's libreoffice-help-* {VERSION})"

# Frequent function words: English ones that none of the six other languages writes as a word, and each language's
# own, to tell left-over English from a translation that quotes an English name.
ENGLISH_WORDS = frozenset("the of and is are that this with for you your which from be can will when it its or not "
                          "these have has into only also each there".split())
OWN_WORDS = {lang: frozenset(words.split()) for lang, words in {
    "de": "der die das und ist ein eine einen den dem des mit von zu für sie nicht auf im werden wird oder sich auch",
    "cs": "a se je na v ve z do pro že k to s o nebo jako které který která lze jsou",
    "pl": "i w się na z do jest nie że to jak lub oraz dla od przez jeśli które który jako",
    "it": "il la le di e che è un una per del della dei con non si da in al nel sono",
    "es": "el la los las de y que es un una en por para con del se no al o como",
    "fr": "le la les de des et est un une du en pour que qui dans par sur avec ou au"}.items()}
WORD = re.compile(r"[^\W\d_]+")  # a run of letters


def check_langs(langs: Sequence[str]) -> tuple[str, ...]:
    """The languages in the paper's order; a ValueError for an unknown one or none."""
    if unknown := [lang for lang in langs if lang not in LANGS]:
        raise ValueError(f"unknown libreoffice language {unknown[0]!r}; the corpus has {', '.join(LANGS)} (Debian "
                         "ships other translations, but this corpus reads the paper's seven)")
    if not langs:
        raise ValueError(f"the libreoffice corpus needs at least one language, e.g. libreoffice@{','.join(LANGS)}")
    return tuple(lang for lang in LANGS if lang in langs)


def looks_english(text: str, lang: str) -> bool:
    """Whether a paragraph of ``lang`` was left in English: two or more English function words, and more than twice
    as many as ``lang``'s own (all-capital words such as SQL's SELECT or FROM are not counted)."""
    words = [w.lower() for w in WORD.findall(text) if not (w.isupper() and len(w) > 1)]
    english = sum(w in ENGLISH_WORDS for w in words)
    return english >= 2 and english > 2 * sum(w in OWN_WORDS.get(lang, ()) for w in words)


# --------------------------------------------------------------------------------------------
# Where the pages come from: .debs (downloaded or given) or a folder of extracted pages
# --------------------------------------------------------------------------------------------


def sha256_of(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


@dataclass(frozen=True)
class PageSource:
    """One language's pages: in a .deb, or under an extracted help folder (``root/<help dir>/text``)."""

    lang: str
    path: Path

    def pages(self) -> dict[str, bytes]:
        """{page path under text/ (``swriter/01/x.html``): its bytes}."""
        return self._deb_pages() if self.path.suffix == ".deb" else {
            p.relative_to(self.text).as_posix(): p.read_bytes() for p in sorted(self.text.rglob("*.html"))}

    @property
    def text(self) -> Path:
        return self.path / HELP_DIRS[self.lang] / "text"

    def digest(self) -> str:
        """What the pages are, by content: the .deb's SHA-256, or one over the pages' paths and bytes."""
        if self.path.suffix == ".deb":
            return sha256_of(self.path)
        digest = hashlib.sha256()
        for name, data in self.pages().items():
            digest.update(f"{name}\n{len(data)}\n".encode() + data)
        return digest.hexdigest()

    def _deb_pages(self) -> dict[str, bytes]:
        """The help pages inside the .deb, streamed through ``dpkg-deb --fsys-tarfile``: nothing is unpacked."""
        if shutil.which("dpkg-deb") is None:
            raise FileNotFoundError(f"reading {self.path} needs dpkg-deb, which is not installed: `apt-get install "
                                    "dpkg`, or unpack the .debs elsewhere (dpkg-deb -x FILE FOLDER) and pass "
                                    "--corpus libreoffice:FOLDER")
        prefix, pages, broken = f"{HELP_ROOT}/{HELP_DIRS[self.lang]}/text/", {}, ""
        with subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(self.path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) as proc:
            try:
                with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
                    for member in tar:
                        name = member.name.removeprefix("./")
                        if member.isfile() and name.startswith(prefix) and name.endswith(".html"):
                            pages[name.removeprefix(prefix)] = tar.extractfile(member).read()  # type: ignore[union-attr]
            except tarfile.TarError as err:
                broken = f"its files: {err}"
            error = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
        if proc.returncode != 0 or broken:
            raise ValueError(f"{self.path} is not a readable .deb ({(error or broken)[-300:]}); download it again: "
                             f"apt-get download {PACKAGES[self.lang]}")
        return pages


def download_debs(langs: Sequence[str], folder: Path) -> dict[str, Path]:
    """The pinned .deb of each language in ``folder``, fetched by ``apt-get download`` when missing, and refused
    unless its SHA-256 is the pinned one."""
    folder.mkdir(parents=True, exist_ok=True)
    debs = {}
    for lang in langs:
        found = sorted(folder.glob(f"{PACKAGES[lang]}_*.deb"))
        deb = next((d for d in found if sha256_of(d) == SHA256[lang]), None) or _apt_download(lang, folder)
        if (got := sha256_of(deb)) != SHA256[lang]:
            raise ValueError(f"{deb} has SHA-256 {got}, not the pinned {SHA256[lang]} of {PACKAGES[lang]} {VERSION}; "
                             "refusing to read it. Delete it and run again, or pass a folder of the .debs you "
                             "trust as --corpus libreoffice:FOLDER")
        debs[lang] = deb
    return debs


def _apt_download(lang: str, folder: Path) -> Path:
    """``apt-get download PACKAGE=VERSION`` into a fresh folder beside ``folder``, then moved in whole."""
    package = f"{PACKAGES[lang]}={VERSION}"
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        try:
            done = subprocess.run(["apt-get", "download", package], cwd=tmp, capture_output=True, text=True)
        except FileNotFoundError:
            done = subprocess.CompletedProcess([], 127, "", "apt-get is not installed (not a Debian system)")
        fetched = sorted(Path(tmp).glob("*.deb"))
        if done.returncode != 0 or len(fetched) != 1:
            raise ConnectionError(
                f"could not download {package} with apt-get ({done.stderr.strip()[-300:]}); run `apt-get update` "
                f"first, or download the seven .debs elsewhere (apt-get download {PACKAGES[lang]} ...) and pass "
                "their folder as --corpus libreoffice:FOLDER (a newer version than the pinned one is read too)")
        return Path(shutil.move(str(fetched[0]), folder / fetched[0].name))


def page_sources(path: Path | None, langs: Sequence[str]) -> dict[str, PageSource]:
    """Each language's pages (English always: it tells a translation from left-over English): the pinned download
    (``path`` None), a folder of .debs, or a folder of extracted pages (``usr/share/...`` or the help folder)."""
    needed = check_langs(("en", *langs))
    if path is None:
        return {lang: PageSource(lang, deb) for lang, deb in download_debs(needed, CACHE_DIR / "debs").items()}
    if not path.is_dir():
        raise FileNotFoundError(f"--corpus libreoffice:{path}: no such folder; give a folder of libreoffice-help-*"
                                ".deb files or of pages extracted from them (dpkg-deb -x FILE FOLDER)")
    if any(path.glob("libreoffice-help-*.deb")):
        return {lang: PageSource(lang, _one_deb(path, lang)) for lang in needed}
    root = next((r for r in (path / HELP_ROOT, path) if any((r / HELP_DIRS[x] / "text").is_dir() for x in LANGS)),
                None)
    if root is None:
        raise FileNotFoundError(f"{path} holds neither libreoffice-help-*.deb files nor extracted help pages "
                                f"({HELP_ROOT}/<LANG>/text/...); extract them with `dpkg-deb -x FILE {path}`")
    for lang in needed:
        if not (root / HELP_DIRS[lang] / "text").is_dir():
            raise FileNotFoundError(f"{root / HELP_DIRS[lang] / 'text'} is missing: no {lang} pages; `apt-get "
                                    f"download {PACKAGES[lang]}` and `dpkg-deb -x` it into {path}, or leave {lang} "
                                    "out of --lang")
    return {lang: PageSource(lang, root) for lang in needed}


def _one_deb(folder: Path, lang: str) -> Path:
    found = sorted(folder.glob(f"{PACKAGES[lang]}_*.deb"))
    if len(found) != 1:
        why = "none" if not found else f"{len(found)} ({', '.join(f.name for f in found)}); keep one"
        raise FileNotFoundError(f"{folder} holds {why} {PACKAGES[lang]}_*.deb for {lang}; `apt-get download "
                                f"{PACKAGES[lang]}` there, or leave {lang} out of --lang")
    return found[0]


# --------------------------------------------------------------------------------------------
# Reading a page's paragraphs, once per content
# --------------------------------------------------------------------------------------------


def paragraphs(html: str | bytes) -> list[tuple[str, str]]:
    """(id, text) of every ``<p id="par_id...">`` of a help page, whitespace collapsed; where the page switches by
    system or module (``switchinline``), only the default variant (else the first); a repeated id gets ``#2``..."""
    from bs4 import BeautifulSoup, SoupStrainer

    soup = BeautifulSoup(html, "html.parser", parse_only=SoupStrainer("p", id=re.compile("^par_id")))
    found, seen = [], Counter()
    for p in soup.find_all("p"):
        for switch in p.find_all("span", class_="switchinline"):
            variants = switch.find_all("span", recursive=False)
            default = [v for v in variants if str(v.get("id", "")).startswith("default")]
            for variant in variants:
                if variant is not (default or variants)[0]:
                    variant.decompose()
        seen[p["id"]] += 1
        key = p["id"] if seen[p["id"]] == 1 else f"{p['id']}#{seen[p['id']]}"
        found.append((key, " ".join(p.get_text().split())))
    return found


@functools.cache
def _reader_version() -> str:
    """A hash of the code that reads a page: a cached reading made by other code is read again."""
    return hashlib.sha256(inspect.getsource(paragraphs).encode()).hexdigest()[:12]


def read_language(source: PageSource) -> dict[str, list[tuple[str, str]]]:
    """{page: its paragraphs} of one language, parsed once (about 15 s) and kept in the cache by content."""
    digest = source.digest()
    cached = CACHE_DIR / "paragraphs" / f"{source.lang}-{digest[:16]}-{_reader_version()}.json.gz"
    if cached.is_file():
        return {page: [tuple(p) for p in found] for page, found in json.loads(gzip.decompress(cached.read_bytes()))
                .items()}
    pages = {page: paragraphs(data) for page, data in source.pages().items()}
    if not pages:
        raise FileNotFoundError(f"{source.path} holds no {source.lang} help pages ({HELP_DIRS[source.lang]}/text/"
                                f"*.html); is it {PACKAGES[source.lang]}?")
    cached.parent.mkdir(parents=True, exist_ok=True)
    with written_whole(cached, tmp=cached.with_name(f".{cached.name}.partial")) as tmp:
        tmp.write_bytes(gzip.compress(json.dumps(pages, ensure_ascii=False).encode("utf-8"), mtime=0))
    return pages


# --------------------------------------------------------------------------------------------
# Aligning the languages, splitting the pages, the loaders
# --------------------------------------------------------------------------------------------


@dataclass
class Aligned:
    """The kept paragraphs of every page that has one, in every language asked for, and what was left out."""

    langs: tuple[str, ...]
    pages: list[str] = field(default_factory=list)  # sorted page paths, 'swriter/01/x.html'
    texts: dict[str, list[str]] = field(default_factory=dict)  # lang -> one document per page
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def modules(self) -> list[str]:
        return [page.split("/", 1)[0] for page in self.pages]


def align(read: Mapping[str, Mapping[str, Sequence[tuple[str, str]]]], langs: Sequence[str]) -> Aligned:
    """Keep a paragraph present and non-empty in English and every one of ``langs`` and translated in each (see the
    module notes); refuse languages whose page sets differ. ``read``: {lang: {page: paragraphs}}, English included."""
    check_lined_up(read)
    langs, result = check_langs(langs), Aligned(check_langs(langs))
    dropped = {lang: Counter() for lang in langs if lang != "en"}
    counts = Counter(dict.fromkeys(("kept", "untranslated", "repeated", "missing or empty"), 0))
    seen, kept = set(), {lang: [] for lang in langs}
    for page in sorted(read["en"]):
        own = {lang: dict(read[lang][page]) for lang in langs}
        lines: dict[str, list[str]] = {lang: [] for lang in langs}
        for key, english in read["en"][page]:
            texts = {lang: own[lang].get(key, "") for lang in langs}
            if not (english and all(texts.values())):
                counts["missing or empty"] += 1
                continue
            wrong = {lang: "same as English" if texts[lang] == english else "detected as English"
                     for lang in dropped if texts[lang] == english or looks_english(texts[lang], lang)}
            for lang, why in wrong.items():
                dropped[lang][why] += 1
            joint = tuple(texts.values())
            counts["untranslated" if wrong else "repeated" if joint in seen else "kept"] += 1
            if not wrong and joint not in seen:
                seen.add(joint)
                for lang in langs:
                    lines[lang].append(texts[lang])
        if lines[langs[0]]:
            result.pages.append(page)
            for lang in langs:
                kept[lang].append("\n".join(lines[lang]))
    result.texts = kept
    result.stats = {"paragraphs": dict(counts), "untranslated": {k: dict(v) for k, v in dropped.items()},
                    "pages": len(result.pages), "words": {lang: sum(len(t.split()) for t in kept[lang]) for lang in
                                                          langs}}
    return result


def check_lined_up(read: Mapping[str, Mapping[str, Any]]) -> None:
    """Refuse languages whose page sets differ, naming a page one lacks: they come from different versions."""
    for lang, pages in read.items():
        if missing := sorted(set(read["en"]) ^ set(pages)):
            which = lang if missing[0] in read["en"] else "en"
            raise ValueError(f"the help pages do not line up: {which} lacks {missing[0]} ({len(missing)} page(s) "
                             f"differ between en ({len(read['en'])} pages) and {lang} ({len(pages)})); give every "
                             f"language from the same LibreOffice version ({VERSION} for the pinned download)")


@functools.lru_cache(maxsize=4)
def aligned(path: Path | None, langs: tuple[str, ...]) -> Aligned:
    """The aligned corpus of ``langs`` from ``path`` (None: the pinned download), once per process."""
    sources = page_sources(path, langs)
    return align({lang: read_language(source) for lang, source in sources.items()}, langs)


@functools.lru_cache(maxsize=8)
def partition(path: Path | None, langs: tuple[str, ...], seed: int = 0) -> Mapping[str, tuple[int, ...]]:
    """'train', 'eval', 'probe_test': page indices, the same pages in every language (keys: the page paths)."""
    corpus = aligned(path, langs)
    return three_way_partition(corpus.pages, corpus.modules, TEST_FRACTION, seed)


def _meta(corpus: Aligned, path: Path | None, seed: int, max_docs: int | None) -> dict[str, Any]:
    return {"langs": list(corpus.langs), "pages_total": len(corpus.pages), "seed": seed, "max_docs": max_docs,
            "test_fraction": TEST_FRACTION, "version": VERSION if path is None else "as given", **corpus.stats}


def _check_member(lang: str, langs: Sequence[str]) -> None:
    if lang not in langs:
        raise ValueError(f"{lang!r} is not among the corpus' languages {','.join(langs)}; add it: "
                         f"libreoffice@{','.join(check_langs((*langs, lang)))}")


def libreoffice_corpus(lang: str, split: str, langs: Sequence[str] = LANGS, path: Path | None = None,
                       max_docs: int | None = None, seed: int = 0) -> Corpus:
    """The 'train' or 'eval' pages of ``lang`` (the first ``max_docs`` in a fixed hash order)."""
    _check_member(lang, langs)
    corpus = aligned(path, check_langs(langs))
    chosen = take(partition(path, corpus.langs, seed)[split], max_docs)
    return Corpus([corpus.texts[lang][i] for i in chosen], lang, "libreoffice", split, f"libreoffice-help-{lang}",
                  LICENCE, meta=_meta(corpus, path, seed, max_docs))


def libreoffice_labelled(lang: str, split: str, langs: Sequence[str] = LANGS, path: Path | None = None,
                         max_docs: int | None = None, seed: int = 0) -> LabelledSet:
    """Pages labelled by their module: 'test' the partition's probe pages, 'train' every other page."""
    _check_member(lang, langs)
    corpus = aligned(path, check_langs(langs))
    parts, names = partition(path, corpus.langs, seed), sorted(set(corpus.modules))
    pool = parts["probe_test"] if split == "test" else hash_order(parts["train"] + parts["eval"], corpus.pages, seed)
    chosen = take(pool, max_docs)
    return LabelledSet([corpus.texts[lang][i] for i in chosen], lang, "libreoffice", split,
                       f"libreoffice-help-modules-{lang}", LICENCE,
                       labels=[names.index(corpus.modules[i]) for i in chosen], label_names=names,
                       meta=_meta(corpus, path, seed, max_docs))
