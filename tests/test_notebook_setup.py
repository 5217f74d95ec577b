"""The first cell of every notebook: folders from run_dir, the interactive default, and early errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import notebook as nbs
from pipeline.runinfo import REPO_ROOT


def test_an_interactive_run_never_writes_into_the_main_jobs_folders(capsys: pytest.CaptureFixture[str]) -> None:
    setup = nbs.start("smoke", "fr", 0, None, device="cpu")
    assert setup.run_dir == REPO_ROOT / "runs" / "interactive" / "smoke-fr"
    assert setup.folder("tokenizer") == setup.run_dir / "tokenizer"
    assert "interactive" in capsys.readouterr().out


def test_changing_lang_changes_every_folder() -> None:
    en, fr = nbs.start("smoke", "en", device="cpu"), nbs.start("smoke", "fr", device="cpu")
    assert all(en.folder(s) != fr.folder(s) for s in nbs.STEP_FOLDERS)


def test_a_relative_run_dir_is_taken_from_the_repository_root(tmp_path: Path) -> None:
    assert nbs.start("smoke", "en", run_dir="runs/x", device="cpu").run_dir == REPO_ROOT / "runs" / "x"
    assert nbs.start("smoke", "en", run_dir=str(tmp_path), device="cpu").run_dir == tmp_path.resolve()


@pytest.mark.parametrize("corpus, expected", [
    ("embedded", {"source": "embedded"}),
    ("hub", {"source": "hub"}),
    ("files:/data/c4", {"source": "files", "path": "/data/c4"}),
])
def test_corpus_specs_become_load_corpus_arguments(corpus: str, expected: dict) -> None:
    assert nbs.parse_corpus(corpus) == expected


@pytest.mark.parametrize("kwargs, message", [
    ({"preset": "huge"}, "unknown preset"),
    ({"lang": "en,fr"}, "one language code"),
    ({"seed": -1}, "non-negative integer"),
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
