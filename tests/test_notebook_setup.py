"""The first cell of every notebook: folders from run_dir, the interactive default, and early errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import notebook as nbs
from pipeline.corpora.data import CorpusSpec
from pipeline.store.layout import REPO_ROOT, STEP_FOLDERS


def test_an_interactive_run_never_writes_into_the_main_jobs_folders(capsys: pytest.CaptureFixture[str]) -> None:
    setup = nbs.start("smoke", "fr", 0, None, device="cpu")
    assert setup.run_dir == REPO_ROOT / "runs" / "interactive" / "smoke-fr"
    assert setup.folder("tokenizer") == setup.run_dir / "tokenizer"
    assert "interactive" in capsys.readouterr().out


def test_changing_lang_changes_every_folder() -> None:
    en, fr = nbs.start("smoke", "en", device="cpu"), nbs.start("smoke", "fr", device="cpu")
    assert all(en.folder(s) != fr.folder(s) for s in STEP_FOLDERS)


def test_a_relative_run_dir_is_taken_from_the_repository_root(tmp_path: Path) -> None:
    assert nbs.start("smoke", "en", run_dir="runs/x", device="cpu").run_dir == REPO_ROOT / "runs" / "x"
    assert nbs.start("smoke", "en", run_dir=str(tmp_path), device="cpu").run_dir == tmp_path.resolve()


@pytest.mark.parametrize("corpus, expected", [
    ("embedded", CorpusSpec("embedded")),
    ("hub", CorpusSpec("hub")),
    ("files:/data/c4", CorpusSpec("files", Path("/data/c4"))),
    ("files:data/c4", CorpusSpec("files", REPO_ROOT / "data" / "c4")),
])
def test_the_corpus_is_parsed_once_relative_paths_from_the_repository_root(corpus: str, expected: CorpusSpec,
                                                                           tmp_path: Path) -> None:
    assert nbs.start("smoke", "en", run_dir=tmp_path, corpus=corpus, device="cpu").corpus == expected


def test_the_setup_loads_its_own_corpus_in_its_language() -> None:
    setup = nbs.start("smoke", "fr", device="cpu")
    train = setup.load_corpus("train", max_docs=5)
    assert (len(train), train.lang, train.split, train.source) == (5, "fr", "train", "embedded")
    assert setup.load_corpus("eval", max_docs=3).split == "eval"


def test_the_labelled_set_of_notebook_05_is_parsed_from_its_parameters(tmp_path: Path) -> None:
    english, czech = nbs.start("smoke", "en", device="cpu"), nbs.start("smoke", "cs", run_dir=tmp_path, corpus="hub",
                                                                        device="cpu")
    assert nbs.labelled_set("auto", english) == nbs.LabelledSpec("embedded")
    assert nbs.labelled_set("auto", czech) == nbs.LabelledSpec("sib200")  # the README's paper run for cs finishes
    news = nbs.LabelledSpec("files", REPO_ROOT / "data" / "news.csv")
    assert nbs.labelled_set("files:data/news.csv", english) == news
    with pytest.raises(ValueError, match="has no 'cs'"):
        nbs.labelled_set("embedded", czech)
    with pytest.raises(ValueError, match="write files:PATH"):
        nbs.labelled_set("files:", english)


def test_notebooks_reach_the_machinery_through_this_module_only() -> None:
    """Notebooks 01-05 import helpers, exercises and pipeline.notebook, and nothing else of pipeline."""
    from pipeline.run.notebook_sync import cell_source, notebook_cells
    from pipeline.store.layout import NOTEBOOKS_DIR

    for notebook in sorted(NOTEBOOKS_DIR.glob("0[1-5]_*.ipynb")):
        sources = [cell_source(cell) for cell in notebook_cells(notebook) if cell["cell_type"] == "code"]
        imported = {line.split()[1] for text in sources for line in text.splitlines()
                    if line.startswith(("from pipeline", "import pipeline"))}
        assert imported <= {"pipeline.notebook"}, f"{notebook.name} imports {sorted(imported)}"


@pytest.mark.parametrize("kwargs, message", [
    ({"preset": "huge"}, "unknown preset"),
    ({"lang": "en,fr"}, "is not a language code"),
    ({"seed": -1}, "a seed must be an integer from 0"),
    ({"corpus": "files:"}, "unknown corpus"),
    ({"device": "tpu"}, "unknown device"),
])
def test_bad_parameters_fail_in_the_first_cell(kwargs: dict, message: str) -> None:
    args = {"preset": "smoke", "lang": "en", "device": "cpu", **kwargs}
    with pytest.raises(ValueError, match=message):
        nbs.start(**args)


def test_an_unknown_step_folder_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown step folder"):
        nbs.start("smoke", "en", device="cpu").folder("checkpoints")


def test_notebook_04_gets_no_verdict_from_a_run_whose_positions_cannot_be_scored(tmp_path: Path) -> None:
    setup = nbs.start("smoke", "en", run_dir=tmp_path / "smoke-en", device="cpu")  # nothing trained there
    with pytest.raises(RuntimeError, match=r"smoke-en: its evaluation positions cannot be scored: .*eval_positions"):
        nbs.scored_run(setup)
