"""The first code cell of notebooks 01-05 (:func:`start`) and their one door into the machinery (``__all__``).

:func:`start` checks the ``parameters`` cell's values, seeds everything, picks the device and returns a :class:`Setup`;
a notebook run by hand writes ``runs/interactive/<preset>-<lang>[-seed<N>]``, never the main job's folders.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from helpers.presets import check_preset
from pipeline.corpora.data import CorpusSpec, load_corpus, partition_record
from pipeline.corpora.documents import Corpus
from pipeline.corpora.labelled import LabelledSpec, how_to_give_one, no_labelled_set
from pipeline.store.layout import (
    CONTROL_MODEL,
    INTERACTIVE_DIR,
    REPO_ROOT,
    RunLayout,
    RunsFolder,
    check_lang,
    repo_path,
)
from pipeline.store.run_identity import claim_identity, claim_step_by_hand, refuse_while_a_job_runs
from pipeline.store.runinfo import check_seed, environment, pick_device, quiet_libraries, set_seed
from pipeline.train.probe_runs import (
    load_encoders,
    load_probe_data,
    record_no_labelled_set,
    save_probe_results,
    skip_remaining_cells,
)
from pipeline.vectors.fasttext_training import train_fasttext, vectors_from_model
from pipeline.vectors.pretrained_vectors import align_pretrained, same_pairs_similarity, side_by_side
from pipeline.vectors.static_files import load_aligned, save_aligned
from pipeline.vectors.vector_files import obtain_vectors
from pipeline.vectors.wordsim import word_similarity, word_similarity_rows

if TYPE_CHECKING:
    from evidence.results import SeedGroup
    from helpers.claims import Estimate

__all__ = ["CONTROL_MODEL", "INTERACTIVE_DIR", "LabelledSpec", "REPO_ROOT", "Setup", "align_pretrained",
           "compare_pretraining", "same_pairs_similarity", "side_by_side",
           "environment", "gain_estimate", "kind_mean", "labelled_set", "load_aligned", "load_encoders",
           "load_pretraining_data", "load_probe_data", "obtain_vectors", "partition_record", "prepare_pretraining_data",
           "pretraining_metrics", "repo_path", "save_aligned", "save_probe_results", "scored_run",
           "skip_without_labelled_set", "start", "train_fasttext", "train_model", "vectors_from_model",
           "word_similarity", "word_similarity_rows"]




@dataclass(frozen=True)
class Setup:
    """A notebook's resolved settings; ``folder(step)`` is the only way a notebook names a step's folder."""

    preset: str
    lang: str
    seed: int
    corpus: CorpusSpec
    run_dir: Path
    device: str

    @property
    def layout(self) -> RunLayout:
        """Every folder and file of this run (``setup.layout.static.manifest``, ``setup.layout.probe_table`` ...)."""
        return RunLayout(self.run_dir)

    def folder(self, step: str, create: bool = False) -> Path:
        """A step's folder; ``create`` for the step this notebook writes, held first (never while a job runs there,
        and never counted finished: :func:`pipeline.store.run_identity.claim_step_by_hand`)."""
        path = self.layout.step(step)
        if create:
            claim_step_by_hand(path, f"notebook writing {step}/ by hand")
            path.mkdir(parents=True, exist_ok=True)
        return path

    def load_corpus(self, split: str, **options: Any) -> Corpus:
        """The 'train' or 'eval' split of this run's corpus in its language (options: ``max_docs`` ...)."""
        return load_corpus(self.corpus, self.lang, split, **options)


def start(preset: str, lang: str, seed: int = 0, run_dir: str | Path | None = None,
          corpus: str = "embedded", device: str = "cpu", quiet: bool = True) -> Setup:
    """Check the parameters, seed everything, pick the device and say in one line what this run uses."""
    check_preset(preset)
    check_lang(lang)
    check_seed(seed)
    spec = CorpusSpec.parse(corpus, base=REPO_ROOT)
    if quiet:
        quiet_libraries()
    set_seed(seed)
    folder = repo_path(run_dir) if run_dir else RunsFolder(INTERACTIVE_DIR).run(preset, lang, seed).root
    setup = Setup(preset, lang, seed, spec, folder, pick_device(device))
    refuse_while_a_job_runs(folder)  # before identity.json: a job's folder is the job's while it runs
    claim_identity(setup.layout, {"preset": preset, "lang": lang, "seed": seed, "corpus": str(spec)})
    where = "interactive" if folder.is_relative_to(INTERACTIVE_DIR) else "main job"
    shown = folder.relative_to(REPO_ROOT) if folder.is_relative_to(REPO_ROOT) else folder
    print(f"preset={preset} lang={lang} seed={seed} corpus={spec} device={setup.device}\nrun folder ({where}): {shown}")
    return setup


# ============================================================================================ notebook 04
# The machinery is imported inside the functions: pipeline.train.prepare and pipeline.train.training bring torch, and
# evidence.results pandas, which notebooks 01-03 do not load.
def prepare_pretraining_data(setup: Setup, tokenizer: Any, cfg: Any, train_texts: Iterable[str],
                             eval_texts: Sequence[str]) -> dict[str, Any]:
    """``cfg``'s sequences and the fixed masked evaluation set, tokenised once into ``pretrain/data/``: meta.json."""
    from pipeline.train.prepare import prepare_data

    return prepare_data(tokenizer, train_texts, eval_texts, setup.folder("pretrain", create=True),
                        seq_len=cfg.seq_len, packing=cfg.packing, shards=cfg.shards, lang=setup.lang,
                        mlm_probability=cfg.mlm_probability, corpus=str(setup.corpus))


def load_pretraining_data(setup: Setup) -> Any:
    """The prepared arrays of this run (a helpers.pretrain.TrainingData)."""
    from pipeline.train.prepare import load_data

    return load_data(setup.layout.pretrain.data.folder)


def train_model(setup: Setup, model_name: str, init: Any, cfg: Any, tokenizer: Any) -> dict[str, Any]:
    """Pretrain ``model_name`` from ``init`` ('random' or static/), resuming an interrupted run: its run.json."""
    from pipeline.train.training import train

    return train(model_name, init, cfg, setup.folder("pretrain"), setup.folder("pretrain"), tokenizer=tokenizer,
                 device=setup.device, seed=setup.seed)


def pretraining_metrics(setup: Setup) -> dict[str, list[dict[str, float]]]:
    """The metrics rows (metrics.csv) of each model trained so far, by model name."""
    from pipeline.store.layout import TRAINABLE_MODELS, read_metrics

    files = {name: setup.layout.model(name).metrics for name in TRAINABLE_MODELS}
    return {name: read_metrics(path) for name, path in files.items() if path.exists()}


def compare_pretraining(setup: Setup) -> dict[str, Any]:
    """The paper's comparison of the two runs, written to comparison.json (the verdict is the notebook's)."""
    from pipeline.train.training import write_comparison

    return write_comparison(setup.folder("pretrain"))


def scored_run(setup: Setup) -> SeedGroup:
    """This run alone, read as notebook 06 reads runs, so that 04's floors and verdict are 06's (``kind_mean``,
    ``gain_estimate``); raises with the reason when its positions cannot be scored, where those would give NaN."""
    from evidence.position_scores import run_positions
    from evidence.results import SeedGroup, load_run

    run = SeedGroup(setup.lang, [load_run(setup.run_dir)])
    if isinstance(problem := run_positions(run.first), str):
        raise RuntimeError(f"{setup.run_dir}: its evaluation positions cannot be scored: {problem}")
    return run


def kind_mean(group: SeedGroup, scorer: str, key: str, kind: str) -> float:
    """:func:`evidence.position_scores.kind_mean`, for 04's floors as 06 computes them."""
    from evidence.position_scores import kind_mean

    return kind_mean(group, scorer, key, kind)


def gain_estimate(group: SeedGroup, column: str, kind: str = "all") -> Estimate:
    """:func:`evidence.claims_table.gain_estimate`, for 04's verdict as 06 reaches it."""
    from evidence.claims_table import gain_estimate

    return gain_estimate(group, column, kind)


# ============================================================================================ notebook 05
def labelled_set(labelled: str, setup: Setup) -> LabelledSpec:
    """Notebook 05's ``labelled`` parameter parsed (paths from the repository root), 'auto' made this run's default
    set; a set without the run's language is refused."""
    spec = LabelledSpec.parse(labelled, base=REPO_ROOT).resolve(setup.lang, setup.corpus)
    spec.check(setup.lang)
    return spec


def skip_without_labelled_set(setup: Setup) -> list[Path]:
    """No labelled set for this run's language: record so in probe/results.json, say how to give one, and skip the
    notebook's later cells; the job goes on to 06."""
    how = how_to_give_one(setup.lang)
    meta = {"preset": setup.preset, "lang": setup.lang, "seed": setup.seed, "corpus": str(setup.corpus),
            "labelled": "none", "environment": environment(setup.device)}
    written = record_no_labelled_set(setup.layout, meta, setup.lang, how)
    print(f"{how}\nwrote {', '.join(path.name for path in written)} in {setup.folder('probe')}")
    skip_remaining_cells(no_labelled_set(setup.lang))
    return written
