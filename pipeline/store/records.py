"""Run records: the few small files of a run folder that notebook 06 reads (:func:`record_files`, and the baseline and
token facts that need the prepared data, :func:`save_facts`), kept so figures regenerate; notebook 06 reads a record as
the run folder it came from. Each step's fingerprint goes along, so the figures step knows when a record changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Iterable, Sequence

from pipeline.store.baseline_files import compute_baseline, compute_token_facts, save_baseline, save_token_facts
from pipeline.store.fingerprints import copy_fingerprint, without_paths
from pipeline.store.layout import (
    EXTRA_MODELS,
    FIGURES_DIR,
    MODEL_NAMES,
    PERMUTES,
    RECORD_MARK,
    STEP_FOLDERS,
    TRAINABLE_MODELS,
    WEB_MODEL,
    WEB_SOURCE,
    ModelFiles,
    PretrainFiles,
    RunLayout,
)
from pipeline.store.staging import move_into, staged, written_whole


def read_info(run: RunLayout | PretrainFiles, name: str) -> dict[str, Any]:
    return json.loads(run.model(name).run_json.read_text(encoding="utf-8"))


def model_record_files(model: ModelFiles) -> tuple[Path, Path, Path]:
    return model.metrics, model.run_json, model.positions


def record_files(run: RunLayout) -> list[Path]:
    """The files of a finished run that notebook 06 reads (all small); the extra arms' where they were trained."""
    names = [*MODEL_NAMES, *(name for name in EXTRA_MODELS if run.model(name).run_json.is_file())]
    cloze = [run.pretrain.cloze] if run.pretrain.cloze.is_file() else []
    models = (path for name in names for path in model_record_files(run.model(name)))
    return [run.static.manifest, run.pretrain.comparison, *models, run.probe_table, run.probe_differences, *cloze]


def copy_into(paths: Iterable[Path], source: Path, target: Path) -> None:
    """Copy each file of ``paths`` (under ``source``) to the same place under ``target``."""
    for path in paths:
        (target / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / path.relative_to(source))


def save_facts(run: RunLayout, record: RunLayout) -> None:
    """The unigram baseline (on BERT_TINY's evaluation sequences) and token facts from ``run``'s prepared data."""
    eval_sequences = (read_info(run, "bert_tiny").get("train_config") or {}).get("eval_sequences")
    save_baseline(compute_baseline(run.step("pretrain"), eval_sequences), record.step("pretrain"), eval_sequences)
    save_token_facts(compute_token_facts(run.step("pretrain"), run.static.found), record.step("pretrain"))


class RecordConflict(ValueError):
    """The records folder already holds a record of that name for another configuration."""


def check_recordable(run_dir: Path, record_dir: Path) -> None:
    """A run is recorded once finished: every record file there, and every model's run.json saying it finished (a
    run stopped early with ``--stop-at`` over a finished one leaves all the files, but an unfinished model); and it
    may replace only a record of the same configuration (a retrained run of it), RecordConflict else."""
    run = RunLayout(run_dir)
    if missing := [str(path.relative_to(run_dir)) for path in record_files(run) if not path.is_file()]:
        raise FileNotFoundError(f"{run_dir} is not a finished run (missing {', '.join(missing)}); "
                                "run notebooks 01-05 for it first (python -m pipeline.job)")
    if unfinished := [name for name in TRAINABLE_MODELS if run.model(name).run_json.is_file()
                      and not read_info(run, name).get("finished")]:
        raise FileNotFoundError(f"{run_dir} is not a finished run ({', '.join(unfinished)} stopped before its last "
                                "step); train it to the end first (the job or train_cli resumes it)")
    if not all(RunLayout(record_dir).model(name).run_json.is_file() for name in MODEL_NAMES):
        return  # no finished record there: nothing to protect
    old, new = ({name: without_paths(read_info(RunLayout(folder), name).get("identity")) for name in MODEL_NAMES}
                for folder in (record_dir, run_dir))
    if old != new:
        raise RecordConflict(f"{record_dir} already records another configuration than {run_dir} ({old} against "
                             f"{new}); record into another folder, or rename the run folder")


class UncommittedRun(ValueError):
    """A run whose models were not both trained from one clean commit: its numbers cannot be audited."""


def commit_of(info: dict[str, Any]) -> str:
    return str((info.get("environment") or {}).get("git_commit"))


def uncommitted(commit: str) -> bool:
    return commit.endswith("+dirty") or commit == "None"


def trained_commit(run: RunLayout | PretrainFiles) -> str:
    """The one clean commit both models were trained at; UncommittedRun naming the run and the fix otherwise."""
    commits = {name: commit_of(read_info(run, name)) for name in MODEL_NAMES}
    dirty = [f"{name} at {commit}" for name, commit in commits.items() if uncommitted(commit)]
    if dirty or len(set(commits.values())) != 1:
        why = (f"trained from uncommitted code ({', '.join(dirty)})" if dirty
               else f"trained at different commits {commits}")
        raise UncommittedRun(f"{run.folder} was {why}: a record must name one clean commit for both models. Commit, "
                             "train again (the job resumes nothing of other code), or pass --draft to record it as a "
                             "draft outside figures/")
    return commits["bert_tiny"]


def mark_record(folder: Path, what: str) -> None:
    """Say in the folder that it is a record (RECORD_MARK), so no job, train_cli or notebook takes it for a run."""
    text = json.dumps({"record": what, "written_by": "pipeline.store.records",
                       "not": "a run folder: nothing runs in it, "
                       "python -m pipeline.job --figures-from reads it"}, indent=2) + "\n"
    with written_whole(folder / RECORD_MARK, what="mark the record", rerun="record it again") as tmp:
        tmp.write_text(text, encoding="utf-8")


def save_record(run_dir: str | Path, records_dir: str | Path) -> Path:
    """Record one finished run as ``records_dir/<run folder name>``, staged and moved into place whole (a failure
    leaves the previous record as it was); a folder that already is that record is left alone."""
    run_dir, records_dir = Path(run_dir), Path(records_dir)
    check_recordable(run_dir, records_dir / run_dir.name)
    if (records_dir / run_dir.name).resolve() == run_dir.resolve():
        return run_dir
    run = RunLayout(run_dir)
    with staged(records_dir, run_dir.name) as staging:
        record = RunLayout(staging)
        copy_into(record_files(run), run_dir, staging)
        for folder in STEP_FOLDERS:
            copy_fingerprint(run.step(folder), record.step(folder))
        save_facts(run, record)
        mark_record(staging, f"run {run_dir.name}")
        move_into(staging, records_dir / run_dir.name)
    return records_dir / run_dir.name


def save_records(run_dirs: Sequence[str | Path], records_dir: str | Path, draft: bool = False) -> list[Path]:
    """:func:`save_record` for every run folder, all checked first; each must name one clean commit
    (:func:`trained_commit`) unless ``draft``, and a draft never goes into figures/."""
    run_dirs = [Path(d) for d in run_dirs]
    if draft and Path(records_dir).resolve().is_relative_to(FIGURES_DIR.resolve()):
        raise UncommittedRun(f"--draft records may not go into {FIGURES_DIR}; choose a folder outside it")
    for run_dir in run_dirs:
        check_recordable(run_dir, Path(records_dir) / run_dir.name)
    for run_dir in run_dirs if not draft else ():
        trained_commit(RunLayout(run_dir))
    return [save_record(run_dir, records_dir) for run_dir in run_dirs]


def arm_problems(name: str, info: dict[str, Any], record: RunLayout) -> list[str]:
    """Why a model trained apart may not join ``record``: unfinished, uncommitted code, another experiment than the
    record's pair, or a start other than its name says (a control permutes the recorded rows of the model it
    controls, by content; bert_ft_web starts from other-text vectors)."""
    ft, commit = read_info(record, "bert_ft"), commit_of(info)
    permuted = PERMUTES.get(name)
    base = read_info(record, permuted) if permuted and record.model(permuted).run_json.is_file() else None
    unpermuted = (info["init"].get("permutation") or {}).get("unpermuted_embeddings_sha256")
    checks = [
        ("it did not finish", not info.get("finished")),
        (f"it was trained from uncommitted code ({commit})", uncommitted(commit)),
        ("it belongs to another experiment (its identity differs from the pair's)",
         without_paths(info["identity"]) != without_paths(ft["identity"])),
        (f"it controls {permuted}, which the record does not hold yet: record that first",
         bool(permuted) and base is None),
        (f"it started from other vectors than the record's {permuted}",
         base is not None and unpermuted != base["init"]["embeddings_sha256"]),
        ("it did not start from vectors pretrained on other text", name == WEB_MODEL
         and (info.get("init_manifest") or {}).get("source") != WEB_SOURCE),
    ]
    return [why for why, bad in checks if bad]


def save_arm(trained: str | Path, record_dir: str | Path, name: str) -> Path:
    """Add a finished extra arm (a control, or bert_ft_web; trained apart by train_cli) to its pair's record, staged
    and moved in whole, once :func:`arm_problems` finds nothing."""
    if name not in EXTRA_MODELS:
        raise ValueError(f"{name!r} is not an arm that joins a record; choose from {', '.join(EXTRA_MODELS)}")
    pair, record = PretrainFiles(Path(trained)), RunLayout(Path(record_dir))
    if problems := arm_problems(name, read_info(pair, name), record):
        raise RecordConflict(f"{pair.model(name).folder} cannot join the record {record.root}: {'; '.join(problems)}")
    target = record.model(name).folder
    with staged(target.parent, target.name) as staging:
        copy_into(model_record_files(pair.model(name)), pair.model(name).folder, staging)
        move_into(staging, target)
    return target


def save_series_record(base_run: Path, trained: Path, records_dir: Path) -> Path:
    """Record one trained pair of the series beside its base run's facts; refused unless it shares the base's data."""
    base, pair = RunLayout(Path(base_run)), PretrainFiles(Path(trained))
    trained_commit(pair)
    infos = {name: read_info(pair, name) for name in MODEL_NAMES}
    fingerprint = (read_info(base, "bert_tiny").get("identity") or {}).get("data_fingerprint")
    for name, info in infos.items():
        if (info.get("identity") or {}).get("data_fingerprint") != fingerprint:
            raise ValueError(f"{pair.model(name).run_json} was trained on other data than {base.root}; "
                             "train the series from the base run's pretrain/data")
    record = RunLayout(Path(records_dir) / f"{base.root.name}-steps{infos['bert_tiny']['steps']}")
    # the extra arms, where trained, join by content after the pair (records.save_arm)
    pair_files = [path for name in MODEL_NAMES for path in model_record_files(pair.model(name))]
    pair_files += [pair.comparison] if pair.comparison.is_file() else []
    copy_into(pair_files, pair.folder, record.step("pretrain"))
    copy_into([base.static.manifest], base.root, record.root)
    save_facts(base, record)
    mark_record(record.root, f"training-length series of {base.root.name}, {infos['bert_tiny']['steps']} steps")
    for name in EXTRA_MODELS:
        if pair.model(name).run_json.is_file():
            save_arm(pair.folder, record.root, name)
    return record.root

if __name__ == "__main__":
    import sys

    args = sys.argv[1:]
    arm, runs = args[:1] == ["--arm"] and len(args) == 4, args[:1] == ["--runs"] and len(args) >= 3
    series = args[:1] == ["--series"] and len(args) >= 4
    if not (arm or runs or series):
        sys.exit("usage: python -m pipeline.store.records --arm MODEL TRAINED_PRETRAIN_DIR RECORD_DIR  (adds "
                 f"{' or '.join(EXTRA_MODELS)})\n"
                 "       python -m pipeline.store.records --runs RUN_DIR... RECORDS_DIR  (records finished runs)\n"
                 "       python -m pipeline.store.records --series BASE_RUN TRAINED_PRETRAIN_DIR... RECORDS_DIR  "
                 "(records "
                 "the training-length series' pairs)")
    try:
        if series:
            recorded = [save_series_record(Path(args[1]), Path(trained), Path(args[-1])) for trained in args[2:-1]]
        else:
            recorded = [save_arm(args[2], args[3], args[1])] if arm else save_records(args[1:-1], args[-1])
        print(*(f"recorded {path}" for path in recorded), sep="\n")
    except (OSError, ValueError) as err:  # RecordConflict and UncommittedRun among them
        sys.exit(f"error: {err}")
