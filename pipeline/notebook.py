"""What the first code cell of every notebook does: one way to resolve folders, seed, device and logging.

Every notebook's ``parameters`` cell holds ``preset``, ``lang``, ``seed``, ``corpus`` and
``run_dir``; the next cell calls :func:`start`. Folders derive from ``run_dir``:

* the main job (``python -m pipeline.job``) passes ``run_dir=<runs>/<preset>-<lang>``;
* a student running a notebook in JupyterLab leaves ``run_dir=None`` and gets
  ``runs/interactive/<preset>-<lang>``, so an interactive session never rewrites the main job's
  records, and changing ``lang`` never overwrites another language's outputs.

Each step writes ``run_dir/<step folder>`` and reads the folders of the steps before it.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.presets import check_preset
from pipeline.runinfo import REPO_ROOT, pick_device, set_seed

INTERACTIVE_DIR = REPO_ROOT / "runs" / "interactive"
# The folder each step writes inside a run folder (one definition, used by the main job too).
STEP_FOLDERS = {
    "masking": "masking",
    "tokenizer": "tokenizer",
    "static": "static",
    "pretrain": "pretrain",
    "probe": "probe",
}
CORPUS_HELP = "embedded (offline default), hub (allenai/c4 per language), or files:PATH (local files)"


def resolve(path: str | Path) -> Path:
    """An absolute path: relative ones are taken from the repository root, wherever the kernel started."""
    path = Path(path).expanduser()
    return (path if path.is_absolute() else REPO_ROOT / path).resolve()


def default_run_dir(preset: str, lang: str) -> Path:
    return INTERACTIVE_DIR / f"{preset}-{lang}"


def parse_corpus(corpus: str) -> dict[str, Any]:
    """'embedded' -> {'source': 'embedded'}; 'files:/data/c4' -> {'source': 'files', 'path': '/data/c4'}.

    The result is passed as keyword arguments to ``pipeline.data.load_corpus``, so every notebook
    reads the same corpus the same way.
    """
    text = str(corpus).strip()
    if text in ("embedded", "hub"):
        return {"source": text}
    if text.startswith("files:") and text[len("files:"):].strip():
        return {"source": "files", "path": str(resolve(text[len("files:"):].strip()))}
    raise ValueError(f"unknown corpus {corpus!r}; choose {CORPUS_HELP}")


def quiet_libraries() -> None:
    """Silence library chatter that says nothing about this notebook (weight-loading bars, info logs).

    The kernel's own TCP warning is silenced where the kernel starts (``--IPKernelApp.log_level=ERROR``).
    """
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        import transformers

        transformers.utils.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers is a dependency
        pass
    logging.getLogger("papermill").setLevel(logging.WARNING)


@dataclass(frozen=True)
class Setup:
    """A notebook's resolved settings; ``folder(step)`` is the only way a notebook names a folder."""

    preset: str
    lang: str
    seed: int
    corpus: str
    run_dir: Path
    device: str

    def folder(self, step: str, create: bool = False) -> Path:
        if step not in STEP_FOLDERS:
            raise ValueError(f"unknown step folder {step!r}; choose from {', '.join(STEP_FOLDERS)}")
        path = self.run_dir / STEP_FOLDERS[step]
        if create:
            path.mkdir(parents=True, exist_ok=True)
        return path

    def corpus_args(self) -> dict[str, Any]:
        """Keyword arguments for ``pipeline.data.load_corpus`` (source and, for files, the path)."""
        return parse_corpus(self.corpus)


def start(preset: str, lang: str, seed: int = 0, run_dir: str | Path | None = None,
          corpus: str = "embedded", device: str = "cpu", quiet: bool = True) -> Setup:
    """Check the parameters, seed everything, pick the device and say in one line what this run uses."""
    check_preset(preset)
    if not isinstance(lang, str) or not lang.strip() or "," in lang:
        raise ValueError(f"lang must be one language code such as 'en', got {lang!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    parse_corpus(corpus)
    if quiet:
        quiet_libraries()
    set_seed(seed)
    folder = resolve(run_dir) if run_dir else default_run_dir(preset, lang)
    setup = Setup(preset, lang, seed, str(corpus), folder, pick_device(device))
    where = "interactive" if folder.is_relative_to(INTERACTIVE_DIR) else "main job"
    shown = folder.relative_to(REPO_ROOT) if folder.is_relative_to(REPO_ROOT) else folder
    print(f"preset={preset} lang={lang} seed={seed} corpus={corpus} device={setup.device}\n"
          f"run folder ({where}): {shown}")
    return setup
