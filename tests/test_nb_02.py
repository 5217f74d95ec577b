"""Notebook 02 under the smoke preset: the saved tokenizer, its report, its figures and its exercises."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest

from exercises import nb02
from helpers import presets
from helpers.tokenizer import SPECIAL_TOKENS

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"

pytestmark = pytest.mark.notebook


@pytest.fixture(scope="module")
def out_dir(smoke_step: Callable[[str], Path]) -> Path:
    return smoke_step("02_tokenizer")


@pytest.fixture(scope="module")
def report(out_dir: Path) -> dict:
    return json.loads((out_dir / "report.json").read_text())


@pytest.fixture(scope="module")
def printed(out_dir: Path) -> str:
    """Everything the executed notebook printed or displayed as text."""
    cells = json.loads((out_dir.parent / "02_tokenizer.ipynb").read_text())["cells"]
    texts = []
    for cell in cells:
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain") or ""
            texts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(texts)


def test_saved_tokenizer_loads_as_fast_with_the_specials(out_dir: Path, report: dict) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(out_dir))
    assert tok.is_fast
    assert tok.convert_tokens_to_ids(list(SPECIAL_TOKENS)) == [0, 1, 2, 3, 4]
    assert tok.model_max_length == 128
    saved = report["saved"]
    assert saved == "cased"  # the notebook's default, the paper's choice
    assert len(tok) == report[saved]["vocab_size"] == presets.get("smoke").tokenizer.vocab_size
    assert tok.tokenize("Paris") != tok.tokenize("paris")  # really the cased one


def test_report_numbers_are_in_range(report: dict) -> None:
    assert report["preset"] == "smoke" and report["lang"] == "en"
    assert report["n_train_docs"] == presets.get("smoke").tokenizer.max_docs
    assert report["cased"]["lowercase"] is False and report["uncased"]["lowercase"] is True
    for name in ("cased", "uncased"):
        r = report[name]
        assert 0.0 <= r["unk_rate"] < 0.05
        assert 1.0 <= r["fertility"] < 3.0
        assert 0.0 < r["continuation_share"] < 1.0
        assert r["whole_word_share"] == pytest.approx(1.0 - r["continuation_share"])
        assert 0.0 <= r["share_over_limit"] <= 1.0 and r["limit"] == 128
        assert r["n_eval_docs"] > 0
    assert "packages" in report["environment"]


def test_figures_exist(out_dir: Path) -> None:
    for name in ("comparison.png", "lengths.png"):
        path = out_dir / name
        assert path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.stat().st_size > 10_000


def test_the_hand_counted_merges_are_the_trainers(printed: str) -> None:
    merges = "['##lk', '##alk', 'walk', '##ed']"
    assert f"the trainer's merges: {merges}; by hand: {merges}" in printed


@pytest.fixture(scope="module")
def markdown(out_dir: Path) -> str:
    """The prose the executed notebook built from its values (display(Markdown(...)))."""
    cells = json.loads((out_dir.parent / "02_tokenizer.ipynb").read_text())["cells"]
    return "\n".join("".join(output.get("data", {}).get("text/markdown", "")) for cell in cells
                     for output in cell.get("outputs", []))


def test_every_exercise_passes_its_self_check(printed: str) -> None:
    for n in (1, 2, 3, 4):
        assert f"Exercise {n}: ✓ right" in printed
    assert f"Why: {nb02.EXERCISE_4_EXPLANATION}" in printed  # the reference answer, after the right answer


def test_no_exercise_cell_shows_the_tokenization_it_asks_for(out_dir: Path, printed: str) -> None:
    from transformers import AutoTokenizer

    pieces = AutoTokenizer.from_pretrained(str(out_dir)).tokenize(nb02.EXERCISE_2_SENTENCE)
    assert str(pieces) not in printed and " ".join(pieces) not in printed


def test_the_first_merge_sentence_states_the_counts_of_the_six_words(markdown: str) -> None:
    toy = {"walk": 9, "walked": 4, "talked": 5, "talk": 3, "milk": 6, "mild": 2}
    with_lk = sum(n for word, n in toy.items() if "lk" in word[1:])  # every "lk" here is inside a word
    l_count = sum(n * word[1:].count("l") for word, n in toy.items())
    m_count = sum(n for word, n in toy.items() if word.startswith("m"))
    assert (f"By frequency, `##l + ##k` wins with {with_lk} occurrences (every word but *mild* holds *lk*)"
            in markdown)
    assert f"By score, `m + ##i` wins with {m_count} / ({m_count} · {m_count}) = {1 / m_count:.3f}" in markdown
    assert f"score only {with_lk} / ({l_count} · {with_lk}) ≈ {1 / l_count:.3f}." in markdown


def test_the_run_bookkeeping_stands_only_in_the_closing_appendix() -> None:
    cells = json.loads((NOTEBOOKS / "02_tokenizer.ipynb").read_text())["cells"]
    sources = ["".join(cell["source"]) for cell in cells]
    assert sources[-1].startswith("## Appendix: how this run is kept")
    for note in (".step.json", "tokenizers#1794", "hash\nmap"):
        assert note in sources[-1]
        assert not any(note in source for source in sources[:-1]), note


def test_the_listing_leaves_out_the_main_jobs_bookkeeping(out_dir: Path, printed: str) -> None:
    assert (out_dir / ".step-started.json").is_file()  # it is there, and the notebook explains it in prose
    assert "'report.json'" in printed and ".step" not in printed
