"""The main job's steps: which notebook each one runs, what it reads and writes, and its papermill parameters, which
derive from one :class:`RunSettings` and the run folder only (06 draws from every run folder at once)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from pipeline.corpora.data import CorpusSpec
from pipeline.corpora.labelled import LabelledSpec
from pipeline.run.notebook_sync import cell_source, definitions, notebook_cells
from pipeline.store import layout

NOTEBOOKS_DIR = layout.NOTEBOOKS_DIR


class StepFailed(RuntimeError):
    """A notebook raised: the message names the notebook, the failing cell's error and the executed copy."""


class JobError(ValueError):
    """A user error caught before or between steps: one line that says what to do."""


@dataclass(frozen=True)
class Step:
    """One notebook, the folder it writes inside the run folder, and the steps it reads from."""

    name: str  # notebook file stem, e.g. '02_tokenizer'
    out: str  # output folder inside the run folder (one of layout.STEP_FOLDERS)
    needs: tuple[str, ...] = ()  # names of steps whose outputs it reads

    @property
    def notebook(self) -> Path:
        return NOTEBOOKS_DIR / f"{self.name}.ipynb"


MASKING, TOKENIZER, STATIC, PRETRAIN, PROBE = layout.STEP_FOLDERS
STEPS: tuple[Step, ...] = (
    Step("01_masking", MASKING),
    Step("02_tokenizer", TOKENIZER),
    Step("03_static_vectors", STATIC, ("02_tokenizer",)),
    Step("04_pretraining", PRETRAIN, ("02_tokenizer", "03_static_vectors")),
    Step("05_probing", PROBE, ("02_tokenizer", "03_static_vectors", "04_pretraining")),
)
FIGURES_STEP = Step("06_figures", "figures")
STEP_BY_NAME = {s.name: s for s in (*STEPS, FIGURES_STEP)}


@dataclass(frozen=True)
class RunSettings:
    """What one run of notebooks 01 to 05 is given: one language and seed of one preset."""

    preset: str
    lang: str
    seed: int = 0
    corpus: CorpusSpec = CorpusSpec("embedded")
    device: str = "auto"
    vectors: Path | None = None  # a local vectors file for notebook 03; None: as the preset says
    max_steps: int | None = None
    solve_exercises: bool = False
    labelled: LabelledSpec = LabelledSpec("auto")  # notebook 05's labelled set; 'auto': as the language has one
    control: bool = False  # notebook 04 also trains BERT_FT_PERM (BERT_FT's vector rows permuted)

    def run_dir(self, runs_dir: Path) -> Path:
        """This run's folder inside ``runs_dir``, absolute."""
        return layout.RunsFolder(Path(runs_dir)).run(self.preset, self.lang, self.seed, self.max_steps).root

    def identity(self) -> dict[str, Any]:
        """What makes this run a different experiment from another (pipeline.store.run_identity)."""
        return {"preset": self.preset, "lang": self.lang, "seed": self.seed, "corpus": str(self.corpus),
                "max_steps": self.max_steps, "vectors": self.vectors}

    def parameters(self, step: Step, run_dir: Path) -> dict[str, Any]:
        """The papermill parameters of one per-language step; every folder derives from ``run_dir``."""
        params: dict[str, Any] = {"preset": self.preset, "lang": self.lang, "seed": self.seed,
                                  "corpus": str(self.corpus), "run_dir": str(Path(run_dir).resolve()),
                                  "solve_exercises": self.solve_exercises}
        if step.name == "03_static_vectors":
            params["vectors"] = None if self.vectors is None else str(self.vectors)
        if step.name == "04_pretraining":
            params.update(device=self.device, max_steps=self.max_steps, control=self.control)
        if step.name == "05_probing":
            params.update(device=self.device, labelled=str(self.labelled.resolve(self.lang, self.corpus)))
        return params


def figures_parameters(run_dirs: Sequence[Path], figures_dir: Path, solve_exercises: bool = False) -> dict[str, Any]:
    """Notebook 06's parameters: the run folders it draws from, the folder it writes and the series table there."""
    series = Path(figures_dir).resolve() / f"{layout.SERIES_TABLE}.csv"
    return {"run_dirs": [str(Path(d).resolve()) for d in run_dirs], "out_dir": str(Path(figures_dir).resolve()),
            "series_csv": str(series) if series.is_file() else None, "solve_exercises": solve_exercises}


def upstream_of(step: Step, run_dir: Path) -> list[Path]:
    """The folders of the steps ``step`` reads, inside ``run_dir``."""
    return [Path(run_dir) / STEP_BY_NAME[name].out for name in step.needs]


def out_dir_of(step: Step, params: dict[str, Any]) -> Path:
    """The folder a per-language step writes: run_dir/<step folder> (06 writes through runner.run_figures)."""
    return Path(params["run_dir"]) / step.out


def check_parameters(notebook: Path, params: dict[str, Any]) -> None:
    """Refuse parameters a notebook does not declare in its cell tagged ``parameters`` (papermill would only log
    them and run on defaults)."""
    cell = next((c for c in notebook_cells(notebook) if "parameters" in c.get("metadata", {}).get("tags", [])), None)
    if cell is None:
        raise JobError(f"{Path(notebook).name} has no cell tagged 'parameters'")
    declared = set(definitions(cell_source(cell)))  # the names it assigns (or defines) at its top level
    if unknown := sorted(set(params) - declared):
        raise JobError(f"{Path(notebook).name} does not take the parameter(s) {', '.join(unknown)}; "
                       f"it takes {', '.join(sorted(declared))}")
