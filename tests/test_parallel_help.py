"""Issue 56: LibreOffice's help pages as a corpus aligned across languages. Tested on small pages made here in the
real layout (usr/share/libreoffice/help/<LANG>/text/<module>/<page>.html, paragraphs <p id="par_id...">), and on .debs
built from them with dpkg-deb: what is kept, the same split in every language, the labels, and every error."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.corpora import parallel_help as ph
from pipeline.corpora.data import CorpusSpec, load_corpus, load_labelled
from pipeline.corpora.labelled import LabelledSpec
from pipeline.run.job_options import parse_options
from pipeline.run.steps import STEP_BY_NAME, JobError
from pipeline.store.fingerprints import input_files, input_kind

MODULES = ("scalc", "shared", "swriter")
PAGES_PER_MODULE = 20
LANGS = ("en", "de", "cs")


@pytest.fixture(autouse=True)
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test reads its own pages and keeps its parsed paragraphs out of the repository's cache."""
    monkeypatch.setattr(ph, "CACHE_DIR", tmp_path / "cache")
    ph.aligned.cache_clear()
    ph.partition.cache_clear()


def page_html(lang: str, paragraphs: list[tuple[str, str]]) -> str:
    """A help page as LibreOffice 7.4 writes it, cut to what the reader looks at."""
    body = "\n".join(f'<p id="{pid}" class="paragraph" dir="auto">{text}</p>' for pid, text in paragraphs)
    return (f'<!DOCTYPE html>\n<html lang="{lang}" dir="ltr">\n<head><meta charset="utf-8"><title>t</title></head>\n'
            f'<body><p id="bm_module" hidden="true">x</p><div id="DisplayArea">\n<h1 id="hd_id1">Title</h1>\n{body}\n'
            "</div></body></html>")


def page_paragraphs(lang: str, module: str, n: int) -> list[tuple[str, str]]:
    """Page ``n``: one paragraph translated (it names the page, so the tests can tell pages apart in every
    language), one formula left as in English, and one paragraph that every page repeats."""
    own = {"en": f"Page {n} of {module} shows the table and the chart.", "de": f"Seite {n} von {module} zeigt Tabellen",
           "cs": f"Stránka {n} modulu {module} ukazuje tabulky"}
    repeated = {"en": "Choose the menu and click it.", "de": "Wählen Sie das Menü", "cs": "Zvolte nabídku"}
    return [("par_id1", own[lang]), ("par_id2", f"=SUM(A1:B{n})"), ("par_id3", repeated[lang])]


def make_pages(root: Path, langs: tuple[str, ...] = LANGS) -> Path:
    """The pages of ``langs`` under ``root`` as ``dpkg-deb -x`` leaves them; returns ``root``."""
    for lang in langs:
        for module in MODULES:
            for n in range(PAGES_PER_MODULE):
                page = root / ph.HELP_ROOT / ph.HELP_DIRS[lang] / "text" / module / "01" / f"{n:04d}.html"
                page.parent.mkdir(parents=True, exist_ok=True)
                page.write_text(page_html(lang, page_paragraphs(lang, module, n)), encoding="utf-8")
    return root


def page_numbers(texts: list[str]) -> list[tuple[str, int]]:
    """(module, page number) of every document, read from its translated paragraph, in order."""
    return [(m[1], int(m[0])) for m in (re.search(r"(\d+) \w+ (s\w+)", t).groups() for t in texts)]


def test_a_paragraph_is_read_with_its_id_and_the_default_of_a_switch() -> None:
    html = ('<p id="par_id9" class="paragraph">Use <span class="switchinline"><span hidden="true" id="MACx">'
            '<span class="keycode">Command</span></span><span hidden="true" id="defaultx">Ctrl</span></span> + F '
            'to   find.</p><p id="hd_id2">not a paragraph</p><p id="par_id9">twice</p>'
            '<p id="par_id7"><span class="switchinline"><span hidden="true" id="WRITERy">Writer</span>'
            '<span hidden="true" id="CALCy">Calc</span></span> only</p>')
    assert ph.paragraphs(html) == [("par_id9", "Use Ctrl + F to find."), ("par_id9#2", "twice"),
                                   ("par_id7", "Writer only")]


@pytest.mark.parametrize("text, lang, english", [
    ("Select the cells and press the key.", "cs", True),
    ("Vyberte buňky a stiskněte klávesu.", "cs", False),
    ("=PROPER(\"the document\") vrátí The Document.", "cs", True),  # one known false positive: it is dropped
    ("End With: Beendet eine Anweisung With", "de", False),  # Basic keywords are not English text
    ("SELECT name FROM table WHERE id = 1", "fr", False),  # SQL in capitals is not counted
])
def test_left_over_english_is_told_from_a_translation(text: str, lang: str, english: bool) -> None:
    assert ph.looks_english(text, lang) is english


def test_only_paragraphs_translated_into_every_language_are_kept(tmp_path: Path) -> None:
    root = make_pages(tmp_path / "pages")
    page = root / ph.HELP_ROOT / "cs" / "text" / "scalc" / "01" / "0003.html"  # left in English in Czech
    page.write_text(page_html("cs", [("par_id1", "Page 3 of scalc shows the table and the charts."),
                                     *page_paragraphs("cs", "scalc", 3)[1:]]), encoding="utf-8")
    corpus = ph.aligned(root, LANGS)
    assert corpus.stats["untranslated"] == {"de": {"same as English": 60},
                                            "cs": {"same as English": 60, "detected as English": 1}}
    assert corpus.stats["paragraphs"] == {"kept": 60, "untranslated": 61, "repeated": 59, "missing or empty": 0}
    assert len(corpus.pages) == 59 and "scalc/01/0003.html" not in corpus.pages  # its only kept line is gone
    first = corpus.pages.index("scalc/01/0000.html")
    assert corpus.texts["cs"][first] == "Stránka 0 modulu scalc ukazuje tabulky\nZvolte nabídku"  # repeats kept once
    assert corpus.texts["en"][first] == "Page 0 of scalc shows the table and the chart.\nChoose the menu and click it."
    assert corpus.stats["words"]["cs"] == sum(len(t.split()) for t in corpus.texts["cs"])
    # asked for English alone, nothing is compared: the formulas stay (20 distinct), the repeated line once
    assert ph.aligned(root, ("en",)).stats["paragraphs"] == {"kept": 81, "untranslated": 0, "repeated": 99,
                                                             "missing or empty": 0}


def test_every_split_holds_the_same_pages_in_every_language(tmp_path: Path) -> None:
    spec = CorpusSpec.parse(f"libreoffice@cs,en,de:{make_pages(tmp_path / 'pages')}")
    assert str(spec) == f"libreoffice@en,de,cs:{tmp_path / 'pages'}"
    parts = {split: {lang: page_numbers(load_corpus(spec, lang, split).texts) for lang in LANGS}
             for split in ("train", "eval")}
    tests = {lang: page_numbers(load_labelled(spec, lang, "test").texts) for lang in LANGS}
    for by_lang in (*parts.values(), tests):
        assert by_lang["en"] == by_lang["de"] == by_lang["cs"] and by_lang["en"]
    train, held, test = (set(parts["train"]["en"]), set(parts["eval"]["en"]), set(tests["en"]))
    assert not (train & held or train & test or held & test) and len(train | held | test) == 60
    assert {module for module, _ in test} == set(MODULES)  # 10 % of each module's pages
    # the first N of a split are the same pages whatever N
    assert page_numbers(load_corpus(spec, "cs", "train", max_docs=5).texts) == parts["train"]["cs"][:5]


def test_the_probe_labels_a_page_by_its_module_in_every_language(tmp_path: Path) -> None:
    corpus = CorpusSpec.parse(f"libreoffice@en,de,cs:{make_pages(tmp_path / 'pages')}")
    spec = LabelledSpec("auto").resolve("de", corpus)
    assert str(spec) == "libreoffice"
    for split in ("train", "test"):
        data = spec.load("de", split)
        assert data.label_names == list(MODULES)
        assert [data.label_names[label] for label in data.labels] == [m for m, _ in page_numbers(data.texts)]
        assert page_numbers(data.texts) == page_numbers(spec.load("cs", split).texts)
    train, test = (set(page_numbers(spec.load("en", split).texts)) for split in ("train", "test"))
    assert not train & test and len(train | test) == 60


def test_pages_are_found_from_the_extraction_root_or_the_help_folder(tmp_path: Path) -> None:
    root = make_pages(tmp_path / "pages")
    assert ph.aligned(root / ph.HELP_ROOT, LANGS).texts == ph.aligned(root, LANGS).texts
    assert len(list((tmp_path / "cache" / "paragraphs").glob("*.json.gz"))) == 3  # one reading per language


def build_debs(pages: Path, out: Path, langs: tuple[str, ...] = LANGS) -> Path:
    """One .deb per language, holding its pages as Debian's packages do."""
    out.mkdir(parents=True, exist_ok=True)
    for lang in langs:
        tree = out / f"tree-{lang}"
        shutil.copytree(pages / ph.HELP_ROOT / ph.HELP_DIRS[lang], tree / ph.HELP_ROOT / ph.HELP_DIRS[lang])
        (tree / "DEBIAN").mkdir()
        (tree / "DEBIAN" / "control").write_text(f"Package: {ph.PACKAGES[lang]}\nVersion: 1:7.4.7-1\nArchitecture: "
                                                 "all\nMaintainer: t <t@example.org>\nDescription: test\n")
        subprocess.run(["dpkg-deb", "-Zgzip", "--build", str(tree), str(out / f"{ph.PACKAGES[lang]}_7.4.7_all.deb")],
                       check=True, capture_output=True)
        shutil.rmtree(tree)
    return out


needs_dpkg = pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb is not installed")


@needs_dpkg
def test_a_folder_of_debs_reads_as_the_pages_they_hold(tmp_path: Path) -> None:
    pages = make_pages(tmp_path / "pages")
    debs = build_debs(pages, tmp_path / "debs")
    assert ph.aligned(debs, LANGS).texts == ph.aligned(pages, LANGS).texts
    (debs / f"{ph.PACKAGES['cs']}_7.4.7_all.deb").unlink()
    with pytest.raises(FileNotFoundError, match=r"holds none libreoffice-help-cs_\*\.deb for cs; `apt-get download "
                                                r"libreoffice-help-cs` there, or leave cs out of --lang"):
        ph.page_sources(debs, LANGS)
    (debs / f"{ph.PACKAGES['en']}_7.4.8_all.deb").write_bytes(b"not a deb")
    with pytest.raises(FileNotFoundError, match=r"holds 2 \(libreoffice-help-en-us_7.4.7_all.deb, "
                                                r"libreoffice-help-en-us_7.4.8_all.deb\); keep one"):
        ph.page_sources(debs, ("en",))
    with pytest.raises(ValueError, match="is not a readable .deb .*download it again: apt-get download"):
        ph.read_language(ph.PageSource("en", debs / f"{ph.PACKAGES['en']}_7.4.8_all.deb"))


@needs_dpkg
def test_the_download_is_checked_against_its_pinned_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = build_debs(make_pages(tmp_path / "pages", ("en",)), tmp_path / "built", ("en",))
    deb = built / "libreoffice-help-en-us_7.4.7_all.deb"
    fake = tmp_path / "bin" / "apt-get"  # stands in for apt-get: 'apt-get download PACKAGE=VERSION' copies the .deb
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\n[ "$2" = "libreoffice-help-en-us={ph.VERSION}" ] && cp {deb} .\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(ValueError, match="not the pinned 8faa8402.* of libreoffice-help-en-us 4:7.4.7-1.deb12u14; "
                                         "refusing to read it"):
        ph.download_debs(("en",), tmp_path / "cache" / "debs")
    monkeypatch.setitem(ph.SHA256, "en", ph.sha256_of(deb))
    assert ph.aligned(None, ("en",)).stats["paragraphs"]["kept"] == 81  # the cached .deb, no second download
    with pytest.raises(ConnectionError, match=r"could not download libreoffice-help-de=4:7.4.7.*run `apt-get "
                                              r"update` first.*--corpus libreoffice:FOLDER"):
        ph.download_debs(("de",), tmp_path / "cache" / "debs")


def test_a_missing_language_an_unknown_one_and_pages_that_do_not_line_up_say_what_to_do(tmp_path: Path) -> None:
    root = make_pages(tmp_path / "pages", ("en", "de"))
    with pytest.raises(FileNotFoundError, match=r"help/cs/text is missing: no cs pages; `apt-get download "
                                                r"libreoffice-help-cs` and `dpkg-deb -x` it into .*leave cs out"):
        ph.aligned(root, ("de", "cs"))
    with pytest.raises(ValueError, match="unknown libreoffice language 'ru'; the corpus has en, de, cs, pl, it, es, "
                                         "fr"):
        CorpusSpec.parse(f"libreoffice@en,ru:{root}")
    with pytest.raises(ValueError, match="'de' is not among the corpus' languages en,cs; add it: libreoffice@en,de,cs"):
        load_corpus(CorpusSpec("libreoffice", root, ("en", "cs")), "de")
    with pytest.raises(FileNotFoundError, match="holds neither libreoffice-help-.*deb files nor extracted help pages"):
        ph.aligned(tmp_path, ("de",))
    (root / ph.HELP_ROOT / "de" / "text" / "shared" / "01" / "0007.html").unlink()
    with pytest.raises(ValueError, match=r"the help pages do not line up: de lacks shared/01/0007.html \(1 page\(s\) "
                                         r"differ between en \(60 pages\) and de \(59\)\); give every language from "
                                         r"the same LibreOffice version"):
        ph.aligned(root, ("de",))
    with pytest.raises(ValueError, match=r"'libreoffice@:/x' names no language after '@'; write e.g. "
                                         r"libreoffice@en,cs"):
        CorpusSpec.parse("libreoffice@:/x")
    with pytest.raises(ValueError, match="the corpus 'files' takes no @LANGS"):
        CorpusSpec.parse("files@en:/x")


def test_the_main_job_takes_the_corpus_for_the_papers_seven_languages(tmp_path: Path) -> None:
    langs = ",".join(ph.LANGS)
    options = parse_options(["--corpus", "libreoffice", "--lang", langs, "--out", str(tmp_path / "out")])
    assert {str(run.corpus) for run in options.runs()} == {f"libreoffice@{langs}"}  # every language the same text
    probe = options.runs()[2].parameters(STEP_BY_NAME["05_probing"], tmp_path / "run")
    assert (probe["lang"], probe["labelled"]) == ("cs", "libreoffice")
    assert str(parse_options(["--corpus", "libreoffice", "--lang", "cs,en", "--out", str(tmp_path)]).corpus) == \
        "libreoffice@en,cs"  # only what the job's languages all have
    assert str(parse_options(["--corpus", "libreoffice@en,pl,cs", "--lang", "cs", "--out", str(tmp_path)]).corpus) == \
        "libreoffice@en,cs,pl"  # named: kept, whatever --lang
    for args, message in [(["--lang", "ru"], "unknown language 'ru' for the libreoffice corpus; choose from en, de"),
                          (["--corpus", "libreoffice@en,de", "--lang", "cs"], "add it: --corpus libreoffice@en,de,cs"),
                          (["--corpus", f"libreoffice:{tmp_path}/none"], "none does not exist; give .*libreoffice")]:
        with pytest.raises(JobError, match=message):
            parse_options(["--corpus", "libreoffice", *args, "--out", str(tmp_path / "out")])


def test_a_run_names_the_corpus_by_kind_and_languages_never_by_path(tmp_path: Path) -> None:
    assert input_kind(f"libreoffice@en,cs:{tmp_path}") == "libreoffice@en,cs"
    assert input_kind("libreoffice@en,cs") == "libreoffice@en,cs" and input_kind("libreoffice") == "libreoffice"
    assert input_files({"corpus": f"libreoffice:{tmp_path}"}) == {"corpus": tmp_path}
    assert input_files({"corpus": "libreoffice@en,cs"}) == {}  # the pinned download: its digests are in the code
