"""Shared fixtures: the smoke pipeline, executed once per test session and chained like the main job.

A notebook test asks for ``smoke_step("03_static_vectors")``; the fixture runs 02 first (once), then
03, both through ``pipeline.run.runner.run_step`` with ``preset='smoke'``, and returns 03's output folder.
The runner's own tests use stand-in notebooks instead (``write_notebook``), a kernel start each.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

import pytest

from pipeline.run import runner, steps

SMOKE_LANG = "en"
# The session fixtures that run notebooks. `make test` runs the suite on one pytest-xdist worker per core (at most
# 4), each test file whole on one (its module fixtures run once), and every file that names one of these on the same
# worker, so the smoke pipeline (about two minutes) runs once, not once per worker.
SMOKE_FIXTURES = ("smoke_run_dir", "smoke_step", "smoke_figures")
# The longest set-ups (`make test` names its slowest tests): handed out first, so that no worker starts one of them
# while the other has nothing left to do.
SLOWEST_FIRST = ("smoke", "test_paper_path.py", "test_every_language_finishes.py", "test_reference_records.py",
                 "test_gpu_path_on_cpu.py", "test_distributed.py")


@functools.cache
def worker_group(test_file: Path) -> str:
    """'smoke' for a test file that uses the smoke pipeline, else the file's name: the unit a worker runs whole."""
    uses_smoke = test_file.is_file() and any(name in test_file.read_text(encoding="utf-8") for name in SMOKE_FIXTURES)
    return "smoke" if uses_smoke else test_file.name


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slowest groups first (run serially too: the order is all that changes)."""
    rank = {name: n for n, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(worker_group(item.path), len(rank)))  # stable: files keep their order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """pytest-xdist's scope scheduling with :func:`worker_group` as the scope, in the collection's order. (Its
    ``loadgroup`` mode renames node ids, which pytest 9 no longer lets a plugin do.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ByWorkerGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(config.rootpath / nodeid.split("::", 1)[0])

    config.option.loadscopereorder = False
    return ByWorkerGroup(config, log)


@pytest.fixture(scope="session")
def smoke_run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runs") / f"smoke-{SMOKE_LANG}"


@pytest.fixture(scope="session")
def smoke_step(smoke_run_dir: Path) -> Callable[[str], Path]:
    """Run a per-language step (and the steps it needs) under the smoke preset; return its out_dir."""
    done: dict[str, Path] = {}

    def ensure(name: str) -> Path:
        if name in done:
            return done[name]
        step = steps.STEP_BY_NAME[name]
        for need in step.needs:
            ensure(need)
        # control=True: the smoke run trains the control BERT_FT_PERM too, so 04's and 06's control paths run.
        settings = steps.RunSettings("smoke", SMOKE_LANG, seed=0, device="cpu", solve_exercises=True, control=True)
        params = settings.parameters(step, smoke_run_dir)
        runner.run_step(step, smoke_run_dir, params, steps.upstream_of(step, smoke_run_dir), force=True)
        done[name] = steps.out_dir_of(step, params)
        return done[name]

    return ensure


@pytest.fixture(scope="session")
def smoke_figures(smoke_step: Callable[[str], Path], smoke_run_dir: Path) -> Path:
    """Run 06 on the smoke run folder (after 01-05); return the figures folder."""
    for step in steps.STEPS:
        smoke_step(step.name)
    figures_dir = smoke_run_dir.parent / "figures"
    runner.run_figures([smoke_run_dir], figures_dir, smoke_run_dir.parent / "smoke-figures", force=True,
                       solve_exercises=True)
    return figures_dir


@pytest.fixture(scope="session")
def small_tokenizer():
    """A 400-token WordPiece trained on 150 real English articles: small enough for unit tests of training."""
    from helpers.tokenizer import train_wordpiece
    from pipeline.corpora.data import EMBEDDED, load_corpus

    return train_wordpiece(load_corpus(EMBEDDED, "en", "train", max_docs=150).texts, vocab_size=400,
                           show_progress=False)


@pytest.fixture(scope="session")
def small_prepared(tmp_path_factory: pytest.TempPathFactory, small_tokenizer) -> Callable[[int], Path]:
    """Prepared pretraining data (150 training, 24 evaluation articles) at a given sequence length, made once each."""
    from pipeline.corpora.data import EMBEDDED, load_corpus
    from pipeline.train.prepare import prepare_data

    made: dict[int, Path] = {}

    def prepared(seq_len: int) -> Path:
        if seq_len not in made:
            out = tmp_path_factory.mktemp(f"prepared{seq_len}")
            train = load_corpus(EMBEDDED, "en", "train", max_docs=150).texts
            evaluation = load_corpus(EMBEDDED, "en", "eval", max_docs=24).texts
            prepare_data(small_tokenizer, train, evaluation, out, seq_len=seq_len, lang="en", corpus="embedded")
            made[seq_len] = out
        return made[seq_len]

    return prepared


@pytest.fixture()
def notebooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder the steps take their notebooks from, in place of notebooks/, for this test only."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    monkeypatch.setattr(steps, "NOTEBOOKS_DIR", folder)
    return folder


@pytest.fixture()
def write_notebook(notebooks: Path) -> Callable[[str, str, str], Path]:
    """Write ``notebooks/<name>.ipynb``, a stand-in for a step's notebook: a cell tagged 'parameters' holding
    ``parameters``, then one cell running ``body``. Returns its path."""
    import nbformat

    def write(name: str, parameters: str, body: str) -> Path:
        nb = nbformat.v4.new_notebook()
        params = nbformat.v4.new_code_cell(parameters)
        params.metadata["tags"] = ["parameters"]
        nb.cells = [params, nbformat.v4.new_code_cell(body)]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        path = notebooks / f"{name}.ipynb"
        nbformat.write(nb, path)
        return path

    return write
