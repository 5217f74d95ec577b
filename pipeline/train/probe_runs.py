"""Notebook 05's inputs and outputs: the labelled data it probes on, the encoders notebook 04 saved, its results
(the probe itself is :mod:`helpers.probe`). A run without a labelled set records that in the same files and skips
the rest of the notebook, so the probe never stops the paper's experiment.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from helpers.presets import ProbeConfig
from helpers.probe import PAIRED_COLUMNS, PRETRAINED, TABLE_COLUMNS
from pipeline.corpora.labelled import LabelledSpec, no_labelled_set
from pipeline.store.layout import RunLayout

if TYPE_CHECKING:
    import pandas as pd
    from transformers import BertModel


@dataclass
class ProbeData:
    """Train and test texts with integer labels, already cut to the preset's sizes."""

    train_texts: list[str]
    train_y: np.ndarray
    test_texts: list[str]
    test_y: np.ndarray
    label_names: list[str]
    name: str
    licence: str = ""

    def class_counts(self) -> pd.DataFrame:
        """Documents per class in each split, largest class first (its share is the majority floor)."""
        import pandas as pd

        k = len(self.label_names)
        table = pd.DataFrame({"train": np.bincount(self.train_y, minlength=k),
                              "test": np.bincount(self.test_y, minlength=k)}, index=self.label_names)
        return table.rename_axis("class").sort_values("train", ascending=False)


def stratified_subset(labels: Sequence[int], n: int | None, seed: int = 0) -> np.ndarray:
    """Indices of ``n`` examples keeping the class proportions (all when ``n`` is None), not the first ``n``, which
    could follow an order by key rather than the topics."""
    labels = np.asarray(labels)
    if n is None or n >= len(labels):
        return np.arange(len(labels))
    if n < 1:
        raise ValueError(f"a subset needs at least one example, got n={n}")
    from sklearn.model_selection import train_test_split

    index = np.arange(len(labels))
    try:
        chosen, _ = train_test_split(index, train_size=n, stratify=labels, random_state=seed)
    except ValueError:  # a class too rare to stratify at this size: fall back to a plain sample
        chosen, _ = train_test_split(index, train_size=n, random_state=seed)
    return np.sort(chosen)


def load_probe_data(config: ProbeConfig, labelled: LabelledSpec, lang: str = "en", csv_format: str = "header",
                    seed: int = 0) -> ProbeData:
    """The labelled train and test splits, cut to stratified subsets of the preset's sizes (``csv_format``: files
    sets only)."""
    options = {"csv_format": csv_format} if labelled.kind == "files" else {}
    train, test = (labelled.load(lang, split, **options) for split in ("train", "test"))
    tr = stratified_subset(train.labels, config.max_train, seed)
    te = stratified_subset(test.labels, config.max_test, seed)
    return ProbeData([train.texts[i] for i in tr], np.asarray(train.labels)[tr], [test.texts[i] for i in te],
                     np.asarray(test.labels)[te], list(train.label_names), train.name, train.licence)


def load_encoders(layout: RunLayout, seed: int = 0) -> dict[str, BertModel]:
    """random init (the untrained control: seeded random weights), BERT_TINY and BERT_FT of a run, in that order,
    all with the trained models' config; the encoders only (the MLM head is not needed for probing)."""
    from transformers import BertForMaskedLM

    from helpers.model import build_model  # torch and transformers load when a model is built, not before

    trained = {}
    for name, model in PRETRAINED.items():
        model_dir = layout.model(model).model
        if not (model_dir / "config.json").is_file():
            raise FileNotFoundError(f"no saved model in {model_dir}; run 04_pretraining first")
        trained[name] = BertForMaskedLM.from_pretrained(model_dir).bert
    control = build_model(init="random", seed=seed, config=trained["BERT_TINY"].config)
    return {"random init": control.bert, **trained}


def save_probe_results(table: pd.DataFrame, paired: pd.DataFrame, layout: RunLayout,
                       meta: Mapping[str, Any]) -> list[Path]:
    """The results table (csv), the table with preset, lang, sizes and environment (json), the paired differences."""
    layout.step("probe").mkdir(parents=True, exist_ok=True)
    table.to_csv(layout.probe_table, index=False)
    records = json.loads(table.to_json(orient="records"))  # plain floats and None for NaN
    layout.probe_record.write_text(json.dumps({**meta, "results": records}, indent=2, default=str))
    paired.to_csv(layout.probe_differences, index=False)
    return [layout.probe_table, layout.probe_record, layout.probe_differences]


def record_no_labelled_set(layout: RunLayout, meta: Mapping[str, Any], lang: str, how: str) -> list[Path]:
    """A run without a labelled set: its results files say "no labelled set for <lang>" and how to give one; the
    tables keep their columns and hold no row, so whatever reads them finds them empty rather than stale."""
    import pandas as pd

    return save_probe_results(pd.DataFrame(columns=list(TABLE_COLUMNS)), pd.DataFrame(columns=list(PAIRED_COLUMNS)),
                              layout, {**meta, "status": no_labelled_set(lang), "how_to_give_one": how})


SKIPPED_MARK = "skipped: "


def cell_that_always_runs(source: str) -> str | None:
    """'start' for a cell that calls ``start(...)`` (the notebook begins again), 'parameters' for a cell that only
    assigns constants (the parameters cell), None for every other cell (skipped)."""
    try:
        tree = ast.parse(source)
        if any(isinstance(node, ast.Call) and getattr(node.func, "id", None) == "start" for node in ast.walk(tree)):
            return "start"
        for node in tree.body:
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                return None
            ast.literal_eval(node.value)  # refuses anything computed
        return "parameters" if tree.body else None
    except (ValueError, TypeError, SyntaxError):  # not Python, or a value computed
        return None


def skip_remaining_cells(reason: str) -> None:
    """Every later cell of this notebook only prints that it was skipped, and why: papermill runs every cell, and
    only an error, which would stop the main job, stops a notebook early. An IPython input transformer replaces each
    cell but the parameters cell and one that calls ``start(...)`` (which ends the skipping) by one ``print``, so
    one can change the parameters and start again. Outside IPython there are no later cells."""
    from IPython import get_ipython  # installed with ipykernel

    shell = get_ipython()
    if shell is None:
        return
    transformers = shell.input_transformers_post

    def skip_cell(lines: list[str]) -> list[str]:
        kind = cell_that_always_runs("".join(lines))
        if kind == "start" and skip_cell in transformers:
            transformers.remove(skip_cell)
        return lines if kind else [f"print({SKIPPED_MARK + reason!r})\n"]

    transformers[:] = [t for t in transformers if getattr(t, "__name__", "") != "skip_cell"]  # one at a time
    transformers.append(skip_cell)
